package integration

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/offloader/offloader/config"
	"github.com/offloader/offloader/resolver"
	"github.com/offloader/offloader/resolver/confluent"
)

// line is what each reader reports per record: the original value's identity.
type line struct {
	Partition int32   `json:"partition"`
	Offset    int64   `json:"offset"`
	Key       string  `json:"key"`
	Size      *int    `json:"size"`
	SHA256    *string `json:"sha256"`
}

func (l line) String() string {
	size, sum := "nil", "nil"
	if l.Size != nil {
		size, sum = strconv.Itoa(*l.Size), *l.SHA256
	}
	return fmt.Sprintf("%d/%d key=%s size=%s sha256=%s", l.Partition, l.Offset, l.Key, size, sum)
}

func digest(v []byte) (*int, *string) {
	if v == nil {
		return nil, nil
	}
	n, s := len(v), fmt.Sprintf("%x", sha256.Sum256(v))
	return &n, &s
}

// resolvedLines resolves each message with the Go resolver and reports it
// as a line, with the number of pointers among them.
func resolvedLines(t *testing.T, res *resolver.Resolver, msgs []*kafka.Message) ([]line, int) {
	t.Helper()
	var lines []line
	pointers := 0
	for _, m := range msgs {
		r, err := confluent.Resolve(context.Background(), res, m)
		if err != nil {
			t.Fatalf("the Go resolver on %d@%d: %v", m.TopicPartition.Partition, m.TopicPartition.Offset, err)
		}
		if r.Pointer != nil {
			pointers++
		}
		l := line{Partition: m.TopicPartition.Partition, Offset: int64(m.TopicPartition.Offset), Key: string(m.Key)}
		l.Size, l.SHA256 = digest(r.Value)
		lines = append(lines, l)
	}
	return lines, pointers
}

// parseLines parses a reader's output, a line per record.
func parseLines(t *testing.T, reader string, out []byte) []line {
	t.Helper()
	var lines []line
	for _, s := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var l line
		if err := json.Unmarshal([]byte(s), &l); err != nil {
			t.Fatalf("%s printed %q: %v", reader, s, err)
		}
		lines = append(lines, l)
	}
	return lines
}

