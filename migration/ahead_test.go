package migration

import (
	"strings"
	"testing"
)

// A group is ahead where its committed offset is past the pipeline's, or
// past the partition's start where the pipeline has no commit yet; at or
// behind the pipeline it is not.
func TestGroupAheadNamesThePartitionsAndTheLag(t *testing.T) {
	p := func(topic string, n int32) Partition { return Partition{Topic: topic, Partition: n} }
	group := map[Partition]int64{p("raw", 0): 100, p("raw", 1): 50, p("raw", 2): 7, p("raw", 3): 0}
	pipeline := map[Partition]int64{p("raw", 0): 60, p("raw", 1): 50}
	starts := map[Partition]int64{p("raw", 2): 5, p("raw", 3): 0}
	got := GroupAhead(group, pipeline, starts)
	if len(got) != 2 || got[0].Partition != p("raw", 0) || got[0].Lag() != 40 || got[1].Partition != p("raw", 2) || got[1].Lag() != 2 {
		t.Fatalf("ahead %+v", got)
	}
	if d := Describe(got); !strings.Contains(d, "raw[0] (group at 100, pipeline at 60: 40 behind)") || !strings.Contains(d, "raw[2] (group at 7, pipeline at 5: 2 behind)") {
		t.Errorf("Describe = %q", d)
	}
}
