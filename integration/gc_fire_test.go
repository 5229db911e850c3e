package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/offloader/offloader/pointer"
	"github.com/offloader/offloader/stores"
)

// gc under fire: two instances of the daemon take records as they arrive
// and are killed (-9) and restarted in turn, retention (DeleteRecords)
// removes the slim topic's records older than 10 s, and gc runs in a
// loop at the smallest grace the pipeline allows. gc may stop (an offset
// reset under its reader), but it must never delete a live payload:
// afterwards every pointer still on the slim and dead-letter topics
// resolves, byte for byte, and gc did delete the payloads retention freed.
func TestGCUnderFire(t *testing.T) {
	t.Parallel()
	const partitions, n = 3, 1500
	raw, slim, dead := uniqueName(t, "raw"), uniqueName(t, "slim"), uniqueName(t, "dlt")
	createTopic(t, raw, partitions, map[string]string{"max.message.bytes": "8388608"})
	createTopic(t, slim, partitions, nil)
	createTopic(t, dead, 1, nil)
	root := t.TempDir()
	group := uniqueName(t, "g")
	cfg := gcPipelineFile(t, "fire", raw, slim, group, fmt.Sprintf("      payloads: {type: filesystem, root: %q}", root),
		"{session.timeout.ms: 6000, heartbeat.interval.ms: 1000}", "    errors: {dead_letter_topic: "+dead+", store_budget: 2s}")
	recs := numberedRecords(n, partitions, 4, 100<<10, 500)
	txIDs := []string{uniqueName(t, "tx-a"), uniqueName(t, "tx-b")}
	var mu sync.Mutex
	instances := make([]*daemon, len(txIDs))
	for i, id := range txIDs {
		instances[i] = startDaemon(t, cfg, "OFFLOADER_KAFKA__TRANSACTIONAL_ID="+id)
	}

	done := make(chan struct{})
	var wg sync.WaitGroup
	every := func(d time.Duration, f func()) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-done:
					return
				case <-time.After(d):
					f()
				}
			}
		}()
	}
	kills := 0
	every(2500*time.Millisecond, func() {
		mu.Lock()
		defer mu.Unlock()
		i := kills % len(instances)
		instances[i].kill9()
		instances[i] = startDaemon(t, cfg, "OFFLOADER_KAFKA__TRANSACTIONAL_ID="+txIDs[i])
		kills++
	})
	admin := newAdmin(t)
	store := openFS(t, root)
	every(700*time.Millisecond, func() {
		// Retention: every record older than 10 s goes (longer than the
		// grace, so that payloads past the grace stay referenced).
		ctx, cancel := context.WithTimeout(context.Background(), scaled(10*time.Second))
		defer cancel()
		req := map[kafka.TopicPartition]kafka.OffsetSpec{}
		for p := range int32(partitions) {
			req[kafka.TopicPartition{Topic: &slim, Partition: p}] = kafka.NewOffsetSpecForTimestamp(time.Now().Add(-10 * time.Second).UnixMilli())
		}
		res, err := admin.ListOffsets(ctx, req)
		if err != nil {
			return
		}
		var tps []kafka.TopicPartition
		for tp, r := range res.ResultInfos {
			if r.Error.Code() == kafka.ErrNoError && r.Offset > 0 {
				tps = append(tps, kafka.TopicPartition{Topic: &slim, Partition: tp.Partition, Offset: r.Offset})
			}
		}
		if len(tps) > 0 {
			admin.DeleteRecords(ctx, tps)
		}
	})
	var gcMu sync.Mutex
	var runs, stopped, deleted int64
	every(100*time.Millisecond, func() {
		out, err := command(offloaderBinary(t), "gc", "-F", cfg, "--grace", gcGrace.String(), "--output", "json").Output()
		var rep gcReport
		if len(out) > 0 && json.Unmarshal(out, &rep) != nil {
			t.Errorf("gc printed no report: %s", out)
		}
		objects, _ := rep.Deleted()
		gcMu.Lock()
		defer gcMu.Unlock()
		runs++
		deleted += objects
		if err != nil {
			stopped++
		}
		// Right away, before retention removes the evidence: no record still
		// in the log points to an object that is gone.
		for _, lost := range lostPayloads(t, admin, store, slim) {
			t.Errorf("after gc run %d: %s", runs, lost)
		}
	})

	for i := 0; i < n; i += 50 {
		produceRecords(t, raw, recs[i:i+50])
		time.Sleep(500 * time.Millisecond)
	}
	// The records keep coming until the last batch; then the fire stops and
	// the instances catch up.
	close(done)
	wg.Wait()
	deadline := within(2 * time.Minute)
	for sum(committedByPartition(t, bootstrap, group, raw)) < int64(n) {
		if time.Now().After(deadline) {
			t.Fatalf("the group committed %d of %d records", sum(committedByPartition(t, bootstrap, group, raw)), n)
		}
		time.Sleep(200 * time.Millisecond)
	}
	for _, d := range instances {
		if code := d.stop(t, 45*time.Second); code != 0 {
			t.Errorf("an instance exited %d", code)
		}
	}
	t.Logf("%d kills; gc ran %d times, stopped %d times, deleted %d objects", kills, runs, stopped, deleted)
	if runs == stopped || deleted == 0 {
		t.Errorf("gc ran %d times, stopped %d, deleted %d objects: it never collected what retention freed", runs, stopped, deleted)
	}
	resolved := 0
	for _, topic := range []string{slim, dead} {
		for _, m := range readToEnd(t, topic) {
			var i int
			fmt.Sscan(string(m.Key), &i)
			if v := resolve(t, store, m); !bytes.Equal(v, recs[i].value) {
				t.Errorf("%s[%d]@%d (key %d) resolves to other bytes", topic, m.TopicPartition.Partition, m.TopicPartition.Offset, i)
			}
			resolved++
		}
	}
	if resolved == 0 {
		t.Error("nothing was left on the slim topic to resolve")
	}
}

