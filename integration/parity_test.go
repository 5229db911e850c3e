package integration

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
)

// Parity and an independent checker agree: a plain Kafka consumer reads the
// fat, slim and dead-letter topics, matches each source offset to the slim
// record naming it (its offloader-source header, parsed here by hand) or to
// the dead-letter record naming it (Kafka Connect's __connect.errors.*
// headers), finds each once and in source order, and its counts per
// partition are the ones verify prints. Then a copy of the slim topic with
// two records of a partition swapped fails parity, naming both offsets.
func TestParityAgreesWithAnIndependentCheckAndCatchesASwap(t *testing.T) {
	t.Parallel() // its own topics; runs beside the other parallel tests
	const partitions = 2
	raw := uniqueName(t, "raw")
	createTopic(t, raw, partitions, map[string]string{"max.message.bytes": "8388608"})
	recs := historyRecords(40, partitions)
	// A key too large for the slim topic: the record is dead-lettered whole.
	recs = append(recs, sourceRecord{partition: 1, key: bytes.Repeat([]byte("k"), 2<<20), value: []byte("v")})
	recs = append(recs, historyRecords(6, partitions)...)
	produceRecords(t, raw, recs)
	cfg, slim, _ := migrationPipeline(t, raw, partitions)
	out, err := command(offloaderBinary(t), "migrate", "-F", cfg).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "parity OK: 2 partitions") {
		t.Fatalf("migrate: %v\n%s", err, out)
	}
	verify := func(cfg string, env ...string) (int, string) {
		cmd := command(offloaderBinary(t), "migrate", "verify", "-F", cfg)
		cmd.Env = append(os.Environ(), env...)
		out, err := cmd.CombinedOutput()
		return exitCode(err), string(out)
	}
	code, table := verify(cfg)
	if code != 0 {
		t.Fatalf("verify: exit %d\n%s", code, table)
	}

	// The independent check.
	type counts struct{ source, slim, dead int }
	want := map[int32]*counts{}
	seen := map[int32]map[int64]int{} // source offset -> times found
	for p := range int32(partitions) {
		want[p], seen[p] = &counts{}, map[int64]int{}
	}
	for _, m := range readToEnd(t, raw) {
		want[m.TopicPartition.Partition].source++
	}
	last := map[int32]int64{} // in each slim partition, the last source offset
	for _, m := range readToEnd(t, slim) {
		v, _ := headerValue(m.Headers, "offloader-source")
		i := strings.LastIndexByte(v, '/')
		j := strings.LastIndexByte(v[:max(i, 0)], '/')
		part, err1 := strconv.Atoi(v[j+1 : i])
		offset, err2 := strconv.ParseInt(v[i+1:], 10, 64)
		if i < 0 || j < 0 || v[:j] != raw || err1 != nil || err2 != nil {
			t.Fatalf("slim record %d@%d names %q", m.TopicPartition.Partition, m.TopicPartition.Offset, v)
		}
		if prev, ok := last[m.TopicPartition.Partition]; ok && offset <= prev {
			t.Errorf("slim partition %d: source offset %d after %d", m.TopicPartition.Partition, offset, prev)
		}
		last[m.TopicPartition.Partition] = offset
		want[int32(part)].slim++
		seen[int32(part)][offset]++
	}
	dead := readToEnd(t, deadLetterTopicOf(t, cfg))
	for _, m := range dead {
		p, _ := headerValue(m.Headers, "__connect.errors.partition")
		o, _ := headerValue(m.Headers, "__connect.errors.offset")
		part, err1 := strconv.Atoi(p)
		offset, err2 := strconv.ParseInt(o, 10, 64)
		if err1 != nil || err2 != nil {
			t.Fatalf("dead-letter record names partition %q offset %q", p, o)
		}
		want[int32(part)].dead++
		seen[int32(part)][offset]++
	}
	if len(dead) != 1 || want[1].dead != 1 {
		t.Fatalf("%d dead-lettered records (%d from partition 1), want the one with the 2 MiB key", len(dead), want[1].dead)
	}
	for p, c := range want {
		if len(seen[p]) != c.source {
			t.Errorf("partition %d: %d distinct source offsets found on the slim and dead-letter topics, want %d", p, len(seen[p]), c.source)
		}
		for o, n := range seen[p] {
			if n != 1 {
				t.Errorf("partition %d offset %d found %d times", p, o, n)
			}
		}
	}
	// verify prints: PARTITION OFFSETS SOURCE SLIM DEAD-LETTERED DIGEST VERDICT.
	for p, c := range want {
		row := regexp.MustCompile(regexp.QuoteMeta(fmt.Sprintf("%s[%d]", raw, p)) + `\s+\d+-\d+\s+(\d+)\s+(\d+)\s+(\d+)\s+\S+\s+ok`).FindStringSubmatch(table)
		if row == nil || row[1] != strconv.Itoa(c.source) || row[2] != strconv.Itoa(c.slim) || row[3] != strconv.Itoa(c.dead) {
			t.Errorf("partition %d: verify says %v, the independent check source %d slim %d dead-lettered %d\n%s", p, row, c.source, c.slim, c.dead, table)
		}
	}

	// A copy of the slim topic, timestamps and all, with the records at
	// slim offsets 2 and 3 of partition 0 swapped.
	swapped := uniqueName(t, "slim")
	createTopic(t, swapped, partitions, nil)
	byPartition := map[int32][]*kafka.Message{}
	for _, m := range readToEnd(t, slim) {
		byPartition[m.TopicPartition.Partition] = append(byPartition[m.TopicPartition.Partition], m)
	}
	p0 := byPartition[0]
	if len(p0) < 4 {
		t.Fatalf("slim partition 0 holds %d records", len(p0))
	}
	a, _ := headerValue(p0[2].Headers, "offloader-source")
	b, _ := headerValue(p0[3].Headers, "offloader-source")
	p0[2], p0[3] = p0[3], p0[2]
	copySlim(t, swapped, byPartition)
	code, out2 := verify(cfg, "OFFLOADER_SLIM_TOPIC="+swapped)
	// Named in the order they stand: the later source offset first.
	offA, offB := a[strings.LastIndexByte(a, '/')+1:], b[strings.LastIndexByte(b, '/')+1:]
	if code != 1 || !strings.Contains(out2, fmt.Sprintf("offsets %s and %s are out of order in the slim topic", offB, offA)) {
		t.Errorf("verify of a slim topic with source offsets %s and %s swapped: exit %d, want 1 naming both\n%s", offA, offB, code, out2)
	}
}

