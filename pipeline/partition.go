package pipeline

import "strconv"

// Partition names one topic partition: the engine's, migration's, cat's and
// gc's coordinates alike.
type Partition struct {
	Topic     string
	Partition int32
}

func (p Partition) String() string { return p.Topic + "[" + strconv.Itoa(int(p.Partition)) + "]" }

// Offset is a position in a partition: the offset of the next record to read.
type Offset struct {
	Partition
	Offset int64
}

func (o Offset) String() string { return o.Partition.String() + "@" + strconv.FormatInt(o.Offset, 10) }
