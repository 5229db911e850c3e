package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/offloader/offloader/resolver"
	rconfluent "github.com/offloader/offloader/resolver/confluent"
	"github.com/offloader/offloader/resolver/resolvertest"
	"github.com/offloader/offloader/serializer"
	sconfluent "github.com/offloader/offloader/serializer/confluent"
	"github.com/offloader/offloader/stores"
	"github.com/offloader/offloader/stores/azblob"
)

var (
	javaOnce  sync.Once
	javaCP    string
	javaBuild string
	javaErr   error
)

// javaClasspath builds clients/java once per run with Maven (mvn verify: its
// JUnit tests, against Azurite, run then) and returns the classpath of its
// classes, test classes and dependencies, for InteropTool.
func javaClasspath(t testing.TB) string {
	t.Helper()
	javaOnce.Do(func() {
		dir := "../clients/java"
		cmd := command("mvn", "-B", "-Dstyle.color=never", "-f", dir+"/pom.xml", "verify", "dependency:build-classpath",
			"-Dmdep.outputFile=target/test-classpath.txt", "-Dmdep.includeScope=test")
		out, err := cmd.CombinedOutput()
		javaBuild = string(out)
		if err != nil {
			javaErr = fmt.Errorf("mvn verify in clients/java: %v\n%s", err, tail(javaBuild, 60))
			return
		}
		deps, err := os.ReadFile(dir + "/target/test-classpath.txt")
		if err != nil {
			javaErr = err
			return
		}
		javaCP = dir + "/target/classes:" + dir + "/target/test-classes:" + strings.TrimSpace(string(deps))
	})
	if javaErr != nil {
		t.Fatal(javaErr)
	}
	return javaCP
}

// readAsWritten checks that a reader read every record written (by key),
// each once, to the size and SHA-256 written.
func readAsWritten(t *testing.T, reader string, lines []line, written map[string]line) {
	t.Helper()
	if len(lines) != len(written) {
		t.Errorf("%s read %d records, want %d", reader, len(lines), len(written))
	}
	for _, l := range lines {
		w := written[l.Key]
		w.Partition, w.Offset = l.Partition, l.Offset
		if l.String() != w.String() {
			t.Errorf("%s: %s, want %s", reader, l, w)
		}
	}
}

func tail(s string, lines int) string {
	all := strings.Split(s, "\n")
	return strings.Join(all[max(0, len(all)-lines):], "\n")
}

// interopTool runs clients/java's InteropTool with args and returns its
// output, a JSON object per line.
func interopTool(t *testing.T, args ...string) []string {
	t.Helper()
	return strings.Split(strings.TrimSpace(string(javaRun(t, "io.offloader.serde.InteropTool", args...))), "\n")
}

