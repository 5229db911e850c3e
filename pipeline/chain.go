package pipeline

import (
	"context"
	"fmt"
)

// Chain applies transforms in order. A step that returns nil drops the record and
// the remaining steps do not run.
type Chain []Transform

// Apply implements Transform.
func (c Chain) Apply(ctx context.Context, r *Record) (*Record, error) {
	for _, t := range c {
		out, err := t.Apply(ctx, r)
		if err != nil || out == nil {
			return nil, err
		}
		r = out
	}
	return r, nil
}

// RecordError is a record the chain failed on, with its position in the batch.
type RecordError struct {
	Index  int
	Record *Record
	Err    error
}

func (e *RecordError) Error() string {
	return fmt.Sprintf("record %s/%d@%d: %v", e.Record.Topic, e.Record.Partition, e.Record.Offset, e.Err)
}

func (e *RecordError) Unwrap() error { return e.Err }
