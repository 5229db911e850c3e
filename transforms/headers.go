package transforms

import (
	"context"
	"regexp"
	"strconv"

	"github.com/offloader/offloader/pipeline"
	"github.com/offloader/offloader/settings"
)

// Record metadata insert_header can copy into a header.
var headerSources = map[string]func(r *pipeline.Record) string{
	"topic":     func(r *pipeline.Record) string { return r.Topic },
	"partition": func(r *pipeline.Record) string { return strconv.Itoa(int(r.Partition)) },
	"offset":    func(r *pipeline.Record) string { return strconv.FormatInt(r.Offset, 10) },
	// Milliseconds since the Unix epoch, as Kafka stores record timestamps.
	"timestamp": func(r *pipeline.Record) string { return strconv.FormatInt(r.Timestamp.UnixMilli(), 10) },
}

// InsertHeaderConfig adds one header: a static value, or the record's source
// topic, partition, offset or timestamp (milliseconds since the epoch).
//
//   - {type: insert_header, name: source-offset, from: offset}
//   - {type: insert_header, name: env, value: prod}
type InsertHeaderConfig struct {
	// Name is the header's name.
	Name string `key:"name" required:"true"`
	// Value is a static value (or set from).
	Value *string `key:"value"`
	// From takes the value from the record: topic, partition, offset or
	// timestamp (milliseconds since the epoch).
	From string `key:"from"`
}

// Validate implements settings.Validator.
func (c *InsertHeaderConfig) Validate(path string, problems *settings.Problems) {
	switch {
	case c.Value != nil && c.From != "":
		problems.Add(path, "set value or from, not both")
	case c.Value == nil && c.From == "":
		problems.Add(path, "set value (a static string) or from (topic, partition, offset or timestamp)")
	case c.From != "" && headerSources[c.From] == nil:
		problems.Add(path+".from", "must be topic, partition, offset or timestamp, got %q", c.From)
	}
}

type insertHeader struct {
	name  string
	value []byte
	from  func(r *pipeline.Record) string
}

// quick turns the result of an Apply that never waits (no store call, no heavy
// work) into the result of pipeline.Quick's ApplyQuick.
func quick(out *pipeline.Record, err error) (*pipeline.Record, bool, error) { return out, true, err }

// ApplyQuick implements pipeline.Quick.
func (t insertHeader) ApplyQuick(r *pipeline.Record) (*pipeline.Record, bool, error) {
	return quick(t.Apply(context.Background(), r))
}

func (t insertHeader) Apply(_ context.Context, r *pipeline.Record) (*pipeline.Record, error) {
	if t.from != nil {
		return r.WithHeader(t.name, []byte(t.from(r))), nil
	}
	return r.WithHeader(t.name, t.value), nil
}

// DropHeadersConfig removes the headers with any of the names, or whose name
// matches the pattern (a regular expression matched against the whole name).
//
//   - {type: drop_headers, names: [debug-trace], pattern: 'x-internal-.*'}
type DropHeadersConfig struct {
	// Names are headers removed by exact name.
	Names []string `key:"names"`
	// Pattern removes the headers whose whole name it matches (RE2).
	Pattern string `key:"pattern"`
}

// Validate implements settings.Validator.
func (c *DropHeadersConfig) Validate(path string, problems *settings.Problems) {
	if len(c.Names) == 0 && c.Pattern == "" {
		problems.Add(path, "set names (a list of header names), pattern (a regular expression) or both")
	}
	if _, err := regexp.Compile(c.Pattern); err != nil {
		problems.Add(path+".pattern", "not a valid regular expression: %v", err)
	}
}

type dropHeaders struct {
	names   map[string]bool
	pattern *regexp.Regexp
}

func (t dropHeaders) drops(name string) bool {
	return t.names[name] || (t.pattern != nil && t.pattern.MatchString(name))
}

// ApplyQuick implements pipeline.Quick.
func (t dropHeaders) ApplyQuick(r *pipeline.Record) (*pipeline.Record, bool, error) {
	return quick(t.Apply(context.Background(), r))
}

func (t dropHeaders) Apply(_ context.Context, r *pipeline.Record) (*pipeline.Record, error) {
	kept := make([]pipeline.Header, 0, len(r.Headers))
	for _, h := range r.Headers {
		if !t.drops(h.Key) {
			kept = append(kept, h)
		}
	}
	if len(kept) == len(r.Headers) {
		return r, nil
	}
	c := *r
	c.Headers = kept
	return &c, nil
}

// RenameHeaderConfig renames every header called from to to, in place.
//
//   - {type: rename_header, from: traceparent, to: upstream-traceparent}
type RenameHeaderConfig struct {
	// From is the header's name now.
	From string `key:"from" required:"true"`
	// To is its new name.
	To string `key:"to" required:"true"`
}

type renameHeader struct{ from, to string }

// ApplyQuick implements pipeline.Quick.
func (t renameHeader) ApplyQuick(r *pipeline.Record) (*pipeline.Record, bool, error) {
	return quick(t.Apply(context.Background(), r))
}

func (t renameHeader) Apply(_ context.Context, r *pipeline.Record) (*pipeline.Record, error) {
	if _, ok := r.Header(t.from); !ok {
		return r, nil
	}
	c := r.Clone()
	for i := range c.Headers {
		if c.Headers[i].Key == t.from {
			c.Headers[i].Key = t.to
		}
	}
	return c, nil
}

// filter drops every record its step's `if:` matches; their offsets are
// committed like any other's.
type filter struct{}

func (filter) Apply(context.Context, *pipeline.Record) (*pipeline.Record, error) { return nil, nil }

// ApplyQuick implements pipeline.Quick.
func (filter) ApplyQuick(*pipeline.Record) (*pipeline.Record, bool, error) { return nil, true, nil }

func init() {
	Register("insert_header", Kind{
		NewConfig: func() any { return &InsertHeaderConfig{} },
		New: func(config any, _ Deps) (pipeline.Transform, error) {
			c := config.(*InsertHeaderConfig)
			t := insertHeader{name: c.Name, from: headerSources[c.From]}
			if c.Value != nil {
				t.value = []byte(*c.Value)
			}
			return t, nil
		},
	})
	Register("drop_headers", Kind{
		NewConfig: func() any { return &DropHeadersConfig{} },
		New: func(config any, _ Deps) (pipeline.Transform, error) {
			c := config.(*DropHeadersConfig)
			t := dropHeaders{names: map[string]bool{}}
			for _, n := range c.Names {
				t.names[n] = true
			}
			if c.Pattern != "" {
				re, err := regexp.Compile("^(?:" + c.Pattern + ")$")
				if err != nil {
					return nil, err
				}
				t.pattern = re
			}
			return t, nil
		},
	})
	Register("rename_header", Kind{
		NewConfig: func() any { return &RenameHeaderConfig{} },
		New: func(config any, _ Deps) (pipeline.Transform, error) {
			c := config.(*RenameHeaderConfig)
			return renameHeader{from: c.From, to: c.To}, nil
		},
	})
	Register("filter", Kind{
		NewConfig:      func() any { return &NoSettings{} },
		New:            func(any, Deps) (pipeline.Transform, error) { return filter{}, nil },
		NeedsPredicate: true,
	})
}
