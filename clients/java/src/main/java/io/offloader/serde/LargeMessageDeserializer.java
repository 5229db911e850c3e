package io.offloader.serde;

import java.util.Map;
import org.apache.kafka.common.config.ConfigException;
import org.apache.kafka.common.errors.SerializationException;
import org.apache.kafka.common.header.Headers;
import org.apache.kafka.common.serialization.Deserializer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A value deserializer in the shape of KIP-1159's LargeMessageDeserializer: a
 * pointer v1 record (offloader's daemon or a serializer wrote it) comes back as its
 * original value, fetched from the store configured under the pointer's store name
 * and verified by size and SHA-256; an inline-compressed value is decompressed; any
 * other value comes back as it is. A failure is a SerializationException whose
 * cause is a {@link PointerException} (forged, corrupt, unknown store or version,
 * too large), a {@link PayloadNotFoundException} or a {@link PayloadStoreException};
 * with {@code large.message.skip.not.found.error=true} a record whose object is
 * gone deserializes to null instead.
 */
public class LargeMessageDeserializer implements Deserializer<byte[]> {
    private static final Logger log = LoggerFactory.getLogger(LargeMessageDeserializer.class);
    private PayloadStore store;
    private PointerResolver resolver;
    private boolean skipNotFound;

    @Override
    public void configure(Map<String, ?> configs, boolean isKey) {
        if (isKey) {
            throw new ConfigException(LargeMessageConfig.STORE_CLASS, null, "offloader's pointers replace values, not keys: use " + getClass().getSimpleName() + " as value.deserializer");
        }
        StoreConfig c = new StoreConfig(configs);
        skipNotFound = c.flag(LargeMessageConfig.SKIP_NOT_FOUND);
        LargeMessageConfig.checkTiming(configs, "max.poll.interval.ms", 300_000);
        store = LargeMessageConfig.openStore(configs);
        resolver = new PointerResolver(Map.of(c.get(LargeMessageConfig.STORE_NAME, "payloads"), store),
                c.number(LargeMessageConfig.MAX_BYTES, LargeMessageConfig.DEFAULT_MAX_BYTES), c.number(LargeMessageConfig.CACHE_BYTES, 0));
    }

    @Override
    public byte[] deserialize(String topic, byte[] data) {
        return data; // no headers: no pointer
    }

    @Override
    public byte[] deserialize(String topic, Headers headers, byte[] data) {
        try {
            return resolver.resolve(headers, data);
        } catch (PayloadNotFoundException e) {
            if (skipNotFound) {
                log.warn("{}: the pointer's object is gone, the record's value is null ({}=true): {}", topic, LargeMessageConfig.SKIP_NOT_FOUND, e.getMessage());
                return null;
            }
            throw new SerializationException(topic + ": " + e.getMessage(), e);
        } catch (PointerException | PayloadStoreException e) {
            throw new SerializationException(topic + ": " + e.getMessage(), e);
        }
    }

    @Override
    public void close() {
        if (store != null) {
            store.close();
        }
    }
}
