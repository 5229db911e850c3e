package integration

import (
	"bytes"
	"strconv"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
)

// One partition's backlog of uploads to a slow store (each PUT answered
// after 2 s) holds up no other partition: raw[0] has 160 records of 100 KiB,
// all offloaded, 16 uploads at once; once its uploads run, 11 partitions
// get 50 records of 100 bytes each, which need no upload. They are all
// committed before raw[0]'s first two rounds of uploads are answered (32
// PUTs, 4 s); the engine that stopped reading while the upload slots were
// full read them after 65 of its PUTs. Every record is then in the slim
// topic once, in order.
func TestAPartitionWithoutUploadsNeverWaitsOnASlowStore(t *testing.T) {
	t.Parallel()
	const partitions, large, small, rounds = 12, 160, 50, 2
	raw, slim := uniqueName(t, "raw"), uniqueName(t, "slim")
	createTopic(t, raw, partitions, map[string]string{"max.message.bytes": "8388608"})
	createTopic(t, slim, partitions, nil)
	group := uniqueName(t, "g")
	url, puts := countingRemoteStore(t, 2*time.Second)
	// Keys are the records' indexes in the order written: 0-159 on raw[0],
	// then partition p's j-th small record is 160 + (p-1)*50 + j.
	value := func(i int) []byte {
		size := 100
		if i < large {
			size = 100 << 10
		}
		v := bytes.Repeat([]byte{byte('a' + i%26)}, size)
		copy(v, strconv.Itoa(i)+":")
		return v
	}
	var recs []sourceRecord
	for i := range large {
		recs = append(recs, sourceRecord{partition: 0, key: []byte(strconv.Itoa(i)), value: value(i)})
	}
	produceRecords(t, raw, recs)
	cfg := newPipeline(t, "intake", raw, slim, group).with(t, `
commit: {interval: 200ms}
memory: {max_uploads: 16}
stores:
  payloads: {type: http, url: %q, auth_token: intake}
transforms:
  - {type: offload, store: payloads, threshold: 16KiB}
observability: {listen: "127.0.0.1:0", log_format: console}`, url).file(t)
	d := startDaemon(t, cfg)
	for deadline := within(time.Minute); puts.Load() == 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no PUT reached the store a minute after the start:\n%s", d.output())
		}
	}
	recs = recs[:0]
	for p := 1; p < partitions; p++ {
		for j := range small {
			i := large + (p-1)*small + j
			recs = append(recs, sourceRecord{partition: int32(p), key: []byte(strconv.Itoa(i)), value: value(i)})
		}
	}
	produceRecords(t, raw, recs)
	deadline := within(5 * time.Minute)
	for {
		committed := committedByPartition(t, bootstrap, group, raw)
		done := 0
		for p := int32(1); p < partitions; p++ {
			if committed[p] == small {
				done++
			}
		}
		if done == partitions-1 {
			if n := puts.Load(); n >= rounds*16 {
				t.Errorf("the 11 partitions without uploads were committed after %d of raw[0]'s %d PUTs, want fewer than %d: they waited on its backlog", n, large, rounds*16)
			}
			t.Logf("the 11 partitions without uploads were committed after %d of raw[0]'s %d PUTs (raw[0] at %d)", puts.Load(), large, committed[0])
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the partitions without uploads committed %v of %d records each in 5 minutes", committed, small)
		}
		time.Sleep(50 * time.Millisecond)
	}
	n := large + (partitions-1)*small
	got := consumeAll(t, slim, n, 3*time.Minute)
	if code := d.stop(t, 60*time.Second); code != 0 {
		t.Errorf("exit code %d after SIGTERM", code)
	}
	assertEachOnce(t, got, n, func(i int, m *kafka.Message) {
		want := int32(0)
		if i >= large {
			want = int32(1 + (i-large)/small)
		}
		if m.TopicPartition.Partition != want {
			t.Fatalf("key %d in slim partition %d, want %d", i, m.TopicPartition.Partition, want)
		}
		if i >= large && !bytes.Equal(m.Value, value(i)) {
			t.Fatalf("key %d: a value of %d bytes, want the source's %d", i, len(m.Value), len(value(i)))
		}
	})
}
