package io.offloader.serde;

import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.Map;
import org.apache.kafka.common.config.ConfigException;
import org.apache.kafka.common.errors.SerializationException;
import org.apache.kafka.common.header.Headers;
import org.apache.kafka.common.serialization.Serializer;

/**
 * A value serializer in the shape of KIP-1159's LargeMessageSerializer: a value
 * whose record (value and headers: a value serializer does not see the key) is
 * estimated over {@code large.message.threshold.bytes} is stored in the payload
 * store, and the record carries a pointer v1 with the headers
 * {@code large-message: true} and {@code offloader-pointer: v1} instead. With
 * {@code large.message.codec}, the value is compressed first and kept inline
 * (headers offloader-codec, offloader-size) when it then fits. Objects are keyed
 * by content: PREFIX/sha256/HEX. A store failure is a SerializationException whose
 * cause is the {@link PayloadStoreException}.
 */
public class LargeMessageSerializer implements Serializer<byte[]> {
    private PayloadStore store;
    private String storeName;
    private String prefix;
    private String codec;
    private long threshold;

    @Override
    public void configure(Map<String, ?> configs, boolean isKey) {
        if (isKey) {
            throw new ConfigException(LargeMessageConfig.STORE_CLASS, null, "offloader's pointers replace values, not keys: use " + getClass().getSimpleName() + " as value.serializer");
        }
        StoreConfig c = new StoreConfig(configs);
        threshold = c.number(LargeMessageConfig.THRESHOLD_BYTES, LargeMessageConfig.DEFAULT_THRESHOLD);
        if (threshold < 1024) {
            throw new ConfigException(LargeMessageConfig.THRESHOLD_BYTES, threshold, "must be at least 1024: a pointer record alone is a few hundred bytes");
        }
        storeName = c.get(LargeMessageConfig.STORE_NAME, "payloads");
        prefix = c.get(LargeMessageConfig.KEY_PREFIX, "producer");
        Pointer.checkKey(prefix);
        codec = c.get(LargeMessageConfig.CODEC, Codecs.NONE);
        if (!Codecs.known(codec)) {
            throw new ConfigException(LargeMessageConfig.CODEC, codec, "must be none, zstd, gzip, lz4 or snappy");
        }
        LargeMessageConfig.checkTiming(configs, "max.block.ms", 60_000);
        store = LargeMessageConfig.openStore(configs);
    }

    @Override
    public byte[] serialize(String topic, byte[] data) {
        throw new SerializationException(getClass().getSimpleName() + " needs the record's headers to mark a pointer: the producer passes them (serialize(topic, headers, data))");
    }

    @Override
    public byte[] serialize(String topic, Headers headers, byte[] data) {
        if (data == null || SizeEstimate.of(null, data, headers) <= threshold || PointerResolver.isPointer(headers)) {
            return data;
        }
        if (headers == null) {
            throw new SerializationException("a " + data.length + "-byte value for " + topic + " is over the threshold, and without the record's headers it cannot be marked as a pointer");
        }
        byte[] stored = data;
        if (!codec.equals(Codecs.NONE)) {
            stored = Codecs.encode(codec, data);
            headers.add(Pointer.HEADER_INLINE_CODEC, codec.getBytes(StandardCharsets.UTF_8));
            headers.add(Pointer.HEADER_INLINE_SIZE, Integer.toString(data.length).getBytes(StandardCharsets.US_ASCII));
            if (SizeEstimate.of(null, stored, headers) <= threshold) {
                return stored;
            }
            headers.remove(Pointer.HEADER_INLINE_CODEC);
            headers.remove(Pointer.HEADER_INLINE_SIZE);
        }
        String sha = Pointer.sha256Of(data);
        String key = prefix + "/sha256/" + sha;
        try {
            store.put(key, stored, Map.of("source_topic", topic, "pipeline", prefix, "sha256", sha, "created", Instant.now().toString().replaceAll("\\.\\d+Z$", "Z")));
        } catch (PayloadStoreException e) {
            throw new SerializationException("storing a " + data.length + "-byte value for " + topic + ": " + e.getMessage(), e);
        }
        headers.add(Pointer.HEADER_LARGE_MESSAGE, "true".getBytes(StandardCharsets.UTF_8));
        headers.add(Pointer.HEADER_POINTER, Pointer.VERSION_1.getBytes(StandardCharsets.UTF_8));
        return new Pointer(storeName, key, data.length, sha, codec, stored.length).encode();
    }

    @Override
    public void close() {
        if (store != null) {
            store.close();
        }
    }
}
