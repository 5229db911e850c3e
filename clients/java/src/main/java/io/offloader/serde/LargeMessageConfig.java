package io.offloader.serde;

import java.util.Map;
import org.apache.kafka.common.config.ConfigException;

/**
 * The settings of {@link LargeMessageSerializer} and {@link LargeMessageDeserializer},
 * given with the producer's or consumer's own (KIP-1159's names where it has them).
 * The store's settings ({@code azblob.container}, {@code s3.bucket}, ...) go in the
 * same map.
 */
public final class LargeMessageConfig {
    /** The record size estimate (value and headers) above which a value is stored. Default 1048576 less 4096. */
    public static final String THRESHOLD_BYTES = "large.message.threshold.bytes";
    /** The {@link PayloadStore}: a class name, or filesystem, azblob, http, s3. */
    public static final String STORE_CLASS = "large.message.payload.store.class";
    /** The store's name in pointers: the name offloader's pipeline and other readers give it. Default payloads. */
    public static final String STORE_NAME = "large.message.store.name";
    /** Object keys are PREFIX/sha256/HEX. Default producer. */
    public static final String KEY_PREFIX = "large.message.key.prefix";
    /** none (default), zstd, gzip, lz4 or snappy: the value is compressed first, kept inline if it then fits. */
    public static final String CODEC = "large.message.codec";
    /** One store call's time budget, retries included. Default 30000; under max.block.ms and max.poll.interval.ms. */
    public static final String STORE_TIMEOUT_MS = "large.message.store.timeout.ms";
    /** The largest payload a reader accepts. Default 67108864. */
    public static final String MAX_BYTES = "large.message.max.bytes";
    /** true: a record whose object is gone deserializes to null instead of failing. Default false. */
    public static final String SKIP_NOT_FOUND = "large.message.skip.not.found.error";
    /** Bytes of resolved payloads kept in memory by store and key. Default 0 (none). */
    public static final String CACHE_BYTES = "large.message.cache.bytes";

    static final long DEFAULT_THRESHOLD = 1_048_576 - 4_096;
    static final long DEFAULT_STORE_TIMEOUT_MS = 30_000;
    static final long DEFAULT_MAX_BYTES = 64L << 20;

    private LargeMessageConfig() {
    }

    /** Opens the configured store, configured with configs. */
    static PayloadStore openStore(Map<String, ?> configs) {
        StoreConfig c = new StoreConfig(configs);
        String name = c.required(STORE_CLASS, "the payload store: filesystem, azblob, http, s3, or a class implementing " + PayloadStore.class.getName());
        PayloadStore store = switch (name) {
            case "filesystem" -> new FilesystemStore();
            case "azblob" -> new AzureBlobStore();
            case "http" -> new HttpStore();
            case "s3" -> new S3Store();
            default -> instantiate(name);
        };
        store.configure(configs);
        return store;
    }

    private static PayloadStore instantiate(String name) {
        try {
            Object o = Class.forName(name).getDeclaredConstructor().newInstance();
            if (!(o instanceof PayloadStore s)) {
                throw new ConfigException(STORE_CLASS, name, "does not implement " + PayloadStore.class.getName());
            }
            return s;
        } catch (ReflectiveOperationException e) {
            throw new ConfigException(STORE_CLASS, name, "cannot be created: " + e);
        }
    }

    /** Refuses a store timeout that does not fit under the client's own (KIP-1159's timing rule). */
    static void checkTiming(Map<String, ?> configs, String clientSetting, long clientDefault) {
        StoreConfig c = new StoreConfig(configs);
        long store = c.number(STORE_TIMEOUT_MS, DEFAULT_STORE_TIMEOUT_MS);
        long client = c.number(clientSetting, clientDefault);
        if (store >= client) {
            throw new ConfigException(STORE_TIMEOUT_MS, store, "must be under " + clientSetting + " (" + client + "): the store calls, retries included, must end before the client gives up");
        }
    }
}
