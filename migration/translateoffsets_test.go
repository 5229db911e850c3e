package migration

import (
	"context"
	"crypto/sha256"
	"errors"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/offloader/offloader/pipeline"
	"github.com/offloader/offloader/pointer"
	"github.com/offloader/offloader/resolver"
)

// memCluster is an in-memory Cluster: the fixture's log, with commits per
// group and topic, and a count of the moved group's active members.
type memCluster struct {
	*memLog
	commits map[string]map[string]map[int32]int64 // group, topic
	members int
	// looked counts the calls to Committed of the pipeline's group.
	looked int
	// read, when set, is called after each read of the moved group's
	// commits on a source topic, with how many there were.
	read  func(n int)
	reads int
}

func (c *memCluster) Committed(_ context.Context, group, topic string, _ int) (map[int32]int64, error) {
	if group == "offloader" {
		c.looked++
	}
	out := maps.Clone(c.commits[group][topic])
	if group == "billing" && topic == "raw" && c.read != nil {
		c.reads++
		c.read(c.reads)
	}
	return out, nil
}

func (c *memCluster) Members(context.Context, string) (int, string, error) {
	return c.members, "Stable", nil
}

func (c *memCluster) Commit(_ context.Context, group, topic string, offsets map[int32]int64) error {
	if c.commits[group] == nil {
		c.commits[group] = map[string]map[int32]int64{}
	}
	if c.commits[group][topic] == nil {
		c.commits[group][topic] = map[int32]int64{}
	}
	maps.Copy(c.commits[group][topic], offsets)
	return nil
}

// The fixture's group "billing" read raw[2] up to offset 5; the pipeline
// copied all of it.
func translateFixture() *memCluster {
	return &memCluster{memLog: fixtureLog(), commits: map[string]map[string]map[int32]int64{
		"billing":   {"raw": {2: 5}},
		"offloader": {"raw": {2: 10}},
	}}
}

func translateOptions() TranslateOptions {
	return TranslateOptions{Group: "billing", Pipeline: "orders", PipelineGroup: "offloader", SourceTopics: []string{"raw"}, SlimTopic: "slim", Poll: time.Millisecond}
}

// The plan puts the group on the slim record of the first source record it
// had not read, keeps the slim partitions holding none of its partitions,
// and Execute commits exactly that.
func TestPlanTranslationMovesTheGroupToItsNextRecord(t *testing.T) {
	c := translateFixture()
	plan, err := PlanTranslation(context.Background(), c, translateOptions())
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Moves) != 3 || !plan.Moves[0].Keep || !plan.Moves[1].Keep || plan.Moves[2].Keep {
		t.Fatalf("moves %+v; want slim[0] and slim[1] kept, slim[2] moved", plan.Moves)
	}
	if want := map[int32]int64{2: 105}; !maps.Equal(plan.Apply, want) || plan.Moves[2].Next != "raw[2]@5" {
		t.Fatalf("apply %v, next %q; want %v at raw[2]@5", plan.Apply, plan.Moves[2].Next, want)
	}
	if err := plan.Execute(context.Background(), c, false); err != nil {
		t.Fatal(err)
	}
	if got := c.commits["billing"]["slim"]; !maps.Equal(got, map[int32]int64{2: 105}) {
		t.Fatalf("billing's commits on slim: %v; want raw[2]@5's slim record, offset 105", got)
	}
	// Planned again, the group stands where the plan says: nothing is back.
	again, err := PlanTranslation(context.Background(), c, translateOptions())
	if err != nil || len(again.Back) != 0 || again.Current[2] != 105 {
		t.Fatalf("a second plan: %+v, %v", again, err)
	}
}

// A group that stands further on the slim topic than the plan is refused
// unless forced, and the refusal changes nothing.
func TestPlanTranslationRefusesToMoveAGroupBack(t *testing.T) {
	c := translateFixture()
	c.commits["billing"]["slim"] = map[int32]int64{2: 108}
	plan, err := PlanTranslation(context.Background(), c, translateOptions())
	if err != nil {
		t.Fatal(err)
	}
	err = plan.Execute(context.Background(), c, false)
	if err == nil || !strings.Contains(err.Error(), "slim[2] (at 108, the plan says 105: 3 records read again)") || !strings.Contains(err.Error(), "--force") {
		t.Fatalf("Execute without force: %v", err)
	}
	if got := c.commits["billing"]["slim"][2]; got != 108 {
		t.Fatalf("a refused plan moved the group to %d", got)
	}
	if err := plan.Execute(context.Background(), c, true); err != nil || c.commits["billing"]["slim"][2] != 105 {
		t.Fatalf("Execute with force: %v, group at %d", err, c.commits["billing"]["slim"][2])
	}
}

// Every refusal that comes before a plan: the pipeline's own group, a group
// with active members, one without commits, and one the pipeline has not
// passed within the wait.
func TestPlanTranslationRefuses(t *testing.T) {
	own := translateOptions()
	own.Group = "offloader"
	if _, err := PlanTranslation(context.Background(), translateFixture(), own); err == nil || !strings.Contains(err.Error(), "the pipeline's own group") {
		t.Errorf("the pipeline's own group: %v", err)
	}
	busy := translateFixture()
	busy.members = 2
	if _, err := PlanTranslation(context.Background(), busy, translateOptions()); err == nil || !strings.Contains(err.Error(), "has 2 active member(s) (Stable)") {
		t.Errorf("active members: %v", err)
	}
	none := translateFixture()
	delete(none.commits, "billing")
	if _, err := PlanTranslation(context.Background(), none, translateOptions()); !errors.Is(err, ErrNoCommits) {
		t.Errorf("no commits: %v", err)
	}
	behind := translateFixture()
	behind.commits["offloader"]["raw"][2] = 3
	o := translateOptions()
	o.Wait = 20 * time.Millisecond
	_, err := PlanTranslation(context.Background(), behind, o)
	if err == nil || !strings.Contains(err.Error(), "has read further than pipeline orders has copied") || !strings.Contains(err.Error(), "did not within --wait 20ms") {
		t.Errorf("a pipeline behind the group: %v", err)
	}
	if behind.commits["billing"]["slim"] != nil {
		t.Errorf("a refusal committed %v", behind.commits["billing"]["slim"])
	}
}

