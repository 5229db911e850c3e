// Package migration holds what moving an existing fat topic to a slim one
// needs beyond the pipeline itself: the size analysis of a topic (what
// offloading would do), the parity check of a migrated topic against its
// source, and the exact translation of consumer group offsets from the raw
// topic to the slim topic (PlanTranslation). It reads no Kafka itself: it
// reads through package topiclog's port (and Cluster, which adds a group's
// members and commits) that internal/kafka/reader implements, so everything here
// is tested on plain records and in-memory fakes.
package migration

import (
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/offloader/offloader/dlt"
	"github.com/offloader/offloader/pipeline"
	"github.com/offloader/offloader/pointer"
)

// Digest is a record's identity for parity: its key, the SHA-256 of its
// original value, its headers (less the ones the pipeline adds) and its
// timestamp.
type Digest [32]byte

// added are the headers the pipeline puts on a slim record: the pointer and
// inline-codec markers and the source coordinates. Parity leaves them out on
// both sides.
var added = map[string]bool{
	pointer.HeaderLargeMessage: true, pointer.HeaderPointer: true,
	pointer.HeaderInlineCodec: true, pointer.HeaderInlineSize: true, pointer.HeaderSource: true,
}

// digestOf hashes a record's identity from the SHA-256 of its value (nil for
// a tombstone).
func digestOf(key []byte, valueSHA *[32]byte, headers []pipeline.Header, timestampMs int64) Digest {
	h := sha256.New()
	field := func(b []byte, present bool) {
		var n [9]byte
		if present {
			n[0] = 1
		}
		binary.BigEndian.PutUint64(n[1:], uint64(len(b)))
		h.Write(n[:])
		h.Write(b)
	}
	field(key, key != nil)
	if valueSHA != nil {
		field(valueSHA[:], true)
	} else {
		field(nil, false)
	}
	for _, hd := range headers {
		if !added[hd.Key] {
			field([]byte(hd.Key), true)
			field(hd.Value, hd.Value != nil)
		}
	}
	var ts [8]byte
	binary.BigEndian.PutUint64(ts[:], uint64(timestampMs))
	h.Write(ts[:])
	var d Digest
	h.Sum(d[:0])
	return d
}

// SourceDigest is the digest of a raw record. A record that already is a
// pointer passes the pipeline unchanged, and is compared pointer to pointer:
// its digest takes the SHA-256 its pointer claims, as the slim side's does.
func SourceDigest(r *pipeline.Record) Digest {
	if r.Value == nil {
		return digestOf(r.Key, nil, r.Headers, r.Timestamp.UnixMilli())
	}
	if pointer.IsPointer(r.Header) && pointer.CheckVersion(r.Header) == nil {
		if p, err := pointer.Decode(r.Value); err == nil {
			if claimed, err := hex.DecodeString(p.SHA256); err == nil && len(claimed) == sha256.Size {
				var sum [32]byte
				copy(sum[:], claimed)
				return digestOf(r.Key, &sum, r.Headers, r.Timestamp.UnixMilli())
			}
		}
	}
	sum := sha256.Sum256(r.Value)
	return digestOf(r.Key, &sum, r.Headers, r.Timestamp.UnixMilli())
}

// SlimDigest is the digest of a slim record given the SHA-256 of its
// original value: a pointer's sha256 field, or the value's own (inline
// values decompressed first). nil: a tombstone.
func SlimDigest(r *pipeline.Record, valueSHA *[32]byte) Digest {
	return digestOf(r.Key, valueSHA, r.Headers, r.Timestamp.UnixMilli())
}

// Partition is a source partition of the check (pipeline's type).
type Partition = pipeline.Partition

type entry struct {
	offset int64
	digest Digest
	// slimPartition and slimOffset place a slim record in the slim topic.
	slimPartition int32
	slimOffset    int64
	// broken says why the slim record's value is not what its pointer
	// claims ("" when it is).
	broken string
}

// Parity compares a source range with what the pipeline made of it: the slim
// records naming each source record (offloader-source) and the dead-letter
// records naming one (__connect.errors.*). Add the records, then Check.
type Parity struct {
	source, slim map[Partition][]entry
	dead         map[Partition][]int64
	// deadBroken says why a dead-lettered record's payload did not resolve.
	deadBroken map[Partition]map[int64]string
	// Malformed counts slim records without a valid offloader-source.
	malformed int
}

