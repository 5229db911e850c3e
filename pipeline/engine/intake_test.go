package engine

import (
	"context"
	"testing"
	"time"

	"github.com/offloader/offloader/dlt"
	"github.com/offloader/offloader/pipeline"
)

// uploadsOn0 uploads the records of raw[0] (on a worker, until open is
// closed) and passes the others' quickly, as the offload step passes
// records under its threshold.
type uploadsOn0 struct{ open chan struct{} }

func (u uploadsOn0) Apply(ctx context.Context, r *pipeline.Record) (*pipeline.Record, error) {
	select {
	case <-u.open:
		return r, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (u uploadsOn0) ApplyQuick(r *pipeline.Record) (*pipeline.Record, bool, error) {
	return r, r.Partition != 0, nil
}

// A partition whose records need no upload never waits on another's: while
// raw[0]'s uploads hold every upload slot and as many records wait for one
// (the slots' case), or hold three quarters of commit.max_bytes (the
// bytes' case), raw[0] is paused and the three other partitions' records
// are read, produced and committed; once raw[0]'s uploads finish it
// resumes, and every record is committed once, in order.
func TestAPartitionWithoutUploadsNeverWaitsOnAnothers(t *testing.T) {
	for _, c := range []struct {
		name    string
		workers int
		value   int // raw[0]'s values' size
		bound   int // commit.max_bytes
	}{
		{"upload slots", 2, 10, 1 << 20},
		{"commit.max_bytes", 64, 1000, 8000},
	} {
		t.Run(c.name, func(t *testing.T) {
			p2, p3 := Partition{Topic: "raw", Partition: 2}, Partition{Topic: "raw", Partition: 3}
			u := uploadsOn0{open: make(chan struct{})}
			h := filled(t, dlt.Rules{}, pipeline.Chain{u}, 30, p0, p1, p2, p3)
			for _, r := range h.b.logs[p0] {
				r.Value = make([]byte, c.value)
			}
			h.opts.Workers = pipeline.Workers{Max: c.workers}
			h.opts.Commit.MaxBytes = c.bound
			var othersDone bool
			if _, err := h.run(func() bool {
				h.clock.advance(10 * time.Millisecond) // time passes while the uploads stand still
				if !othersDone && h.b.committedAt(p1) == 30 && h.b.committedAt(p2) == 30 && h.b.committedAt(p3) == 30 {
					othersDone = true
					if n := h.b.committedAt(p0); n != 0 {
						t.Errorf("raw[0] committed %d records while its uploads were held, want 0", n)
					}
					close(u.open)
				}
				return false
			}); err != nil {
				t.Fatal(err)
			}
			if !othersDone {
				t.Fatal("the other partitions did not commit while raw[0]'s uploads were held")
			}
			h.exactlyOnce(map[Partition]int{p0: 30, p1: 30, p2: 30, p3: 30})
		})
	}
}
