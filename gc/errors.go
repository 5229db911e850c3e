package gc

import (
	"fmt"
	"time"
)

// GraceError: the grace asked for is under the pipeline's floor.
type GraceError struct {
	Grace, Floor time.Duration
}

func (e *GraceError) Error() string {
	return fmt.Sprintf("--grace %s is under this pipeline's floor of %s (errors.store_budget + the producer's transaction.timeout.ms + commit.interval): "+
		"an object can be written that long before the record that references it commits, so a shorter grace could delete a live payload; use --grace %s or more",
		e.Grace, e.Floor, e.Floor.Round(time.Second)+time.Second)
}

// SkewError: a store's clock and gc's differ by more than the grace allows.
type SkewError struct {
	Store       string
	Skew, Limit time.Duration
}

func (e *SkewError) Error() string {
	return fmt.Sprintf("nothing was deleted: store %q's clock is %s off this machine's (a probe object's write time against ours), over the %s that a grace of this size allows (1/%d of it): "+
		"gc compares the store's write times with its own clock, so the skew could delete fresh objects; synchronise the clocks (NTP) or use a longer --grace",
		e.Store, e.Skew.Round(time.Millisecond), e.Limit, MaxSkewFraction)
}

// UnknownVersionError: a record is marked as a pointer of a version gc does
// not know, so what it references cannot be told.
type UnknownVersionError struct {
	Topic     string
	Partition int32
	Offset    int64
	Version   string
}

func (e *UnknownVersionError) Error() string {
	return fmt.Sprintf("%s[%d]@%d is a pointer of version %q, which this offloader does not know: gc cannot tell what it references and stops; upgrade offloader",
		e.Topic, e.Partition, e.Offset, e.Version)
}

// ShortReadError: a partition's read ended before the end measured before it.
type ShortReadError struct {
	Topic       string
	Partition   int32
	Ended, Want int64
}

func (e *ShortReadError) Error() string {
	return fmt.Sprintf("the read of %s[%d] ended at offset %d, before its last stable offset %d measured before the read: the records in between were not seen",
		e.Topic, e.Partition, e.Ended, e.Want)
}
