// Package transforms holds the registry of transform types and the built-in
// transforms. A transform type is one file: its typed config (decoded strictly
// from the step's YAML, see package settings) and a constructor, registered by
// name in an init function:
//
//	func init() {
//		transforms.Register("offload", transforms.Kind{
//			NewConfig: func() any { return &OffloadConfig{Threshold: ...} },
//			New:       newOffload,
//		})
//	}
package transforms

import (
	"fmt"

	"github.com/offloader/offloader/pipeline"
	"github.com/offloader/offloader/settings"
	"github.com/offloader/offloader/stores"
)

// Deps is what a transform may use from the running pipeline.
type Deps struct {
	// Pipeline is the pipeline's name.
	Pipeline string
	// Writer, when set, is written into each object's metadata as its
	// writer (stores.MetaWriter), which offloader gc deletes by.
	Writer string
	// Cluster, when set, is the id of the Kafka cluster the records come
	// from: the first segment of each object's key under the step's prefix,
	// and its cluster metadata (stores.MetaCluster), so that two clusters
	// sharing a store never write one key.
	Cluster string
	// SourceTopics are the topics the pipeline consumes.
	SourceTopics []string
	// Stores are the pipeline's open payload stores by configured name.
	Stores map[string]stores.Store
	// SlimTopicLimit is the largest record, in bytes, the slim topic and the
	// producer both accept (the smaller of the topic's max.message.bytes and the
	// producer's message size limit); 0 when unknown.
	SlimTopicLimit int
	// StoreRetry retries store calls within the store budget (and reports
	// the slow ones).
	StoreRetry stores.RetryPolicy
}

// KeyWriter is implemented by the configs of steps that write objects to a
// store: offloader gc lists the prefix and validate keeps pipelines' apart.
type KeyWriter interface {
	// WritesUnder is the store and the key prefix (no trailing slash) the
	// step writes under in a pipeline of that name.
	WritesUnder(pipeline string) (store, prefix string)
}

// Bound is implemented by the configs of steps that bound the size of the
// records they emit, which the limit check (offloader check, and run at
// start-up) asks instead of knowing each step.
type Bound interface {
	// Emits is the largest record the step emits inline under a slim topic
	// limit of limit bytes, and whether it offloads the values of larger
	// records (so that no record after it is larger).
	Emits(limit int) (largest int, offloads bool)
}

// Kind is what a transform type registers.
type Kind struct {
	// NewConfig returns a pointer to the type's config struct holding the defaults.
	NewConfig func() any
	// New builds the transform from its decoded config.
	New func(config any, deps Deps) (pipeline.Transform, error)
	// NeedsPredicate is set for steps that mean nothing without `if:` (filter).
	NeedsPredicate bool
}

// PredicateKind is what a predicate type registers.
type PredicateKind struct {
	NewConfig func() any
	New       func(config any) (pipeline.Predicate, error)
}

// Predicates is the registry of predicate types.
var Predicates settings.Registry[PredicateKind]

// RegisterPredicate makes a predicate type available by name.
func RegisterPredicate(typ string, k PredicateKind) { Predicates.Register(typ, k) }

// NewPredicate builds a predicate of type typ from its decoded config.
func NewPredicate(typ string, config any) (pipeline.Predicate, error) {
	k, ok := Predicates.Lookup(typ)
	if !ok {
		return nil, fmt.Errorf("unknown predicate type %q (known: %v)", typ, Predicates.Types())
	}
	return k.New(config)
}

// StoreUser is implemented by transform configs that name a payload store, so that
// the config loader can check that the store is defined.
type StoreUser interface {
	StoreName() string
}

// Kinds is the registry of transform types.
var Kinds settings.Registry[Kind]

// Register makes a transform type available by name; a duplicate name panics.
func Register(typ string, k Kind) { Kinds.Register(typ, k) }

// New builds a transform of type typ from its decoded config.
func New(typ string, config any, deps Deps) (pipeline.Transform, error) {
	k, ok := Kinds.Lookup(typ)
	if !ok {
		return nil, fmt.Errorf("unknown transform type %q (known: %v)", typ, Kinds.Types())
	}
	return k.New(config, deps)
}
