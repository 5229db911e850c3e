package io.offloader.serde;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import java.util.Random;
import org.apache.kafka.common.config.ConfigException;
import org.apache.kafka.common.errors.SerializationException;
import org.apache.kafka.common.header.Headers;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The serializer and deserializer on the filesystem store. */
class SerdeTest {
    static final int THRESHOLD = 64 << 10;

    @TempDir
    Path root;

    Map<String, Object> config(Object... more) {
        Map<String, Object> c = new HashMap<>(Map.of(LargeMessageConfig.STORE_CLASS, "filesystem", FilesystemStore.ROOT, root.toString(),
                LargeMessageConfig.THRESHOLD_BYTES, THRESHOLD, LargeMessageConfig.KEY_PREFIX, "java-svc"));
        for (int i = 0; i < more.length; i += 2) {
            c.put((String) more[i], more[i + 1]);
        }
        return c;
    }

    LargeMessageSerializer serializer(Object... more) {
        LargeMessageSerializer s = new LargeMessageSerializer();
        s.configure(config(more), false);
        return s;
    }

    LargeMessageDeserializer deserializer(Object... more) {
        LargeMessageDeserializer d = new LargeMessageDeserializer();
        d.configure(config(more), false);
        return d;
    }

    static Headers headers() {
        RecordHeaders h = new RecordHeaders();
        h.add("content-type", "application/json".getBytes(StandardCharsets.UTF_8));
        return h;
    }

    /** The longest value whose record (value and headers) is estimated at n bytes or less. */
    static byte[] edgeValue(Headers headers, int n) {
        int len = n - 200;
        while (SizeEstimate.of(null, new byte[len + 1], headers) <= n) {
            len++;
        }
        byte[] v = new byte[len];
        java.util.Arrays.fill(v, (byte) 'v');
        return v;
    }

    @Test
    void theThresholdEdgeKeepsTheHeadersAndRoundTrips() throws Exception {
        LargeMessageSerializer s = serializer();
        LargeMessageDeserializer d = deserializer();
        Headers at = headers();
        byte[] edge = edgeValue(at, THRESHOLD);
        assertSame(edge, s.serialize("orders", at, edge), "a record at the threshold passes unchanged");
        assertEquals(1, at.toArray().length);

        Headers over = headers();
        byte[] bigger = java.util.Arrays.copyOf(edge, edge.length + 1);
        byte[] pointer = s.serialize("orders", over, bigger);
        assertTrue(pointer.length < 1024);
        assertEquals("application/json", new String(over.lastHeader("content-type").value(), StandardCharsets.UTF_8));
        assertEquals("v1", new String(over.lastHeader(Pointer.HEADER_POINTER).value(), StandardCharsets.UTF_8));
        assertEquals("true", new String(over.lastHeader(Pointer.HEADER_LARGE_MESSAGE).value(), StandardCharsets.UTF_8));
        Pointer p = Pointer.parse(pointer);
        assertEquals("payloads", p.store());
        assertEquals("java-svc/sha256/" + Pointer.sha256Of(bigger), p.key());
        assertTrue(Files.exists(root.resolve(p.key())));
        assertArrayEquals(bigger, d.deserialize("orders", over, pointer));
        assertNull(s.serialize("orders", headers(), null), "a tombstone stays one");
        assertNull(d.deserialize("orders", headers(), (byte[]) null));
    }

    @Test
    void theCodecComesBeforeTheSizeCheck() {
        LargeMessageSerializer s = serializer(LargeMessageConfig.CODEC, "zstd");
        LargeMessageDeserializer d = deserializer();
        byte[] compressible = "{\"sku\":\"A-1\",\"qty\":1}".repeat(2 * THRESHOLD / 21).getBytes(StandardCharsets.UTF_8);
        Headers h = headers();
        byte[] inline = s.serialize("orders", h, compressible);
        assertNull(h.lastHeader(Pointer.HEADER_POINTER), "kept inline once compressed");
        assertEquals("zstd", new String(h.lastHeader(Pointer.HEADER_INLINE_CODEC).value(), StandardCharsets.UTF_8));
        assertArrayEquals(compressible, d.deserialize("orders", h, inline));

        byte[] random = new byte[2 * THRESHOLD];
        new Random(7).nextBytes(random);
        Headers h2 = headers();
        byte[] pointer = s.serialize("orders", h2, random);
        assertEquals("zstd", Pointer.parse(pointer).codec());
        assertNull(h2.lastHeader(Pointer.HEADER_INLINE_CODEC), "a stored value carries no inline headers");
        assertArrayEquals(random, d.deserialize("orders", h2, pointer));
    }

