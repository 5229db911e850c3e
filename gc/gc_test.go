package gc

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/offloader/offloader/pipeline"
	"github.com/offloader/offloader/pointer"
	"github.com/offloader/offloader/stores"
	"github.com/offloader/offloader/topiclog"
)

const writer = "orders@orders.slim"

// fakeLog is a Kafka of a few topics: records per partition, some in
// transactions still open (past the last stable offset) or aborted.
type fakeLog struct {
	topics map[string]map[int32]*fakePartition
	// committed are the group's offsets, by topic.
	committed map[string]map[int32]int64
	// fail, when set, answers Partitions or Read of a topic with an error.
	fail map[string]error
	// beforeRead and afterRead run around each read_committed read.
	beforeRead, afterRead func(topic string)
	// short ends a topic's read_committed reads this many offsets early.
	short map[string]int64
	reads []topiclog.Read
}

type fakePartition struct {
	start   int64
	records []fakeRecord
}

type fakeRecord struct {
	rec   *pipeline.Record
	state string // "", "open" or "aborted"
}

func (p *fakePartition) offsets() topiclog.Offsets {
	o := topiclog.Offsets{Start: p.start, End: p.start}
	if n := len(p.records); n > 0 {
		o.End = p.records[n-1].rec.Offset + 1
	}
	o.Stable = o.End
	for _, r := range p.records {
		if r.state == "open" {
			o.Stable = r.rec.Offset
			break
		}
	}
	return o
}

func (l *fakeLog) add(topic string, partition int32, state string, r *pipeline.Record) {
	if l.topics == nil {
		l.topics = map[string]map[int32]*fakePartition{}
	}
	if l.topics[topic] == nil {
		l.topics[topic] = map[int32]*fakePartition{}
	}
	p := l.topics[topic][partition]
	if p == nil {
		p = &fakePartition{}
		l.topics[topic][partition] = p
	}
	r.Topic, r.Partition, r.Offset = topic, partition, p.offsets().End
	p.records = append(p.records, fakeRecord{rec: r, state: state})
}

func (l *fakeLog) Partitions(_ context.Context, topic string) (int, error) {
	if err := l.fail[topic]; err != nil {
		return 0, err
	}
	return len(l.topics[topic]), nil
}

func (l *fakeLog) Offsets(_ context.Context, topic string, n int) (map[int32]topiclog.Offsets, error) {
	out := map[int32]topiclog.Offsets{}
	for p, fp := range l.topics[topic] {
		out[p] = fp.offsets()
	}
	return out, nil
}

func (l *fakeLog) Committed(_ context.Context, _, topic string, _ int) (map[int32]int64, error) {
	return l.committed[topic], nil
}

// OffsetsAt: gc reads no topic from a time.
func (l *fakeLog) OffsetsAt(context.Context, string, int, time.Time) (map[int32]int64, error) {
	return nil, errors.New("gc asked for offsets at a time")
}

func (l *fakeLog) Read(_ context.Context, r topiclog.Read, each func(*pipeline.Record) error) (map[int32]int64, error) {
	l.reads = append(l.reads, r)
	if !r.Uncommitted && l.beforeRead != nil {
		l.beforeRead(r.Topic)
	}
	ends := map[int32]int64{}
	for p, from := range r.From {
		fp := l.topics[r.Topic][p]
		if from < fp.start {
			return nil, fmt.Errorf("reading %s: an offset left the log while it was read", r.Topic)
		}
		end := fp.offsets().Stable
		if r.Uncommitted {
			end = r.Until[p]
		}
		for _, fr := range fp.records {
			if fr.rec.Offset < from || fr.rec.Offset >= end || (!r.Uncommitted && fr.state != "") {
				continue
			}
			if err := each(fr.rec); err != nil {
				return nil, err
			}
		}
		ends[p] = end
		if !r.Uncommitted {
			ends[p] -= l.short[r.Topic]
		}
	}
	if !r.Uncommitted && l.afterRead != nil {
		l.afterRead(r.Topic)
	}
	return ends, nil
}

// memStore is a payload store in memory, with a clock of its own.
type memStore struct {
	mu      sync.Mutex
	objects map[string]memObject
	now     func() time.Time
	// ignorePrefix lists every object, whatever the prefix asked for.
	ignorePrefix bool
	deleted      []string
}

type memObject struct {
	data     []byte
	meta     stores.Metadata
	modified time.Time
}

func newMemStore(now func() time.Time) *memStore {
	return &memStore{objects: map[string]memObject{}, now: now}
}

func (s *memStore) Put(_ context.Context, key string, value []byte, meta stores.Metadata) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.objects[key] = memObject{data: value, meta: meta, modified: s.now()}
	return nil
}

