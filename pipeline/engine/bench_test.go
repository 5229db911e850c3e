package engine

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/offloader/offloader/dlt"
	"github.com/offloader/offloader/pipeline"
)

// BenchmarkPerRecord runs the engine over 300,000 records of 1 KiB on 3
// partitions that pass a quick step (as records under the offload
// threshold do), against a source and a session that do nothing but hand
// records out and count them: the engine's own work per record, which the
// 1 KiB case's pipeline does beside librdkafka's (make bench compares it with
// the minimal transactional loop). It reports nanoseconds, allocations and
// bytes allocated per record.
func BenchmarkPerRecord(b *testing.B) {
	const partitions, perPartition = 3, 100_000
	value := make([]byte, 1<<10)
	var before, after runtime.MemStats
	var took time.Duration
	for range b.N {
		src := &benchSource{value: value, left: perPartition}
		for p := range int32(partitions) {
			src.parts = append(src.parts, Partition{Topic: "raw", Partition: p})
		}
		var until []Offset
		for _, p := range src.parts {
			until = append(until, Offset{Partition: p, Offset: perPartition})
		}
		eng, err := New(Options{
			Name: "bench", SourceTopics: []string{"raw"}, SlimTopic: slim, PreservePartitions: true,
			Commit: Commit{Interval: 100 * time.Millisecond, MaxRecords: 100_000, MaxBytes: 64 << 20},
			Chain:  pipeline.Chain{passQuickly{}}, Workers: pipeline.Workers{Max: 16}, Policy: dlt.NewPolicy(dlt.Rules{}, time.Now),
			SourcePartitions: map[string]int{"raw": partitions}, ShutdownTimeout: time.Second, Until: until,
		}, src, &benchSession{})
		if err != nil {
			b.Fatal(err)
		}
		runtime.GC()
		runtime.ReadMemStats(&before)
		start := time.Now()
		rep, err := eng.Run(context.Background())
		took += time.Since(start)
		runtime.ReadMemStats(&after)
		if err != nil {
			b.Fatal(err)
		}
		for _, p := range src.parts {
			if rep.Committed[p] != perPartition {
				b.Fatalf("committed %v, want %d per partition", rep.Committed, perPartition)
			}
		}
	}
	records := float64(b.N * partitions * perPartition)
	b.ReportMetric(float64(took.Nanoseconds())/records, "ns/record")
	b.ReportMetric(float64(after.Mallocs-before.Mallocs)/float64(partitions*perPartition), "allocs/record")
	b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/float64(partitions*perPartition), "B/record")
}

// passQuickly passes every record on, quickly, as the offload step does a
// record under its threshold.
type passQuickly struct{}

func (passQuickly) Apply(_ context.Context, r *pipeline.Record) (*pipeline.Record, error) {
	return r, nil
}

func (passQuickly) ApplyQuick(r *pipeline.Record) (*pipeline.Record, bool, error) {
	return r, true, nil
}

// benchSource hands out left records on each of parts, in turn, each a new
// Record (as the Kafka edge makes one per message) sharing value.
type benchSource struct {
	parts []Partition
	value []byte
	left  int
	pos   []int64
	next  int
	rb    Rebalancer
}

func (s *benchSource) Subscribe(_ []string, rb Rebalancer) error { s.rb = rb; return nil }

func (s *benchSource) Poll(time.Duration) (*pipeline.Record, error) {
	if s.pos == nil {
		s.pos = make([]int64, len(s.parts))
		if err := s.rb.Assigned(s.parts); err != nil {
			return nil, err
		}
	}
	for range s.parts {
		i := s.next % len(s.parts)
		s.next++
		if s.pos[i] < int64(s.left) {
			p := s.parts[i]
			s.pos[i]++
			return &pipeline.Record{Topic: p.Topic, Partition: p.Partition, Offset: s.pos[i] - 1, Value: s.value}, nil
		}
	}
	return nil, nil
}

func (s *benchSource) Pause([]Partition) error  { return nil }
func (s *benchSource) Resume([]Partition) error { return nil }
func (s *benchSource) Seek([]Offset) error      { return nil }
func (s *benchSource) Close() error             { return nil }

func (s *benchSource) Positions(parts []Partition) ([]Offset, error) { return s.at(parts), nil }
func (s *benchSource) Committed([]Partition) ([]Offset, error)       { return nil, nil }
func (s *benchSource) HighWatermarks(parts []Partition) ([]Offset, error) {
	var out []Offset
	for _, p := range parts {
		out = append(out, Offset{Partition: p, Offset: int64(s.left)})
	}
	return out, nil
}

func (s *benchSource) at(parts []Partition) []Offset {
	var out []Offset
	for i, p := range s.parts {
		for _, q := range parts {
			if p == q && s.pos != nil {
				out = append(out, Offset{Partition: p, Offset: s.pos[i]})
			}
		}
	}
	return out
}

// benchSession takes every call and keeps nothing.
type benchSession struct{ produced int }

func (s *benchSession) Begin(context.Context) error { return nil }
func (s *benchSession) Produce(context.Context, *pipeline.Record, string, int32) error {
	s.produced++
	return nil
}
func (s *benchSession) Commit(context.Context, []Offset) error { return nil }
func (s *benchSession) Abort(context.Context) error            { return nil }
func (s *benchSession) Close()                                 {}
