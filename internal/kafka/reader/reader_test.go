package reader

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/offloader/offloader/internal/kafka/kfaketest"
)

// The Reader (offloader cat, the demo) reads each partition from its start to
// its end and then says so.
func TestTheReaderReadsEachPartitionToItsEnd(t *testing.T) {
	bootstrap := kfaketest.StartBroker(t, "raw")
	kfaketest.Produce(t, bootstrap, 20)
	for _, c := range []struct {
		from  Start
		want  int
		only  []int32
		until map[int32]int64
	}{{Start{Offset: Beginning}, 60, nil, nil}, {Start{Offset: 15}, 15, nil, nil}, {Start{Tail: 3}, 9, nil, nil},
		{Start{Tail: 3}, 3, []int32{1}, nil}, {Start{Tail: 25}, 60, nil, nil}, {Start{Tail: 20}, 60, nil, nil}, {Start{Offset: Beginning}, 40, []int32{0, 2}, nil},
		{Start{Offset: 5}, 27, nil, map[int32]int64{0: 10, 1: 12, 2: 30}}} {
		r, err := OpenReader(ReaderOptions{Bootstrap: bootstrap, Properties: map[string]string{"enable.metrics.push": "false"}, Topic: "raw", Partitions: c.only, From: c.from, Until: c.until})
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for {
			rec, err := r.Next(context.Background(), 5*time.Second)
			if errors.Is(err, ErrEnd) {
				break
			}
			if err != nil || rec == nil {
				t.Fatalf("after %d records: %v (nil record: %v)", n, err, rec == nil)
			}
			if want := fmt.Sprintf("%d-%d", rec.Partition, rec.Offset); string(rec.Value) != want {
				t.Fatalf("record %s[%d]@%d holds %q", rec.Topic, rec.Partition, rec.Offset, rec.Value)
			}
			if c.only != nil && !slices.Contains(c.only, rec.Partition) {
				t.Fatalf("from %+v of partitions %v: read partition %d", c.from, c.only, rec.Partition)
			}
			if stop, ok := c.until[rec.Partition]; ok && rec.Offset >= stop {
				t.Fatalf("until %v: read %d@%d", c.until, rec.Partition, rec.Offset)
			}
			if c.from.Tail > 0 && rec.Offset < max(0, 20-c.from.Tail) {
				t.Fatalf("the last %d records: read offset %d of 20", c.from.Tail, rec.Offset)
			}
			n++
		}
		r.Close()
		if n != c.want {
			t.Errorf("from %+v: %d records, want %d", c.from, n, c.want)
		}
	}
}