// lostPayloads reads topic as an independent client (jumping over records
// that retention deleted) and names each pointer whose object is gone
// while its record is still in the log (at or past the log start measured
// after the object was found missing).
func lostPayloads(t *testing.T, admin *kafka.AdminClient, s stores.Store, topic string) []string {
	c, err := kafka.NewConsumer(&kafka.ConfigMap{"bootstrap.servers": bootstrap, "group.id": uniqueName(t, "live"),
		"enable.auto.commit": false, "isolation.level": "read_committed", "enable.partition.eof": true, "auto.offset.reset": "earliest"})
	if err != nil {
		return []string{err.Error()}
	}
	defer c.Close()
	md, err := c.GetMetadata(&topic, false, 10000)
	if err != nil {
		return []string{err.Error()}
	}
	var tps []kafka.TopicPartition
	for _, p := range md.Topics[topic].Partitions {
		tps = append(tps, kafka.TopicPartition{Topic: &topic, Partition: p.ID, Offset: kafka.OffsetBeginning})
	}
	if err := c.Assign(tps); err != nil {
		return []string{err.Error()}
	}
	var missing []*kafka.Message
	ends := map[int32]bool{}
	for deadline := within(30 * time.Second); time.Now().Before(deadline); {
		switch ev := c.Poll(100).(type) {
		case *kafka.Message:
			p, err := pointer.Decode(ev.Value)
			if err != nil {
				continue // an inline record
			}
			if _, err := s.Stat(context.Background(), p.Key); errors.Is(err, stores.ErrNotFound) {
				missing = append(missing, ev)
			}
		case kafka.PartitionEOF:
			ends[ev.Partition] = true
		}
		if len(ends) == len(tps) {
			break
		}
	}
	var lost []string
	for _, m := range missing {
		ctx, cancel := context.WithTimeout(context.Background(), scaled(10*time.Second))
		res, err := admin.ListOffsets(ctx, map[kafka.TopicPartition]kafka.OffsetSpec{{Topic: &topic, Partition: m.TopicPartition.Partition}: kafka.EarliestOffsetSpec})
		cancel()
		if err != nil {
			continue
		}
		for _, r := range res.ResultInfos {
			if m.TopicPartition.Offset >= r.Offset {
				lost = append(lost, fmt.Sprintf("%s[%d]@%d is still in the log (which starts at %d), but its payload is gone", topic, m.TopicPartition.Partition, m.TopicPartition.Offset, r.Offset))
			}
		}
	}
	return lost
}