func (s *memStore) Get(_ context.Context, key string, limit int64) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	o, ok := s.objects[key]
	switch {
	case !ok:
		return nil, stores.ErrNotFound
	case int64(len(o.data)) > limit:
		return nil, stores.ErrOverLimit
	}
	return o.data, nil
}

func (s *memStore) Stat(_ context.Context, key string) (stores.Info, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	o, ok := s.objects[key]
	if !ok {
		return stores.Info{}, stores.ErrNotFound
	}
	return stores.Info{Size: int64(len(o.data)), Modified: o.modified, Metadata: o.meta}, nil
}

func (s *memStore) Delete(_ context.Context, key string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.objects, key)
	s.deleted = append(s.deleted, key)
	return nil
}

func (s *memStore) List(_ context.Context, prefix string, each func(stores.Object) error) error {
	s.mu.Lock()
	var list []stores.Object
	for k, o := range s.objects {
		if s.ignorePrefix || strings.HasPrefix(k, prefix) {
			list = append(list, stores.Object{Key: k, Size: int64(len(o.data)), Modified: o.modified})
		}
	}
	s.mu.Unlock()
	for _, o := range list {
		if err := each(o); err != nil {
			return err
		}
	}
	return nil
}

func (s *memStore) Close() error { return nil }

func (s *memStore) keys() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for k := range s.objects {
		if !strings.Contains(k, "offloader-gc-clock-") {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

func pointerTo(key string, payload []byte) pointer.Pointer {
	return pointer.Pointer{Store: "blob", Key: key, Size: int64(len(payload)), SHA256: digest(payload), Codec: pointer.CodecNone, StoredSize: int64(len(payload))}
}

func digest(b []byte) string {
	return pointer.Digest(sha256.Sum256(b))
}

func pointerRecord(p pointer.Pointer) *pipeline.Record {
	return &pipeline.Record{Value: p.Encode(), Headers: []pipeline.Header{
		{Key: pointer.HeaderLargeMessage, Value: []byte("true")}, {Key: pointer.HeaderPointer, Value: []byte("v1")}}}
}

// world is a pipeline's topics and store at a fixed time.
type world struct {
	now   time.Time
	log   *fakeLog
	store *memStore
	plan  Plan
}

func newWorld() *world {
	w := &world{now: time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC), log: &fakeLog{}}
	w.store = newMemStore(func() time.Time { return w.now })
	w.plan = Plan{Writer: writer, Group: "g", SourceTopics: []string{"raw"}, SlimTopic: "slim", DeadLetterTopic: "dlt",
		Prefixes: []Prefix{{Store: "blob", Prefix: "orders"}}, Grace: time.Hour, Floor: 2 * time.Minute,
		Now: func() time.Time { return w.now }}
	w.log.add("slim", 0, "", &pipeline.Record{Value: []byte("inline")})
	return w
}

// object stores an object written age ago by writer w (none when empty).
func (w *world) object(key, by string, age time.Duration) []byte {
	payload := []byte("payload of " + key)
	meta := stores.Metadata{}
	if by != "" {
		meta[stores.MetaWriter] = by
	}
	w.store.objects[key] = memObject{data: payload, meta: meta, modified: w.now.Add(-age)}
	return payload
}

func (w *world) collect(t *testing.T) (*Report, error) {
	t.Helper()
	return Collect(context.Background(), w.plan, w.log, map[string]stores.Store{"blob": w.store})
}

// Only an object that is unreferenced, older than the grace and written by
// this pipeline (or naming no writer under an adopted prefix) is deleted;
// every other is kept, and counted under its reason.
func TestCollectDeletesOnlyWhatItProved(t *testing.T) {
	w := newWorld()
	old := 2 * time.Hour
	w.log.add("slim", 0, "", pointerRecord(pointerTo("orders/raw/0/1", w.object("orders/raw/0/1", writer, old))))
	w.object("orders/raw/0/2", writer, old)              // unreferenced: deleted
	w.object("orders/raw/0/3", writer, time.Minute)      // young
	w.object("orders/raw/0/4", "orders@other.slim", old) // another pipeline's
	w.object("orders/raw/0/5", "", old)                  // names no writer
	w.log.add("slim", 0, "open", pointerRecord(pointerTo("orders/raw/0/6", w.object("orders/raw/0/6", writer, old))))
	w.log.add("slim", 0, "", pointerRecord(pointerTo("orders/raw/0/7", w.object("orders/raw/0/7", writer, old)))) // committed behind the open one
	w.log.add("slim", 0, "aborted", pointerRecord(pointerTo("orders/raw/0/8", w.object("orders/raw/0/8", writer, old))))
	w.object("adopted/sha256/9", "", old)
	w.object("adopted/sha256/10", "producer", old)
	w.plan.Prefixes = append(w.plan.Prefixes, Prefix{Store: "blob", Prefix: "adopted", Adopted: true})

	rep, err := w.collect(t)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"adopted/sha256/10", "orders/raw/0/1", "orders/raw/0/3", "orders/raw/0/4", "orders/raw/0/5", "orders/raw/0/6", "orders/raw/0/7", "orders/raw/0/8"}
	if got := w.store.keys(); !slices.Equal(got, want) {
		t.Errorf("left %v\nwant %v", got, want)
	}
	sw := rep.Sweeps[0]
	for name, c := range map[string]struct {
		got  Count
		want int64
	}{"deleted": {sw.Deleted, 1}, "referenced": {sw.Referenced, 1}, "uncommitted": {sw.Uncommitted, 3}, "young": {sw.Young, 1},
		"other writer": {sw.OtherWriter, 1}, "no writer": {sw.NoWriter, 1}} {
		if c.got.Objects != c.want {
			t.Errorf("%s: %d objects, want %d (%v)", name, c.got.Objects, c.want, c.got.Examples)
		}
	}
	if a := rep.Sweeps[1]; a.Deleted.Objects != 1 || a.OtherWriter.Objects != 1 {
		t.Errorf("adopted prefix: %+v", a)
	}
	p := rep.Topics[0].Partitions[0]
	if !p.Open() || p.UncommittedPointers != 3 || p.To != 2 || p.End != 5 {
		t.Errorf("slim[0] read %+v: want read committed to 2, 3 pointers past it, open until 5", p)
	}
	if len(rep.Skews) != 1 || rep.Skews[0].Skew != 0 {
		t.Errorf("skews %+v", rep.Skews)
	}
}

