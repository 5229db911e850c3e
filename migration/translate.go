package migration

import (
	"fmt"
	"maps"
	"slices"
)

// Index is where each source record went in the slim topic, read from the
// slim records' offloader-source headers.
type Index struct {
	// bySlim holds each slim partition's records in slim offset order.
	bySlim map[int32][]placed
}

type placed struct {
	source       Partition
	sourceOffset int64
	slimOffset   int64
}

// NewIndex returns an empty index.
func NewIndex() *Index { return &Index{bySlim: map[int32][]placed{}} }

// Add records that the slim record at slimPartition/slimOffset came from
// source/sourceOffset. Records are added in slim offset order per partition.
func (x *Index) Add(slimPartition int32, slimOffset int64, source Partition, sourceOffset int64) {
	x.bySlim[slimPartition] = append(x.bySlim[slimPartition], placed{source, sourceOffset, slimOffset})
}

// Move is where a consumer group is to stand on one slim partition.
type Move struct {
	SlimPartition int32
	// Offset is the group's new committed offset: the next record to read.
	// Keep: the partition is left as it is.
	Offset int64
	Keep   bool
	// Next names the source record at Offset ("" when the group read
	// everything the partition holds).
	Next string
	// Reread counts records after Offset the group had read already (only
	// when records of several source partitions share a slim partition,
	// partitioning: key_hash).
	Reread int
	Note   string
}

// Translate says where a group that committed committed on the source
// topics (the next offset it would read, per partition) stands on each slim
// partition: at the first slim record whose source record it had not read,
// so that it neither skips a record nor reads again one it read (with
// partitioning: preserve, exactly). A record that went to the dead-letter
// topic has no slim record and is passed over like any other read one. A
// slim partition whose records all come from source partitions the group
// never committed on is kept as it is: the group starts there as its
// auto.offset.reset says, as it would have on the source. ends are the slim
// partitions' end offsets.
func (x *Index) Translate(committed map[Partition]int64, ends map[int32]int64) []Move {
	var moves []Move
	for _, sp := range slices.Sorted(maps.Keys(ends)) {
		recs := x.bySlim[sp]
		m := Move{SlimPartition: sp}
		known := false
		for _, r := range recs {
			if _, ok := committed[r.source]; ok {
				known = true
				break
			}
		}
		if !known {
			m.Keep = true
			m.Note = "no commit on the source partitions it holds: left as it is"
			if len(recs) == 0 {
				m.Note = "holds no record from the source: left as it is"
			}
			moves = append(moves, m)
			continue
		}
		unread := func(r placed) bool {
			c, ok := committed[r.source]
			return !ok || r.sourceOffset >= c
		}
		i := slices.IndexFunc(recs, unread)
		if i < 0 {
			// The end itself, not the last record + 1: a transactional
			// partition ends with a commit marker, and a group placed before
			// it shows a lag of 1 that it can never consume.
			m.Offset = max(recs[len(recs)-1].slimOffset+1, ends[sp])
			m.Note = "the group had read every record it holds"
			moves = append(moves, m)
			continue
		}
		m.Offset = recs[i].slimOffset
		m.Next = fmt.Sprintf("%s@%d", recs[i].source, recs[i].sourceOffset)
		for _, r := range recs[i+1:] {
			if !unread(r) {
				m.Reread++
			}
		}
		if m.Reread > 0 {
			m.Note = fmt.Sprintf("%d records after it were read already: several source partitions share this slim partition", m.Reread)
		}
		moves = append(moves, m)
	}
	return moves
}
