package engine

import (
	"context"
	"slices"

	"github.com/offloader/offloader/dlt"
	"github.com/offloader/offloader/pipeline"
	"github.com/offloader/offloader/pointer"
)

// finish is the chain's last stage: the output as the slim topic gets it,
// its retry headers removed (a retried record that succeeded leaves them
// behind) and its offloader-source header set, checked against the slim
// topic's size gate. A record over it fails like any step's, with a
// *dlt.TooLargeError the policy routes. Records a step routed to another
// topic (Destination) pass unchecked.
type finish struct{ limit Limit }

// finishStage names the stage in error headers and logs.
const finishStage = "size check"

func (f finish) ApplyQuick(r *pipeline.Record) (*pipeline.Record, bool, error) {
	out, err := f.apply(r)
	return out, true, err
}

func (f finish) Apply(_ context.Context, r *pipeline.Record) (*pipeline.Record, error) {
	return f.apply(r)
}

func (f finish) apply(r *pipeline.Record) (*pipeline.Record, error) {
	out := withSource(dlt.Clean(r), r)
	if out.Destination != "" || f.limit.Bytes <= 0 {
		return out, nil
	}
	if size := pipeline.EstimateRecordSize(out); size > f.limit.Bytes {
		return nil, &dlt.TooLargeError{Size: size, Limit: f.limit.Bytes, Gate: f.limit.Gate}
	}
	return out, nil
}

// withSource returns out with the offloader-source header naming in's
// coordinates (replacing one a transform or the source carried).
func withSource(out, in *pipeline.Record) *pipeline.Record {
	c := out.Clone()
	c.Headers = slices.DeleteFunc(c.Headers, func(h pipeline.Header) bool { return h.Key == pointer.HeaderSource })
	c.Headers = append(c.Headers, pipeline.Header{Key: pointer.HeaderSource, Value: pointer.Source(in.Topic, in.Partition, in.Offset)})
	return c
}
