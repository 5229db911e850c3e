package dlt

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/offloader/offloader/pipeline"
)

// fakeOffload offloads values to a pointer of 20 bytes, or stores a whole
// record as one, counting what it stored; err makes it fail.
type fakeOffload struct {
	values, records int
	err             error
}

func (o *fakeOffload) ValueOffloadFits(rec *pipeline.Record, limit int) bool {
	return pipeline.EstimateRecordSize(&pipeline.Record{Key: rec.Key, Headers: rec.Headers, Value: make([]byte, 20)}) <= limit
}

func (o *fakeOffload) Apply(_ context.Context, rec *pipeline.Record) (*pipeline.Record, error) {
	if o.err != nil {
		return nil, o.err
	}
	o.values++
	out := rec.Clone()
	out.Value = make([]byte, 20)
	return out, nil
}

func (o *fakeOffload) StoreRecord(_ context.Context, rec *pipeline.Record) (*pipeline.Record, error) {
	if o.err != nil {
		return nil, o.err
	}
	o.records++
	return &pipeline.Record{Topic: rec.Topic, Partition: rec.Partition, Offset: rec.Offset, Value: make([]byte, 20)}, nil
}

func failureOf(key, value []byte) Failure {
	return Failure{Record: &pipeline.Record{Topic: "raw", Partition: 1, Offset: 7, Key: key, Value: value},
		Err: errors.New("boom"), Stage: "offload", Attempts: 1, At: time.UnixMilli(1_700_000_000_000)}
}

// A failure's record goes to the topic the decision names: as it is when
// it fits, with its value offloaded when that is enough, else stored whole
// behind a pointer on the dead-letter topic; without a store, or when even
// the pointer is over the limit, nothing can take it.
func TestTheReporterFitsTheRecordToItsTopic(t *testing.T) {
	ctx := context.Background()
	dead := Decision{Action: DeadLetter, Topic: "raw.dlt"}
	retry := Decision{Action: RetryTier, Topic: "raw.retry", Due: time.UnixMilli(1_700_000_060_000)}
	limits := map[string]pipeline.Limit{"raw.dlt": {Bytes: 2000, Gate: "raw.dlt's max.message.bytes (2000)"}, "raw.retry": {Bytes: 2000, Gate: "raw.retry's"}}
	small, big := []byte("v"), bytes.Repeat([]byte("v"), 5000)

	off := &fakeOffload{}
	r := &Reporter{Pipeline: "orders", DeadLetterTopic: "raw.dlt", Limits: limits, Offload: off}
	rec, err := r.Report(ctx, failureOf([]byte("k"), small), dead)
	if err != nil || rec.Destination != "raw.dlt" || string(rec.Value) != "v" || off.values+off.records != 0 {
		t.Fatalf("a record that fits: %+v, %v, stored %d+%d", rec, err, off.values, off.records)
	}
	rec, err = r.Report(ctx, failureOf([]byte("k"), big), retry)
	if err != nil || rec.Destination != "raw.retry" || len(rec.Value) != 20 || off.values != 1 {
		t.Fatalf("a large value for a retry tier: %+v, %v, values stored %d", rec, err, off.values)
	}
	if _, ok := Due(rec.Header); !ok {
		t.Error("the retry record lost its due time")
	}
	rec, err = r.Report(ctx, failureOf(bytes.Repeat([]byte("k"), 3000), small), retry)
	if err != nil || rec.Destination != "raw.dlt" || off.records != 1 {
		t.Fatalf("a fat key: %+v, %v, records stored %d; want the whole record stored, on the dead-letter topic", rec, err, off.records)
	}

	off.err = errors.New("store down")
	if _, err := r.Report(ctx, failureOf([]byte("k"), big), dead); !errors.Is(err, off.err) {
		t.Errorf("a store failure: %v, want it returned as it is", err)
	}
	var unfit *UnfitError
	noStore := &Reporter{Pipeline: "orders", DeadLetterTopic: "raw.dlt", Limits: limits}
	if _, err := noStore.Report(ctx, failureOf([]byte("k"), big), dead); !errors.As(err, &unfit) || !strings.Contains(err.Error(), "raw/1@7 failed (boom)") || !strings.Contains(err.Error(), "add an offload step") {
		t.Errorf("without a store: %v", err)
	}
	tight := &Reporter{Pipeline: "orders", DeadLetterTopic: "raw.dlt", Offload: &fakeOffload{},
		Limits: map[string]pipeline.Limit{"raw.dlt": {Bytes: 30, Gate: "raw.dlt's max.message.bytes (30)"}}}
	if _, err := tight.Report(ctx, failureOf([]byte("k"), big), dead); !errors.As(err, &unfit) || !strings.Contains(err.Error(), "even the pointer to it") {
		t.Errorf("a pointer over the limit: %v", err)
	}
	unlimited := &Reporter{Pipeline: "orders", DeadLetterTopic: "raw.dlt"}
	if rec, err := unlimited.Report(ctx, failureOf([]byte("k"), big), dead); err != nil || len(rec.Value) != 5000 {
		t.Errorf("a topic without a limit: %v", err)
	}
}
