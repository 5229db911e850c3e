package integration

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/offloader/offloader/pointer"
)

// countingAzurite is a reverse proxy in front of Azurite that counts the
// requests it passes; its connection string points at the proxy.
func countingAzurite(t *testing.T) (connStr string, requests *atomic.Int64) {
	t.Helper()
	parts := map[string]string{}
	for _, p := range strings.Split(strings.TrimRight(azureConnStr, ";"), ";") {
		k, v, _ := strings.Cut(p, "=")
		parts[k] = v
	}
	target, err := url.Parse(parts["BlobEndpoint"])
	if err != nil {
		t.Fatal(err)
	}
	requests = &atomic.Int64{}
	proxy := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: target.Scheme, Host: target.Host})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return fmt.Sprintf("DefaultEndpointsProtocol=http;AccountName=%s;AccountKey=%s;BlobEndpoint=%s%s;",
		parts["AccountName"], parts["AccountKey"], srv.URL, target.Path), requests
}

type catLine struct {
	Partition   int32  `json:"partition"`
	Offset      int64  `json:"offset"`
	Timestamp   int64  `json:"timestamp"`
	Key         string `json:"key"`
	KeyEncoding string `json:"key_encoding"`
	Headers     []struct {
		Key           string `json:"key"`
		Value         string `json:"value"`
		ValueEncoding string `json:"value_encoding"`
	} `json:"headers"`
	Value     *string `json:"value"`
	ValueFile string  `json:"value_file"`
	Size      int     `json:"size"`
	SHA256    string  `json:"sha256"`
	Pointer   *struct {
		Store string `json:"store"`
		Key   string `json:"key"`
		Size  int64  `json:"size"`
	} `json:"pointer"`
	Error string `json:"error"`
}

