package io.offloader.serde;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.azure.storage.blob.BlobContainerClient;
import com.azure.storage.blob.BlobServiceClientBuilder;
import com.azure.storage.blob.sas.BlobContainerSasPermission;
import com.azure.storage.blob.sas.BlobServiceSasSignatureValues;
import java.nio.charset.StandardCharsets;
import java.time.OffsetDateTime;
import java.util.HashMap;
import java.util.Map;
import java.util.Random;
import java.util.UUID;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The Azure Blob store and the serde against Azurite, which make test starts
 * (TEST_AZURE_CONNECTION_STRING: scripts/with-services.sh mvn test).
 */
class AzuriteTest {
    private String connectionString;
    private String container;
    private BlobContainerClient client;

    @BeforeEach
    void container() {
        connectionString = System.getenv("TEST_AZURE_CONNECTION_STRING");
        assertNotNull(connectionString, "Azurite is not running: run these tests with make test, or scripts/with-services.sh mvn test");
        container = "java-" + UUID.randomUUID();
        client = new BlobServiceClientBuilder().connectionString(connectionString).buildClient().getBlobContainerClient(container);
        client.create();
    }

    private Map<String, Object> config(Object... more) {
        return azblobConfig(connectionString, container, 64 << 10, more);
    }

    /** The settings of a store named blob on container, values over threshold offloaded, and more (name, value, ...). */
    static Map<String, Object> azblobConfig(String connectionString, String container, int threshold, Object... more) {
        Map<String, Object> c = new HashMap<>(Map.of(LargeMessageConfig.STORE_CLASS, "azblob", AzureBlobStore.CONNECTION_STRING, connectionString,
                AzureBlobStore.CONTAINER, container, LargeMessageConfig.THRESHOLD_BYTES, threshold, LargeMessageConfig.STORE_NAME, "blob"));
        for (int i = 0; i < more.length; i += 2) {
            c.put((String) more[i], more[i + 1]);
        }
        return c;
    }

    @Test
    void aValueRoundTripsThroughABlob() {
        LargeMessageSerializer s = new LargeMessageSerializer();
        s.configure(config(), false);
        LargeMessageDeserializer d = new LargeMessageDeserializer();
        d.configure(config(), false);
        byte[] value = new byte[3 << 20];
        new Random(11).nextBytes(value);
        RecordHeaders h = new RecordHeaders();
        byte[] pointer = s.serialize("orders", h, value);
        Pointer p = Pointer.parse(pointer);
        assertEquals("blob", p.store());
        Map<String, String> meta = client.getBlobClient(p.key()).getProperties().getMetadata();
        assertEquals("orders", meta.get("source_topic"));
        assertEquals(p.sha256(), meta.get("sha256"));
        assertArrayEquals(value, d.deserialize("orders", h, pointer));
    }

    @Test
    void missingLargerAndRefusedObjectsFailAsTheyShould() {
        AzureBlobStore store = new AzureBlobStore();
        store.configure(config());
        assertThrows(PayloadNotFoundException.class, () -> store.get("no/such/object", 10));
        store.put("k/big", new byte[1000], Map.of());
        PointerException big = assertThrows(PointerException.class, () -> store.get("k/big", 999));
        assertEquals(PointerException.Reason.CHECKSUM, big.reason());
        assertTrue(big.getMessage().contains("holds 1000 bytes, more than the 999 expected"), big.getMessage());
        // Smaller than the pointer says, or empty (no range of it exists): the
        // bytes there are, for the resolver's size check to refuse.
        assertEquals(1000, store.get("k/big", 4096).length);
        store.put("k/empty", new byte[0], Map.of());
        assertEquals(0, store.get("k/empty", 10).length);

        // A read-only SAS: a put is refused for good, not retried.
        String sas = client.generateSas(new BlobServiceSasSignatureValues(OffsetDateTime.now().plusHours(1), new BlobContainerSasPermission().setReadPermission(true)));
        AzureBlobStore readOnly = new AzureBlobStore();
        readOnly.configure(Map.of(AzureBlobStore.ACCOUNT_URL, client.getAccountUrl(), AzureBlobStore.SAS_TOKEN, sas, AzureBlobStore.CONTAINER, container));
        assertArrayEquals(new byte[1000], readOnly.get("k/big", 1000));
        PayloadStoreException refused = assertThrows(PayloadStoreException.class, () -> readOnly.put("k/other", "x".getBytes(StandardCharsets.UTF_8), Map.of()));
        assertTrue(!refused.retriable() && refused.getMessage().contains("HTTP 403"), refused.getMessage());
    }
}