// NewParity returns an empty check.
func NewParity() *Parity {
	return &Parity{source: map[Partition][]entry{}, slim: map[Partition][]entry{}, dead: map[Partition][]int64{},
		deadBroken: map[Partition]map[int64]string{}}
}

// AddSource adds a raw record of the range checked.
func (p *Parity) AddSource(r *pipeline.Record) {
	k := Partition{Topic: r.Topic, Partition: r.Partition}
	p.source[k] = append(p.source[k], entry{offset: r.Offset, digest: SourceDigest(r)})
}

// AddSlim adds a slim record and the SHA-256 of its original value (nil: a
// tombstone). A record without a valid offloader-source header is counted
// as malformed.
func (p *Parity) AddSlim(r *pipeline.Record, valueSHA *[32]byte) {
	v, ok := r.Header(pointer.HeaderSource)
	topic, partition, offset, err := pointer.ParseSource(v)
	if !ok || err != nil {
		p.malformed++
		return
	}
	k := Partition{Topic: topic, Partition: partition}
	p.slim[k] = append(p.slim[k], entry{offset: offset, digest: SlimDigest(r, valueSHA), slimPartition: r.Partition, slimOffset: r.Offset})
}

// AddBrokenSlim adds a slim record whose original value could not be
// checked (its payload is missing or does not match its pointer): its
// source offset fails with why.
func (p *Parity) AddBrokenSlim(r *pipeline.Record, why string) {
	v, _ := r.Header(pointer.HeaderSource)
	topic, partition, offset, err := pointer.ParseSource(v)
	if err != nil {
		p.malformed++
		return
	}
	k := Partition{Topic: topic, Partition: partition}
	p.slim[k] = append(p.slim[k], entry{offset: offset, broken: why, slimPartition: r.Partition, slimOffset: r.Offset})
}

// AddBrokenDeadLetter adds a record of the dead-letter topic whose payload
// did not resolve (verify --deep): its source offset fails with why.
func (p *Parity) AddBrokenDeadLetter(r *pipeline.Record, why string) {
	k, offset, ok := deadLettered(r)
	if !ok {
		return
	}
	p.dead[k] = append(p.dead[k], offset)
	if p.deadBroken[k] == nil {
		p.deadBroken[k] = map[int64]string{}
	}
	p.deadBroken[k][offset] = why
}

// deadLettered is the source record a dead-letter record names (by Kafka
// Connect's error headers).
func deadLettered(r *pipeline.Record) (Partition, int64, bool) {
	t, ok1 := r.Header(dlt.HeaderTopic)
	part, ok2 := r.Header(dlt.HeaderPartition)
	off, ok3 := r.Header(dlt.HeaderOffset)
	pn, err1 := strconv.ParseInt(string(part), 10, 32)
	on, err2 := strconv.ParseInt(string(off), 10, 64)
	if !ok1 || !ok2 || !ok3 || err1 != nil || err2 != nil {
		return Partition{}, 0, false
	}
	return Partition{Topic: string(t), Partition: int32(pn)}, on, true
}

// AddDeadLetter adds a record of the dead-letter topic; one that names no
// source record (by Kafka Connect's error headers) is ignored.
func (p *Parity) AddDeadLetter(r *pipeline.Record) {
	if k, offset, ok := deadLettered(r); ok {
		p.dead[k] = append(p.dead[k], offset)
	}
}

// Range is the source offsets a partition's check covers: [From, To).
type Range struct{ From, To int64 }

// Result is one source partition's verdict.
type Result struct {
	Partition
	Range
	Source, Slim, DeadLettered int
	// SourceDigest and SlimDigest are the digests over the partition's
	// records in source order (dead-lettered ones left out).
	SourceDigest, SlimDigest Digest
	// Problem says what differs ("" when nothing does): the first offset
	// missing, duplicated or different.
	Problem string
}

// OK reports whether the partition passed.
func (r Result) OK() bool { return r.Problem == "" }

