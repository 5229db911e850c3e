package settings

import (
	"fmt"
	"sort"
	"strings"
)

// Problem is one thing wrong with a configuration, at a dotted path such as
// `pipelines.orders.stores.blob.container`.
type Problem struct {
	Path    string `json:"path"`
	Message string `json:"message"`
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

// MaxMessage bounds a problem's message; a longer one (quoting a huge value)
// is cut.
const MaxMessage = 400

// MaxShown bounds the problems Error lists; the rest are counted.
const MaxShown = 50

// Add appends a problem at path.
func (ps *Problems) Add(path, format string, args ...any) {
	*ps = append(*ps, Problem{Path: path, Message: cut(fmt.Sprintf(format, args...))})
}

func cut(s string) string {
	if len(s) <= MaxMessage {
		return s
	}
	return strings.ToValidUTF8(s[:MaxMessage], "") + fmt.Sprintf("... (%d bytes in all)", len(s))
}

// Shown returns the first MaxShown problems and how many more there are.
func (ps Problems) Shown() (Problems, int) {
	if len(ps) <= MaxShown {
		return ps, 0
	}
	return ps[:MaxShown], len(ps) - MaxShown
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
	shown, more := ps.Shown()
	lines := make([]string, len(shown), len(shown)+1)
	for i, p := range shown {
		lines[i] = p.String()
	}
	if more > 0 {
		lines = append(lines, fmt.Sprintf("(and %d more problems)", more))
	}
	return strings.Join(lines, "\n")
}
