package engine

import (
	"bytes"
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/offloader/offloader/dlt"
	"github.com/offloader/offloader/pipeline"
	"github.com/offloader/offloader/stores"
)

var (
	retry1 = Partition{Topic: "raw.retry-1", Partition: 0}
	dead   = Partition{Topic: "raw.dlt", Partition: 0}
)

func header(r *pipeline.Record, key string) string {
	v, _ := r.Header(key)
	return string(v)
}

func values(recs []*pipeline.Record) map[string]int {
	seen := map[string]int{}
	for _, r := range recs {
		seen[string(r.Value)]++
	}
	return seen
}

// quickly runs a transform as a quick step (pipeline.Quick): in the batch's
// Add, on the engine's goroutine.
type quickly struct{ pipeline.Transform }

func (q quickly) ApplyQuick(r *pipeline.Record) (*pipeline.Record, bool, error) {
	out, err := q.Apply(context.Background(), r)
	return out, true, err
}

// A failed record goes to its retry tier, its partition is held until the
// record is due (not read in a busy loop, not released early), and the retry
// that succeeds reaches the slim topic without retry headers.
func TestARetryHoldReleasesAtItsDueTime(t *testing.T) {
	f := &failing{key: "key-3", times: 1, err: poison}
	rules := dlt.Rules{Tiers: []dlt.Tier{{Topic: retry1.Topic, Delay: 10 * time.Second}}, DeadLetterTopic: dead.Topic}
	// f runs as a quick step, on the engine's goroutine: the time it notes is
	// the engine's clock when the retry was taken in, which a worker running
	// while polls advance the test clock would not see.
	h := newHarness(t, rules, pipeline.Chain{quickly{f}}, p0, retry1)
	h.b.write(p0, 20)
	var retriedAt time.Time
	f.on = func(attempt int) {
		if attempt == 2 {
			retriedAt = h.clock.Now()
		}
	}
	_, err := h.run(func() bool { return len(h.b.log(Partition{Topic: slim, Partition: 0})) == 20 })
	if err != nil {
		t.Fatal(err)
	}
	retries := h.b.log(retry1)
	if len(retries) != 1 {
		t.Fatalf("retry topic holds %d records, want 1", len(retries))
	}
	failedAt, _ := strconv.ParseInt(header(retries[0], dlt.HeaderFailedAt), 10, 64)
	due, _ := strconv.ParseInt(header(retries[0], dlt.HeaderRetryDue), 10, 64)
	if due-failedAt != 10_000 {
		t.Errorf("due %d ms after the failure, want the tier's 10s", due-failedAt)
	}
	if retriedAt.UnixMilli() < due {
		t.Errorf("retried at %d, before its due time %d", retriedAt.UnixMilli(), due)
	}
	if late := retriedAt.Sub(time.UnixMilli(due)); late > time.Second {
		t.Errorf("retried %s after its due time, want within the poll timeout", late)
	}
	out := h.b.log(Partition{Topic: slim, Partition: 0})
	if v := values(out); len(v) != 20 || v["raw[0]-3"] != 1 {
		t.Errorf("slim topic holds %d distinct values (raw[0]-3 %d times), want all 20 once", len(v), v["raw[0]-3"])
	}
	for _, r := range out {
		if _, ok := r.Header(dlt.HeaderRetryDue); ok {
			t.Errorf("slim record %q kept its retry headers", r.Value)
		}
	}
	if len(h.b.log(dead)) != 0 {
		t.Errorf("%d records dead-lettered, want none", len(h.b.log(dead)))
	}
}

