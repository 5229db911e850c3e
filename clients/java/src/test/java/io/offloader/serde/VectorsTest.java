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

    /** Makes the vectors' filesystem layout in root (outside goes to its parent). */
    static void layOut(JsonNode layout, Path root) throws Exception {
        for (Map.Entry<Path, JsonNode> files : Map.of(root, layout.get("files"), root.getParent(), layout.get("outside")).entrySet()) {
            for (var it = files.getValue().fields(); it.hasNext(); ) {
                var e = it.next();
                Path path = files.getKey().resolve(e.getKey());
                Files.createDirectories(path.getParent());
                Files.write(path, Base64.getDecoder().decode(e.getValue().asText()));
            }
        }
        for (JsonNode d : layout.get("directories")) {
            Files.createDirectories(root.resolve(d.asText()));
        }
        for (JsonNode f : layout.get("fifos")) {
            Process mkfifo = new ProcessBuilder("mkfifo", root.resolve(f.asText()).toString()).inheritIO().start();
            assertEquals(0, mkfifo.waitFor(), "mkfifo " + f.asText());
        }
        for (var it = layout.get("symlinks").fields(); it.hasNext(); ) {
            var e = it.next();
            Files.createSymbolicLink(root.resolve(e.getKey()), Path.of(e.getValue().asText()));
        }
    }

    @Test
    void everyReaderResolvesOrRefusesTheSameWay(@TempDir Path root) throws Exception {
        JsonNode doc = new ObjectMapper().readTree(Files.readString(Path.of("../../pointer/testdata/vectors.json")));
        Path storeRoot = root.resolve("root");
        Files.createDirectories(storeRoot);
        FilesystemStore store = new FilesystemStore();
        store.configure(Map.of(FilesystemStore.ROOT, storeRoot.toString()));
        doc.get("objects").fields().forEachRemaining(e -> store.put(e.getKey(), Base64.getDecoder().decode(e.getValue().asText()), Map.of()));
        layOut(doc.get("filesystem").get("layout"), storeRoot);
        assertTrue(doc.get("filesystem").get("cases").size() >= 8, "only " + doc.get("filesystem").get("cases").size() + " filesystem cases");
        PointerResolver resolver = new PointerResolver(Map.of("payloads", store), 64L << 20, 0);
        List<String> wrong = new ArrayList<>();
        int cases = 0;
        List<JsonNode> all = new ArrayList<>();
        doc.get("cases").forEach(all::add);
        doc.get("filesystem").get("cases").forEach(all::add);
        for (JsonNode c : all) {
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
