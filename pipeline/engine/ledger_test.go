package engine

import (
	"slices"
	"testing"
	"time"

	"github.com/offloader/offloader/pipeline"
)

// No pause lifts another's: a partition is resumed only when its last
// reason goes, and asked to pause only when it gets its first.
func TestTheLedgerResumesAPartitionWhenItsLastReasonGoes(t *testing.T) {
	src := &source{paused: map[Partition]bool{}}
	l := newLedger(src)
	p2 := Partition{Topic: "raw", Partition: 2}
	now := time.UnixMilli(1_700_000_000_000)
	paused := func() []Partition {
		var out []Partition
		for _, p := range []Partition{p0, p1, p2} {
			if src.paused[p] {
				out = append(out, p)
			}
		}
		return out
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(l.pause([]Partition{p0}, untilDue))
	l.due[p0] = now.Add(time.Minute)
	must(l.pause([]Partition{p1}, atEnd))
	must(l.pause([]Partition{p0, p1, p2}, byOperator))
	if got := paused(); len(got) != 3 {
		t.Fatalf("paused %v, want all three", got)
	}
	// p0 falls due during the operator's pause: it stays paused.
	must(l.resume(l.dueBy(now.Add(2*time.Minute)), untilDue))
	if !src.paused[p0] || l.has(p0, untilDue) || !l.has(p0, byOperator) {
		t.Fatalf("p0 after falling due in an operator's pause: paused %v, reasons %b", src.paused[p0], l.why[p0])
	}
	// The operator's resume resumes p0 and p2, not p1 at its end offset.
	must(l.resume(l.with(byOperator), byOperator))
	if got := paused(); !slices.Equal(got, []Partition{p1}) {
		t.Fatalf("after the operator's resume paused %v, want only %s (at its end)", got, p1)
	}
	// A partition given up leaves no reason behind.
	l.forget([]Partition{p1})
	if len(l.why) != 0 || len(l.with(atEnd)) != 0 {
		t.Fatalf("reasons left: %v", l.why)
	}
	// A reason a partition does not have resumes nothing.
	must(l.pause([]Partition{p2}, atEnd))
	must(l.resume([]Partition{p2}, untilDue))
	if !src.paused[p2] {
		t.Fatal("resuming a reason p2 did not have resumed it")
	}
}

// After a store outage the batches wait for the record the store failed on;
// the wait ends when that record, or a later one of its partition, is read,
// or when its partition is given up (it may never come back to this
// instance).
func TestAPauseWaitsForTheFailedRecordUntilItsPartitionGoes(t *testing.T) {
	var p pause
	p.awaitFailed(&pipeline.Record{Topic: p0.Topic, Partition: p0.Partition, Offset: 7})
	p.read(&pipeline.Record{Topic: p1.Topic, Partition: p1.Partition, Offset: 9})
	p.revoked([]Partition{p1})
	p.read(&pipeline.Record{Topic: p0.Topic, Partition: p0.Partition, Offset: 6})
	if p.failed == nil {
		t.Fatal("the wait ended on another partition's record, or an earlier one")
	}
	p.revoked([]Partition{p0})
	if p.failed != nil {
		t.Fatal("the wait outlived its partition")
	}
	p.awaitFailed(&pipeline.Record{Topic: p0.Topic, Partition: p0.Partition, Offset: 7})
	p.read(&pipeline.Record{Topic: p0.Topic, Partition: p0.Partition, Offset: 8})
	if p.failed != nil {
		t.Fatal("a later record of the partition did not end the wait")
	}
}