    @Test
    void aMissingObjectFailsOrIsSkippedAsConfigured() throws Exception {
        byte[] value = new byte[2 * THRESHOLD];
        Headers h = headers();
        byte[] pointer = serializer().serialize("orders", h, value);
        Files.delete(root.resolve(Pointer.parse(pointer).key()));
        SerializationException e = assertThrows(SerializationException.class, () -> deserializer().deserialize("orders", h, pointer));
        assertTrue(e.getCause() instanceof PayloadNotFoundException, e.toString());
        assertNull(deserializer(LargeMessageConfig.SKIP_NOT_FOUND, "true").deserialize("orders", h, pointer));
    }

    @Test
    void aStoreFailureIsARetriableSerializationException() throws Exception {
        LargeMessageSerializer s = serializer();
        Files.writeString(root.resolve("java-svc"), "a file where the key's directory should be");
        SerializationException e = assertThrows(SerializationException.class, () -> s.serialize("orders", headers(), new byte[2 * THRESHOLD]));
        assertTrue(e.getCause() instanceof PayloadStoreException p && p.retriable(), e.toString());
    }

    @Test
    void theCacheHandsOutCopies() {
        byte[] value = new byte[2 * THRESHOLD];
        new Random(3).nextBytes(value);
        Headers h = headers();
        byte[] pointer = serializer().serialize("orders", h, value);
        LargeMessageDeserializer d = deserializer(LargeMessageConfig.CACHE_BYTES, 1 << 20);
        byte[] first = d.deserialize("orders", h, pointer);
        first[0] ^= 1;
        assertArrayEquals(value, d.deserialize("orders", h, pointer), "a caller's change does not reach the cache");
    }

    @Test
    void badSettingsSayWhatToChange() {
        ConfigException timing = assertThrows(ConfigException.class, () -> serializer(LargeMessageConfig.STORE_TIMEOUT_MS, 60_000, "max.block.ms", 60_000));
        assertTrue(timing.getMessage().contains("must be under max.block.ms"), timing.getMessage());
        assertThrows(ConfigException.class, () -> deserializer(LargeMessageConfig.STORE_TIMEOUT_MS, 400_000));
        ConfigException codec = assertThrows(ConfigException.class, () -> serializer(LargeMessageConfig.CODEC, "brotli"));
        assertTrue(codec.getMessage().contains("none, zstd, gzip, lz4 or snappy"), codec.getMessage());
        assertThrows(ConfigException.class, () -> serializer(LargeMessageConfig.THRESHOLD_BYTES, 100));
        ConfigException store = assertThrows(ConfigException.class, () -> serializer(LargeMessageConfig.STORE_CLASS, "java.lang.String"));
        assertTrue(store.getMessage().contains("does not implement"), store.getMessage());
        ConfigException key = assertThrows(ConfigException.class, () -> new LargeMessageSerializer().configure(config(), true));
        assertNotNull(key.getMessage());
    }

    @Test
    void pointersEncodeAsTheGoWriterDoes() {
        Pointer p = new Pointer("blob", "orders/orders.raw/3/1207", 4194304, "3f0a377ba0a4a460ecb616f6507ce0d8cfa3e704025d4fda3ed0c5ca05468728", "none", 4194304);
        String want = "{\"v\":1,\"store\":\"blob\",\"key\":\"orders/orders.raw/3/1207\",\"size\":4194304,"
                + "\"sha256\":\"3f0a377ba0a4a460ecb616f6507ce0d8cfa3e704025d4fda3ed0c5ca05468728\",\"codec\":\"none\",\"stored_size\":4194304}";
        assertEquals(want, new String(p.encode(), StandardCharsets.UTF_8));
        assertEquals(p, Pointer.parse(p.encode()));
    }
}
