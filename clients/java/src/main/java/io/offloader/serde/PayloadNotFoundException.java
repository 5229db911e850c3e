package io.offloader.serde;

/**
 * The pointer's object is gone (a lifecycle rule shorter than the topic's retention,
 * for example): KIP-1159's not-found case, which the deserializer skips under
 * {@code large.message.skip.not.found.error=true}.
 */
public class PayloadNotFoundException extends PayloadStoreException {
    private static final long serialVersionUID = 1L;

    /** @param message which object */
    public PayloadNotFoundException(String message) {
        super(message, false, null);
    }
}
