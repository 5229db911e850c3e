package integration

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
)

// TestAFencedStaticMemberRejoinsOnce: the pipeline's consumer is a static
// group member (group.instance.id = its transactional.id). When another
// client joins with that identity once (as librdkafka's own member can seem
// to after a broker restart), the instance is fenced, rejoins with the same
// identity, and goes on: every record once, no exit.
func TestAFencedStaticMemberRejoinsOnce(t *testing.T) {
	t.Parallel()
	raw, slim, root, cfg := filesystemPipeline(t, "static", 2)
	group := groupOf(t, cfg)
	txid := uniqueName(t, "tx")
	recs := numberedRecords(2000, 2, 10, 100<<10, 1000)
	produceRecords(t, raw, recs[:1000])
	d := startDaemon(t, cfg, "OFFLOADER_KAFKA__TRANSACTIONAL_ID="+txid, "OFFLOADER_OBSERVABILITY__LISTEN=127.0.0.1:0")
	base := d.metricsURL(t)
	waitForMetric(t, base, "offloader_transactions_committed_total", func(v float64) bool { return v > 0 }, 60*time.Second)

	intruder, err := kafka.NewConsumer(&kafka.ConfigMap{
		"bootstrap.servers": bootstrap, "group.id": group, "group.instance.id": txid,
		"enable.auto.commit": false, "session.timeout.ms": 10000,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := intruder.Subscribe(raw, nil); err != nil {
		t.Fatal(err)
	}
	// The intruder takes the identity; the instance notices at its next
	// heartbeat and takes it back, which fences the intruder.
	fenced := false
	for end := within(30 * time.Second); time.Now().Before(end) && !fenced; {
		if e, ok := intruder.Poll(200).(kafka.Error); ok && e.IsFatal() {
			fenced = true
		}
	}
	go intruder.Close() // a fenced static member may never finish closing
	if !fenced {
		t.Fatal("the instance did not take its identity back from the intruder within 30s")
	}
	produceRecords(t, raw, recs[1000:])
	got := consumeAll(t, slim, len(recs), 90*time.Second)
	if code := d.stop(t, 45*time.Second); code != 0 {
		t.Errorf("exit code %d after SIGTERM, want 0: the instance was to rejoin, not stop", code)
	}
	if n := strings.Count(d.output(), "rejoining with the same group.instance.id"); n != 1 {
		t.Errorf("the instance logged %d rejoins, want 1", n)
	}
	store := openFS(t, root)
	assertEachOnce(t, got, len(recs), func(i int, m *kafka.Message) {
		if v := resolve(t, store, m); !bytes.Equal(v, recs[i].value) {
			t.Fatalf("key %d resolved to %d different bytes", i, len(v))
		}
	})
}