// javaRun runs a class of clients/java's test classpath with args and
// returns its standard output.
func javaRun(t *testing.T, class string, args ...string) []byte {
	t.Helper()
	cmd := command("java", append([]string{"-cp", javaClasspath(t), class}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v\n%s", class, err, tail(stderr.String(), 40))
	}
	return out
}

// javaStore are the Java settings of an Azure Blob store named blob.
func javaStore(container string) []string {
	return []string{"large.message.payload.store.class=azblob", "azblob.connection.string=" + azureConnStr,
		"azblob.container=" + container, "large.message.store.name=blob", "large.message.threshold.bytes=65536"}
}

// javaLines parses InteropTool read's lines by key.
func javaLines(t *testing.T, out []string) map[string]line {
	t.Helper()
	byKey := map[string]line{}
	for _, l := range parseLines(t, "InteropTool", []byte(strings.Join(out, "\n"))) {
		byKey[l.Key] = l
	}
	return byKey
}

// javaReadsBack checks that the Java deserializer reads topic (its payloads
// in container) back to recs, each once.
func javaReadsBack(t *testing.T, topic, container string, recs []sourceRecord) {
	t.Helper()
	got := javaLines(t, interopTool(t, append([]string{"read", bootstrap, topic}, javaStore(container)...)...))
	if len(got) != len(recs) {
		t.Errorf("the Java deserializer read %d records, want %d", len(got), len(recs))
	}
	for _, r := range recs {
		want := line{Key: string(r.key)}
		want.Size, want.SHA256 = digest(r.value)
		l := got[want.Key]
		want.Partition, want.Offset = l.Partition, l.Offset
		if l.String() != want.String() {
			t.Errorf("Java read %s, want %s", l, want)
		}
	}
}

// TestTheJavaLibraryPasses: clients/java's JUnit tests (the filesystem store,
// Azurite, the shared pointer vectors) pass under Maven.
func TestTheJavaLibraryPasses(t *testing.T) {
	t.Parallel()
	javaClasspath(t)
	summary := regexp.MustCompile(`Tests run: (\d+), Failures: 0, Errors: 0, Skipped: 0\n`).FindAllStringSubmatch(javaBuild, -1)
	if len(summary) == 0 {
		t.Fatalf("no Surefire summary in the Maven output:\n%s", tail(javaBuild, 40))
	}
	total, _ := strconv.Atoi(summary[len(summary)-1][1])
	if total < 10 {
		t.Errorf("Surefire ran %d tests", total)
	}
	t.Logf("clients/java: %d JUnit tests passed; javadoc and sources jars built", total)
	for _, jar := range []string{"offloader-serde-0.1.0-SNAPSHOT.jar", "offloader-serde-0.1.0-SNAPSHOT-sources.jar", "offloader-serde-0.1.0-SNAPSHOT-javadoc.jar"} {
		if _, err := os.Stat("../clients/java/target/" + jar); err != nil {
			t.Errorf("the release layout lacks %s: %v", jar, err)
		}
	}
}

// TestJavaReadsWhatTheDaemonWrites: the daemon offloads to Azurite (zstd) and
// the Java deserializer, on its own consumer, reads every record of the slim
// topic back to the bytes produced.
func TestJavaReadsWhatTheDaemonWrites(t *testing.T) {
	t.Parallel()
	raw, slim, container := uniqueName(t, "raw"), uniqueName(t, "slim"), uniqueName(t, "c")
	createTopic(t, raw, 2, map[string]string{"max.message.bytes": "8388608"})
	createTopic(t, slim, 2, nil)
	recs := numberedRecords(40, 2, 4, 300<<10, 2000)
	produceRecords(t, raw, recs)
	cfg := newPipeline(t, "tojava", raw, slim, uniqueName(t, "g")).with(t, `
stores:
  blob: {type: azblob, container: %s, create_container: true, connection_string: %q}
transforms:
  - {type: offload, store: blob, threshold: 64KiB, compression: zstd}
`, container, azureConnStr).file(t)
	d := startDaemon(t, cfg)
	consumeAll(t, slim, len(recs), 60*time.Second)
	if code := d.stop(t, 45*time.Second); code != 0 {
		t.Errorf("exit code %d", code)
	}
	javaReadsBack(t, slim, container, recs)
}

// TestGoCatAndPythonReadWhatJavaWrites: the Java serializer stores values
// over 64 KiB in Azurite and produces pointers; the Go resolver, offloader
// cat and the Python package read each record back to what Java produced.
func TestGoCatAndPythonReadWhatJavaWrites(t *testing.T) {
	t.Parallel()
	topic, container := uniqueName(t, "fromjava"), uniqueName(t, "c")
	createTopic(t, topic, 2, nil)
	blob := openAzurite(t, container)
	const n = 25
	written := map[string]line{}
	for _, s := range interopTool(t, append([]string{"write", bootstrap, topic, strconv.Itoa(n)}, javaStore(container)...)...) {
		var l line
		if err := json.Unmarshal([]byte(s), &l); err != nil {
			t.Fatalf("InteropTool write: %q: %v", s, err)
		}
		written[l.Key] = l
	}
	if len(written) != n {
		t.Fatalf("Java wrote %d records, want %d", len(written), n)
	}

	res := resolver.New(resolver.Options{Stores: map[string]stores.Store{"blob": blob}})
	goLines, pointers := resolvedLines(t, res, consumeAll(t, topic, n, 30*time.Second))
	if pointers != n/5 {
		t.Errorf("%d pointers, want the %d values over 64 KiB", pointers, n/5)
	}
	readAsWritten(t, "Go resolver", goLines, written)

	out, err := command(offloaderBinary(t), "cat", "-b", bootstrap, "-t", topic, "--store", "blob=azblob:"+azureConnStr+"|"+container).Output()
	if err != nil {
		t.Fatalf("offloader cat: %v", err)
	}
	readAsWritten(t, "offloader cat", parseLines(t, "offloader cat", out), written)

	python := pythonEnv(t)
	cmd := command(python, "../docs/examples/resolve_pointers.py", bootstrap, topic, "blob=azblob:"+container)
	cmd.Env = append(os.Environ(), "AZURE_STORAGE_CONNECTION_STRING="+azureConnStr)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	pyOut, err := cmd.Output()
	if err != nil {
		t.Fatalf("python resolve_pointers.py (the package): %v\n%s", err, stderr.String())
	}
	readAsWritten(t, "Python package", parseLines(t, "the Python package", pyOut), written)
}

// TestJavaReadsGoSerializerPointersThroughTheDaemon: the Go serializer stores
// large values in Azurite and produces pointers to the raw topic; the daemon
// passes them to the slim topic untouched; the Java deserializer reads them.
func TestJavaReadsGoSerializerPointersThroughTheDaemon(t *testing.T) {
	t.Parallel()
	raw, slim, container := uniqueName(t, "raw"), uniqueName(t, "slim"), uniqueName(t, "c")
	createTopic(t, raw, 2, nil)
	createTopic(t, slim, 2, nil)
	blob := openAzurite(t, container)
	s, err := serializer.New(serializer.Config{Store: blob, StoreName: "blob", Threshold: 64 << 10, Codec: "lz4", Prefix: "go-svc"})
	if err != nil {
		t.Fatal(err)
	}
	recs := numberedRecords(30, 2, 3, 400<<10, 3000)
	var sent []sourceRecord
	for _, r := range recs {
		m, err := sconfluent.Message(context.Background(), s, &kafka.Message{TopicPartition: kafka.TopicPartition{Topic: &raw}, Key: r.key, Value: r.value})
		if err != nil {
			t.Fatal(err)
		}
		sent = append(sent, sourceRecord{partition: r.partition, key: m.Key, value: m.Value, headers: m.Headers})
	}
	produceRecords(t, raw, sent)
	cfg := newPipeline(t, "gotojava", raw, slim, uniqueName(t, "g")).with(t, `
stores:
  blob: {type: azblob, container: %s, connection_string: %q}
transforms:
  - {type: offload, store: blob, threshold: 64KiB}
`, container, azureConnStr).file(t)
	d := startDaemon(t, cfg)
	slimMsgs := consumeAll(t, slim, len(recs), 60*time.Second)
	if code := d.stop(t, 45*time.Second); code != 0 {
		t.Errorf("exit code %d", code)
	}
	for _, m := range slimMsgs {
		i, _ := strconv.Atoi(string(m.Key))
		if !bytes.Equal(m.Value, sent[i].value) {
			t.Errorf("key %d: the daemon changed the value the Go serializer produced", i)
		}
	}
	javaReadsBack(t, slim, container, recs)
}

// TestForgedPointersAreRefusedAlikeOnTheBroker: the shared vectors, produced
// to a topic with their objects in Azurite, are resolved or refused in the
// same class by the Go resolver and the Java deserializer.
func TestForgedPointersAreRefusedAlikeOnTheBroker(t *testing.T) {
	t.Parallel()
	v, objects, err := resolvertest.Load("../pointer/testdata/vectors.json")
	if err != nil {
		t.Fatal(err)
	}
	topic, container := uniqueName(t, "forged"), uniqueName(t, "c")
	createTopic(t, topic, 1, nil)
	blob := openAzurite(t, container)
	for key, data := range objects {
		if err := blob.Put(context.Background(), key, data, nil); err != nil {
			t.Fatal(err)
		}
	}
	var recs []sourceRecord
	for i, c := range v.Cases {
		r := sourceRecord{key: []byte(strconv.Itoa(i)), value: c.Bytes()}
		for _, h := range c.Headers {
			r.headers = append(r.headers, kafka.Header{Key: h[0], Value: []byte(h[1])})
		}
		recs = append(recs, r)
	}
	produceRecords(t, topic, recs)

	// The Go resolver, on what the broker hands back.
	res := resolver.New(resolver.Options{Stores: map[string]stores.Store{"payloads": blob}})
	goClass := map[string]string{}
	for _, m := range consumeAll(t, topic, len(recs), 30*time.Second) {
		r, err := rconfluent.Resolve(context.Background(), res, m)
		if err != nil {
			goClass[string(m.Key)] = resolvertest.Class(err)
			continue
		}
		_, sha := digest(r.Value)
		goClass[string(m.Key)] = "value " + *sha
	}

	// The Java deserializer.
	settings := []string{"large.message.payload.store.class=azblob", "azblob.connection.string=" + azureConnStr, "azblob.container=" + container}
	javaClass := map[string]string{}
	for _, s := range interopTool(t, append([]string{"read", bootstrap, topic}, settings...)...) {
		var l struct {
			Offset  int64   `json:"offset"`
			Key     string  `json:"key"`
			SHA256  *string `json:"sha256"`
			Refused string  `json:"refused"`
		}
		if err := json.Unmarshal([]byte(s), &l); err != nil {
			t.Fatalf("InteropTool output %q: %v", s, err)
		}
		key := l.Key
		if l.Refused != "" {
			key = strconv.FormatInt(l.Offset, 10) // a refused record's key is not printed; produced in order, offset i is case i
			javaClass[key] = l.Refused
			continue
		}
		javaClass[key] = "value " + *l.SHA256
	}
	// offloader cat: a record that does not resolve is printed with its
	// error (and the listing exits 1 at the end).
	catClass := map[string]string{}
	out, err := command(offloaderBinary(t), "cat", "-b", bootstrap, "-t", topic, "--store", "payloads=azblob:"+azureConnStr+"|"+container).Output()
	if exitCode(err) != 1 {
		t.Errorf("offloader cat of the forged records: exit %d, want 1", exitCode(err))
	}
	for _, s := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var r struct {
			Key    string `json:"key"`
			SHA256 string `json:"sha256"`
			Error  string `json:"error"`
		}
		if err := json.Unmarshal([]byte(s), &r); err != nil {
			t.Fatalf("cat printed %q: %v", s, err)
		}
		catClass[r.Key] = "value " + r.SHA256
		if r.Error != "" {
			catClass[r.Key] = resolvertest.ClassOfText(r.Error)
		}
	}
	for i, c := range v.Cases {
		want := c.Reject
		if want == "" {
			want = "value " + c.SHA256
		}
		key := strconv.Itoa(i)
		if goClass[key] != want || javaClass[key] != want || catClass[key] != want {
			t.Errorf("%s: Go %q, Java %q, cat %q, want %q", c.Name, goClass[key], javaClass[key], catClass[key], want)
		}
	}
}

