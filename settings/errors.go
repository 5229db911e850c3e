package settings

import (
	"fmt"
	"sort"
	"strings"
)

// Problem is one thing wrong with a configuration, at a dotted path such as
// `pipelines.orders.stores.blob.container`.
type Problem struct {
	Path    string
	Message string
}

func (p Problem) String() string {
	if p.Path == "" {
		return p.Message
	}
	return p.Path + ": " + p.Message
}

// Problems is every problem found in one configuration. A non-empty Problems is an
// error whose text lists them one per line, ordered by path.
type Problems []Problem

// Add appends a problem at path.
func (ps *Problems) Add(path, format string, args ...any) {
	*ps = append(*ps, Problem{Path: path, Message: fmt.Sprintf(format, args...)})
}

// Err returns nil when there are no problems, and the sorted problems otherwise.
func (ps Problems) Err() error {
	if len(ps) == 0 {
		return nil
	}
	sorted := append(Problems(nil), ps...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Path < sorted[j].Path })
	return sorted
}

func (ps Problems) Error() string {
	lines := make([]string, len(ps))
	for i, p := range ps {
		lines[i] = p.String()
	}
	return strings.Join(lines, "\n")
}
