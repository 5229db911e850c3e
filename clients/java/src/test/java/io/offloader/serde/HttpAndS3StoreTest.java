package io.offloader.serde;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.net.httpserver.HttpServer;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.Random;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.junit.jupiter.api.Test;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.services.s3.S3Client;

/** The HTTP store against a server of its contract, and the S3 store against the S3 emulator make test starts. */
class HttpAndS3StoreTest {
    /** A server of docs/http-store.md's contract (PUT, GET) that wants a bearer token. */
    static HttpServer server(Map<String, byte[]> objects) throws Exception {
        HttpServer s = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        s.createContext("/base/", ex -> {
            String key = ex.getRequestURI().getPath().substring("/base/".length());
            if (!"Bearer t0ken".equals(ex.getRequestHeaders().getFirst("Authorization"))) {
                ex.sendResponseHeaders(401, -1);
            } else if (ex.getRequestMethod().equals("PUT")) {
                byte[] body = ex.getRequestBody().readAllBytes();
                boolean ok = Pointer.sha256Of(body).equals(ex.getRequestHeaders().getFirst("X-Offloader-Sha256"))
                        && "orders".equals(ex.getRequestHeaders().getFirst("X-Offloader-Meta-source_topic"));
                if (ok) {
                    objects.put(key, body);
                }
                ex.sendResponseHeaders(ok ? 201 : 400, -1);
            } else if (!objects.containsKey(key)) {
                ex.sendResponseHeaders(404, -1);
            } else {
                byte[] body = objects.get(key);
                ex.getResponseHeaders().set("X-Offloader-Sha256", Pointer.sha256Of(body));
                ex.sendResponseHeaders(200, body.length);
                ex.getResponseBody().write(body);
            }
            ex.close();
        });
        s.start();
        return s;
    }

    @Test
    void theHttpStoreSpeaksItsContract() throws Exception {
        Map<String, byte[]> objects = new ConcurrentHashMap<>();
        HttpServer s = server(objects);
        try {
            String url = "http://127.0.0.1:" + s.getAddress().getPort() + "/base";
            Map<String, Object> config = Map.of(LargeMessageConfig.STORE_CLASS, "http", HttpStore.URL, url, HttpStore.AUTH_TOKEN, "t0ken",
                    LargeMessageConfig.THRESHOLD_BYTES, 65536, LargeMessageConfig.KEY_PREFIX, "http-svc");
            LargeMessageSerializer ser = new LargeMessageSerializer();
            ser.configure(config, false);
            LargeMessageDeserializer de = new LargeMessageDeserializer();
            de.configure(config, false);
            byte[] value = new byte[1 << 20];
            new Random(5).nextBytes(value);
            RecordHeaders h = new RecordHeaders();
            byte[] pointer = ser.serialize("orders", h, value);
            assertTrue(objects.containsKey("http-svc/sha256/" + Pointer.sha256Of(value)), objects.keySet().toString());
            assertArrayEquals(value, de.deserialize("orders", h, pointer));

            HttpStore store = new HttpStore();
            store.configure(config);
            assertThrows(PayloadNotFoundException.class, () -> store.get("no/such", 10));
            HttpStore wrongToken = new HttpStore();
            wrongToken.configure(Map.of(HttpStore.URL, url, HttpStore.AUTH_TOKEN, "wrong"));
            PayloadStoreException refused = assertThrows(PayloadStoreException.class, () -> wrongToken.put("k", new byte[1], Map.of("source_topic", "orders")));
            assertFalse(refused.retriable(), refused.getMessage());
            assertTrue(refused.getMessage().contains("HTTP 401"), refused.getMessage());
            // An object larger than the pointer claims is refused from its Content-Length.
            PointerException big = assertThrows(PointerException.class, () -> store.get(Pointer.parse(pointer).key(), value.length - 1));
            assertEquals(PointerException.Reason.CHECKSUM, big.reason());
        } finally {
            s.stop(0);
        }
    }

    @Test
    void theS3StoreRoundTripsThroughTheEmulator() {
        String endpoint = System.getenv("TEST_S3_ENDPOINT");
        assertNotNull(endpoint, "the S3 emulator is not running: run these tests with make test, or scripts/with-services.sh mvn test");
        String bucket = "java-" + UUID.randomUUID();
        try (S3Client admin = S3Client.builder().endpointOverride(URI.create(endpoint)).region(Region.US_EAST_1).forcePathStyle(true).build()) {
            admin.createBucket(b -> b.bucket(bucket));
        }
        Map<String, Object> config = Map.of(LargeMessageConfig.STORE_CLASS, "s3", S3Store.BUCKET, bucket, S3Store.ENDPOINT, endpoint,
                S3Store.REGION, "us-east-1", S3Store.PATH_STYLE, "true", LargeMessageConfig.THRESHOLD_BYTES, 65536,
                LargeMessageConfig.CODEC, "gzip");
        LargeMessageSerializer ser = new LargeMessageSerializer();
        ser.configure(config, false);
        LargeMessageDeserializer de = new LargeMessageDeserializer();
        de.configure(config, false);
        byte[] value = new byte[2 << 20];
        new Random(9).nextBytes(value);
        RecordHeaders h = new RecordHeaders();
        byte[] pointer = ser.serialize("orders", h, value);
        assertEquals("gzip", Pointer.parse(pointer).codec());
        assertArrayEquals(value, de.deserialize("orders", h, pointer));
        S3Store store = new S3Store();
        store.configure(config);
        assertThrows(PayloadNotFoundException.class, () -> store.get("no/such", 10));
        PointerException big = assertThrows(PointerException.class, () -> store.get(Pointer.parse(pointer).key(), 10));
        assertEquals(PointerException.Reason.CHECKSUM, big.reason());
        store.put("k/small", "x".getBytes(StandardCharsets.UTF_8), Map.of());
        assertArrayEquals("x".getBytes(StandardCharsets.UTF_8), store.get("k/small", 1));
    }
}
