package integration

import (
	"fmt"
	"strconv"
	"testing"
	"time"
)

// Every partition with a backlog is read, whichever its broker fetches
// first. With the daemon behind (records waiting on every partition),
// librdkafka's one prefetch queue is at its bound after each fetch response,
// which takes every partition off the broker's fetch list; once the queue
// drains the list is rebuilt in the order the partitions joined the
// broker, and the broker fills a response partition by partition in that
// order: the first partition with a response's worth of backlog took every
// response, and the others of its broker got nothing. On a 3-node cluster a
// partition went unread for minutes once a leader change put it behind a
// backlogged partition of the same instance. Here 3 partitions of one
// broker hold 12,000 records of 1,000 bytes each (a response is 2 MiB, some
// 2,000 of them, at a 16 MiB budget), read at a transaction per record
// (some 30 a second here): every one has records committed before any has
// 9,000 (the engine's turns: a partition with lag not read for 10 s while
// others are gets the fetches to itself until a record of it is read; here
// the first had some 500); without turns the others got their first
// records once the first had a response's worth left (with 8,000 each, the
// first had 5,013 committed and the others none). The daemon then stops, and the
// slim topic holds each partition's records below its committed offset,
// once, in order.
func TestEveryPartitionWithABacklogIsRead(t *testing.T) {
	t.Parallel()
	const partitions, each, starved = 3, 12_000, 9000
	raw, slim, group := uniqueName(t, "raw"), uniqueName(t, "slim"), uniqueName(t, "g")
	createTopic(t, raw, partitions, nil)
	createTopic(t, slim, partitions, nil)
	fill(t, raw, partitions*each, 1000, partitions)
	cfg := pipelineFile(t, "turns", raw, slim, group, fmt.Sprintf("      payloads: {type: filesystem, root: %q}", t.TempDir()), `
commit: {max_records: 1}
memory: {in_flight: 16MiB}`)
	d := startDaemon(t, cfg)
	var committed map[int32]int64
	for deadline := within(5 * time.Minute); ; time.Sleep(100 * time.Millisecond) {
		committed = committedByPartition(t, bootstrap, group, raw)
		lead, least := int64(0), int64(each)
		for p := range int32(partitions) {
			lead, least = max(lead, committed[p]), min(least, committed[p])
		}
		if least > 0 {
			t.Logf("every partition had records committed when the first had %d of its %d: %v", lead, each, committed)
			break
		}
		if lead >= starved {
			t.Fatalf("a partition had %d of its %d records committed before another had any: committed %v\n%s", lead, each, committed, d.output())
		}
		if time.Now().After(deadline) {
			t.Fatalf("not every partition had a record committed within 5 minutes: committed %v\n%s", committed, d.output())
		}
	}
	if code := d.stop(t, 45*time.Second); code != 0 {
		t.Fatalf("exit %d after SIGTERM", code)
	}
	committed = committedByPartition(t, bootstrap, group, raw)
	total := 0
	for _, c := range committed {
		total += int(c)
	}
	got := consumeIsolated(t, slim, "read_committed", total, 2*time.Minute)
	if len(got) != total {
		t.Fatalf("the slim topic holds %d records, the group committed %d: %v", len(got), total, committed)
	}
	next := map[int32]int64{}
	for _, m := range got {
		p := m.TopicPartition.Partition
		if want := strconv.FormatInt(next[p]*partitions+int64(p), 10); string(m.Key) != want {
			t.Fatalf("slim partition %d: record %d has key %s, want %s (each record once, in order)", p, next[p], m.Key, want)
		}
		next[p]++
	}
	if fmt.Sprint(next) != fmt.Sprint(committed) {
		t.Fatalf("the slim topic holds %v records per partition, the group committed %v", next, committed)
	}
}
