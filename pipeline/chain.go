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
	return c.applyFrom(ctx, r, 0)
}

// applyQuick applies the steps to r for as long as they are quick (see Quick)
// and returns the record reached with the number of the first step still to
// apply: len(c) when the chain is done (out nil: a step dropped the record).
func (c Chain) applyQuick(r *Record) (*Record, int, error) {
	for i, t := range c {
		q, ok := t.(Quick)
		if !ok {
			return r, i, nil
		}
		out, done, err := q.ApplyQuick(r)
		if err != nil {
			return nil, i, &StepError{Step: i, Err: err}
		}
		if !done {
			return r, i, nil
		}
		if out == nil {
			return nil, len(c), nil
		}
		r = out
	}
	return r, len(c), nil
}

// applyFrom applies the steps from step number first on.
func (c Chain) applyFrom(ctx context.Context, r *Record, first int) (*Record, error) {
	for i := first; i < len(c); i++ {
		out, err := c[i].Apply(ctx, r)
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
