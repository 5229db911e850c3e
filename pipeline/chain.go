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
// dropped the record. The first failure cancels the records still in flight and is
// returned as a *RecordError once they have finished: the failure itself, not the
// cancellation it caused in its neighbours, so that the caller classifies the
// real cause (a store outage pauses, a poison record does not).
func ProcessBatch(ctx context.Context, t Transform, in []*Record, concurrency int) ([]*Record, error) {
	out := make([]*Record, len(in))
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		mu    sync.Mutex
		first *RecordError
		wg    sync.WaitGroup
	)
	sem := make(chan struct{}, max(1, concurrency))
	for i, r := range in {
		sem <- struct{}{}
		if ctx.Err() != nil {
			<-sem
			break
		}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			res, err := t.Apply(ctx, r)
			if err == nil {
				out[i] = res
				return
			}
			mu.Lock()
			if first == nil {
				first = &RecordError{Index: i, Record: r, Err: err}
				cancel()
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	if first != nil {
		return nil, first
	}
	if err := ctx.Err(); err != nil {
		// The caller's context ended before every record was processed.
		return nil, err
	}
	return out, nil
}
