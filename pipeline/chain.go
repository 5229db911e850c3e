package pipeline

import (
	"context"
	"fmt"
	"sync"
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

// ProcessBatch runs the transform over every record of a batch, up to concurrency
// records at a time (store uploads of different records overlap), and returns the
// outputs in input order: out[i] belongs to in[i] and is nil where the chain
// dropped the record. On failure it returns the first failing record's
// *RecordError (by batch position) after the records in flight have finished.
func ProcessBatch(ctx context.Context, t Transform, in []*Record, concurrency int) ([]*Record, error) {
	out := make([]*Record, len(in))
	errs := make([]error, len(in))
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sem := make(chan struct{}, max(1, concurrency))
	var wg sync.WaitGroup
	for i, r := range in {
		if ctx.Err() != nil {
			errs[i] = ctx.Err()
			break
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			out[i], errs[i] = t.Apply(ctx, r)
			if errs[i] != nil {
				cancel() // the batch will be retried or failed as a whole
			}
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return nil, &RecordError{Index: i, Record: in[i], Err: err}
		}
	}
	return out, nil
}
