package transforms

import (
	"regexp"

	"github.com/offloader/offloader/pipeline"
	"github.com/offloader/offloader/pointer"
	"github.com/offloader/offloader/settings"
)

// The built-in predicates, used as a step's `if:`.

// TopicMatchesConfig: the record's source topic matches a regular expression
// (RE2 syntax, anchored at both ends as Kafka Connect's TopicNameMatches is).
//
//	if: {type: topic_matches, pattern: 'orders\..*'}
type TopicMatchesConfig struct {
	// Pattern must match the whole source topic name (RE2).
	Pattern string `key:"pattern" required:"true"`
}

// Validate implements settings.Validator.
func (c *TopicMatchesConfig) Validate(path string, problems *settings.Problems) {
	if _, err := regexp.Compile(c.Pattern); err != nil {
		problems.Add(path+".pattern", "not a valid regular expression: %v", err)
	}
}

type topicMatches struct{ re *regexp.Regexp }

func (p topicMatches) Test(r *pipeline.Record) bool { return p.re.MatchString(r.Topic) }

// HasHeaderConfig: the record has a header with this name (and, if value is
// set, this exact value).
//
//	if: {type: has_header, name: tenant, value: acme}
type HasHeaderConfig struct {
	// Name is the header that must be there.
	Name string `key:"name" required:"true"`
	// Value, when set, is the value it must have exactly.
	Value *string `key:"value"`
}

type hasHeader struct {
	name  string
	value *string
}

func (p hasHeader) Test(r *pipeline.Record) bool {
	v, ok := r.Header(p.name)
	return ok && (p.value == nil || string(v) == *p.value)
}

// SizeOverConfig: the record's estimated size (key, value, headers and
// framing, as the producer's size check and the offload step count it) is over
// size.
//
//	if: {type: size_over, size: 512KiB}
type SizeOverConfig struct {
	// Size is what the record's estimated size (key, value, headers and
	// framing) must be over.
	Size settings.Size `key:"size" required:"true"`
}

type sizeOver struct{ size int }

func (p sizeOver) Test(r *pipeline.Record) bool { return pipeline.EstimateRecordSize(r) > p.size }

// isTombstone matches records with a null value.
type isTombstone struct{}

func (isTombstone) Test(r *pipeline.Record) bool { return r.IsTombstone() }

// isPointer matches pointer records (headers large-message and offloader-pointer).
type isPointer struct{}

func (isPointer) Test(r *pipeline.Record) bool { return pointer.IsPointer(r.Header) }

// NoSettings is the config of predicates that take none.
type NoSettings struct{}

func init() {
	RegisterPredicate("topic_matches", PredicateKind{
		NewConfig: func() any { return &TopicMatchesConfig{} },
		New: func(config any) (pipeline.Predicate, error) {
			re, err := regexp.Compile("^(?:" + config.(*TopicMatchesConfig).Pattern + ")$")
			return topicMatches{re}, err
		},
	})
	RegisterPredicate("has_header", PredicateKind{
		NewConfig: func() any { return &HasHeaderConfig{} },
		New: func(config any) (pipeline.Predicate, error) {
			c := config.(*HasHeaderConfig)
			return hasHeader{name: c.Name, value: c.Value}, nil
		},
	})
	RegisterPredicate("size_over", PredicateKind{
		NewConfig: func() any { return &SizeOverConfig{} },
		New: func(config any) (pipeline.Predicate, error) {
			return sizeOver{size: int(config.(*SizeOverConfig).Size)}, nil
		},
	})
	RegisterPredicate("is_tombstone", PredicateKind{
		NewConfig: func() any { return &NoSettings{} },
		New:       func(any) (pipeline.Predicate, error) { return isTombstone{}, nil },
	})
	RegisterPredicate("is_pointer", PredicateKind{
		NewConfig: func() any { return &NoSettings{} },
		New:       func(any) (pipeline.Predicate, error) { return isPointer{}, nil },
	})
}
