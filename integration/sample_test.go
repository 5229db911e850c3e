package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
)

// analyze --sample N and cat -o -N read the last N records of each
// partition of a topic written by transactions, where commit markers take
// every second offset and an aborted transaction ends each partition: the
// offsets they read are the last N an independent read_committed consumer
// reads, and nothing else.
func TestSampleReadsTheLastRecordsOfATransactionalTopic(t *testing.T) {
	t.Parallel() // its own topic; runs beside the other parallel tests
	const partitions, perPartition = 3, 40
	topic := uniqueName(t, "txn")
	createTopic(t, topic, partitions, nil)
	p, err := kafka.NewProducer(&kafka.ConfigMap{"bootstrap.servers": bootstrap, "transactional.id": uniqueName(t, "txid")})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	go func() {
		for range p.Events() {
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), scaled(time.Minute))
	defer cancel()
	if err := p.InitTransactions(ctx); err != nil {
		t.Fatal(err)
	}
	txn := func(commit bool, partition int32, n int) {
		t.Helper()
		if err := p.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for range n {
			if err := p.Produce(&kafka.Message{TopicPartition: kafka.TopicPartition{Topic: &topic, Partition: partition}, Value: []byte("v")}, nil); err != nil {
				t.Fatal(err)
			}
		}
		if commit {
			err = p.CommitTransaction(ctx)
		} else {
			p.Flush(10_000) // the aborted records reach the log
			err = p.AbortTransaction(ctx)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	for range perPartition {
		for part := range int32(partitions) {
			txn(true, part, 1) // a record, then its commit marker
		}
	}
	for part := range int32(partitions) {
		txn(false, part, 25)
	}
	last := map[int32][]int64{} // what a plain read_committed consumer reads
	for _, m := range consumeAll(t, topic, partitions*perPartition, 30*time.Second) {
		last[m.TopicPartition.Partition] = append(last[m.TopicPartition.Partition], int64(m.TopicPartition.Offset))
	}
	const n = 10
	want := map[int32][]int64{}
	for part, offsets := range last {
		want[part] = offsets[len(offsets)-n:]
	}

	out, err := command(offloaderBinary(t), "cat", "-b", bootstrap, "-t", topic, "-o", fmt.Sprint(-n), "-f", `%p %o\n`).Output()
	if err != nil {
		t.Fatalf("cat -o -%d: %v\n%s", n, err, out)
	}
	got := map[int32][]int64{}
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var part int32
		var offset int64
		if _, err := fmt.Sscanf(l, "%d %d", &part, &offset); err != nil {
			t.Fatalf("cat printed %q: %v", l, err)
		}
		got[part] = append(got[part], offset)
	}
	for part := range int32(partitions) {
		if !slices.Equal(got[part], want[part]) {
			t.Errorf("cat -o -%d read %v of partition %d, want %v", n, got[part], part, want[part])
		}
	}

	out, err = command(offloaderBinary(t), "analyze", "-b", bootstrap, "-t", topic, "--sample", fmt.Sprint(n), "--output", "json").Output()
	if err != nil {
		t.Fatalf("analyze --sample %d: %v\n%s", n, err, out)
	}
	var rep struct {
		Records    int64
		Partitions []struct {
			Partition int32
			Records   int64
		}
	}
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if rep.Records != partitions*n || len(rep.Partitions) != partitions {
		t.Fatalf("analyze --sample %d read %d records in %d partitions, want %d in %d\n%s", n, rep.Records, len(rep.Partitions), partitions*n, partitions, out)
	}
	for _, part := range rep.Partitions {
		if part.Records != n {
			t.Errorf("analyze --sample %d read %d records of partition %d", n, part.Records, part.Partition)
		}
	}
}

// An offload step with an if: passes by the records it does not match: over
// the slim topic's limit, run dead-letters them. check tries the if: on the
// last records of each source partition and names those records; analyze
// counts them apart from the offloaded ones.
func TestCheckNamesTheRecordsTheOffloadStepsIfPassesBy(t *testing.T) {
	t.Parallel() // its own topics; runs beside the other parallel tests
	raw, slim := uniqueName(t, "raw"), uniqueName(t, "slim")
	createTopic(t, raw, 2, map[string]string{"max.message.bytes": "8388608"})
	createTopic(t, slim, 2, nil)
	big := bytes.Repeat([]byte{'b'}, 2<<20)
	tagged := []kafka.Header{{Key: "offload", Value: []byte("yes")}}
	var recs []sourceRecord
	for i := range 10 {
		r := sourceRecord{partition: int32(i % 2), key: []byte(fmt.Sprint(i)), value: []byte("small")}
		switch i {
		case 2, 3, 6:
			r.value, r.headers = big, tagged // offloaded
		case 5, 8:
			r.value = big // passed by, over 1000000 bytes: dead-lettered
		}
		recs = append(recs, r)
	}
	produceRecords(t, raw, recs)
	cfg := newPipeline(t, "gated", raw, slim, uniqueName(t, "g")).with(t, `
stores:
  payloads: {type: filesystem, root: %q}
transforms:
  - {type: offload, store: payloads, threshold: 64KiB, if: {type: has_header, name: offload}}
`, t.TempDir()).file(t)
	out, err := command(offloaderBinary(t), "check", "-F", cfg).CombinedOutput()
	if exitCode(err) != 1 || !strings.Contains(string(out), "2 of the 10 records sampled from "+raw) ||
		!strings.Contains(string(out), raw+"[1]@2") || !strings.Contains(string(out), raw+"[0]@4") {
		t.Errorf("check: exit %d, want 1 naming %s[1]@2 and %s[0]@4 (records 5 and 8)\n%s", exitCode(err), raw, raw, out)
	}
	if out, err := command(offloaderBinary(t), "check", "-F", cfg, "--sample", "0").CombinedOutput(); err != nil {
		t.Errorf("check --sample 0 (the if: not tried): %v\n%s", err, out)
	}
	out, err = command(offloaderBinary(t), "analyze", "-F", cfg, "--output", "json").Output()
	if err != nil {
		t.Fatalf("analyze: %v\n%s", err, out)
	}
	var rep struct {
		Offload struct {
			Records      int64 `json:"records_offloaded"`
			DeadLettered int64 `json:"records_dead_lettered"`
		}
	}
	if err := json.Unmarshal(out, &rep); err != nil || rep.Offload.Records != 3 || rep.Offload.DeadLettered != 2 {
		t.Errorf("analyze: %+v (%v), want 3 offloaded and 2 dead-lettered\n%s", rep.Offload, err, out)
	}
}
