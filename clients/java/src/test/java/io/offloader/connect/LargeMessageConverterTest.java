package io.offloader.connect;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.offloader.serde.FilesystemStore;
import io.offloader.serde.LargeMessageConfig;
import io.offloader.serde.Pointer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import org.apache.kafka.common.config.ConfigException;
import org.apache.kafka.common.header.Headers;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.connect.data.SchemaAndValue;
import org.apache.kafka.connect.errors.DataException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The Connect converter around JsonConverter, on the filesystem store. */
class LargeMessageConverterTest {
    @TempDir
    Path root;

    private Map<String, Object> settings() {
        Map<String, Object> c = new HashMap<>(Map.of(LargeMessageConfig.STORE_CLASS, "filesystem", FilesystemStore.ROOT, root.toString(),
                LargeMessageConfig.THRESHOLD_BYTES, "4096", LargeMessageConfig.KEY_PREFIX, "connect",
                LargeMessageConverter.DELEGATE_CLASS, "org.apache.kafka.connect.json.JsonConverter", "delegate.schemas.enable", "false"));
        return c;
    }

    private LargeMessageConverter converter(Map<String, Object> c) {
        LargeMessageConverter conv = new LargeMessageConverter();
        conv.configure(c, false);
        return conv;
    }

    private static Map<String, Object> document(int chars) {
        return Map.of("id", "order-1", "body", "x".repeat(chars));
    }

    @Test
    void aLargeValueIsStoredAndReadBackThroughTheDelegate() throws Exception {
        try (LargeMessageConverter conv = converter(settings())) {
            Headers headers = new RecordHeaders();
            byte[] wire = conv.fromConnectData("orders", headers, null, document(100_000));
            assertTrue(wire.length < 1024, "a pointer of " + wire.length + " bytes");
            assertEquals("v1", new String(headers.lastHeader(Pointer.HEADER_POINTER).value(), StandardCharsets.UTF_8));
            assertEquals("true", new String(headers.lastHeader(Pointer.HEADER_LARGE_MESSAGE).value(), StandardCharsets.UTF_8));
            Pointer p = Pointer.parse(wire);
            assertTrue(Files.exists(root.resolve(p.key())), "the object " + p.key());
            SchemaAndValue back = conv.toConnectData("orders", headers, wire);
            assertEquals(document(100_000), back.value());
        }
    }

    @Test
    void aSmallValueAndATombstoneStayAsTheDelegateMakesThem() throws Exception {
        try (LargeMessageConverter conv = converter(settings())) {
            Headers headers = new RecordHeaders();
            byte[] wire = conv.fromConnectData("orders", headers, null, document(10));
            assertTrue(new String(wire, StandardCharsets.UTF_8).contains("\"body\":\"xxxxxxxxxx\""), new String(wire, StandardCharsets.UTF_8));
            assertNull(headers.lastHeader(Pointer.HEADER_POINTER));
            assertEquals(document(10), conv.toConnectData("orders", headers, wire).value());
            assertNull(conv.fromConnectData("orders", new RecordHeaders(), null, null));
            assertNull(conv.toConnectData("orders", new RecordHeaders(), null).value());
        }
    }

    @Test
    void aPointerWhoseObjectIsGoneFailsTheRecordOrIsNullWhenSkipped() throws Exception {
        Headers headers = new RecordHeaders();
        byte[] wire;
        try (LargeMessageConverter conv = converter(settings())) {
            wire = conv.fromConnectData("orders", headers, null, document(100_000));
        }
        Files.delete(root.resolve(Pointer.parse(wire).key()));
        try (LargeMessageConverter conv = converter(settings())) {
            DataException e = assertThrows(DataException.class, () -> conv.toConnectData("orders", headers, wire));
            assertTrue(e.getMessage().contains("orders"), e.getMessage());
        }
        Map<String, Object> skip = settings();
        skip.put(LargeMessageConfig.SKIP_NOT_FOUND, "true");
        try (LargeMessageConverter conv = converter(skip)) {
            assertNull(conv.toConnectData("orders", headers, wire).value());
        }
    }

    @Test
    void aForgedPointerIsRefused() throws Exception {
        try (LargeMessageConverter conv = converter(settings())) {
            Headers headers = new RecordHeaders();
            byte[] wire = conv.fromConnectData("orders", headers, null, document(100_000));
            Pointer p = Pointer.parse(wire);
            byte[] forged = new Pointer(p.store(), p.key(), p.size() + 1, p.sha256(), p.codec(), p.storedSize()).encode();
            DataException e = assertThrows(DataException.class, () -> conv.toConnectData("orders", headers, forged));
            assertTrue(e.getMessage().contains("size"), e.getMessage());
        }
    }

    @Test
    void withoutHeadersALargeValueIsRefusedNotWrittenAsAnUnmarkedPointer() throws Exception {
        try (LargeMessageConverter conv = converter(settings())) {
            DataException e = assertThrows(DataException.class, () -> conv.fromConnectData("orders", null, document(100_000)));
            assertTrue(e.getMessage().contains("headers"), e.getMessage());
            assertTrue(new String(conv.fromConnectData("orders", null, document(10)), StandardCharsets.UTF_8).contains("order-1"));
        }
    }

    @Test
    void itRefusesKeysAndAMissingDelegate() {
        LargeMessageConverter conv = new LargeMessageConverter();
        ConfigException key = assertThrows(ConfigException.class, () -> conv.configure(settings(), true));
        assertTrue(key.getMessage().contains("value.converter"), key.getMessage());
        Map<String, Object> none = settings();
        none.remove(LargeMessageConverter.DELEGATE_CLASS);
        ConfigException missing = assertThrows(ConfigException.class, () -> conv.configure(none, false));
        assertTrue(missing.getMessage().contains("delegate.class"), missing.getMessage());
        Map<String, Object> wrong = settings();
        wrong.put(LargeMessageConverter.DELEGATE_CLASS, "java.lang.String");
        ConfigException notConverter = assertThrows(ConfigException.class, () -> conv.configure(wrong, false));
        assertTrue(notConverter.getMessage().contains("does not implement"), notConverter.getMessage());
    }
}
