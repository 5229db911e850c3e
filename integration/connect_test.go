package integration

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/offloader/offloader/pointer"
)

// connectWorker runs a Kafka Connect worker in standalone mode (connect-runtime
// from its published jars, clients/java's test classpath) with the converter
// settings and one connector, until the test ends.
type connectWorker struct {
	cmd *exec.Cmd
	mu  sync.Mutex
	log bytes.Buffer
}

// startConnect writes worker.properties (the broker, LargeMessageConverter
// around StringConverter on the Azure Blob container, read_committed for
// sinks) plus extra worker lines, and connector.properties, and starts the
// worker.
func startConnect(t *testing.T, container string, connector map[string]string, extra ...string) *connectWorker {
	t.Helper()
	dir := t.TempDir()
	worker := append([]string{
		"bootstrap.servers=" + bootstrap,
		"listeners=http://127.0.0.1:0",
		"offset.storage.file.filename=" + filepath.Join(dir, "offsets"),
		"offset.flush.interval.ms=500",
		"key.converter=org.apache.kafka.connect.storage.StringConverter",
		"value.converter=io.offloader.connect.LargeMessageConverter",
		"value.converter.delegate.class=org.apache.kafka.connect.storage.StringConverter",
		"value.converter.large.message.payload.store.class=azblob",
		"value.converter.azblob.connection.string=" + azureConnStr,
		"value.converter.azblob.container=" + container,
		"value.converter.large.message.store.name=payloads",
		"value.converter.large.message.threshold.bytes=65536",
		"value.converter.large.message.key.prefix=connect",
		// The slim topic is written in transactions: a sink reads what committed.
		"consumer.isolation.level=read_committed",
	}, extra...)
	var conn []string
	for k, v := range connector {
		conn = append(conn, k+"="+v)
	}
	workerFile, connFile := filepath.Join(dir, "worker.properties"), filepath.Join(dir, "connector.properties")
	for file, lines := range map[string][]string{workerFile: worker, connFile: conn} {
		if err := os.WriteFile(file, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	w := &connectWorker{}
	w.cmd = command("java", "-cp", javaClasspath(t), "org.apache.kafka.connect.cli.ConnectStandalone", workerFile, connFile)
	w.cmd.Stdout, w.cmd.Stderr = lockedWriter{&w.mu, &w.log}, lockedWriter{&w.mu, &w.log}
	if err := w.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if w.cmd.ProcessState == nil {
			w.cmd.Process.Signal(syscall.SIGTERM)
			done := make(chan struct{})
			go func() { w.cmd.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(scaled(30 * time.Second)):
				w.cmd.Process.Kill()
				<-done
			}
		}
		if t.Failed() {
			t.Logf("Connect worker log (last lines):\n%s", tail(w.output(), 60))
		}
	})
	return w
}

func (w *connectWorker) output() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.log.String()
}

