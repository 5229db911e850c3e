package migration

import (
	"context"
	"crypto/sha256"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/offloader/offloader/pipeline"
	"github.com/offloader/offloader/pointer"
	"github.com/offloader/offloader/topiclog"
)

// memLog is an in-memory Log: topics of records, committed offsets, and
// start offsets (records below them are gone).
type memLog struct {
	topics    map[string][]*pipeline.Record
	parts     map[string]int
	committed map[string]map[int32]int64
	starts    map[string]map[int32]int64
	readErr   error
}

func (l *memLog) Partitions(_ context.Context, topic string) (int, error) { return l.parts[topic], nil }

// Offsets: the starts given, and each partition's end after its last record.
func (l *memLog) Offsets(_ context.Context, topic string, partitions int) (map[int32]topiclog.Offsets, error) {
	out := map[int32]topiclog.Offsets{}
	for p := range int32(partitions) {
		out[p] = topiclog.Offsets{Start: l.starts[topic][p]}
	}
	for _, r := range l.topics[topic] {
		end := max(out[r.Partition].End, r.Offset+1)
		out[r.Partition] = topiclog.Offsets{Start: out[r.Partition].Start, Stable: end, End: end}
	}
	return out, nil
}

func (l *memLog) OffsetsAt(_ context.Context, topic string, _ int, t time.Time) (map[int32]int64, error) {
	out := map[int32]int64{}
	for _, r := range l.topics[topic] {
		if _, seen := out[r.Partition]; !seen && !r.Timestamp.Before(t) {
			out[r.Partition] = r.Offset
		}
	}
	return out, nil
}

func (l *memLog) Committed(_ context.Context, _ string, topic string, _ int) (map[int32]int64, error) {
	return l.committed[topic], nil
}

// Read reads what r names from each partition's start (migration gives no
// From), and returns no ends (migration reads none).
func (l *memLog) Read(_ context.Context, r topiclog.Read, each func(*pipeline.Record) error) (map[int32]int64, error) {
	if r.From != nil {
		return nil, errors.New("migration read from given offsets")
	}
	if l.readErr != nil {
		return nil, l.readErr
	}
	for _, rec := range l.topics[r.Topic] {
		if rec.Offset < l.starts[r.Topic][rec.Partition] {
			continue
		}
		if r.Until != nil {
			end, ok := r.Until[rec.Partition]
			if !ok || rec.Offset >= end {
				continue
			}
		}
		if err := each(rec); err != nil {
			return nil, err
		}
	}
	return nil, nil
}

// fixtureLog is the fixture as a cluster: raw[2] committed to its end.
func fixtureLog() *memLog {
	src, slim, dead := fixture()
	return &memLog{
		topics:    map[string][]*pipeline.Record{"raw": src, "slim": slim, "raw.dlt": dead},
		parts:     map[string]int{"raw": 3, "slim": 3, "raw.dlt": 1},
		committed: map[string]map[int32]int64{"raw": {2: 10}},
		starts:    map[string]map[int32]int64{"raw": {}, "slim": {}, "raw.dlt": {}},
	}
}

// original resolves the fixture's slim records: a pointer to the source
// value it replaced, an inline value to itself.
func original(src []*pipeline.Record) func(context.Context, *pipeline.Record, bool) (*[32]byte, error) {
	return func(_ context.Context, r *pipeline.Record, _ bool) (*[32]byte, error) {
		v := r.Value
		if pointer.IsPointer(r.Header) {
			s, _ := r.Header(pointer.HeaderSource)
			_, _, o, err := pointer.ParseSource(s)
			if err != nil {
				return nil, err
			}
			v = src[o].Value
		}
		if v == nil {
			return nil, nil
		}
		sum := sha256.Sum256(v)
		return &sum, nil
	}
}

// Verify reads the slim and dead-letter topics and the committed range of
// each source partition, and finds parity: 9 slim records and 1
// dead-lettered for the 10 source records; the partitions the group never
// committed on are not checked.
func TestVerifyFindsParityOverTheCommittedRange(t *testing.T) {
	log := fixtureLog()
	src := log.topics["raw"]
	results, malformed, err := Verify(context.Background(), log, VerifyOptions{Group: "g", SourceTopics: []string{"raw"},
		SlimTopic: "slim", DeadLetterTopic: "raw.dlt", Original: original(src)})
	if err != nil || malformed != 0 || len(results) != 1 {
		t.Fatalf("results %+v, malformed %d, %v", results, malformed, err)
	}
	r := results[0]
	if !r.OK() || r.Source != 10 || r.Slim != 9 || r.DeadLettered != 1 || r.From != 0 || r.To != 10 {
		t.Errorf("result %+v (%s)", r, r.Problem)
	}
}

// A slim record gone (its partition's start moved past it) fails parity,
// naming the source offset it carried; an unresolvable pointer does too.
func TestVerifyNamesWhatIsMissingOrBroken(t *testing.T) {
	log := fixtureLog()
	src := log.topics["raw"]
	log.starts["slim"] = map[int32]int64{2: 102} // slim offsets 100 and 101: source offsets 0 and 1
	results, _, err := Verify(context.Background(), log, VerifyOptions{Group: "g", SourceTopics: []string{"raw"},
		SlimTopic: "slim", DeadLetterTopic: "raw.dlt", Original: original(src)})
	if err != nil || len(results) != 1 || results[0].OK() || !strings.Contains(results[0].Problem, "offset 0 is missing from the slim topic") {
		t.Errorf("a slim record gone: %+v, %v", results, err)
	}
	log = fixtureLog()
	broken := func(ctx context.Context, r *pipeline.Record, deep bool) (*[32]byte, error) {
		if r.Offset == 109 {
			return nil, errors.New("object not found")
		}
		return original(src)(ctx, r, deep)
	}
	results, _, err = Verify(context.Background(), log, VerifyOptions{Group: "g", SourceTopics: []string{"raw"},
		SlimTopic: "slim", DeadLetterTopic: "raw.dlt", Original: broken})
	if err != nil || results[0].OK() || !strings.Contains(results[0].Problem, "does not resolve: object not found") {
		t.Errorf("an unresolvable pointer: %+v, %v", results, err)
	}
	log.readErr = errors.New("offset reset")
	if _, _, err := Verify(context.Background(), log, VerifyOptions{SlimTopic: "slim", Original: original(src)}); err == nil {
		t.Error("a read error did not end Verify")
	}
}

// With start_from latest the range starts at the first record the outputs
// name; with a start time, at the first record at or after it.
func TestVerifyStartsWhereTheGroupStarted(t *testing.T) {
	log := fixtureLog()
	src := log.topics["raw"]
	log.topics["slim"] = log.topics["slim"][6:] // the outputs of source offsets 6, 8 and 9 (7 dead-lettered)
	results, _, err := Verify(context.Background(), log, VerifyOptions{Group: "g", SourceTopics: []string{"raw"},
		SlimTopic: "slim", DeadLetterTopic: "raw.dlt", Latest: true, Original: original(src)})
	if err != nil || len(results) != 1 || results[0].From != 6 || !results[0].OK() {
		t.Errorf("latest: %+v, %v", results, err)
	}
	results, _, err = Verify(context.Background(), log, VerifyOptions{Group: "g", SourceTopics: []string{"raw"},
		SlimTopic: "slim", DeadLetterTopic: "raw.dlt", StartTime: src[6].Timestamp, Original: original(src)})
	if err != nil || len(results) != 1 || results[0].From != 6 || !results[0].OK() {
		t.Errorf("a start time: %+v, %v", results, err)
	}
}
