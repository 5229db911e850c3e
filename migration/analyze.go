package migration

import (
	"cmp"
	"maps"
	"math/bits"
	"slices"
	"strconv"
	"strings"

	"github.com/offloader/offloader/pipeline"
	"github.com/offloader/offloader/pointer"
)

// Gate is a size limit a record may break today.
type Gate struct {
	Name  string `json:"gate"`
	Limit int    `json:"limit"`
}

// Analysis collects the sizes of a topic's records: what offloading at a
// threshold would do with them, and which gates they break. Sizes are the
// producer's estimate of a record (key, value, headers and framing), the
// figure the offload step and the size gates use.
type Analysis struct {
	threshold int
	store     string
	gates     []Gate
	top       int

	parts   map[int32]*PartitionFigures
	sizes   []int32
	largest []Largest
	over    []GateFigures
	offload Offload
	// applies and slimLimit: see Gate.
	applies   func(*pipeline.Record) bool
	slimLimit int
}

// PartitionFigures are one partition's records and bytes.
type PartitionFigures struct {
	Partition int32 `json:"partition"`
	Records   int64 `json:"records"`
	Bytes     int64 `json:"bytes"`
}

// Largest is one of the largest records.
type Largest struct {
	Partition   int32 `json:"partition"`
	Offset      int64 `json:"offset"`
	Size        int   `json:"size"`
	KeyBytes    int   `json:"key_bytes"`
	HeaderBytes int   `json:"header_bytes"`
}

// GateFigures are the records over one gate.
type GateFigures struct {
	Gate
	Records int64 `json:"records_over"`
	// First is the first record over it, as partition@offset ("" for none).
	First string `json:"first,omitempty"`
}

// Offload is what offloading at the threshold would do.
type Offload struct {
	Threshold int   `json:"threshold"`
	Records   int64 `json:"records_offloaded"`
	// Bytes are the values moved to the store.
	Bytes int64 `json:"store_bytes"`
	// SlimBytes is the slim topic's size: the records kept inline plus a
	// pointer record for each offloaded one.
	SlimBytes int64 `json:"slim_bytes"`
	// AlreadyPointers are records that already are pointers (left as they are).
	AlreadyPointers int64 `json:"already_pointers"`
	// DeadLettered are records the offload step would not take (its if:
	// predicate does not match them) that are over the slim topic's limit:
	// they would go to the dead-letter topic; a few are named.
	DeadLettered         int64    `json:"records_dead_lettered"`
	DeadLetteredExamples []string `json:"dead_lettered_examples,omitempty"`
	// WholeRecords are records over the threshold whose key and headers
	// alone, with a pointer for the value, are over the slim topic's limit:
	// offloading the value cannot make them fit, so they would go to the
	// dead-letter topic, each stored whole as one object; a few are named.
	WholeRecords         int64    `json:"records_dead_lettered_whole"`
	WholeRecordsExamples []string `json:"dead_lettered_whole_examples,omitempty"`
}

// Bucket is a histogram bar: records of size [From, To).
type Bucket struct {
	From    int   `json:"from"`
	To      int   `json:"to"`
	Records int64 `json:"records"`
}

// Report is an analysis's result.
type Report struct {
	Records    int64              `json:"records"`
	Bytes      int64              `json:"bytes"`
	Partitions []PartitionFigures `json:"partitions"`
	P50        int                `json:"p50"`
	P90        int                `json:"p90"`
	P99        int                `json:"p99"`
	Max        int                `json:"max"`
	Histogram  []Bucket           `json:"histogram"`
	Largest    []Largest          `json:"largest"`
	Offload    Offload            `json:"offload"`
	Gates      []GateFigures      `json:"gates"`
}

// NewAnalysis returns an analysis for an offload step at threshold bytes
// storing in store, checking gates, keeping the top largest records.
func NewAnalysis(threshold int, store string, gates []Gate, top int) *Analysis {
	a := &Analysis{threshold: threshold, store: store, gates: gates, top: top, parts: map[int32]*PartitionFigures{}}
	for _, g := range gates {
		a.over = append(a.over, GateFigures{Gate: g})
	}
	a.offload.Threshold = threshold
	return a
}

// Gate tells the analysis which records the offload step applies to (its
// if: predicate, negate applied; nil: all) and the slim topic's limit (0:
// unknown), so that a record the step passes by and that is over the limit
// counts as dead-lettered, not offloaded.
func (a *Analysis) Gate(applies func(*pipeline.Record) bool, slimLimit int) {
	a.applies, a.slimLimit = applies, slimLimit
}