// pythonVectors is a harness around docs/examples/minimal_reader.py's
// resolve(): each vector through it, with a file store, printing the class
// the example's own PointerError names, or the value's SHA-256. Any other
// exception escapes and fails the test: the example must map every failure.
const pythonVectors = `
import hashlib, json, os, sys, tempfile, base64
sys.path.insert(0, "../docs/examples")
import minimal_reader as rp

doc = json.load(open("../pointer/testdata/vectors.json"))
root = tempfile.mkdtemp()
for key, b64 in doc["objects"].items():
    path = os.path.join(root, *key.split("/"))
    os.makedirs(os.path.dirname(path), exist_ok=True)
    open(path, "wb").write(base64.b64decode(b64))
stores = rp.open_stores(["payloads=file:" + root])

for c in doc["cases"]:
    headers = [(k, v.encode()) for k, v in c["headers"]]
    value = base64.b64decode(c["value_base64"]) if "value_base64" in c else c["value"].encode()
    try:
        got = rp.resolve(value, headers, stores)
        print("value " + hashlib.sha256(got).hexdigest())
    except rp.PointerError as e:
        print(e.reason)
`

// TestTheMinimalPythonReaderRefusesTheVectorsAlike: the minimal reader of
// docs/pointer-format.md resolves or refuses every shared vector as the Go
// resolver and the Java deserializer do (the package's own pytest suite reads
// the same vectors: TestThePythonPackagePasses).
func TestTheMinimalPythonReaderRefusesTheVectorsAlike(t *testing.T) {
	t.Parallel()
	python := pythonEnv(t)
	v, _, err := resolvertest.Load("../pointer/testdata/vectors.json")
	if err != nil {
		t.Fatal(err)
	}
	cmd := command(python, "-c", pythonVectors)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("python: %v\n%s", err, stderr.String())
	}
	got := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(got) != len(v.Cases) {
		t.Fatalf("python printed %d lines for %d cases:\n%s", len(got), len(v.Cases), out)
	}
	for i, c := range v.Cases {
		want := c.Reject
		if want == "" {
			want = "value " + c.SHA256
		}
		if got[i] != want {
			t.Errorf("%s: the minimal Python reader says %q, want %q", c.Name, got[i], want)
		}
	}
}

// openAzurite opens an Azure Blob store named blob on a new container of Azurite.
func openAzurite(t *testing.T, container string) stores.Store {
	t.Helper()
	cfg := azblob.DefaultConfig()
	cfg.ConnectionString, cfg.Container, cfg.CreateContainer = azureConnStr, container, true
	ctx, cancel := context.WithTimeout(context.Background(), scaled(30*time.Second))
	defer cancel()
	s, err := azblob.Open(ctx, "blob", cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}
