package migration

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/offloader/offloader/limits"
	"github.com/offloader/offloader/pipeline"
)

// 100 records of values 1,000 to 100,000 bytes over two partitions, a
// tombstone and a record that already is a pointer: exact percentiles,
// offload figures and gate counts.
func TestAnalysisFigures(t *testing.T) {
	size := func(n int) int { return pipeline.EstimateSize([]byte("key"), make([]byte, n), nil) }
	a := NewAnalysis(size(50_000), "payloads",
		[]Gate{{"producer message.max.bytes", 90_000}, {"consumer receive.message.max.bytes", 1 << 20}}, 3)
	var total int64
	for i := 1; i <= 100; i++ {
		r := &pipeline.Record{Topic: "fat", Partition: int32(i % 2), Offset: int64(i / 2), Key: []byte("key"), Value: bytes.Repeat([]byte{'x'}, i*1000)}
		a.Add(r)
		total += int64(size(i * 1000))
	}
	// A tombstone stays; a pointer is left as it is.
	a.Add(&pipeline.Record{Topic: "fat", Partition: 0, Offset: 50, Key: []byte("key")})
	pointerRecord := &pipeline.Record{Topic: "fat", Partition: 1, Offset: 50, Key: []byte("key"), Value: []byte(`{"v":1}`),
		Headers: []pipeline.Header{{Key: "large-message", Value: []byte("true")}, {Key: "offloader-pointer", Value: []byte("v1")}}}
	a.Add(pointerRecord)
	total += int64(pipeline.EstimateSize([]byte("key"), nil, nil) + pipeline.EstimateRecordSize(pointerRecord))
	rep := a.Report()
	if rep.Records != 102 || rep.Bytes != total || len(rep.Partitions) != 2 || rep.Partitions[0].Records != 51 {
		t.Errorf("records %d bytes %d (want %d), partitions %+v", rep.Records, rep.Bytes, total, rep.Partitions)
	}
	if rep.Offload.AlreadyPointers != 1 {
		t.Errorf("already pointers: %d, want 1", rep.Offload.AlreadyPointers)
	}
	if rep.P50 != size(49_000) || rep.P90 != size(90_000) || rep.P99 != size(99_000) || rep.Max != size(100_000) {
		t.Errorf("p50 %d p90 %d p99 %d max %d, want %d %d %d %d", rep.P50, rep.P90, rep.P99, rep.Max, size(49_000), size(90_000), size(99_000), size(100_000))
	}
	// Over the threshold: the values of 51,000 bytes and up.
	var moved int64
	for i := 51; i <= 100; i++ {
		moved += int64(i * 1000)
	}
	if rep.Offload.Records != 50 || rep.Offload.Bytes != moved || rep.Offload.SlimBytes >= total-moved+50*1000 {
		t.Errorf("offload %+v, want 50 records and %d bytes moved", rep.Offload, moved)
	}
	// Gates: records over 90,000 bytes (values from 90,000 less the overhead up).
	want := int64(0)
	for i := 1; i <= 100; i++ {
		if size(i*1000) > 90_000 {
			want++
		}
	}
	if rep.Gates[0].Records != want || rep.Gates[0].First == "" || rep.Gates[1].Records != 0 {
		t.Errorf("gates %+v, want %d over the first, none over the second", rep.Gates, want)
	}
	if len(rep.Largest) != 3 || rep.Largest[0].Size != size(100_000) || rep.Largest[2].Size != size(98_000) {
		t.Errorf("largest %+v", rep.Largest)
	}
	var histogram int64
	for _, b := range rep.Histogram {
		histogram += b.Records
		if b.To != 2*b.From {
			t.Errorf("bucket %+v is not a power of two wide", b)
		}
	}
	if histogram != 102 || rep.Histogram[0].From != 64 || rep.Histogram[len(rep.Histogram)-1].To != 131072 {
		t.Errorf("histogram %+v", rep.Histogram)
	}
}

// The offload step's if: decides which records it takes: a record over the
// threshold that the predicate passes by is not counted as offloaded, and
// over the slim topic's limit it is counted, and named, as dead-lettered.
func TestAnalysisEvaluatesTheOffloadStepsPredicate(t *testing.T) {
	a := NewAnalysis(1000, "blob", nil, 3)
	a.Gate(func(r *pipeline.Record) bool { return string(r.Key) != "skip" }, 5000)
	for i, c := range []struct {
		key  string
		size int
	}{{"take", 3000}, {"skip", 3000}, {"skip", 9000}, {"take", 9000}} {
		a.Add(&pipeline.Record{Partition: 1, Offset: int64(i), Key: []byte(c.key), Value: make([]byte, c.size)})
	}
	o := a.Report().Offload
	if o.Records != 2 || o.DeadLettered != 1 || len(o.DeadLetteredExamples) != 1 || o.DeadLetteredExamples[0] != "[1]@2" {
		t.Errorf("offloaded %d, dead-lettered %d %v; want 2 offloaded and [1]@2 dead-lettered", o.Records, o.DeadLettered, o.DeadLetteredExamples)
	}
}

