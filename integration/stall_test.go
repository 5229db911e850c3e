package integration

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
)

// heldStore is an HTTP store whose PUTs of payloads wait until open is
// called: the uploads of the records behind it stand still.
type heldStore struct {
	mu      sync.Mutex
	objects map[string][]byte
	release chan struct{}
	once    sync.Once
}

func startHeldStore(t *testing.T) (*heldStore, string) {
	s := &heldStore{objects: map[string][]byte{}, release: make(chan struct{})}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodPut:
			body, err := io.ReadAll(r.Body)
			if err != nil {
				w.WriteHeader(http.StatusBadRequest)
				return
			}
			if !strings.Contains(r.URL.Path, "offloader-probe") { // the start-up probe passes
				select {
				case <-s.release:
				case <-r.Context().Done():
					return
				}
			}
			s.mu.Lock()
			s.objects[r.URL.Path] = body
			s.mu.Unlock()
			w.WriteHeader(http.StatusCreated)
		case http.MethodGet, http.MethodHead:
			s.mu.Lock()
			body, ok := s.objects[r.URL.Path]
			s.mu.Unlock()
			if !ok {
				w.WriteHeader(http.StatusNotFound)
				return
			}
			w.Header().Set("Content-Length", strconv.Itoa(len(body)))
			w.Write(body) // nothing for a HEAD
		default:
			w.WriteHeader(http.StatusMethodNotAllowed)
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(s.open)
	return s, srv.URL
}

func (s *heldStore) open() { s.once.Do(func() { close(s.release) }) }

// stalledSeconds is offloader_partition_stalled_seconds of topic's
// partition on the instance at base (-1: no such series).
func stalledSeconds(t *testing.T, base, topic string, partition int) float64 {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	want := []string{`partition="` + strconv.Itoa(partition) + `"`, `topic="` + topic + `"`}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "offloader_partition_stalled_seconds{") || !strings.Contains(line, want[0]) || !strings.Contains(line, want[1]) {
			continue
		}
		v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		if err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		return v
	}
	return -1
}

// A partition held back on purpose (its uploads wait on a store that does
// not answer, and the records behind them stay unread) is reported stalled:
// offloader_partition_stalled_seconds and /status's stalled_seconds grow
// for it while the other partition, which has no lag, stays at 0; once the
// store answers, it moves and the stall is gone. Every record is committed
// once.
func TestAPartitionHeldBackIsReportedStalledAndClears(t *testing.T) {
	t.Parallel()
	const large, small = 40, 20
	raw, slim := uniqueName(t, "raw"), uniqueName(t, "slim")
	createTopic(t, raw, 2, map[string]string{"max.message.bytes": "8388608"})
	createTopic(t, slim, 2, nil)
	store, url := startHeldStore(t)
	value := func(i int) []byte {
		size := 100
		if i < large {
			size = 100 << 10
		}
		return bytes.Repeat([]byte{byte('a' + i%26)}, size)
	}
	var recs []sourceRecord
	for i := range large + small {
		p := int32(0)
		if i >= large {
			p = 1
		}
		recs = append(recs, sourceRecord{partition: p, key: []byte(strconv.Itoa(i)), value: value(i)})
	}
	produceRecords(t, raw, recs)
	cfg := newPipeline(t, "stall", raw, slim, uniqueName(t, "g")).with(t, `
commit: {interval: 100ms}
memory: {max_uploads: 4}
# The held uploads stay within one try and the budget: an outage would
# pause the pipeline, and a paused partition is not stalled.
errors: {store_budget: 2m}
stores:
  payloads: {type: http, url: %q, auth_token: stall, try_timeout: 100s}
transforms:
  - {type: offload, store: payloads, threshold: 16KiB}
observability: {listen: "127.0.0.1:0", log_format: console}`, url).file(t)
	d := startDaemon(t, cfg)
	base := d.metricsURL(t)
	// The figures refresh every 5 s: raw[0] is reported once it stood
	// still for two refreshes.
	deadline := within(2 * time.Minute)
	for stalledSeconds(t, base, raw, 0) < 10 {
		if time.Now().After(deadline) {
			t.Fatalf("raw[0] stalled %v s after 2 minutes held back, want 10 at least; status %+v", stalledSeconds(t, base, raw, 0), adminStatus(t, base))
		}
		time.Sleep(200 * time.Millisecond)
	}
	if s := stalledSeconds(t, base, raw, 1); s != 0 {
		t.Errorf("raw[1], with no lag, is reported stalled for %v s", s)
	}
	st := adminStatus(t, base)
	for _, p := range st.Partitions {
		if p.Partition == 0 && p.StalledSeconds < 10 {
			t.Errorf("/status shows raw[0] stalled for %d s, want 10 at least", p.StalledSeconds)
		}
	}
	store.open()
	for stalledSeconds(t, base, raw, 0) != 0 {
		if time.Now().After(deadline.Add(time.Minute)) {
			t.Fatalf("raw[0] still reported stalled for %v s after its store answered", stalledSeconds(t, base, raw, 0))
		}
		time.Sleep(200 * time.Millisecond)
	}
	got := consumeAll(t, slim, large+small, 2*time.Minute)
	if code := d.stop(t, 60*time.Second); code != 0 {
		t.Errorf("exit code %d after SIGTERM", code)
	}
	if n := strings.Count(d.output(), "partition moves again"); n != 0 {
		t.Errorf("%d 'moves again' lines for a stall under the minute's WARN, want none", n)
	}
	assertEachOnce(t, got, large+small, func(i int, m *kafka.Message) {
		if want := int32(i / large); m.TopicPartition.Partition != want {
			t.Fatalf("key %d in slim partition %d", i, m.TopicPartition.Partition)
		}
	})
}
