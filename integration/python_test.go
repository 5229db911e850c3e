package integration

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/offloader/offloader/resolver"
	"github.com/offloader/offloader/serializer"
	sconfluent "github.com/offloader/offloader/serializer/confluent"
	"github.com/offloader/offloader/stores"
	"github.com/offloader/offloader/stores/httpstore"
	"github.com/offloader/offloader/stores/httpstore/httpstoretest"
	"github.com/offloader/offloader/stores/s3"
)

// pythonEnv is the python of scripts/python-env.sh: the package
// clients/python installed with pip, and pytest.
func pythonEnv(t testing.TB) string {
	t.Helper()
	out, err := command("../scripts/python-env.sh").Output()
	if err != nil {
		t.Fatalf("scripts/python-env.sh: %v", err)
	}
	return strings.TrimSpace(string(out))
}

// TestThePythonPackagePasses: clients/python's pytest suite passes, its
// tests of the real broker, Azurite and the S3 emulator included (none
// skipped), against the package as pip installed it.
func TestThePythonPackagePasses(t *testing.T) {
	t.Parallel()
	cmd := command(pythonEnv(t), "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", "tests")
	cmd.Dir = "../clients/python"
	cmd.Env = append(os.Environ(), "TEST_KAFKA_BOOTSTRAP="+bootstrap, "TEST_AZURE_CONNECTION_STRING="+azureConnStr, "TEST_S3_ENDPOINT="+s3Endpoint)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("pytest: %v\n%s", err, tail(string(out), 60))
	}
	summary := regexp.MustCompile(`(?m)^(\d+) passed in `).FindStringSubmatch(string(out))
	if summary == nil || strings.Contains(string(out), "skipped") {
		t.Fatalf("pytest did not pass every test, none skipped:\n%s", tail(string(out), 30))
	}
	if n, _ := strconv.Atoi(summary[1]); n < 19 {
		t.Errorf("pytest ran %d tests", n)
	}
	t.Logf("clients/python: %s tests passed", summary[1])
}

// pythonWrite writes n records (every 4th of 200 KB, every 7th a tombstone)
// with the package's Serializer through confluent-kafka-python's
// SerializingProducer, to a store named blob, and prints a line per record.
const pythonWrite = `
import hashlib, json, os, sys
import boto3
from confluent_kafka import SerializingProducer
from offloader_client import AzureBlobStore, S3Store, Serializer

bootstrap, topic, kind, where, n = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
if kind == "azblob":
    store = AzureBlobStore(where, os.environ["AZURE_STORAGE_CONNECTION_STRING"])
else:
    store = S3Store(where, client=boto3.client("s3", endpoint_url=os.environ["AWS_ENDPOINT_URL"], region_name="us-east-1",
                                               aws_access_key_id="test", aws_secret_access_key="test"))
p = SerializingProducer({"bootstrap.servers": bootstrap, "enable.idempotence": True,
                         "value.serializer": Serializer(store, store_name="blob", threshold=65536, prefix="python-svc")})
for i in range(n):
    v = None if i % 7 == 6 else os.urandom(200_000 + i) if i % 4 == 0 else ("small %d" % i).encode()
    p.produce(topic, key=str(i).encode(), value=v, headers=[], partition=i % 2)
    print(json.dumps({"key": str(i), "size": None if v is None else len(v), "sha256": None if v is None else hashlib.sha256(v).hexdigest()}))
assert p.flush(60) == 0
`