// TestConsumersResolveByteForByte: the daemon offloads to Azurite and to the
// filesystem store (gzip); the Go resolver, `offloader cat`, the Python
// package (through docs/examples/resolve_pointers.py) and the minimal reader
// of the documented format (docs/examples/minimal_reader.py) all resolve the
// slim topic to the very bytes produced.
func TestConsumersResolveByteForByte(t *testing.T) {
	t.Parallel()
	python := pythonEnv(t)
	raw, slim := uniqueName(t, "raw"), uniqueName(t, "slim")
	createTopic(t, raw, 2, map[string]string{"max.message.bytes": "8388608"})
	createTopic(t, slim, 2, nil)
	container, root, bucket := uniqueName(t, "c"), t.TempDir(), uniqueName(t, "b")
	var recs []sourceRecord
	for i := range 30 {
		r := sourceRecord{partition: int32(i % 2), key: []byte(strconv.Itoa(i)), value: fmt.Appendf(nil, "small %d", i)}
		switch {
		case i%5 == 1:
			r.value = make([]byte, 100_000+i)
			rand.Read(r.value)
			r.headers = []kafka.Header{{Key: "to", Value: []byte("blob")}}
		case i%5 == 2:
			r.value = bytes.Repeat([]byte{byte(i)}, 200_000+i)
		case i%5 == 3:
			r.value = make([]byte, 150_000+i)
			rand.Read(r.value)
			r.headers = []kafka.Header{{Key: "to", Value: []byte("s3")}}
		case i == 29:
			r.value = nil
		}
		recs = append(recs, r)
	}
	produceRecords(t, raw, recs)
	cfg := newPipeline(t, "readers", raw, slim, uniqueName(t, "g")).with(t, `
stores:
  blob: {type: azblob, container: %s, create_container: true, connection_string: %q}
  disk: {type: filesystem, root: %q}
  bucket: {type: s3, bucket: %s, endpoint: %q, path_style: true, create_bucket: true, region: us-east-1}
transforms:
  - {type: offload, store: blob, threshold: 64KiB, if: {type: has_header, name: to, value: blob}}
  - {type: offload, store: bucket, threshold: 64KiB, if: {type: has_header, name: to, value: s3}}
  - {type: offload, store: disk, threshold: 64KiB, compression: gzip}
`, container, azureConnStr, root, bucket, s3Endpoint).file(t)
	d := startDaemon(t, cfg)
	got := consumeAll(t, slim, len(recs), 90*time.Second)
	if code := d.stop(t, 45*time.Second); code != 0 {
		t.Errorf("exit code %d", code)
	}
	if len(got) != len(recs) {
		t.Fatalf("slim topic holds %d records, want %d", len(got), len(recs))
	}

	// What was produced, keyed by record key.
	want := map[string]line{}
	for _, r := range recs {
		l := line{Key: string(r.key)}
		l.Size, l.SHA256 = digest(r.value)
		want[l.Key] = l
	}

	// 1. The Go library.
	file, err := config.Load(cfg, config.Options{})
	if err != nil {
		t.Fatal(err)
	}
	p, _ := file.Select("")
	open, err := p.OpenStores(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	res := resolver.New(resolver.Options{Stores: open})
	defer res.Close()
	goLines, pointers := resolvedLines(t, res, got)
	if pointers != 18 {
		t.Errorf("%d pointers in the slim topic, want 18 (6 to each store)", pointers)
	}
	readAsWritten(t, "Go resolver", goLines, want)

	// 2. offloader cat.
	out, err := command(offloaderBinary(t), "cat", "-F", cfg).Output()
	if err != nil {
		t.Fatalf("offloader cat: %v", err)
	}
	var catLines []line
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var rec struct {
			Partition     int32   `json:"partition"`
			Offset        int64   `json:"offset"`
			Key           string  `json:"key"`
			Value         *string `json:"value"`
			ValueEncoding string  `json:"value_encoding"`
		}
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatalf("cat output %q: %v", sc.Text(), err)
		}
		var v []byte
		if rec.Value != nil {
			v = []byte(*rec.Value)
			if rec.ValueEncoding == "base64" {
				v, _ = base64.StdEncoding.DecodeString(*rec.Value)
			}
		}
		l := line{Partition: rec.Partition, Offset: rec.Offset, Key: rec.Key}
		l.Size, l.SHA256 = digest(v)
		catLines = append(catLines, l)
	}
	readAsWritten(t, "offloader cat", catLines, want)
	out, err = command(offloaderBinary(t), "cat", "-F", cfg, "-o", "offset:10", "--count", "4").Output()
	if err != nil {
		t.Fatalf("offloader cat --from offset:10: %v", err)
	}
	if lines := strings.Split(strings.TrimSpace(string(out)), "\n"); len(lines) != 4 || !strings.Contains(lines[0], `"offset":1`) {
		t.Errorf("--from offset:10 --count 4 printed %d lines, first %q", len(lines), lines[0])
	}
	future := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	if out, err := command(offloaderBinary(t), "cat", "-F", cfg, "-o", "time:"+future).Output(); err != nil || len(out) != 0 {
		t.Errorf("--from a future time: %v, %d bytes printed", err, len(out))
	}

	// 3. Python: the package (docs/examples/resolve_pointers.py uses it) and
	// the minimal reader of the documented format (docs/pointer-format.md).
	var pyLines []line
	for _, example := range []string{"resolve_pointers.py", "minimal_reader.py"} {
		cmd := command(python, "../docs/examples/"+example, bootstrap, slim,
			"blob=azblob:"+container, "disk=file:"+root, "bucket=s3:"+bucket)
		cmd.Env = append(os.Environ(), "AZURE_STORAGE_CONNECTION_STRING="+azureConnStr,
			"AWS_ENDPOINT_URL="+s3Endpoint, "AWS_S3_ADDRESSING_STYLE=path")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err = cmd.Output()
		if err != nil {
			t.Fatalf("python %s: %v\n%s", example, err, stderr.String())
		}
		pyLines = parseLines(t, example, out)
		readAsWritten(t, example, pyLines, want)
	}
	sortLines := func(ls []line) []string {
		var s []string
		for _, l := range ls {
			s = append(s, l.String())
		}
		sort.Strings(s)
		return s
	}
	if a, b := strings.Join(sortLines(goLines), "\n"), strings.Join(sortLines(pyLines), "\n"); a != b {
		t.Errorf("the Go resolver and the Python example disagree:\nGo:\n%s\nPython:\n%s", a, b)
	}
}
