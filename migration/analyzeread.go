package migration

import (
	"context"
	"errors"
	"time"

	"github.com/offloader/offloader/limits"
	"github.com/offloader/offloader/topiclog"
)

// ReadAll adds every record of src to the analysis, until src returns end;
// another error of src ends it.
func (a *Analysis) ReadAll(ctx context.Context, src topiclog.Source, end error) error {
	for {
		rec, err := src.Next(ctx, time.Second)
		if errors.Is(err, end) {
			return nil
		}
		if err != nil {
			return err
		}
		if rec != nil {
			a.Add(rec)
		}
	}
}

// defaultFetchMaxBytes is librdkafka's fetch.max.bytes.
const defaultFetchMaxBytes = 52428800

// SourceGates are the gates a record of source topic src meets today, from
// the figures a survey read: the topic's max.message.bytes (its own, or the
// broker's message.max.bytes it inherits: the broker's is not a gate of a
// topic that overrides it) and (Kafka 4.4) max.decompressed.message.bytes,
// and the fetch caps of a consumer with the analysis's settings:
// fetch.max.bytes (fetchMax, 0: librdkafka's default) and
// receive.message.max.bytes. A producer's message.max.bytes is not one of
// them: the records on the topic passed their producers' limits, and the
// pipeline's own producer writes to the slim topic, whose limit the offload
// figures use.
func SourceGates(f *limits.Figures, src limits.TopicInfo, fetchMax int) []Gate {
	if fetchMax <= 0 {
		fetchMax = defaultFetchMaxBytes
	}
	gates := []Gate{{Name: "topic max.message.bytes", Limit: src.MaxMessageBytes}}
	if src.MaxDecompressedBytes > 0 {
		gates = append(gates, Gate{Name: "topic max.decompressed.message.bytes", Limit: src.MaxDecompressedBytes})
	}
	return append(gates, Gate{Name: "consumer fetch.max.bytes", Limit: fetchMax},
		Gate{Name: "consumer receive.message.max.bytes", Limit: f.ConsumerReceiveMaxBytes})
}

// SlimLimitOf is the slim topic's limit for an analysis: its own, or,
// before it exists, the producer's, which is still a gate.
func SlimLimitOf(f *limits.Figures) int {
	if f.Slim.Exists {
		return f.SlimLimit().Bytes
	}
	return f.ProducerMaxMessageBytes
}