// TestGoAndJavaReadWhatPythonWrites: the Python package's Serializer stores
// values over 64 KiB in Azurite and in the S3 emulator and produces pointers;
// the Go resolver and the Java deserializer read every record back to the
// bytes Python produced.
func TestGoAndJavaReadWhatPythonWrites(t *testing.T) {
	t.Parallel()
	python := pythonEnv(t)
	for _, kind := range []string{"azblob", "s3"} {
		t.Run(kind, func(t *testing.T) {
			topic := uniqueName(t, "frompy")
			createTopic(t, topic, 2, nil)
			var store stores.Store
			var where string
			var javaSettings []string
			if kind == "azblob" {
				where = uniqueName(t, "c")
				store = openAzurite(t, where)
				javaSettings = javaStore(where)
			} else {
				cfg := s3Config(t)
				ctx, cancel := context.WithTimeout(context.Background(), scaled(30*time.Second))
				defer cancel()
				s, err := s3.Open(ctx, "blob", cfg)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { s.Close() })
				store, where = s, cfg.Bucket
				javaSettings = []string{"large.message.payload.store.class=s3", "s3.bucket=" + cfg.Bucket, "s3.endpoint=" + s3Endpoint,
					"s3.region=us-east-1", "s3.path.style=true", "large.message.store.name=blob"}
			}
			const n = 21
			cmd := command(python, "-c", pythonWrite, bootstrap, topic, kind, where, strconv.Itoa(n))
			cmd.Env = append(os.Environ(), "AZURE_STORAGE_CONNECTION_STRING="+azureConnStr, "AWS_ENDPOINT_URL="+s3Endpoint)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("python writer: %v\n%s", err, stderr.String())
			}
			written := map[string]line{}
			for _, s := range strings.Split(strings.TrimSpace(string(out)), "\n") {
				var l line
				if err := json.Unmarshal([]byte(s), &l); err != nil {
					t.Fatalf("python writer printed %q: %v", s, err)
				}
				written[l.Key] = l
			}
			res := resolver.New(resolver.Options{Stores: map[string]stores.Store{"blob": store}})
			goLines, pointers := resolvedLines(t, res, consumeAll(t, topic, n, 30*time.Second))
			if pointers != 5 {
				t.Errorf("%d pointers, want the 5 values over 64 KiB", pointers)
			}
			readAsWritten(t, "Go resolver", goLines, written)
			var javaLines []line
			for _, s := range interopTool(t, append([]string{"read", bootstrap, topic}, javaSettings...)...) {
				javaLines = append(javaLines, parseLines(t, "InteropTool", []byte(s))...)
			}
			readAsWritten(t, "Java deserializer", javaLines, written)
		})
	}
}

