// Package franz adapts the serializer to franz-go's kgo records and client.
package franz

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/offloader/offloader/serializer"
)

// Record returns the record to produce for r: r itself when it stays as it
// is, else a copy with the pointer (or inline-compressed) value and headers.
// r's partition, timestamp and context are kept.
func Record(ctx context.Context, s *serializer.Serializer, r *kgo.Record) (*kgo.Record, error) {
	headers := make([]serializer.Header, len(r.Headers))
	for i, h := range r.Headers {
		headers[i] = serializer.Header{Key: h.Key, Value: h.Value}
	}
	out, err := s.Serialize(ctx, r.Topic, r.Key, r.Value, headers)
	if err != nil {
		return nil, err
	}
	if !out.Changed {
		return r, nil
	}
	c := *r
	c.Value = out.Value
	c.Headers = make([]kgo.RecordHeader, len(out.Headers))
	for i, h := range out.Headers {
		c.Headers[i] = kgo.RecordHeader{Key: h.Key, Value: h.Value}
	}
	return &c, nil
}

// CheckClient says whether s's store budget fits cl's RecordDeliveryTimeout
// (none set: no limit).
func CheckClient(s *serializer.Serializer, cl *kgo.Client) error {
	d, _ := cl.OptValue(kgo.RecordDeliveryTimeout).(time.Duration)
	return s.CheckDeliveryTimeout(d)
}

// ProduceSync serializes each record and produces them with cl, as
// kgo.Client.ProduceSync does; a record that cannot be serialized is not
// produced and its result carries the error.
func ProduceSync(ctx context.Context, s *serializer.Serializer, cl *kgo.Client, rs ...*kgo.Record) kgo.ProduceResults {
	results := make(kgo.ProduceResults, 0, len(rs))
	var send []*kgo.Record
	for _, r := range rs {
		out, err := Record(ctx, s, r)
		if err != nil {
			results = append(results, kgo.ProduceResult{Record: r, Err: err})
			continue
		}
		send = append(send, out)
	}
	return append(results, cl.ProduceSync(ctx, send...)...)
}
