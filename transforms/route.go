package transforms

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/offloader/offloader/pipeline"
	"github.com/offloader/offloader/settings"
)

// RouteConfig chooses each record's output topic from a template instead of
// the slim topic; the record still commits in the pipeline's one transaction.
// Placeholders: {topic} (the source topic), {partition}, {header:NAME} (a
// header's value; a record without it is an error). Braces, because the file's
// ${...} is environment interpolation.
//
//   - type: route
//     topic: 'orders.slim.{header:tenant}'
type RouteConfig struct {
	// Topic is the destination template: {topic}, {partition} and
	// {header:NAME} are replaced by the record's.
	Topic string `key:"topic" required:"true"`
}

var (
	placeholder = regexp.MustCompile(`\{([^{}]*)\}`)
	topicName   = regexp.MustCompile(`^[a-zA-Z0-9._-]{1,249}$`)
)

// Validate implements settings.Validator.
func (c *RouteConfig) Validate(path string, problems *settings.Problems) {
	if _, err := parseRoute(c.Topic); err != nil {
		problems.Add(path+".topic", "%v", err)
	}
}

// A route template is literal text and placeholders, in order.
type routePart struct {
	literal string
	field   func(r *pipeline.Record) (string, error)
}

func parseRoute(tmpl string) ([]routePart, error) {
	var parts []routePart
	rest := tmpl
	for {
		loc := placeholder.FindStringSubmatchIndex(rest)
		if loc == nil {
			break
		}
		parts = append(parts, routePart{literal: rest[:loc[0]]})
		name := rest[loc[2]:loc[3]]
		switch {
		case name == "topic":
			parts = append(parts, routePart{field: func(r *pipeline.Record) (string, error) { return r.Topic, nil }})
		case name == "partition":
			parts = append(parts, routePart{field: func(r *pipeline.Record) (string, error) { return strconv.Itoa(int(r.Partition)), nil }})
		case strings.HasPrefix(name, "header:") && len(name) > len("header:"):
			h := name[len("header:"):]
			parts = append(parts, routePart{field: func(r *pipeline.Record) (string, error) {
				v, ok := r.Header(h)
				if !ok {
					return "", fmt.Errorf("route: the record has no header %q to choose its topic", h)
				}
				return string(v), nil
			}})
		default:
			return nil, fmt.Errorf("unknown placeholder {%s} (known: {topic}, {partition}, {header:NAME})", name)
		}
		rest = rest[loc[1]:]
	}
	parts = append(parts, routePart{literal: rest})
	literal := ""
	for _, p := range parts {
		literal += p.literal
	}
	if strings.ContainsAny(literal, "{}") {
		return nil, fmt.Errorf("unbalanced braces in %q", tmpl)
	}
	if len(parts) == 1 && !topicName.MatchString(literal) {
		return nil, fmt.Errorf("%q is not a valid Kafka topic name", literal)
	}
	return parts, nil
}

type route struct {
	parts   []routePart
	sources map[string]bool
}

// ApplyQuick implements pipeline.Quick.
func (t route) ApplyQuick(r *pipeline.Record) (*pipeline.Record, bool, error) {
	return quick(t.Apply(context.Background(), r))
}

func (t route) Apply(_ context.Context, r *pipeline.Record) (*pipeline.Record, error) {
	var b strings.Builder
	for _, p := range t.parts {
		b.WriteString(p.literal)
		if p.field != nil {
			v, err := p.field(r)
			if err != nil {
				return nil, err
			}
			b.WriteString(v)
		}
	}
	topic := b.String()
	switch {
	case !topicName.MatchString(topic):
		return nil, fmt.Errorf("route: %q is not a valid Kafka topic name", topic)
	case t.sources[topic]:
		return nil, fmt.Errorf("route: %q is a source topic of this pipeline: routing there would loop", topic)
	}
	c := *r
	c.Destination = topic
	return &c, nil
}

func init() {
	Register("route", Kind{
		NewConfig: func() any { return &RouteConfig{} },
		New: func(config any, deps Deps) (pipeline.Transform, error) {
			parts, err := parseRoute(config.(*RouteConfig).Topic)
			if err != nil {
				return nil, fmt.Errorf("route: %w", err)
			}
			t := route{parts: parts, sources: map[string]bool{}}
			for _, s := range deps.SourceTopics {
				t.sources[s] = true
			}
			return t, nil
		},
	})
}