// Add counts a record.
func (a *Analysis) Add(r *pipeline.Record) {
	size := pipeline.EstimateRecordSize(r)
	pf := a.parts[r.Partition]
	if pf == nil {
		pf = &PartitionFigures{Partition: r.Partition}
		a.parts[r.Partition] = pf
	}
	pf.Records++
	pf.Bytes += int64(size)
	a.sizes = append(a.sizes, int32(size))
	a.keepLargest(Largest{Partition: r.Partition, Offset: r.Offset, Size: size, KeyBytes: len(r.Key), HeaderBytes: pipeline.HeadersSize(r.Headers)})
	for i := range a.over {
		if size > a.over[i].Limit {
			if a.over[i].Records++; a.over[i].First == "" {
				a.over[i].First = partitionAt(r)
			}
		}
	}
	switch {
	case pointer.IsPointer(r.Header):
		a.offload.AlreadyPointers++
		a.offload.SlimBytes += int64(size)
	case r.Value != nil && a.threshold > 0 && size > a.threshold && (a.applies == nil || a.applies(r)):
		if ps := a.pointerSize(r); a.slimLimit > 0 && ps > a.slimLimit {
			a.offload.WholeRecords++
			if len(a.offload.WholeRecordsExamples) < 5 {
				a.offload.WholeRecordsExamples = append(a.offload.WholeRecordsExamples, partitionAt(r))
			}
			break
		}
		a.offload.Records++
		a.offload.Bytes += int64(len(r.Value))
		a.offload.SlimBytes += int64(a.pointerSize(r))
	case a.slimLimit > 0 && size > a.slimLimit:
		a.offload.DeadLettered++
		if len(a.offload.DeadLetteredExamples) < 5 {
			a.offload.DeadLetteredExamples = append(a.offload.DeadLetteredExamples, partitionAt(r))
		}
	default:
		a.offload.SlimBytes += int64(size)
	}
}

func partitionAt(r *pipeline.Record) string {
	return r.Topic + "[" + strconv.Itoa(int(r.Partition)) + "]@" + strconv.FormatInt(r.Offset, 10)
}

// pointerSize is the size of the pointer record that would replace r.
func (a *Analysis) pointerSize(r *pipeline.Record) int {
	p := pointer.Pointer{Store: a.store, Key: string(pointer.Source(r.Topic, r.Partition, r.Offset)),
		Size: int64(len(r.Value)), SHA256: strings.Repeat("0", 64), Codec: pointer.CodecNone, StoredSize: int64(len(r.Value))}
	headers := append(slices.Clone(r.Headers),
		pipeline.Header{Key: pointer.HeaderLargeMessage, Value: []byte("true")},
		pipeline.Header{Key: pointer.HeaderPointer, Value: []byte(pointer.Version1)},
		pipeline.Header{Key: pointer.HeaderSource, Value: pointer.Source(r.Topic, r.Partition, r.Offset)})
	return pipeline.EstimateSize(r.Key, p.Encode(), headers)
}

func (a *Analysis) keepLargest(l Largest) {
	if len(a.largest) == a.top && (a.top == 0 || l.Size <= a.largest[len(a.largest)-1].Size) {
		return
	}
	i, _ := slices.BinarySearchFunc(a.largest, l, func(x, y Largest) int { return cmp.Compare(y.Size, x.Size) })
	a.largest = slices.Insert(a.largest, i, l)
	if len(a.largest) > a.top {
		a.largest = a.largest[:a.top]
	}
}

// Report sums the analysis up.
func (a *Analysis) Report() Report {
	r := Report{Largest: a.largest, Offload: a.offload, Gates: a.over}
	for _, p := range slices.Sorted(maps.Keys(a.parts)) {
		pf := a.parts[p]
		r.Partitions = append(r.Partitions, *pf)
		r.Records += pf.Records
		r.Bytes += pf.Bytes
	}
	if len(a.sizes) == 0 {
		return r
	}
	sorted := slices.Clone(a.sizes)
	slices.Sort(sorted)
	at := func(q float64) int {
		i := int(q*float64(len(sorted))+0.999999) - 1 // the nearest-rank percentile
		return int(sorted[max(0, min(i, len(sorted)-1))])
	}
	r.P50, r.P90, r.P99, r.Max = at(0.50), at(0.90), at(0.99), int(sorted[len(sorted)-1])
	counts := map[int]int64{}
	for _, s := range sorted {
		counts[bits.Len32(uint32(s))]++ // bucket n: [2^(n-1), 2^n)
	}
	for n := bits.Len32(uint32(sorted[0])); n <= bits.Len32(uint32(sorted[len(sorted)-1])); n++ {
		r.Histogram = append(r.Histogram, Bucket{From: 1 << (n - 1), To: 1 << n, Records: counts[n]})
	}
	return r
}
