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
