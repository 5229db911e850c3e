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
	for i, t := range c {
		out, err := t.Apply(ctx, r)
		if err != nil {
			return nil, &StepError{Step: i, Err: err}
		}
		if out == nil {
			return nil, nil
		}
		r = out
	}
	return r, nil
}

// StepError is a failure of the chain's step number Step.
type StepError struct {
	Step int
	Err  error
}

func (e *StepError) Error() string { return e.Err.Error() }

func (e *StepError) Unwrap() error { return e.Err }

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
