package io.offloader.serde;

import java.io.Closeable;
import java.util.Map;

/**
 * Where values over the threshold are kept (KIP-1159's PayloadStore): the same
 * objects, under the same keys, as offloader's stores of the same type.
 * Implementations: {@link FilesystemStore}, {@link AzureBlobStore},
 * {@link HttpStore}, {@link S3Store}.
 */
public interface PayloadStore extends Closeable {
    /**
     * Sets the store up from the serializer's or deserializer's configuration
     * (its own settings, such as {@code azblob.container}).
     *
     * @param configs the client's configuration
     */
    void configure(Map<String, ?> configs);

    /**
     * Stores data under key, replacing what is there.
     *
     * @param key a valid object key ({@link Pointer#checkKey})
     * @param data the bytes
     * @param metadata the object's metadata (lower-case ASCII names)
     * @throws PayloadStoreException when the store refuses or fails
     */
    void put(String key, byte[] data, Map<String, String> metadata);

    /**
     * Reads the object under key if it holds at most limit bytes; a larger one is
     * refused from its stored size, before its bytes are read.
     *
     * @param key a valid object key
     * @param limit the most bytes to read
     * @return the object's bytes
     * @throws PayloadNotFoundException when there is no such object
     * @throws PointerException CHECKSUM when the object is larger than limit
     * @throws PayloadStoreException when the store fails
     */
    byte[] get(String key, long limit);

    @Override
    default void close() {
    }
}
