package engine

import (
	"slices"
	"testing"
	"time"
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