func TestAStoreOutageKeepsReadyzAt503UntilABatchCommits(t *testing.T) {
	outage := func(int) error {
		return &stores.Error{Store: "blob", Op: "put", Key: "k", Kind: stores.Retryable, Err: errors.New("connection refused")}
	}
	f := &failing{key: "key-5", times: 3, err: outage}
	// A quick step: the outage is seen on the engine's goroutine, at the
	// test clock's time then (a worker's failure would be seen after polls
	// that advance the clock).
	h := filled(t, dlt.Rules{DeadLetterTopic: dead.Topic}, pipeline.Chain{quickly{f}}, 20, p0)
	var during []string
	f.on = func(attempt int) {
		ready, why := h.m.readiness()
		if attempt == 1 && !ready {
			t.Errorf("not ready before the outage: %s", why)
		}
		if attempt > 1 {
			during = append(during, why)
		}
	}
	if _, err := h.run(nil); err != nil {
		t.Fatal(err)
	}
	h.exactlyOnce(map[Partition]int{p0: 20})
	if len(during) != 3 {
		t.Fatalf("%d attempts during the pause, want 3", len(during))
	}
	for _, why := range during {
		if !strings.HasPrefix(why, `paused: store "blob" unavailable since 2023-11-14T22:13:20Z`) {
			t.Errorf("/readyz during the pause says %q", why)
		}
	}
	if got := float64(h.m.get(func(m *fakeMetrics) int { return len(m.paused) })); got != 0 {
		t.Errorf("offloader_paused %v after the resume", got)
	}
	if len(h.b.log(dead)) != 0 {
		t.Error("a record whose store was away was dead-lettered")
	}
}

// In mode: blocking a failed record is retried in place after each delay;
// the records after it wait, so the slim topic keeps the source's order.
func TestBlockingModeRetriesInPlaceAndKeepsTheOrder(t *testing.T) {
	f := &failing{key: "key-4", times: 2, err: poison}
	rules := dlt.Rules{Blocking: true, Delays: []time.Duration{time.Second, 2 * time.Second}, DeadLetterTopic: dead.Topic}
	h := filled(t, rules, pipeline.Chain{f}, 20, p0)
	began := h.clock.Now()
	if _, err := h.run(nil); err != nil {
		t.Fatal(err)
	}
	h.exactlyOnce(map[Partition]int{p0: 20})
	if waited := h.clock.Now().Sub(began); waited < 3*time.Second {
		t.Errorf("waited %s, want the delays' 3s", waited)
	}
	if f.seen != 3 {
		t.Errorf("key-4 tried %d times, want 3", f.seen)
	}
}

func TestBlockingModeDeadLettersWhenTheRetriesAreSpent(t *testing.T) {
	f := &failing{key: "key-4", times: 99, err: poison}
	rules := dlt.Rules{Blocking: true, Delays: []time.Duration{time.Second}, DeadLetterTopic: dead.Topic}
	h := filled(t, rules, pipeline.Chain{f}, 20, p0)
	if _, err := h.run(nil); err != nil {
		t.Fatal(err)
	}
	dl := h.b.log(dead)
	if len(dl) != 1 || string(dl[0].Value) != "raw[0]-4" || header(dl[0], dlt.HeaderAttempts) != "2" || header(dl[0], dlt.HeaderOffset) != "4" {
		t.Fatalf("dead-letter topic holds %d records (%v), want raw[0]-4 after 2 attempts", len(dl), dl)
	}
	if got := float64(h.m.get(func(m *fakeMetrics) int { return m.deadLettered[string(dlt.Transform)] })); got != 1 {
		t.Errorf("dead_lettered_records_total{class=transform} %v, want 1", got)
	}
	out := h.b.log(Partition{Topic: slim, Partition: 0})
	if len(out) != 19 || h.b.committed[p0] != 20 {
		t.Errorf("slim topic holds %d records, committed %d; want 19 and 20", len(out), h.b.committed[p0])
	}
	for i, r := range out {
		want := i
		if i >= 4 {
			want = i + 1
		}
		if string(r.Value) != "raw[0]-"+strconv.Itoa(want) {
			t.Fatalf("slim record %d is %q: out of order", i, r.Value)
		}
	}
}