// waitForLines waits until file holds n lines and returns them.
func (w *connectWorker) waitForLines(t *testing.T, file string, n int) []string {
	t.Helper()
	deadline := within(3 * time.Minute)
	for {
		lines := readLines(t, file)
		if len(lines) >= n {
			return lines
		}
		if w.cmd.ProcessState != nil || time.Now().After(deadline) {
			t.Fatalf("%s holds %d lines, want %d", file, len(lines), n)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// readLines is file's whole lines (none if it does not exist yet).
func readLines(t *testing.T, file string) []string {
	t.Helper()
	data, err := os.ReadFile(file)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	// Only whole lines: the connector may be writing the last one now.
	end := bytes.LastIndexByte(data, '\n')
	if end < 0 {
		return nil
	}
	return strings.Split(string(data[:end]), "\n")
}

// connectLine is the i-th line of the Connect tests: a text value of size
// bytes that names its index (no newline in it).
func connectLine(i, size int) string {
	v := strings.Repeat(string(rune('a'+i%26)), size)
	return strconv.Itoa(i) + ":" + v[len(strconv.Itoa(i))+1:]
}

// A Connect sink reads a slim topic through LargeMessageConverter around
// StringConverter: FileStreamSink writes each record's original value in
// order, offloaded (the daemon stored it in Azurite), inline and tombstone
// ("null", as the connector prints a null value) alike.
func TestAConnectSinkReadsTheSlimTopicThroughTheConverter(t *testing.T) {
	t.Parallel()
	raw, slim, container := uniqueName(t, "raw"), uniqueName(t, "slim"), uniqueName(t, "c")
	createTopic(t, raw, 1, map[string]string{"max.message.bytes": "8388608"})
	createTopic(t, slim, 1, nil)
	openAzurite(t, container) // creates the container
	var recs []sourceRecord
	var want []string
	for i := range 30 {
		r := sourceRecord{key: []byte(strconv.Itoa(i))}
		switch {
		case i%10 == 9:
			want = append(want, "null") // a tombstone
		case i%3 == 0:
			r.value = []byte(connectLine(i, 200<<10+i)) // over the daemon's 64 KiB
			want = append(want, string(r.value))
		default:
			r.value = []byte(connectLine(i, 100+i))
			want = append(want, string(r.value))
		}
		recs = append(recs, r)
	}
	produceRecords(t, raw, recs)
	got := throughTheDaemon(t, "connect-sink", raw, slim, container, len(recs))
	pointers := 0
	for _, m := range got {
		if v, _ := headerValue(m.Headers, pointer.HeaderPointer); v == pointer.Version1 {
			pointers++
		}
	}
	if pointers != 9 {
		t.Fatalf("the slim topic holds %d pointers, want the 9 values over 64 KiB", pointers)
	}

	out := filepath.Join(t.TempDir(), "sink.txt")
	w := startConnect(t, container, map[string]string{
		"name": "sink", "connector.class": "org.apache.kafka.connect.file.FileStreamSinkConnector",
		"tasks.max": "1", "topics": slim, "file": out,
	})
	lines := w.waitForLines(t, out, len(want))
	if len(lines) != len(want) {
		t.Fatalf("the sink wrote %d lines, want %d", len(lines), len(want))
	}
	for i := range want {
		if lines[i] != want[i] {
			t.Errorf("line %d: %d bytes starting %.20q, want %d bytes starting %.20q", i, len(lines[i]), lines[i], len(want[i]), want[i])
		}
	}
}

// A Connect source writes through LargeMessageConverter: FileStreamSource's
// long lines become pointers (their values in Azurite), its short lines stay
// inline. The daemon passes the pointers through, and the Go resolver reads
// every line back from the slim topic.
func TestAConnectSourceWritesPointersForLongLines(t *testing.T) {
	t.Parallel()
	raw, slim, container := uniqueName(t, "raw"), uniqueName(t, "slim"), uniqueName(t, "c")
	createTopic(t, raw, 1, nil)
	createTopic(t, slim, 1, nil)
	store := openAzurite(t, container)
	var want []string
	for i := range 20 {
		size := 50 + i
		if i%4 == 1 {
			size = 150<<10 + i // over the converter's 64 KiB
		}
		want = append(want, connectLine(i, size))
	}
	in := filepath.Join(t.TempDir(), "source.txt")
	if err := os.WriteFile(in, []byte(strings.Join(want, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	startConnect(t, container, map[string]string{
		"name": "source", "connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector",
		"tasks.max": "1", "topic": raw, "file": in,
	})
	written := consumeAll(t, raw, len(want), 3*time.Minute)
	if len(written) != len(want) {
		t.Fatalf("the source connector wrote %d records for %d lines", len(written), len(want))
	}
	for i, m := range written {
		v, _ := headerValue(m.Headers, pointer.HeaderPointer)
		if isLong := i%4 == 1; isLong != (v == pointer.Version1) {
			t.Errorf("record %d (%d-byte line): pointer header %q", i, len(want[i]), v)
		}
	}

	got := throughTheDaemon(t, "connect-source", raw, slim, container, len(want))
	if len(got) != len(want) {
		t.Fatalf("the slim topic holds %d records for %d lines", len(got), len(want))
	}
	for i, m := range got {
		if !bytes.Equal(m.Value, written[i].Value) {
			t.Errorf("record %d: the daemon changed the value (%d bytes to %d)", i, len(written[i].Value), len(m.Value))
		}
		if v := resolve(t, store, m); string(v) != want[i] {
			t.Errorf("record %d resolved to %d bytes starting %.20q, want line %d (%d bytes)", i, len(v), v, i, len(want[i]))
		}
	}
}

// A sink whose converter is told to skip missing payloads
// (large.message.skip.not.found.error=true) writes a record whose object is
// gone as a null value, and the records after it as they were.
func TestAConnectSinkSkipsAMissingPayloadWhenToldTo(t *testing.T) {
	t.Parallel()
	raw, slim, container := uniqueName(t, "raw"), uniqueName(t, "slim"), uniqueName(t, "c")
	createTopic(t, raw, 1, map[string]string{"max.message.bytes": "8388608"})
	createTopic(t, slim, 1, nil)
	store := openAzurite(t, container)
	values := []string{connectLine(0, 100<<10), connectLine(1, 50), connectLine(2, 100<<10)}
	var recs []sourceRecord
	for i, v := range values {
		recs = append(recs, sourceRecord{key: []byte(strconv.Itoa(i)), value: []byte(v)})
	}
	produceRecords(t, raw, recs)
	got := throughTheDaemon(t, "connect-skip", raw, slim, container, len(recs))
	p, err := pointer.Decode(got[0].Value)
	if err != nil {
		t.Fatalf("the first slim record is not a pointer: %v", err)
	}
	if err := store.Delete(context.Background(), p.Key); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "sink.txt")
	w := startConnect(t, container, map[string]string{
		"name": "sink", "connector.class": "org.apache.kafka.connect.file.FileStreamSinkConnector",
		"tasks.max": "1", "topics": slim, "file": out,
	}, "value.converter.large.message.skip.not.found.error=true")
	lines := w.waitForLines(t, out, 3)
	for i, want := range []string{"null", values[1], values[2]} {
		if i >= len(lines) || lines[i] != want {
			t.Errorf("line %d is not %d bytes starting %.20q (the sink wrote %d lines)", i, len(want), want, len(lines))
		}
	}
}

// throughTheDaemon runs the daemon from raw to slim, offloading values over
// 64 KiB to the Azure container (the store named payloads), until slim holds
// n records, stops it, and returns them.
func throughTheDaemon(t *testing.T, name, raw, slim, container string, n int) []*kafka.Message {
	t.Helper()
	storeYAML := fmt.Sprintf("      payloads: {type: azblob, container: %s, connection_string: %q}", container, azureConnStr)
	d := startDaemon(t, pipelineFile(t, name, raw, slim, uniqueName(t, "g"), storeYAML, ""))
	got := consumeAll(t, slim, n, 60*time.Second)
	if code := d.stop(t, 45*time.Second); code != 0 {
		t.Fatalf("daemon exit code %d", code)
	}
	return got
}
