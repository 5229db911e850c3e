package pipeline

import "context"

// Transform is one step of the chain, with Kafka Connect's contract: Apply returns
// a new record, nil to drop the record (its offset is still committed), or an
// error. It never changes the record it is given (use Record.Clone), and it is
// safe for concurrent use: records of different partitions go through the chain
// at the same time.
type Transform interface {
	Apply(ctx context.Context, r *Record) (*Record, error)
}

// Quick is implemented by a step that can often finish a record at once: with
// no store call and no heavy work (compressing a large value). ApplyQuick does
// so and reports done, or reports not done and leaves the record to Apply on a
// worker goroutine. A Batch applies quick steps on the goroutine that adds the
// records, and hands a record to a worker only from its first step that is not
// quick: for small records that pass through, a handoff per record costs more
// than the step.
type Quick interface {
	ApplyQuick(r *Record) (out *Record, done bool, err error)
}

// Predicate decides whether a step applies to a record. It never changes it.
type Predicate interface {
	Test(r *Record) bool
}

// Gate applies Step to the records Predicate matches (or, with Negate, to those
// it does not match) and passes every other record through unchanged: a
// Kafka Connect transform with a predicate.
type Gate struct {
	Predicate Predicate
	Negate    bool
	Step      Transform
}

// Apply implements Transform.
func (g Gate) Apply(ctx context.Context, r *Record) (*Record, error) {
	if g.Predicate.Test(r) == g.Negate {
		return r, nil
	}
	return g.Step.Apply(ctx, r)
}

// ApplyQuick implements Quick: a record the predicate passes over is done at
// once; one it picks is as quick as the gated step.
func (g Gate) ApplyQuick(r *Record) (*Record, bool, error) {
	if g.Predicate.Test(r) == g.Negate {
		return r, true, nil
	}
	if q, ok := g.Step.(Quick); ok {
		return q.ApplyQuick(r)
	}
	return nil, false, nil
}