// Without a dead-letter topic nothing can take a poison record: the
// instance stops, commits nothing past it, and says what to change.
func TestARecordNothingCanTakeStopsTheInstance(t *testing.T) {
	h := filled(t, dlt.Rules{}, pipeline.Chain{&failing{key: "key-9", times: 99, err: poison}}, 20, p0)
	_, err := h.run(nil)
	if !errors.Is(err, ErrFatal) || !strings.Contains(err.Error(), "raw/0@9: not valid JSON; set errors.dead_letter_topic to keep such records instead of stopping") {
		t.Fatalf("got %v", err)
	}
	if got := h.b.committed[p0]; got > 9 {
		t.Errorf("committed up to %d, past the record that stopped it", got)
	}
}

// An output still over the slim topic's limit is a failure too: without a
// dead-letter topic it stops, naming the limit that binds.
func TestAnOversizeOutputNamesItsLimit(t *testing.T) {
	h := newHarness(t, dlt.Rules{}, pipeline.Chain{identity{}}, p0)
	h.opts.SlimLimit = Limit{Bytes: 40, Gate: "the producer's message.max.bytes (40; kafka.producer in the pipeline file)"}
	h.b.write(p0, 3)
	h.untilEnd()
	_, err := h.run(nil)
	want := "raw/0@0: record of 123 bytes (producer estimate) is over the 40 bytes the producer's message.max.bytes (40; kafka.producer in the pipeline file) accepts; raise that limit, or set errors.dead_letter_topic"
	if !errors.Is(err, ErrFatal) || !strings.Contains(err.Error(), want) {
		t.Fatalf("got %v, want %q", err, want)
	}
}

// The size gate is the hand-out's last stage: an output over the slim
// topic's limit is dead-lettered with the gate's stage name, as a chain
// step's failure is with that step's, and its record commits in order with
// the others.
func TestTheSizeGateFailsAsAStageOfItsOwn(t *testing.T) {
	h := newHarness(t, dlt.Rules{DeadLetterTopic: dead.Topic}, pipeline.Chain{&failing{key: "key-1", times: 99, err: poison}}, p0)
	h.opts.StepNames = []string{"transforms[0] (json)"}
	h.opts.SlimLimit = Limit{Bytes: 150, Gate: "the slim topic's max.message.bytes"}
	h.b.write(p0, 3)
	h.b.mu.Lock()
	h.b.logs[p0][2].Value = bytes.Repeat([]byte("v"), 200)
	h.b.mu.Unlock()
	h.untilEnd()
	if _, err := h.run(nil); err != nil {
		t.Fatal(err)
	}
	dl := h.b.log(dead)
	if len(dl) != 2 {
		t.Fatalf("dead-letter topic holds %d records, want 2", len(dl))
	}
	for i, want := range []struct{ offset, stage, class string }{{"1", "transforms[0] (json)", "transform"}, {"2", "size check", "record_too_large"}} {
		if header(dl[i], dlt.HeaderOffset) != want.offset || header(dl[i], dlt.HeaderStage) != want.stage || header(dl[i], dlt.HeaderClass) != want.class {
			t.Errorf("dead-letter record %d: offset %s, stage %q, class %q; want %s, %q, %q", i, header(dl[i], dlt.HeaderOffset),
				header(dl[i], dlt.HeaderStage), header(dl[i], dlt.HeaderClass), want.offset, want.stage, want.class)
		}
	}
	if got := h.b.log(Partition{Topic: slim, Partition: 0}); len(got) != 1 || got[0].Offset != 0 {
		t.Errorf("slim topic holds %d records, want the one of offset 0", len(got))
	}
	if c := h.b.committedAt(p0); c != 3 {
		t.Errorf("committed offset %d, want 3", c)
	}
}

// offloader is a fake Offloader: it records what it was asked to store.
type offloader struct {
	applied, stored []*pipeline.Record
}

func (o *offloader) ValueOffloadFits(rec *pipeline.Record, limit int) bool {
	return pipeline.EstimateSize(rec.Key, []byte("pointer"), rec.Headers) <= limit
}

