package io.offloader.serde;

import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.Headers;

/**
 * The upper bound of a record's serialized size as one uncompressed batch, as
 * Kafka's producer estimates it (and offloader's daemon and Go serializer do).
 */
final class SizeEstimate {
    private static final int BATCH_OVERHEAD = 61;
    private static final int RECORD_OVERHEAD_MAX = 21;

    private SizeEstimate() {
    }

    static long of(byte[] key, byte[] value, Headers headers) {
        long n = BATCH_OVERHEAD + RECORD_OVERHEAD_MAX + nullable(key) + nullable(value);
        int count = 0;
        long body = 0;
        if (headers != null) {
            for (Header h : headers) {
                count++;
                byte[] name = h.key().getBytes(java.nio.charset.StandardCharsets.UTF_8);
                body += varint(name.length) + name.length + nullable(h.value());
            }
        }
        return n + varint(count) + body;
    }

    private static long nullable(byte[] b) {
        return b == null ? varint(-1) : varint(b.length) + b.length;
    }

    private static int varint(long v) {
        long u = (v << 1) ^ (v >> 63);
        int n = 1;
        while (Long.compareUnsigned(u, 0x80) >= 0) {
            u >>>= 7;
            n++;
        }
        return n;
    }
}