// A reading that cannot prove it saw everything deletes nothing: an offset
// reset under the reader, a topic that cannot be described, a read that
// ended short, no slim topic.
func TestCollectDeletesNothingWithoutAWholeRead(t *testing.T) {
	for name, c := range map[string]struct {
		breakIt func(w *world)
		want    string
	}{
		"reset": {func(w *world) {
			// Retention deletes the dead-letter topic's first record between
			// gc measuring its start and reading it.
			w.log.add("dlt", 0, "", &pipeline.Record{Value: []byte("x")})
			w.log.beforeRead = func(topic string) {
				if topic == "dlt" {
					w.log.topics["dlt"][0].start = 1
				}
			}
		}, "an offset left the log"},
		"not described": {func(w *world) {
			w.log.fail = map[string]error{"dlt": errors.New("topic dlt cannot be described: Broker: Topic authorization failed")}
		}, "dead-letter topic dlt: topic dlt cannot be described"},
		"short":         {func(w *world) { w.log.short = map[string]int64{"slim": 1} }, "ended at offset 0, before its last stable offset 1"},
		"no slim topic": {func(w *world) { w.plan.SlimTopic = "missing" }, "slim topic missing does not exist"},
	} {
		t.Run(name, func(t *testing.T) {
			w := newWorld()
			w.object("orders/raw/0/2", writer, 2*time.Hour)
			c.breakIt(w)
			rep, err := w.collect(t)
			if err == nil || !strings.Contains(err.Error(), "nothing was deleted") || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want one saying nothing was deleted, and %q", err, c.want)
			}
			if len(w.store.keys()) != 1 || len(rep.Sweeps) != 0 {
				t.Errorf("left %v, sweeps %v", w.store.keys(), rep.Sweeps)
			}
		})
	}
}

// A log start that moved during the read, but not past the reader, loses
// nothing: the records it passed were deleted from Kafka and reference
// nothing, and the report says where it moved. A dead-letter topic that does
// not exist is empty, and said to be missing.
func TestCollectReportsALogStartThatMoved(t *testing.T) {
	w := newWorld()
	w.plan.DeadLetterTopic = "no-such-dlt"
	w.log.add("slim", 0, "", pointerRecord(pointerTo("orders/raw/0/1", w.object("orders/raw/0/1", writer, 2*time.Hour))))
	w.log.afterRead = func(topic string) {
		if topic == "slim" {
			w.log.topics["slim"][0].start = 1
		}
	}
	rep, err := w.collect(t)
	if err != nil {
		t.Fatal(err)
	}
	p := rep.Topics[0].Partitions[0]
	if p.StartBefore != 0 || p.StartAfter != 1 || p.From != 0 || p.To != 2 {
		t.Errorf("slim[0]: %+v, want read 0 to 2 with the start moved from 0 to 1", p)
	}
	if !rep.Topics[1].Missing || rep.Topics[1].Topic != "no-such-dlt" {
		t.Errorf("the dead-letter topic: %+v, want it missing", rep.Topics[1])
	}
	if got := w.store.keys(); len(got) != 1 {
		t.Errorf("left %v, want the referenced object", got)
	}
}