func (o *offloader) Apply(_ context.Context, rec *pipeline.Record) (*pipeline.Record, error) {
	o.applied = append(o.applied, rec)
	out := rec.Clone()
	out.Value = []byte("pointer")
	return out, nil
}

func (o *offloader) StoreRecord(_ context.Context, rec *pipeline.Record) (*pipeline.Record, error) {
	o.stored = append(o.stored, rec)
	return &pipeline.Record{Topic: rec.Topic, Partition: rec.Partition, Offset: rec.Offset, Value: []byte("whole-record-pointer")}, nil
}

// A failed record whose key alone is over the dead-letter topic's limit is
// stored whole and dead-lettered as a pointer with the error headers; its
// small value is not offloaded on the way (no orphans).
func TestAFailedRecordTheDeadLetterTopicCannotHoldIsStoredWhole(t *testing.T) {
	fat := bytes.Repeat([]byte("k"), 600)
	h := newHarness(t, dlt.Rules{DeadLetterTopic: dead.Topic}, pipeline.Chain{&failing{key: string(fat), times: 99, err: poison}}, p0)
	off := &offloader{}
	h.opts.FailureLimits, h.opts.DeadLetterOffload = map[string]Limit{dead.Topic: {Bytes: 500, Gate: "the dead-letter topic raw.dlt"}}, off
	h.b.write(p0, 5)
	h.b.mu.Lock()
	h.b.logs[p0][2].Key = fat
	h.b.mu.Unlock()
	h.untilEnd()
	if _, err := h.run(nil); err != nil {
		t.Fatal(err)
	}
	dl := h.b.log(dead)
	if len(dl) != 1 || string(dl[0].Value) != "whole-record-pointer" || header(dl[0], dlt.HeaderMessage) != "not valid JSON" || header(dl[0], dlt.HeaderOffset) != "2" {
		t.Fatalf("dead-letter topic holds %v, want the whole record's pointer with the error headers", dl)
	}
	if len(off.applied) != 0 || len(off.stored) != 1 || !bytes.Equal(off.stored[0].Key, fat) {
		t.Errorf("%d values offloaded, %d records stored whole; want 0 and the failed one", len(off.applied), len(off.stored))
	}
	if len(h.b.log(Partition{Topic: slim, Partition: 0})) != 4 {
		t.Errorf("slim topic holds %d records, want 4", len(h.b.log(Partition{Topic: slim, Partition: 0})))
	}
}