// copySlim produces the records of each partition to topic's same partition,
// in the order given, keys, values, headers and timestamps kept.
func copySlim(t *testing.T, topic string, byPartition map[int32][]*kafka.Message) {
	t.Helper()
	p, err := kafka.NewProducer(&kafka.ConfigMap{"bootstrap.servers": bootstrap, "enable.idempotence": true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	deliveries := make(chan kafka.Event, 1024)
	n := 0
	for part, msgs := range byPartition {
		for _, m := range msgs {
			err := p.Produce(&kafka.Message{TopicPartition: kafka.TopicPartition{Topic: &topic, Partition: part},
				Key: m.Key, Value: m.Value, Headers: m.Headers, Timestamp: m.Timestamp}, deliveries)
			if err != nil {
				t.Fatal(err)
			}
			n++
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), scaled(time.Minute))
	defer cancel()
	for range n {
		select {
		case ev := <-deliveries:
			if m := ev.(*kafka.Message); m.TopicPartition.Error != nil {
				t.Fatal(m.TopicPartition.Error)
			}
		case <-ctx.Done():
			t.Fatal("copying the slim topic took over a minute")
		}
	}
}

// deadLetterTopicOf is the dead_letter_topic a pipeline file names.
func deadLetterTopicOf(t *testing.T, cfg string) string {
	t.Helper()
	body, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`dead_letter_topic: ([\w.-]+)`).FindSubmatch(body)
	if m == nil {
		t.Fatalf("%s names no dead_letter_topic", cfg)
	}
	return string(m[1])
}
