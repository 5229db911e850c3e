package io.offloader.serde;

/**
 * A record whose pointer cannot be resolved for what it claims: a malformed or
 * forged pointer, an unknown version or store, a payload that does not match the
 * pointer, or one larger than the reader accepts. Retrying does not help. The
 * {@link Reason} says which, the same split as the Go resolver's errors.
 */
public class PointerException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    /** Why a pointer was refused. */
    public enum Reason {
        /**
         * The value breaks pointer v1 (docs/pointer-format.md): a forged key (one that
         * could leave the store), an unknown codec, or an inline-compressed value whose
         * headers are wrong, among others.
         */
        MALFORMED,
        /** The offloader-pointer header is not exactly "v1". */
        UNKNOWN_VERSION,
        /** The pointer names a store this reader was not configured with. */
        UNKNOWN_STORE,
        /** The stored object's size or the payload's SHA-256 is not the pointer's. */
        CHECKSUM,
        /** The payload is over the reader's large.message.max.bytes. */
        TOO_LARGE
    }

    private final Reason reason;

    /**
     * @param reason why
     * @param message what, for people
     */
    public PointerException(Reason reason, String message) {
        super(message);
        this.reason = reason;
    }

    /** @return why the pointer was refused */
    public Reason reason() {
        return reason;
    }
}