// The source topics are read from the group's committed offsets: a pointer
// a serializer wrote, still waiting for the daemon, keeps its payload; one
// the daemon already passed (below the committed offset) does not.
func TestCollectReadsTheSourceFromTheCommittedOffsets(t *testing.T) {
	w := newWorld()
	w.plan.Prefixes = []Prefix{{Store: "blob", Prefix: "producer", Adopted: true}}
	w.log.add("raw", 0, "", pointerRecord(pointerTo("producer/sha256/a", w.object("producer/sha256/a", "", 2*time.Hour))))
	w.log.add("raw", 0, "", pointerRecord(pointerTo("producer/sha256/b", w.object("producer/sha256/b", "", 2*time.Hour))))
	w.log.committed = map[string]map[int32]int64{"raw": {0: 1}}
	if _, err := w.collect(t); err != nil {
		t.Fatal(err)
	}
	if got := w.store.keys(); !slices.Equal(got, []string{"producer/sha256/b"}) {
		t.Errorf("left %v, want the waiting pointer's payload", got)
	}
	if r := w.log.reads[len(w.log.reads)-1]; r.Topic != "raw" || r.From[0] != 1 {
		t.Errorf("the source was read %+v, want from offset 1", r)
	}
}

// Pointer markers: a version gc does not know stops it, naming the record;
// a marker that cannot be a pointer of any version is listed and counted,
// and references nothing.
func TestCollectTellsUnknownVersionsFromNonPointers(t *testing.T) {
	w := newWorld()
	bad := &pipeline.Record{Value: []byte("not json"), Headers: []pipeline.Header{{Key: pointer.HeaderPointer, Value: []byte("v1")}}}
	w.log.add("slim", 0, "", bad)
	w.log.add("slim", 0, "", &pipeline.Record{Value: []byte("{}"), Headers: []pipeline.Header{{Key: pointer.HeaderPointer, Value: []byte("yes")}}})
	w.object("orders/raw/0/2", writer, 2*time.Hour)
	rep, err := w.collect(t)
	if err != nil {
		t.Fatal(err)
	}
	if rep.NotPointers != 2 || !strings.HasPrefix(rep.NotPointerExamples[0], "slim[0]@1: ") || rep.Sweeps[0].Deleted.Objects != 1 {
		t.Errorf("not pointers %d %v, deleted %d", rep.NotPointers, rep.NotPointerExamples, rep.Sweeps[0].Deleted.Objects)
	}
	w = newWorld()
	w.log.add("slim", 0, "", &pipeline.Record{Value: []byte("CAFE"), Headers: []pipeline.Header{{Key: pointer.HeaderPointer, Value: []byte("v2")}}})
	w.object("orders/raw/0/2", writer, 2*time.Hour)
	_, err = w.collect(t)
	var unknown *UnknownVersionError
	if !errors.As(err, &unknown) || unknown.Offset != 1 || len(w.store.keys()) != 1 {
		t.Errorf("err = %v, want an UnknownVersionError at offset 1 and nothing deleted", err)
	}
}

// A whole-record object whose record was itself a pointer keeps that
// pointer's payload.
func TestCollectLooksInsideWholeRecords(t *testing.T) {
	w := newWorld()
	inner := pointerTo("orders/raw/0/5", w.object("orders/raw/0/5", writer, 2*time.Hour))
	whole := pointer.Record{Topic: "raw", Offset: 5, Value: inner.Encode(), Headers: []pointer.RecordHeader{
		{Key: []byte(pointer.HeaderLargeMessage), Value: []byte("true")}, {Key: []byte(pointer.HeaderPointer), Value: []byte("v1")}}}
	data := whole.Encode()
	w.store.objects["orders/raw/0/5.record"] = memObject{data: data, meta: stores.Metadata{stores.MetaWriter: writer}, modified: w.now.Add(-2 * time.Hour)}
	dl := pointerRecord(pointerTo("orders/raw/0/5.record", data))
	dl.Headers = append(dl.Headers, pipeline.Header{Key: pointer.HeaderRecord, Value: []byte("v1")})
	w.log.add("dlt", 0, "", dl)
	rep, err := w.collect(t)
	if err != nil {
		t.Fatal(err)
	}
	if got := w.store.keys(); len(got) != 2 || rep.Inside != 1 {
		t.Errorf("left %v, %d pointers inside; want both kept, 1", got, rep.Inside)
	}
}

