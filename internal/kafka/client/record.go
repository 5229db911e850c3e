package client

import (
	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/offloader/offloader/pipeline"
)

// ToRecord is a consumed message as the pipeline sees it: the record
// keeps the message's key, value and header bytes.
func ToRecord(m *kafka.Message) *pipeline.Record {
	r := &pipeline.Record{
		Topic:     *m.TopicPartition.Topic,
		Partition: m.TopicPartition.Partition,
		Offset:    int64(m.TopicPartition.Offset),
		Key:       m.Key,
		Value:     m.Value,
		Timestamp: m.Timestamp,
	}
	if len(m.Headers) > 0 {
		r.Headers = make([]pipeline.Header, len(m.Headers))
		for i, h := range m.Headers {
			r.Headers[i] = pipeline.Header{Key: h.Key, Value: h.Value}
		}
	}
	return r
}