// TestPythonReadsWhatTheGoSerializerWrites: the Go serializer stores values
// over 64 KiB in Azurite and produces pointers; the Python package reads
// every record back to the bytes Go produced.
func TestPythonReadsWhatTheGoSerializerWrites(t *testing.T) {
	t.Parallel()
	topic, container := uniqueName(t, "fromgo"), uniqueName(t, "c")
	createTopic(t, topic, 2, nil)
	blob := openAzurite(t, container)
	s, err := serializer.New(serializer.Config{Store: blob, StoreName: "blob", Threshold: 64 << 10, Prefix: "go-svc"})
	if err != nil {
		t.Fatal(err)
	}
	p, err := sconfluent.NewProducer(s, &kafka.ConfigMap{"bootstrap.servers": bootstrap, "enable.idempotence": true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	recs := numberedRecords(24, 2, 4, 200<<10, 500)
	want := map[string]line{}
	delivered := make(chan kafka.Event, len(recs))
	for _, r := range recs {
		if err := p.Produce(context.Background(), &kafka.Message{TopicPartition: kafka.TopicPartition{Topic: &topic, Partition: r.partition},
			Key: r.key, Value: r.value}, delivered); err != nil {
			t.Fatal(err)
		}
		l := line{Key: string(r.key)}
		l.Size, l.SHA256 = digest(r.value)
		want[l.Key] = l
	}
	for range recs {
		if m := (<-delivered).(*kafka.Message); m.TopicPartition.Error != nil {
			t.Fatal(m.TopicPartition.Error)
		}
	}
	cmd := command(pythonEnv(t), "../docs/examples/resolve_pointers.py", bootstrap, topic, "blob=azblob:"+container)
	cmd.Env = append(os.Environ(), "AZURE_STORAGE_CONNECTION_STRING="+azureConnStr)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("python resolve_pointers.py (the package): %v\n%s", err, stderr.String())
	}
	readAsWritten(t, "the Python package", parseLines(t, "the Python package", out), want)
}

// pythonAvro produces Avro values in the Confluent wire format (the
// AvroSerializer of confluent-kafka-python, a schema registry client in the
// process: mock://) to the raw topic, half of them over the daemon's 64 KiB,
// then reads the slim topic through the package's Deserializer chained to the
// AvroDeserializer. It prints what it read, how many were pointers, whether
// each resolved value kept the magic byte and schema id, and what the
// AvroDeserializer does with a pointer given to it directly.
const pythonAvro = `
import json, os, sys
from confluent_kafka import DeserializingConsumer, SerializingProducer, TopicPartition
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from offloader_client import AzureBlobStore, Deserializer, Resolver, is_pointer

bootstrap, raw, slim, container, n = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
registry = SchemaRegistryClient.new_client({"url": "mock://offloader-avro"})
schema = '{"type":"record","name":"Order","fields":[{"name":"id","type":"int"},{"name":"body","type":"string"}]}'
orders = [{"id": i, "body": ("order %d " % i) * (20000 if i % 2 == 0 else 3)} for i in range(n)]
producer = SerializingProducer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "message.max.bytes": 4194304,
                                "value.serializer": AvroSerializer(registry, schema)})
for o in orders:
    producer.produce(raw, key=str(o["id"]), value=o, partition=0)
assert producer.flush(60) == 0
schema_id = registry.get_latest_version(raw + "-value").schema_id

resolver = Resolver({"payloads": AzureBlobStore(container, os.environ["AZURE_STORAGE_CONNECTION_STRING"])})
avro = AvroDeserializer(registry)
consumer = DeserializingConsumer({"bootstrap.servers": bootstrap, "group.id": slim, "isolation.level": "read_committed",
                                  "value.deserializer": Deserializer(resolver, inner=avro)})
consumer.assign([TopicPartition(slim, 0, -2)])
got = []
while len(got) < n:
    msg = consumer.poll(1.0)
    if msg is not None:
        assert msg.error() is None, msg.error()
        got.append(msg.value())
consumer.close()

raw_reader = DeserializingConsumer({"bootstrap.servers": bootstrap, "group.id": slim + "-raw", "isolation.level": "read_committed"})
raw_reader.assign([TopicPartition(slim, 0, -2)])
read, pointers, intact, refused = 0, 0, 0, None
while read < n:
    msg = raw_reader.poll(1.0)
    if msg is None:
        continue
    read += 1
    wire = resolver.resolve(msg.value(), msg.headers())
    intact += wire[0] == 0 and int.from_bytes(wire[1:5], "big") == schema_id
    if is_pointer(msg.headers()):
        pointers += 1
        try:
            avro(msg.value(), SerializationContext(slim, MessageField.VALUE, msg.headers()))
            refused = "decoded"
        except Exception as e:
            refused = type(e).__name__
raw_reader.close()
import hashlib
print(json.dumps({"same": got == orders, "read": len(got), "pointers": pointers, "intact": intact, "avro_on_a_pointer": refused,
                  "schema_id": schema_id, "schema": schema,
                  "bodies": [hashlib.sha256(o["body"].encode()).hexdigest() for o in orders]}))
`

// TestSchemaRegistryAvroValuesThroughTheDaemon: Avro values in the Confluent
// wire format (magic byte, schema id, Avro body) go through the daemon, which
// offloads those over 64 KiB to Azurite; a Python consumer that chains the
// package's Deserializer and then confluent-kafka-python's AvroDeserializer
// reads the original objects, every resolved value keeps its magic byte and
// schema id, and the AvroDeserializer given a pointer itself fails (the one
// thing a team must not do). A Java consumer (AvroChainTool) chains
// LargeMessageDeserializer and the wire format's Avro decoding and reads the
// same orders. The schema registry is confluent-kafka-python's client in mock
// mode, in the Python process, and the Java side is given the writer's schema
// and id: no schema registry server, and no KafkaAvroDeserializer, can be
// installed here (docs/clients.md says why).
func TestSchemaRegistryAvroValuesThroughTheDaemon(t *testing.T) {
	t.Parallel()
	python := pythonEnv(t)
	raw, slim, container := uniqueName(t, "raw"), uniqueName(t, "slim"), uniqueName(t, "c")
	createTopic(t, raw, 1, map[string]string{"max.message.bytes": "4194304"})
	createTopic(t, slim, 1, nil)
	openAzurite(t, container)
	storeYAML := fmt.Sprintf("      payloads: {type: azblob, container: %s, connection_string: %q}", container, azureConnStr)
	d := startDaemon(t, pipelineFile(t, "avro", raw, slim, uniqueName(t, "g"), storeYAML, ""))
	const n = 20
	cmd := command(python, "-c", pythonAvro, bootstrap, raw, slim, container, strconv.Itoa(n))
	cmd.Env = append(os.Environ(), "AZURE_STORAGE_CONNECTION_STRING="+azureConnStr)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("python Avro chain: %v\n%s", err, tail(stderr.String(), 40))
	}
	if code := d.stop(t, 45*time.Second); code != 0 {
		t.Errorf("daemon exit code %d", code)
	}
	var got struct {
		Same           bool     `json:"same"`
		Read           int      `json:"read"`
		Pointers       int      `json:"pointers"`
		Intact         int      `json:"intact"`
		AvroOnAPointer string   `json:"avro_on_a_pointer"`
		SchemaID       int      `json:"schema_id"`
		Schema         string   `json:"schema"`
		Bodies         []string `json:"bodies"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("python printed %q: %v", out, err)
	}
	if !got.Same || got.Read != n {
		t.Errorf("the Python chain read %d objects, equal to those produced: %v; want %d, true", got.Read, got.Same, n)
	}
	if got.Pointers != n/2 || got.Intact != n {
		t.Errorf("%d pointers and %d values with their magic byte and schema id, want %d and %d", got.Pointers, got.Intact, n/2, n)
	}
	if got.AvroOnAPointer == "decoded" || got.AvroOnAPointer == "" {
		t.Errorf("the AvroDeserializer given a pointer itself: %q, want a failure", got.AvroOnAPointer)
	}

	// Java: LargeMessageDeserializer, then the wire format decoded with
	// Apache Avro and the writer's schema by its id (KafkaAvroDeserializer's
	// steps; it is not on Maven Central).
	lines := strings.Split(strings.TrimSpace(string(javaRun(t, "io.offloader.serde.AvroChainTool", bootstrap, slim, strconv.Itoa(n),
		strconv.Itoa(got.SchemaID), got.Schema, "large.message.payload.store.class=azblob", "azblob.connection.string="+azureConnStr,
		"azblob.container="+container, "large.message.store.name=payloads"))), "\n")
	if len(lines) != n {
		t.Fatalf("the Java chain printed %d lines, want %d", len(lines), n)
	}
	refused := 0
	for i, l := range lines {
		var j struct {
			ID             int    `json:"id"`
			BodySHA256     string `json:"body_sha256"`
			PointerRefused *bool  `json:"pointer_refused"`
		}
		if err := json.Unmarshal([]byte(l), &j); err != nil {
			t.Fatalf("the Java chain printed %q: %v", l, err)
		}
		if j.ID != i || j.BodySHA256 != got.Bodies[i] {
			t.Errorf("the Java chain read order %d with body %s, want order %d with body %s", j.ID, j.BodySHA256, i, got.Bodies[i])
		}
		if j.PointerRefused != nil && *j.PointerRefused {
			refused++
		}
	}
	if refused != n/2 {
		t.Errorf("the Avro decoding refused %d of the %d pointers given to it directly", refused, n/2)
	}
}

// pythonHTTP writes values with the package's Serializer to the HTTP store at
// argv[1] (token argv[2]) and prints their pointers, then reads back the
// pointers on stdin (a JSON list of [value, headers] from the Go side) and
// prints each value's SHA-256; with argv[3] == "redirect" it only tries one
// write and prints the class of its failure.
const pythonHTTP = `
import hashlib, json, sys
from offloader_client import HttpStore, PointerError, Resolver, Serializer

store = HttpStore(sys.argv[1], token=sys.argv[2])
class Ctx:
    def __init__(self):
        self.headers, self.topic = [], "t"
if sys.argv[3] == "redirect":
    try:
        Serializer(store, threshold=4096, prefix="py-http")(b"r" * 10000, Ctx())
        print("stored")
    except PointerError as e:
        print(e.reason)
    sys.exit(0)
out = []
for i in range(3):
    ctx = Ctx()
    out.append(Serializer(store, store_name="web", threshold=4096, prefix="py-http")(bytes([65 + i]) * (50000 + i), ctx).decode())
print(json.dumps(out))
resolver = Resolver({"web": store})
for value, headers in json.load(sys.stdin):
    print(hashlib.sha256(resolver.resolve(value.encode(), [(k, v.encode()) for k, v in headers])).hexdigest())
`

// TestPythonAndTheHTTPStore: the package's HttpStore against a server of the
// HTTP store's contract: what the Python Serializer stores, the Go resolver
// reads; what the Go serializer stores, Python reads; and a PUT the server
// answers with a redirect is refused, not taken for a stored object.
func TestPythonAndTheHTTPStore(t *testing.T) {
	t.Parallel()
	python := pythonEnv(t)
	srv := httpstoretest.New(t, false, 0)
	cfg := httpstore.DefaultConfig()
	cfg.URL, cfg.AuthToken = srv.URL, httpstoretest.Token
	web, err := httpstore.Open("web", cfg)
	if err != nil {
		t.Fatal(err)
	}
	s, err := serializer.New(serializer.Config{Store: web, StoreName: "web", Threshold: 4096, Prefix: "go-http"})
	if err != nil {
		t.Fatal(err)
	}
	var goPointers [][2]any
	var goSums []string
	for i := range 3 {
		value := bytes.Repeat([]byte{byte('a' + i)}, 40_000+i)
		rec, err := s.Serialize(context.Background(), "t", nil, value, nil)
		if err != nil {
			t.Fatal(err)
		}
		var headers [][2]string
		for _, h := range rec.Headers {
			headers = append(headers, [2]string{h.Key, string(h.Value)})
		}
		goPointers = append(goPointers, [2]any{string(rec.Value), headers})
		goSums = append(goSums, fmt.Sprintf("%x", sha256.Sum256(value)))
	}
	in, _ := json.Marshal(goPointers)
	cmd := command(python, "-c", pythonHTTP, srv.URL, httpstoretest.Token, "roundtrip")
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("python HTTP store: %v\n%s", err, tail(stderr.String(), 30))
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 4 {
		t.Fatalf("python printed %d lines, want 4:\n%s", len(lines), out)
	}
	if got := strings.Join(lines[1:], " "); got != strings.Join(goSums, " ") {
		t.Errorf("Python read the Go serializer's values as %s, want %s", got, strings.Join(goSums, " "))
	}
	var pyPointers []string
	if err := json.Unmarshal([]byte(lines[0]), &pyPointers); err != nil {
		t.Fatal(err)
	}
	res := resolver.New(resolver.Options{Stores: map[string]stores.Store{"web": web}})
	for i, p := range pyPointers {
		marked := func(name string) ([]byte, bool) { return []byte("v1"), name == "offloader-pointer" }
		got, err := res.Resolve(context.Background(), []byte(p), marked)
		if err != nil {
			t.Fatalf("the Go resolver on Python's pointer %d: %v", i, err)
		}
		if want := bytes.Repeat([]byte{byte('A' + i)}, 50_000+i); !bytes.Equal(got.Value, want) {
			t.Errorf("Python's value %d read back as %d bytes, want %d", i, len(got.Value), len(want))
		}
	}

	srv.RedirectPuts(http.StatusFound)
	out, err = command(python, "-c", pythonHTTP, srv.URL, httpstoretest.Token, "redirect").Output()
	if err != nil {
		t.Fatalf("python HTTP store, redirected: %v", err)
	}
	if got := strings.TrimSpace(string(out)); got != "refused" {
		t.Errorf("a PUT answered with 302: the Python Serializer says %q, want refused", got)
	}
}
