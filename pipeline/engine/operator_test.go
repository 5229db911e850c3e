package engine

import (
	"slices"
	"strings"
	"testing"

	"github.com/offloader/offloader/dlt"
	"github.com/offloader/offloader/pipeline"
)

// An operator's pause commits the batch in hand, then nothing is consumed
// (also from partitions a rebalance assigns meanwhile) until the resume;
// /readyz, offloader_paused and Status say so, and every record still
// comes out once, in order.
func TestAnOperatorPauseCommitsTheBatchInHandAndTheResumeLosesNothing(t *testing.T) {
	h := newHarness(t, dlt.Rules{}, pipeline.Chain{identity{}}, p0, p1)
	for _, p := range []Partition{p0, p1, p2} {
		h.b.write(p, 40)
		h.opts.Until = append(h.opts.Until, Offset{Partition: p, Offset: 40})
	}
	h.opts.SourcePartitions = map[string]int{"raw": 3}
	h.eng = h.build()
	var applied <-chan struct{}
	var at map[Partition]int64 // the positions once the pause took effect
	h.src.script[10] = func(*source) { applied = h.eng.Pause("store maintenance") }
	h.src.script[20] = func(s *source) {
		select {
		case <-applied:
		default:
			t.Fatal("the pause did not take effect within 10 polls")
		}
		at = map[Partition]int64{p0: s.pos[p0], p1: s.pos[p1]}
		for p, pos := range at {
			if got := h.b.committedAt(p); got != pos {
				t.Errorf("%s paused at position %d with %d committed: the batch in hand must commit first", p, pos, got)
			}
		}
		if ready, why := h.m.readiness(); ready || why != "paused by an operator: store maintenance" {
			t.Errorf("/readyz: ready %v, %q; want 503 with the operator's reason", ready, why)
		}
		if got := float64(h.m.get(func(m *fakeMetrics) int { return len(m.paused) })); got != 1 {
			t.Errorf("offloader_paused is %v while paused, want 1", got)
		}
		st := h.eng.Status()
		if st.State != StatePaused || st.Paused == nil || st.Paused.By != PausedByOperator || st.Paused.Reason != "store maintenance" {
			t.Errorf("status while paused: %+v, paused %+v", st, st.Paused)
		}
		for _, ps := range st.Partitions {
			if want := at[Partition{Topic: ps.Topic, Partition: ps.Partition}]; ps.Committed != want {
				t.Errorf("status shows %s/%d committed at %d, want %d", ps.Topic, ps.Partition, ps.Committed, want)
			}
		}
		// A rebalance while paused: the partitions assigned are paused too.
		s.revoke(p1)
		s.assign(p1, p2)
		if !s.paused[p1] || !s.paused[p2] {
			t.Errorf("partitions assigned during the pause are not paused: %v", s.paused)
		}
	}
	h.src.script[40] = func(s *source) {
		for p, pos := range at {
			if s.pos[p] != pos || h.b.committedAt(p) != pos {
				t.Errorf("%s moved from %d to position %d, committed %d, while paused", p, pos, s.pos[p], h.b.committedAt(p))
			}
		}
		if n := len(h.b.log(Partition{Topic: slim, Partition: 2})); n != 0 {
			t.Errorf("%d records of %s produced while paused", n, p2)
		}
		applied = h.eng.Resume()
	}
	if _, err := h.run(nil); err != nil {
		t.Fatal(err)
	}
	h.exactlyOnce(map[Partition]int{p0: 40, p1: 40, p2: 40})
	st := h.eng.Status()
	if st.Paused != nil || st.Totals.Records != 120 || st.Totals.Produced != 120 || st.LastCommit.IsZero() {
		t.Errorf("status after the resume: %+v", st)
	}
	// The uploads are reported with the slots they share (Workers.Max).
	if u := st.Uploads; u == nil || u.Slots != 4 || u.InFlight != 0 || u.Waiting != 0 || !h.m.uploadsReported() {
		t.Errorf("uploads in the status after the run: %+v; want 4 slots, none in flight or waiting, reported to the metrics", u)
	}
	if got := float64(h.m.get(func(m *fakeMetrics) int { return len(m.paused) })); got != 0 {
		t.Errorf("offloader_paused is %v after the resume, want 0", got)
	}
	if ready, why := h.m.readiness(); !ready && strings.Contains(why, "operator") {
		t.Errorf("/readyz after the resume: %s", why)
	}
}

// A pause asked before the run starts (a pause file found at start-up)
// holds every partition from its assignment on: nothing is consumed until
// the resume.
func TestAPauseAskedBeforeTheRunConsumesNothingUntilTheResume(t *testing.T) {
	h := filled(t, dlt.Rules{}, pipeline.Chain{identity{}}, 30, p0, p1)
	h.eng = h.build()
	h.eng.Pause("kept across a restart")
	h.src.script[25] = func(s *source) {
		if got := float64(h.m.get(func(m *fakeMetrics) int { return m.in })); got != 0 {
			t.Errorf("%v records consumed by an instance started paused", got)
		}
		st := h.eng.Status()
		if st.State != StatePaused || len(st.Partitions) != 2 {
			t.Errorf("status of an instance started paused: %+v", st)
		}
		if !slices.Equal([]bool{s.paused[p0], s.paused[p1]}, []bool{true, true}) {
			t.Errorf("assigned partitions not paused: %v", s.paused)
		}
		h.eng.Resume()
	}
	if _, err := h.run(nil); err != nil {
		t.Fatal(err)
	}
	h.exactlyOnce(map[Partition]int{p0: 30, p1: 30})
}

// A resume asked while the engine is still obeying a pause (committing the
// batch in hand) is not lost: the engine ends up running, and the resume's
// channel closes only once it does.
func TestAResumeAskedDuringAPauseIsNotLost(t *testing.T) {
	h := filled(t, dlt.Rules{}, pipeline.Chain{identity{}}, 40, p0, p1)
	h.eng = h.build()
	var resumed <-chan struct{}
	h.src.script[5] = func(*source) { h.eng.Pause("brief") }
	// The pause is obeyed between polls 5 and 6; the resume comes in the
	// middle of obeying it: the batch's commit, inside Session.Commit.
	h.ses.fail = func(commit int) (error, bool) {
		if commit == 1 && resumed == nil {
			resumed = h.eng.Resume()
		}
		return nil, true
	}
	h.src.script[30] = func(*source) {
		select {
		case <-resumed:
		default:
			t.Error("the resume was not obeyed within 25 polls")
		}
		if st := h.eng.Status(); st.State != StateRunning {
			t.Errorf("the engine is %s after a resume asked during a pause", st.State)
		}
	}
	if _, err := h.run(nil); err != nil {
		t.Fatal(err)
	}
	h.exactlyOnce(map[Partition]int{p0: 40, p1: 40})
}
