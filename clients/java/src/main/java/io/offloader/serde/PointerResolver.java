package io.offloader.serde;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Map;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.Headers;

/**
 * Gives a record's original value back, following docs/pointer-format.md step by
 * step: a pointer is resolved only through the store configured under its name,
 * its key checked, the object read no larger than the pointer claims, the codec
 * undone and the size and SHA-256 verified; an inline-compressed value is
 * decompressed; any other value comes back as it is.
 */
public class PointerResolver {
    private final Map<String, PayloadStore> stores;
    private final long maxBytes;
    private final Cache cache;

    /**
     * @param stores the stores by the names pointers use
     * @param maxBytes the largest payload to accept
     * @param cacheBytes bytes of payloads to keep in memory (0: none)
     */
    public PointerResolver(Map<String, PayloadStore> stores, long maxBytes, long cacheBytes) {
        this.stores = Map.copyOf(stores);
        this.maxBytes = maxBytes;
        this.cache = cacheBytes > 0 ? new Cache(cacheBytes) : null;
    }

    /**
     * @param headers the record's headers (null: none)
     * @return whether they mark a pointer record
     */
    public static boolean isPointer(Headers headers) {
        return headers != null && headers.lastHeader(Pointer.HEADER_POINTER) != null;
    }

    /**
     * @param headers the record's headers
     * @param value the record's value
     * @return the original value (null for a tombstone)
     * @throws PointerException for a pointer or inline value that does not resolve for what it claims
     * @throws PayloadNotFoundException when the pointer's object is gone
     * @throws PayloadStoreException when the store fails
     */
    public byte[] resolve(Headers headers, byte[] value) {
        if (isPointer(headers)) {
            Header marker = headers.lastHeader(Pointer.HEADER_POINTER);
            if (marker.value() == null || !Pointer.VERSION_1.equals(new String(marker.value(), StandardCharsets.UTF_8))) {
                String got = marker.value() == null ? "null" : new String(marker.value(), StandardCharsets.UTF_8);
                throw new PointerException(PointerException.Reason.UNKNOWN_VERSION, "unknown pointer version " + PointerJson.quote(Pointer.cut(got)) + ": this reader knows \"v1\"");
            }
            return resolve(Pointer.parse(value));
        }
        Header codec = headers == null ? null : headers.lastHeader(Pointer.HEADER_INLINE_CODEC);
        if (codec == null || value == null) {
            return value;
        }
        Header sizeHeader = headers.lastHeader(Pointer.HEADER_INLINE_SIZE);
        String size = sizeHeader == null || sizeHeader.value() == null ? "" : new String(sizeHeader.value(), StandardCharsets.US_ASCII);
        if (!size.matches("[0-9]{1,18}")) {
            throw new PointerException(PointerException.Reason.MALFORMED, "an inline-compressed value whose " + Pointer.HEADER_INLINE_SIZE + " is not a decimal size");
        }
        long n = Long.parseLong(size);
        if (n > maxBytes) {
            throw new PointerException(PointerException.Reason.TOO_LARGE, "an inline value of " + n + " bytes, more than " + maxBytes);
        }
        String name = codec.value() == null ? "" : new String(codec.value(), StandardCharsets.UTF_8);
        if (!Codecs.NAMES.contains(name)) {
            throw new PointerException(PointerException.Reason.MALFORMED, "an inline value compressed with unknown codec " + PointerJson.quote(Pointer.cut(name)));
        }
        return Codecs.decode(name, value, n);
    }

    /**
     * @param p a parsed pointer
     * @return the verified payload
     */
    public byte[] resolve(Pointer p) {
        PayloadStore store = stores.get(p.store());
        if (store == null) {
            throw new PointerException(PointerException.Reason.UNKNOWN_STORE, "unknown store " + PointerJson.quote(Pointer.cut(p.store())) + ": this reader has " + stores.keySet());
        }
        Pointer.checkKey(p.key());
        if (p.size() > maxBytes || p.storedSize() > maxBytes) {
            throw new PointerException(PointerException.Reason.TOO_LARGE, "a payload of " + Math.max(p.size(), p.storedSize()) + " bytes, more than " + LargeMessageConfig.MAX_BYTES + " " + maxBytes);
        }
        if (!Codecs.known(p.codec())) {
            throw new PointerException(PointerException.Reason.MALFORMED, "malformed pointer: unknown codec " + PointerJson.quote(Pointer.cut(p.codec())));
        }
        String cacheKey = p.store() + "\u0000" + p.key() + "\u0000" + p.sha256();
        if (cache != null) {
            byte[] hit = cache.get(cacheKey);
            if (hit != null) {
                return hit;
            }
        }
        byte[] stored = store.get(p.key(), p.storedSize());
        if (stored.length != p.storedSize()) {
            throw new PointerException(PointerException.Reason.CHECKSUM, "the object " + p.key() + " holds " + stored.length + " bytes, the pointer says " + p.storedSize());
        }
        byte[] data = Codecs.decode(p.codec(), stored, p.size());
        if (data.length != p.size() || !Pointer.sha256Of(data).equals(p.sha256())) {
            throw new PointerException(PointerException.Reason.CHECKSUM, "the payload of " + p.key() + " does not match the pointer's size and SHA-256");
        }
        if (cache != null) {
            cache.put(cacheKey, data);
        }
        return data;
    }

    /** A cache of payloads bounded by their bytes, least recently used out first; it hands out copies. */
    private static final class Cache {
        private final long capacity;
        private long bytes;
        private final LinkedHashMap<String, byte[]> entries = new LinkedHashMap<>(16, 0.75f, true);

        Cache(long capacity) {
            this.capacity = capacity;
        }

        synchronized byte[] get(String key) {
            byte[] v = entries.get(key);
            return v == null ? null : Arrays.copyOf(v, v.length);
        }

        synchronized void put(String key, byte[] value) {
            if (value.length > capacity || entries.containsKey(key)) {
                return;
            }
            entries.put(key, Arrays.copyOf(value, value.length));
            bytes += value.length;
            var it = entries.entrySet().iterator();
            while (bytes > capacity && it.hasNext()) {
                bytes -= it.next().getValue().length;
                it.remove();
            }
        }
    }
}
