package io.offloader.serde;

/**
 * A payload store call failed (KIP-1159's PayloadStoreException). {@link #retriable()}
 * says whether the same call may succeed later: a timeout, throttling or a server
 * error, as opposed to refused credentials or a missing container.
 */
public class PayloadStoreException extends RuntimeException {
    private static final long serialVersionUID = 1L;
    private final boolean retriable;

    /**
     * @param message what failed
     * @param retriable whether retrying may help
     * @param cause the store client's exception, or null
     */
    public PayloadStoreException(String message, boolean retriable, Throwable cause) {
        super(message, cause);
        this.retriable = retriable;
    }

    /** @return whether retrying the call may help */
    public boolean retriable() {
        return retriable;
    }
}