// With a wait, translation goes on once the pipeline passes the group, and
// says what it waits for meanwhile.
func TestPlanTranslationWaitsForThePipeline(t *testing.T) {
	c := translateFixture()
	c.commits["offloader"]["raw"][2] = 3
	o := translateOptions()
	o.Wait = time.Minute
	var waited []Ahead
	o.Waiting = func(ahead []Ahead) {
		waited = append(waited, ahead...)
		if c.looked >= 3 {
			c.commits["offloader"]["raw"][2] = 10 // the pipeline copies on
		}
	}
	plan, err := PlanTranslation(context.Background(), c, o)
	if err != nil {
		t.Fatal(err)
	}
	if len(waited) < 2 || waited[0].Lag() != 2 || waited[0].Partition != (Partition{Topic: "raw", Partition: 2}) {
		t.Fatalf("told of %+v while waiting; want raw[2] behind by 2, at least twice", waited)
	}
	if plan.Apply[2] != 105 {
		t.Fatalf("plan %+v", plan.Apply)
	}
}

// A group whose offsets move while translate-offsets looks (a consumer
// that commits without joining it) is refused, changing nothing: within the
// quiet window unless forced, and, forced or not, when they moved between
// the plan and its execution.
func TestPlanTranslationRefusesAGroupThatStillCommits(t *testing.T) {
	c := translateFixture()
	o := translateOptions()
	o.Quiet = 20 * time.Millisecond
	c.read = func(n int) {
		if n == 1 {
			c.commits["billing"]["raw"][2]++ // the hand-assigned consumer commits after the first look
		}
	}
	_, err := PlanTranslation(context.Background(), c, o)
	if err == nil || !strings.Contains(err.Error(), "within the 20ms quiet window, on raw[2] (5, now 6)") || !strings.Contains(err.Error(), "--force") {
		t.Fatalf("offsets moving in the quiet window: %v", err)
	}
	o.Force = true
	c.commits["billing"]["raw"][2], c.reads = 5, 0
	plan, err := PlanTranslation(context.Background(), c, o)
	if err != nil || plan.Apply[2] != 106 {
		t.Fatalf("forced: plan %+v, %v; want raw[2]@6's slim record, offset 106", plan, err)
	}

	c.read = nil
	plan, err = PlanTranslation(context.Background(), c, translateOptions())
	if err != nil {
		t.Fatal(err)
	}
	c.commits["billing"]["raw"][2] = 7 // after the plan, before its execution
	err = plan.Execute(context.Background(), c, true)
	if err == nil || !strings.Contains(err.Error(), "committed offsets since translate-offsets read them, on raw[2] (6, now 7)") {
		t.Fatalf("Execute after the group moved: %v", err)
	}
	if c.commits["billing"]["slim"] != nil {
		t.Fatalf("a refused execution committed %v", c.commits["billing"]["slim"])
	}
	c.commits["billing"]["raw"][2] = 6
	c.commits["billing"]["slim"] = map[int32]int64{1: 3} // a commit on the slim topic counts too
	if err := plan.Execute(context.Background(), c, true); err == nil || !strings.Contains(err.Error(), "slim[1] (none, now 3)") {
		t.Fatalf("Execute after a commit on the slim topic: %v", err)
	}
}

// OriginalSHA takes a pointer's sha256 field, or its payload's when deep,
// an inline value's own digest, and nil for a tombstone; a pointer with a
// broken sha256 is an error.
func TestOriginalSHA(t *testing.T) {
	res := resolver.New(resolver.Options{})
	defer res.Close()
	sha := OriginalSHA(res)
	value := []byte("inline")
	got, err := sha(context.Background(), &pipeline.Record{Value: value}, false)
	if want := sha256.Sum256(value); err != nil || got == nil || *got != want {
		t.Fatalf("inline: %x, %v", got, err)
	}
	if got, err := sha(context.Background(), &pipeline.Record{}, false); err != nil || got != nil {
		t.Fatalf("tombstone: %x, %v", got, err)
	}
	payload := []byte("the payload")
	sum := sha256.Sum256(payload)
	ptr := pointer.Pointer{Store: "blob", Key: "k", Size: int64(len(payload)), SHA256: pointer.Digest(sum), Codec: pointer.CodecNone, StoredSize: int64(len(payload))}
	headers := []pipeline.Header{{Key: pointer.HeaderLargeMessage, Value: []byte("true")}, {Key: pointer.HeaderPointer, Value: []byte(pointer.Version1)}}
	got, err = sha(context.Background(), &pipeline.Record{Value: ptr.Encode(), Headers: headers}, false)
	if err != nil || got == nil || *got != sum {
		t.Fatalf("pointer: %x, %v", got, err)
	}
	ptr.SHA256 = "zz"
	if _, err := sha(context.Background(), &pipeline.Record{Value: ptr.Encode(), Headers: headers}, false); err == nil || !strings.Contains(err.Error(), "malformed pointer: sha256") {
		t.Fatalf("a broken sha256: %v", err)
	}
}