// Check compares each partition of ranges: every source record in its range
// is in the slim topic exactly once with the same digest, or in the
// dead-letter topic; no slim record names a source offset outside what was
// read. Slim and dead-letter records naming offsets outside the range are
// left out (records from before the migration, or from the live pipeline
// after it).
func (p *Parity) Check(ranges map[Partition]Range) ([]Result, int) {
	var out []Result
	for _, k := range slices.SortedFunc(maps.Keys(ranges), func(a, b Partition) int {
		return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	}) {
		out = append(out, p.check(k, ranges[k]))
	}
	return out, p.malformed
}

func inRange(es []entry, r Range) []entry {
	var out []entry
	for _, e := range es {
		if e.offset >= r.From && e.offset < r.To {
			out = append(out, e)
		}
	}
	slices.SortStableFunc(out, func(a, b entry) int { return cmp.Compare(a.offset, b.offset) })
	return out
}

// outOfOrder is the first pair of a source partition's records that stand
// in a slim partition in another order than in the source ("" when none
// does): within a partition, Kafka's order is the record order, and for a
// compacted slim topic it decides which value a key keeps.
func outOfOrder(es []entry) string {
	bySlim := map[int32][]entry{}
	for _, e := range es {
		bySlim[e.slimPartition] = append(bySlim[e.slimPartition], e)
	}
	for _, sp := range slices.Sorted(maps.Keys(bySlim)) {
		list := bySlim[sp]
		slices.SortFunc(list, func(a, b entry) int { return cmp.Compare(a.slimOffset, b.slimOffset) })
		for i := 1; i < len(list); i++ {
			if list[i].offset < list[i-1].offset {
				return fmt.Sprintf("offsets %d and %d are out of order in the slim topic (partition %d, at %d and %d)",
					list[i-1].offset, list[i].offset, sp, list[i-1].slimOffset, list[i].slimOffset)
			}
		}
	}
	return ""
}

func (p *Parity) check(k Partition, r Range) Result {
	src, slim := inRange(p.source[k], r), inRange(p.slim[k], r)
	dead := map[int64]bool{}
	for _, o := range p.dead[k] {
		if o >= r.From && o < r.To {
			dead[o] = true
		}
	}
	res := Result{Partition: k, Range: r, Source: len(src), Slim: len(slim), DeadLettered: len(dead)}
	hs, hl := sha256.New(), sha256.New()
	i := 0
	for _, s := range src {
		if dead[s.offset] {
			if why := p.deadBroken[k][s.offset]; why != "" && res.Problem == "" {
				res.Problem = fmt.Sprintf("offset %d: %s", s.offset, why)
			}
			continue
		}
		hs.Write(s.digest[:])
		switch {
		case i < len(slim) && slim[i].offset == s.offset:
			hl.Write(slim[i].digest[:])
			if slim[i].broken != "" && res.Problem == "" {
				res.Problem = fmt.Sprintf("offset %d: %s", s.offset, slim[i].broken)
			}
			if slim[i].digest != s.digest && res.Problem == "" {
				res.Problem = fmt.Sprintf("offset %d differs in the slim topic (key, value, headers or timestamp)", s.offset)
			}
			i++
			if i < len(slim) && slim[i].offset == s.offset && res.Problem == "" {
				res.Problem = fmt.Sprintf("offset %d is in the slim topic more than once", s.offset)
			}
			for i < len(slim) && slim[i].offset == s.offset {
				i++
			}
		case res.Problem == "":
			res.Problem = fmt.Sprintf("offset %d is missing from the slim topic (and not dead-lettered)", s.offset)
		}
	}
	if res.Problem == "" && i < len(slim) {
		res.Problem = fmt.Sprintf("the slim topic names offset %d, which the source range does not hold", slim[i].offset)
	}
	if res.Problem == "" {
		res.Problem = outOfOrder(slim)
	}
	if res.Problem == "" && res.Source != res.Slim+res.DeadLettered {
		res.Problem = fmt.Sprintf("%d source records, %d slim and %d dead-lettered", res.Source, res.Slim, res.DeadLettered)
	}
	hs.Sum(res.SourceDigest[:0])
	hl.Sum(res.SlimDigest[:0])
	return res
}
