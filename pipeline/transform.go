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