// A listing that ignores its prefix hands gc other keys: they are kept.
func TestCollectKeepsKeysOutsideItsPrefix(t *testing.T) {
	w := newWorld()
	w.store.ignorePrefix = true
	w.object("team-b/raw/0/1", writer, 2*time.Hour)
	rep, err := w.collect(t)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Sweeps[0].Outside.Objects != 1 || len(w.store.keys()) != 1 {
		t.Errorf("outside %+v, left %v", rep.Sweeps[0].Outside, w.store.keys())
	}
}

// Time: a grace under the pipeline's floor is refused, and so is a store
// whose clock is off by more than a tenth of the grace; a dry run writes
// no clock probe and deletes nothing.
func TestCollectRefusesAGraceUnderTheFloorAndASkewedClock(t *testing.T) {
	w := newWorld()
	w.plan.Grace = time.Minute
	_, err := w.collect(t)
	var grace *GraceError
	if !errors.As(err, &grace) || !strings.Contains(err.Error(), "use --grace 2m1s or more") {
		t.Errorf("err = %v, want a GraceError", err)
	}
	w = newWorld()
	w.object("orders/raw/0/2", writer, 2*time.Hour)
	w.store.now = func() time.Time { return w.now.Add(7 * time.Minute) }
	_, err = w.collect(t)
	var skew *SkewError
	if !errors.As(err, &skew) || skew.Skew < 6*time.Minute || skew.Skew > 7*time.Minute || len(w.store.keys()) != 1 {
		t.Errorf("err = %v, want a SkewError of about 7m and nothing deleted", err)
	}
	w.plan.DryRun = true
	w.store.deleted = nil
	rep, err := w.collect(t)
	if err != nil || rep.Sweeps[0].Deleted.Objects != 1 || len(w.store.keys()) != 1 || len(w.store.deleted) != 0 {
		t.Errorf("dry run: %v, %+v, left %v", err, rep, w.store.keys())
	}
}

func TestFloorAddsTheBudgetTheTransactionAndTheInterval(t *testing.T) {
	if got := Floor(20*time.Second, time.Minute, 100*time.Millisecond); got != 80*time.Second+100*time.Millisecond {
		t.Errorf("Floor = %s", got)
	}
}

// gc deletes only its own cluster's objects: another cluster's are kept and
// counted, and so are those of this writer that name no cluster (earlier
// versions'), unless the prefix is adopted. A pointer that names another
// name of the same place keeps its object.
func TestCollectKeepsAnotherClustersObjectsAndMatchesPlaces(t *testing.T) {
	w := newWorld()
	w.plan.Cluster = "c1"
	w.plan.Places = map[string]string{"blob": "filesystem:/r", "old": "filesystem:/r"}
	old := 2 * time.Hour
	cluster := func(key, c string) {
		w.object(key, writer, old)
		if c != "" {
			w.store.objects[key].meta[stores.MetaCluster] = c
		}
	}
	cluster("orders/c1/raw/0/1", "c1") // unreferenced, ours: deleted
	cluster("orders/c2/raw/0/1", "c2") // another cluster's
	cluster("orders/raw/0/1", "")      // an earlier version's
	cluster("orders/c1/raw/0/2", "c1") // referenced through the other name
	w.log.add("slim", 0, "", pointerRecord(pointer.Pointer{Store: "old", Key: "orders/c1/raw/0/2", Size: 1, SHA256: strings.Repeat("0", 64), Codec: pointer.CodecNone, StoredSize: 1}))
	rep, err := w.collect(t)
	if err != nil {
		t.Fatal(err)
	}
	sw := rep.Sweeps[0]
	if sw.Deleted.Objects != 1 || sw.Deleted.Examples[0] != "orders/c1/raw/0/1" || sw.OtherCluster.Objects != 1 || sw.NoCluster.Objects != 1 || sw.Referenced.Objects != 1 {
		t.Fatalf("sweep %+v; want orders/c1/raw/0/1 deleted, one object of another cluster, one of none, one referenced", sw)
	}

	w.plan.Prefixes[0].Adopted = true
	if rep, err = w.collect(t); err != nil {
		t.Fatal(err)
	}
	if sw := rep.Sweeps[0]; sw.Deleted.Objects != 1 || sw.Deleted.Examples[0] != "orders/raw/0/1" || sw.OtherCluster.Objects != 1 {
		t.Fatalf("adopted: %+v; want the earlier version's object deleted, the other cluster's kept", sw)
	}
}
