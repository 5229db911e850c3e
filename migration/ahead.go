package migration

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Ahead is a source partition a consumer group has read further than the
// pipeline has copied: translated now, the group would stand at the slim
// topic's end and read the records in between a second time once the
// pipeline copies them.
type Ahead struct {
	Partition Partition
	// Group and Pipeline are the group's and the pipeline's next offsets.
	Group, Pipeline int64
}

// Lag is how many offsets the pipeline is behind the group.
func (a Ahead) Lag() int64 { return a.Group - a.Pipeline }

// GroupAhead are the partitions on which group (its committed offsets on
// the source topics) stands past the pipeline (its committed offsets; a
// partition it has none on stands at its start, starts). Sorted by topic
// and partition.
func GroupAhead(group, pipeline, starts map[Partition]int64) []Ahead {
	var out []Ahead
	for p, g := range group {
		at, ok := pipeline[p]
		if !ok {
			at = starts[p]
		}
		if g > at {
			out = append(out, Ahead{Partition: p, Group: g, Pipeline: at})
		}
	}
	slices.SortFunc(out, func(a, b Ahead) int {
		if c := strings.Compare(a.Partition.Topic, b.Partition.Topic); c != 0 {
			return c
		}
		return int(a.Partition.Partition - b.Partition.Partition)
	})
	return out
}

// Describe names the partitions and their lag, for a refusal.
func Describe(ahead []Ahead) string {
	var parts []string
	byTopic := map[string][]Ahead{}
	for _, a := range ahead {
		byTopic[a.Partition.Topic] = append(byTopic[a.Partition.Topic], a)
	}
	for _, topic := range slices.Sorted(maps.Keys(byTopic)) {
		for _, a := range byTopic[topic] {
			parts = append(parts, fmt.Sprintf("%s[%d] (group at %d, pipeline at %d: %d behind)", topic, a.Partition.Partition, a.Group, a.Pipeline, a.Lag()))
		}
	}
	return strings.Join(parts, ", ")
}