// A record over the threshold whose key alone, with a pointer for its
// value, is over the slim topic's limit is not offloaded: offloading cannot
// make it fit, and it is counted, and named, as dead-lettered whole.
func TestAnalysisCountsARecordWhoseKeyDoesNotFitAsDeadLetteredWhole(t *testing.T) {
	a := NewAnalysis(1000, "blob", nil, 3)
	a.Gate(nil, 5000)
	a.Add(&pipeline.Record{Topic: "fat", Partition: 0, Offset: 0, Key: []byte("k"), Value: make([]byte, 9000)})
	a.Add(&pipeline.Record{Topic: "fat", Partition: 0, Offset: 1, Key: make([]byte, 6000), Value: make([]byte, 9000)})
	a.Add(&pipeline.Record{Topic: "fat", Partition: 0, Offset: 2, Key: []byte("k"), Value: make([]byte, 9000),
		Headers: []pipeline.Header{{Key: "trace", Value: make([]byte, 5000)}}})
	o := a.Report().Offload
	if o.Records != 1 || o.Bytes != 9000 || o.WholeRecords != 2 || strings.Join(o.WholeRecordsExamples, " ") != "fat[0]@1 fat[0]@2" {
		t.Errorf("offloaded %d (%d bytes), whole %d %v; want 1 offloaded (9000 bytes), fat[0]@1 and fat[0]@2 whole", o.Records, o.Bytes, o.WholeRecords, o.WholeRecordsExamples)
	}
}

// recordsOf is a Source of the records given, then errEnd, or fail.
type recordsOf struct {
	recs []*pipeline.Record
	fail error
}

var errEnd = errors.New("end")

func (s *recordsOf) Next(context.Context, time.Duration) (*pipeline.Record, error) {
	if len(s.recs) == 0 {
		if s.fail != nil {
			return nil, s.fail
		}
		return nil, errEnd
	}
	r := s.recs[0]
	s.recs = s.recs[1:]
	return r, nil
}

// ReadAll counts every record until the source's end, and stops on its
// other errors; the gates are the topic's own (a topic that overrides the
// broker's message.max.bytes is not held to it, and the producers' limits
// admitted its records) and the fetch caps', the slim limit the producer's
// until the slim topic exists.
func TestReadAllAndTheSourceGates(t *testing.T) {
	f := &limits.Figures{ProducerMaxMessageBytes: 1000000, BrokerMessageMaxBytes: 1048588, ConsumerReceiveMaxBytes: 100000000,
		Slim: limits.TopicInfo{Name: "slim", Role: "slim", MaxMessageBytes: 500000}}
	src := limits.TopicInfo{Name: "raw", Role: "source", Exists: true, MaxMessageBytes: 8388608, MaxDecompressedBytes: 9000000}
	gates := SourceGates(f, src, 0)
	var names []string
	for _, g := range gates {
		names = append(names, fmt.Sprintf("%s=%d", g.Name, g.Limit))
	}
	if want := "topic max.message.bytes=8388608 topic max.decompressed.message.bytes=9000000 consumer fetch.max.bytes=52428800 consumer receive.message.max.bytes=100000000"; strings.Join(names, " ") != want {
		t.Errorf("gates %s", strings.Join(names, " "))
	}
	if SlimLimitOf(f) != 1000000 {
		t.Errorf("before the slim topic exists: %d", SlimLimitOf(f))
	}
	f.Slim.Exists = true
	if SlimLimitOf(f) != 500000 {
		t.Errorf("the slim topic's: %d", SlimLimitOf(f))
	}
	a := NewAnalysis(1000, "blob", gates, 3)
	recs := &recordsOf{recs: []*pipeline.Record{{Topic: "raw", Value: make([]byte, 50)}, {Topic: "raw", Offset: 1, Value: make([]byte, 5000)}}}
	if err := a.ReadAll(context.Background(), recs, errEnd); err != nil {
		t.Fatal(err)
	}
	if r := a.Report(); r.Records != 2 || r.Offload.Records != 1 {
		t.Errorf("report: %d records, %d offloaded; want 2 and 1", r.Records, r.Offload.Records)
	}
	broken := errors.New("offset reset")
	if err := NewAnalysis(100, "blob", gates, 3).ReadAll(context.Background(), &recordsOf{fail: broken}, errEnd); !errors.Is(err, broken) {
		t.Errorf("a read error: %v", err)
	}
}