func decodeField(t *testing.T, s, encoding string) []byte {
	t.Helper()
	if encoding != "base64" {
		return []byte(s)
	}
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestCatWithKcatFlags: cat reads a real slim topic without a pipeline file
// (-b, -t, --store), selects by partition, offset, tail and time, prints
// kcat format strings and binary keys and headers byte for byte (escaped),
// fetches nothing from the store with --meta (the store's request count
// proves it), and writes large payloads to files.
func TestCatWithKcatFlags(t *testing.T) {
	t.Parallel()
	connStr, requests := countingAzurite(t)
	raw, slim, container := uniqueName(t, "raw"), uniqueName(t, "slim"), uniqueName(t, "c")
	createTopic(t, raw, 2, map[string]string{"max.message.bytes": "8388608"})
	createTopic(t, slim, 2, nil)
	binKey := []byte{0x00, 0xff, '\\', 'k', 0x1b}
	binHeader := []byte{0x01, 0xfe, 'h', '\n'}
	var recs []sourceRecord
	for i := range 10 {
		value := []byte(fmt.Sprintf("small-%d", i))
		if i%3 == 0 {
			value = bytes.Repeat([]byte{byte(i), 0x80}, 100<<10) // 200 KiB, not UTF-8: offloaded
		}
		recs = append(recs, sourceRecord{partition: int32(i % 2), key: append([]byte(strconv.Itoa(i)), binKey...), value: value,
			headers: []kafka.Header{{Key: "bin", Value: binHeader}, {Key: "n", Value: []byte(strconv.Itoa(i))}}})
	}
	produceRecords(t, raw, recs[:6])
	time.Sleep(50 * time.Millisecond)
	between := time.Now()
	time.Sleep(50 * time.Millisecond)
	produceRecords(t, raw, recs[6:])

	cfg := newPipeline(t, "cat", raw, slim, uniqueName(t, "g")).with(t, `
# The subtests find records by their slim offsets: one transaction for
# all, since each transaction's commit marker takes an offset too.
commit: {interval: 5s, max_records: 1000}
stores:
  payloads: {type: azblob, connection_string: %q, container: %s, create_container: true}
transforms:
  - {type: offload, store: payloads, threshold: 64KiB}
`, connStr, container).file(t)
	if out, err := command(offloaderBinary(t), "run", "-F", cfg, "--until-end").CombinedOutput(); err != nil {
		t.Fatalf("run --until-end: %v\n%s", err, out)
	}
	store := "payloads=azblob:" + connStr + "|" + container
	cat := func(args ...string) (int, string, string) {
		t.Helper()
		cmd := command(offloaderBinary(t), append([]string{"cat", "-b", bootstrap, "-t", slim}, args...)...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		return exitCode(cmd.Run()), stdout.String(), stderr.String()
	}
	lines := func(t *testing.T, out string) []catLine {
		t.Helper()
		var got []catLine
		sc := bufio.NewScanner(strings.NewReader(out))
		sc.Buffer(nil, 16<<20)
		for sc.Scan() {
			var l catLine
			if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
				t.Fatalf("not JSON: %v: %.200s", err, sc.Text())
			}
			got = append(got, l)
		}
		return got
	}
	// Where each record went: partition i%2, offset i/2.
	index := func(l catLine) int { return int(l.Offset)*2 + int(l.Partition) }

	t.Run("every record resolved, binary key and header byte for byte", func(t *testing.T) {
		code, out, errOut := cat("--store", store)
		got := lines(t, out)
		if code != 0 || len(got) != len(recs) {
			t.Fatalf("exit %d, %d records, want 0 and %d:\n%s", code, len(got), len(recs), errOut)
		}
		for _, l := range got {
			want := recs[index(l)]
			sum := sha256.Sum256(want.value)
			if l.SHA256 != hex.EncodeToString(sum[:]) || l.Value == nil || l.Size != len(want.value) {
				t.Errorf("record %d: size %d sha256 %s, want %d and %x", index(l), l.Size, l.SHA256, len(want.value), sum)
			}
			if v := decodeField(t, *l.Value, map[bool]string{true: "base64"}[index(l)%3 == 0]); !bytes.Equal(v, want.value) {
				t.Errorf("record %d: the value printed is not the value produced", index(l))
			}
			if (index(l)%3 == 0) != (l.Pointer != nil) {
				t.Errorf("record %d: pointer %v", index(l), l.Pointer)
			}
			if k := decodeField(t, l.Key, l.KeyEncoding); !bytes.Equal(k, want.key) {
				t.Errorf("record %d: key %q, want %q", index(l), k, want.key)
			}
			if h := decodeField(t, l.Headers[0].Value, l.Headers[0].ValueEncoding); l.Headers[0].Key != "bin" || !bytes.Equal(h, binHeader) {
				t.Errorf("record %d: header %s=%q, want bin=%q", index(l), l.Headers[0].Key, h, binHeader)
			}
		}
	})
	t.Run("-p -o -c select", func(t *testing.T) {
		for _, tc := range []struct {
			args []string
			want []int // record indexes, in print order within each partition
		}{
			{[]string{"-p", "1"}, []int{1, 3, 5, 7, 9}},
			{[]string{"-p", "0", "-o", "3"}, []int{6, 8}},
			{[]string{"-p", "0", "-o", "-2"}, []int{6, 8}},
			{[]string{"-p", "1", "-o", "1", "-c", "2"}, []int{3, 5}},
			{[]string{"-p", "0", "-o", "@" + strconv.FormatInt(between.UnixMilli(), 10)}, []int{6, 8}},
			{[]string{"-p", "1", "-o", "@" + between.UTC().Format(time.RFC3339Nano)}, []int{7, 9}},
		} {
			code, out, errOut := cat(append(tc.args, "--store", store)...)
			var got []int
			for _, l := range lines(t, out) {
				got = append(got, index(l))
			}
			if code != 0 || fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("cat %v: exit %d, records %v; want 0 and %v\n%s", tc.args, code, got, tc.want, errOut)
			}
		}
	})
	t.Run("kcat's invocations print what kcat prints, pointers resolved", func(t *testing.T) {
		at := "s@" + strconv.FormatInt(between.UnixMilli(), 10) // kcat's timestamp offset
		for _, tc := range []struct {
			args []string
			want string
		}{
			// Records 3 (200 KiB, offloaded: its resolved size) and 5.
			{[]string{"-C", "-p", "1", "-o", "1", "-c", "2", "-e", "-f", `%p:%o:%S\n`}, "1:1:204800\n1:2:7\n"},
			{[]string{"-C", "-p", "0", "-o", "-2", "-e", "-f", `%o %S\n`}, "3 204800\n4 7\n"},
			{[]string{"-C", "-p", "1", "-o", at, "-f", `%t[%p]@%o\n`}, fmt.Sprintf("%[1]s[1]@3\n%[1]s[1]@4\n", slim)},
			{[]string{"-C", "-p", "1", "-o", "4", "-f", `%K %S\n`, "-q"}, "6 204800\n"},
			// -o end reads only new records; with -e it stops at once.
			{[]string{"-C", "-p", "0", "-o", "end", "-e", "-f", `%o\n`}, ""},
		} {
			code, out, errOut := cat(append(tc.args, "--store", store)...)
			if code != 0 || out != tc.want {
				t.Errorf("cat %v: exit %d, printed %q; want 0 and %q\n%s", tc.args, code, out, tc.want, errOut)
			}
			quiet := slices.Contains(tc.args, "-q")
			if said := strings.Contains(errOut, "% Reached end of topic "+slim); said == quiet {
				t.Errorf("cat %v: stderr %q; the end of the topic is said unless -q", tc.args, errOut)
			}
		}
		code, out, errOut := cat("-C", "-J", "-p", "1", "-o", "2", "-c", "1", "--store", store)
		var env struct {
			Topic     string    `json:"topic"`
			Partition int32     `json:"partition"`
			Offset    int64     `json:"offset"`
			TSType    string    `json:"tstype"`
			TS        int64     `json:"ts"`
			Headers   []*string `json:"headers"`
			Key       *string   `json:"key"`
			Payload   *string   `json:"payload"`
		}
		if err := json.Unmarshal([]byte(out), &env); err != nil || code != 0 {
			t.Fatalf("cat -J: exit %d, %v: %q\n%s", code, err, out, errOut)
		}
		headers := map[string]string{}
		for i := 0; i+1 < len(env.Headers); i += 2 {
			headers[*env.Headers[i]] = *env.Headers[i+1]
		}
		if env.Topic != slim || env.Partition != 1 || env.Offset != 2 || env.TSType != "create" || env.TS == 0 ||
			env.Payload == nil || *env.Payload != "small-5" || len(env.Headers) != 6 || headers["n"] != "5" ||
			headers[pointer.HeaderSource] != raw+"/1/2" {
			t.Errorf("cat -J: %s; want kcat's envelope of record 5", out)
		}
	})
	t.Run("-f format string, escaped", func(t *testing.T) {
		code, out, errOut := cat("-p", "0", "-o", "-1", "-f", `%t|%p|%o|%k|%K|%h|%S|%P\n`, "--store", store)
		want := fmt.Sprintf(`%s|0|4|8\x00\xff\\k\x1b|6|bin=\x01\xfeh\x0a,n=8,offloader-source=%s/0/4|7|`+"\n", slim, raw)
		if code != 0 || out != want {
			t.Errorf("exit %d, printed %q, want %q\n%s", code, out, want, errOut)
		}
		code, out, _ = cat("-p", "1", "-o", "-1", "-f", `%P %S\n`, "--meta")
		if code != 0 || out != "payloads/cat/"+clusterID(t, bootstrap)+"/"+raw+"/1/4 204800\n" {
			t.Errorf("--meta -f '%%P %%S': exit %d, printed %q", code, out)
		}
	})
	t.Run("--meta fetches nothing", func(t *testing.T) {
		before := requests.Load()
		code, out, errOut := cat("--meta", "--store", store)
		got := lines(t, out)
		if code != 0 || len(got) != len(recs) {
			t.Fatalf("exit %d, %d records:\n%s", code, len(got), errOut)
		}
		for _, l := range got {
			if l.Value != nil || l.SHA256 != "" {
				t.Errorf("record %d: --meta printed a value", index(l))
			}
			if index(l)%3 == 0 && (l.Pointer == nil || l.Pointer.Size != int64(len(recs[index(l)].value)) || l.Size != len(recs[index(l)].value)) {
				t.Errorf("record %d: pointer %+v size %d", index(l), l.Pointer, l.Size)
			}
		}
		if n := requests.Load() - before; n != 0 {
			t.Errorf("--meta made %d requests to the store", n)
		}
	})
	t.Run("--payload-dir takes large and binary values", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "payloads")
		code, out, errOut := cat("--store", store, "--payload-dir", dir)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		files := 0
		for _, l := range lines(t, out) {
			want := recs[index(l)]
			if index(l)%3 != 0 {
				if l.ValueFile != "" || l.Value == nil || *l.Value != string(want.value) {
					t.Errorf("record %d: a small text value went to %q", index(l), l.ValueFile)
				}
				continue
			}
			b, err := os.ReadFile(l.ValueFile)
			if err != nil || !bytes.Equal(b, want.value) || l.Value != nil {
				t.Errorf("record %d: file %q holds %d bytes (%v), want the %d produced", index(l), l.ValueFile, len(b), err, len(want.value))
			}
			files++
		}
		if files != 4 {
			t.Errorf("%d values went to files, want 4", files)
		}
	})
	t.Run("a pointer without its store, and bad flags", func(t *testing.T) {
		code, out, errOut := cat("-p", "0", "-c", "1")
		got := lines(t, out)
		if code != 1 || len(got) != 1 || !strings.Contains(got[0].Error, `unknown store "payloads"`) {
			t.Errorf("without --store: exit %d, %+v\n%s", code, got, errOut)
		}
		for _, args := range [][]string{{"-o", "yesterday"}, {"-f", "%z"}, {"--meta", "--format", "raw"}, {"--store", "x=nosuch:y"}, {"--store", "x=azblob:no-container"}} {
			if code, _, errOut := cat(args...); code != 2 || errOut == "" {
				t.Errorf("cat %v: exit %d, want 2 with a message: %q", args, code, errOut)
			}
		}
	})
}
