package io.offloader.serde;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The shared pointer v1 vectors (pointer/testdata/vectors.json), which the Go
 * resolver's tests read too: each record resolves to its SHA-256 or is refused in
 * the same class.
 */
class VectorsTest {
    static String classOf(RuntimeException e) {
        if (e instanceof PayloadNotFoundException) {
            return "not_found";
        }
        if (e instanceof PointerException p) {
            return p.reason().name().toLowerCase();
        }
        return "other: " + e;
    }

    @Test
    void everyReaderResolvesOrRefusesTheSameWay(@TempDir Path root) throws Exception {
        JsonNode doc = new ObjectMapper().readTree(Files.readString(Path.of("../../pointer/testdata/vectors.json")));
        FilesystemStore store = new FilesystemStore();
        store.configure(Map.of(FilesystemStore.ROOT, root.toString()));
        doc.get("objects").fields().forEachRemaining(e -> store.put(e.getKey(), Base64.getDecoder().decode(e.getValue().asText()), Map.of()));
        PointerResolver resolver = new PointerResolver(Map.of("payloads", store), 64L << 20, 0);
        List<String> wrong = new ArrayList<>();
        int cases = 0;
        for (JsonNode c : doc.get("cases")) {
            cases++;
            RecordHeaders headers = new RecordHeaders();
            c.get("headers").forEach(h -> headers.add(h.get(0).asText(), h.get(1).asText().getBytes(StandardCharsets.UTF_8)));
            byte[] value = c.has("value_base64") ? Base64.getDecoder().decode(c.get("value_base64").asText())
                    : c.get("value").asText().getBytes(StandardCharsets.UTF_8);
            String name = c.get("name").asText();
            String reject = c.has("reject") ? c.get("reject").asText() : null;
            try {
                byte[] got = resolver.resolve(headers, value);
                if (reject != null) {
                    wrong.add(name + ": resolved, want it refused as " + reject);
                } else if (!Pointer.sha256Of(got).equals(c.get("sha256").asText())) {
                    wrong.add(name + ": resolved to another value");
                }
            } catch (PointerException | PayloadStoreException e) {
                if (reject == null || !reject.equals(classOf(e))) {
                    wrong.add(name + ": " + classOf(e) + " (" + e.getMessage() + "), want " + (reject == null ? "the value" : reject));
                }
            }
        }
        assertTrue(cases >= 30, "only " + cases + " cases");
        assertEquals(List.of(), wrong);
    }
}