// A failed record with a value too large for the dead-letter topic has its
// value offloaded; without a payload store the instance stops instead.
func TestAFailedRecordWithALargeValueIsOffloadedOrStops(t *testing.T) {
	for _, withStore := range []bool{true, false} {
		h := newHarness(t, dlt.Rules{DeadLetterTopic: dead.Topic}, pipeline.Chain{&failing{key: "key-1", times: 99, err: poison}}, p0)
		off := &offloader{}
		h.opts.FailureLimits = map[string]Limit{dead.Topic: {Bytes: 500, Gate: "the dead-letter topic raw.dlt's max.message.bytes (500)"}}
		if withStore {
			h.opts.DeadLetterOffload = off
		}
		h.b.write(p0, 3)
		h.b.mu.Lock()
		h.b.logs[p0][1].Value = append([]byte("raw[0]-1"), bytes.Repeat([]byte("v"), 800)...)
		h.b.mu.Unlock()
		h.untilEnd()
		_, err := h.run(nil)
		if !withStore {
			if !errors.Is(err, ErrFatal) || !strings.Contains(err.Error(), "is over the 500 bytes the dead-letter topic raw.dlt's max.message.bytes (500) takes; add an offload step") {
				t.Errorf("without a store: %v", err)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		dl := h.b.log(dead)
		if len(dl) != 1 || string(dl[0].Value) != "pointer" || len(off.applied) != 1 || len(off.stored) != 0 {
			t.Errorf("dead-letter topic holds %v; %d values offloaded, %d stored whole; want the offloaded value", dl, len(off.applied), len(off.stored))
		}
	}
}

// Retry headers on a source record are removed (and counted); a record on a
// retry topic whose headers name no source record is dead-lettered under its
// own coordinates, never retried.
func TestForgedRetryHeadersAreStrippedOrDeadLettered(t *testing.T) {
	rules := dlt.Rules{Tiers: []dlt.Tier{{Topic: retry1.Topic, Delay: time.Second}}, DeadLetterTopic: dead.Topic}
	h := newHarness(t, rules, pipeline.Chain{identity{}}, p0, retry1)
	h.b.write(p0, 5)
	h.b.write(retry1, 1)
	h.b.mu.Lock()
	h.b.logs[p0][1].Headers = []pipeline.Header{{Key: dlt.HeaderRetryDue, Value: []byte("99999999999999")}}
	h.b.mu.Unlock()
	h.opts.Until = []Offset{{Partition: p0, Offset: 5}, {Partition: retry1, Offset: 1}}
	if _, err := h.run(nil); err != nil {
		t.Fatal(err)
	}
	h.exactlyOnce(map[Partition]int{p0: 5})
	if _, ok := h.b.log(Partition{Topic: slim, Partition: 0})[1].Header(dlt.HeaderRetryDue); ok {
		t.Error("the source record kept its forged retry header")
	}
	if got := float64(h.m.get(func(m *fakeMetrics) int { return m.reserved })); got != 1 {
		t.Errorf("reserved_headers_stripped_total %v, want 1", got)
	}
	dl := h.b.log(dead)
	if len(dl) != 1 || header(dl[0], dlt.HeaderClass) != string(dlt.InvalidRetry) || header(dl[0], dlt.HeaderTopic) != retry1.Topic {
		t.Fatalf("dead-letter topic holds %v, want the retry record under its own coordinates", dl)
	}
}

// A signal stops polling and commits the batch in hand before leaving.
func TestShutdownCommitsTheBatchInHand(t *testing.T) {
	// A quick step: every record is finished when the signal comes, so that
	// the shutdown commits them in one transaction (records still uploading
	// would go in a second, after those finished).
	h := newHarness(t, dlt.Rules{}, pipeline.Chain{quickly{identity{}}}, p0)
	// No batch bound is reached and the clock stands still: only the
	// shutdown can commit the batch.
	h.opts.Commit = Commit{Interval: time.Hour, MaxRecords: 1000, MaxBytes: 1 << 30}
	h.src.frozen = true
	h.b.write(p0, 30)
	if _, err := h.run(func() bool { return float64(h.m.get(func(m *fakeMetrics) int { return m.in })) == 30 }); err != nil {
		t.Fatal(err)
	}
	h.exactlyOnce(map[Partition]int{p0: 30})
	if h.ses.commits != 1 {
		t.Errorf("%d commits, want the one at shutdown", h.ses.commits)
	}
}

// TestAStoreOutageHoldsEveryPartitionUntilTheFailedRecordPasses: after a
// store outage the batch is read again, and another partition's records may
// come before the one the store failed on (librdkafka fetches a partition up
// to fetch.max.bytes). That batch is not committed on its own: nothing moves
// while the store is down, and the pause ends once, when the failed record
// passes.
func TestAStoreOutageHoldsEveryPartitionUntilTheFailedRecordPasses(t *testing.T) {
	outage := func(int) error {
		return &stores.Error{Store: "blob", Op: "put", Key: "k", Kind: stores.Retryable, Err: errors.New("connection refused")}
	}
	f := &failing{key: "key-5", times: 3, err: outage}
	h := filled(t, dlt.Rules{DeadLetterTopic: dead.Topic}, pipeline.Chain{f}, 20, p0, p1)
	h.src.lag = map[Partition]int{p0: 30}
	core, logs := observer.New(zapcore.InfoLevel)
	h.opts.Logger = zap.New(core)
	var committedP1 []int64
	f.on = func(int) { committedP1 = append(committedP1, h.b.committedAt(p1)) }
	if _, err := h.run(nil); err != nil {
		t.Fatal(err)
	}
	h.exactlyOnce(map[Partition]int{p0: 20, p1: 20})
	if len(committedP1) != 4 {
		t.Fatalf("key-5 was tried %d times, want 4", len(committedP1))
	}
	// The first attempt may run while the batch before commits; from the
	// second on, the outage holds everything.
	for i, c := range committedP1[2:] {
		if c != committedP1[1] {
			t.Errorf("raw[1]'s committed offset went from %d to %d during the outage (attempt %d)", committedP1[1], c, i+3)
		}
	}
	for _, msg := range []string{"pipeline paused", "pipeline resumed"} {
		if n := logs.FilterMessageSnippet(msg).Len(); n != 1 {
			t.Errorf("%q logged %d times, want once", msg, n)
		}
	}
}

// TestAStoreOutageOnARetryRecordEndsWhenTheStoreAnswers: a retry record
// enters the batch under its original coordinates; the record the pause
// waits for is matched under the same ones, so once the store answers the
// batch read again commits (and is not held for good).
func TestAStoreOutageOnARetryRecordEndsWhenTheStoreAnswers(t *testing.T) {
	f := &failing{key: "key-3", times: 3, err: func(attempt int) error {
		if attempt == 1 {
			return poison(attempt) // to the retry topic
		}
		return &stores.Error{Store: "blob", Op: "put", Key: "k", Kind: stores.Retryable, Err: errors.New("connection refused")}
	}}
	rules := dlt.Rules{Tiers: []dlt.Tier{{Topic: retry1.Topic, Delay: time.Second}}, DeadLetterTopic: dead.Topic}
	h := newHarness(t, rules, pipeline.Chain{f}, p0, retry1)
	h.b.write(p0, 20)
	if _, err := h.run(func() bool { return len(h.b.log(Partition{Topic: slim, Partition: 0})) == 20 }); err != nil {
		t.Fatal(err)
	}
	if v := values(h.b.log(Partition{Topic: slim, Partition: 0})); len(v) != 20 || v["raw[0]-3"] != 1 {
		t.Errorf("slim topic holds %d distinct values (raw[0]-3 %d times), want all 20 once", len(v), v["raw[0]-3"])
	}
	if f.seen != 4 {
		t.Errorf("key-3 was tried %d times, want 4 (poison, two outages, success)", f.seen)
	}
}

// TestTheWaitForTheFailedRecordIsBounded: when the record the store failed
// on does not come back (here its partition hands out nothing for a long
// while), the batch read again goes by its usual bounds after awaitFailedFor
// rather than standing still for good; the pause lasts until the record
// itself passes.
func TestTheWaitForTheFailedRecordIsBounded(t *testing.T) {
	outage := func(int) error {
		return &stores.Error{Store: "blob", Op: "put", Key: "k", Kind: stores.Retryable, Err: errors.New("connection refused")}
	}
	f := &failing{key: "key-5", times: 1, err: outage}
	h := filled(t, dlt.Rules{DeadLetterTopic: dead.Topic}, pipeline.Chain{f}, 20, p0, p1)
	h.src.lag = map[Partition]int{p0: 200_000} // idle polls of 1 ms: over a minute
	var committedP1 int64
	f.on = func(attempt int) {
		if attempt == 2 {
			committedP1 = h.b.committedAt(p1)
		}
	}
	if _, err := h.run(nil); err != nil {
		t.Fatal(err)
	}
	h.exactlyOnce(map[Partition]int{p0: 20, p1: 20})
	if committedP1 != 20 {
		t.Errorf("raw[1] had committed up to %d when raw[0]'s record came back, want all 20: its batch should not wait for good", committedP1)
	}
}
