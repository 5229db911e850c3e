// Package confluent adapts the serializer to confluent-kafka-go messages and
// producers (the serializer needs no cgo; this adapter does, through the
// client).
package confluent

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/offloader/offloader/serializer"
)

// Message returns the message to produce for m: m itself when it stays as
// it is, else a copy with the pointer (or inline-compressed) value and
// headers; m's topic, partition, timestamp and opaque are kept.
func Message(ctx context.Context, s *serializer.Serializer, m *kafka.Message) (*kafka.Message, error) {
	topic := ""
	if m.TopicPartition.Topic != nil {
		topic = *m.TopicPartition.Topic
	}
	headers := make([]serializer.Header, len(m.Headers))
	for i, h := range m.Headers {
		headers[i] = serializer.Header{Key: h.Key, Value: h.Value}
	}
	out, err := s.Serialize(ctx, topic, m.Key, m.Value, headers)
	if err != nil {
		return nil, err
	}
	if !out.Changed {
		return m, nil
	}
	c := *m
	c.Value = out.Value
	c.Headers = make([]kafka.Header, len(out.Headers))
	for i, h := range out.Headers {
		c.Headers[i] = kafka.Header{Key: h.Key, Value: h.Value}
	}
	return &c, nil
}

// Producer produces through a serializer.
type Producer struct {
	*kafka.Producer
	Serializer *serializer.Serializer
}

// NewProducer returns a producer for cfg whose Produce serializes first. It
// refuses a store budget that does not fit cfg's delivery timeout
// (message.timeout.ms, or its alias delivery.timeout.ms; librdkafka's
// default is 300000).
func NewProducer(s *serializer.Serializer, cfg *kafka.ConfigMap) (*Producer, error) {
	d, err := deliveryTimeout(cfg)
	if err != nil {
		return nil, err
	}
	if err := s.CheckDeliveryTimeout(d); err != nil {
		return nil, err
	}
	p, err := kafka.NewProducer(cfg)
	if err != nil {
		return nil, err
	}
	return &Producer{Producer: p, Serializer: s}, nil
}

// Produce serializes m (storing its value if it is over the threshold)
// and produces the result, as kafka.Producer.Produce does.
func (p *Producer) Produce(ctx context.Context, m *kafka.Message, deliveryChan chan kafka.Event) error {
	out, err := Message(ctx, p.Serializer, m)
	if err != nil {
		return err
	}
	return p.Producer.Produce(out, deliveryChan)
}

func deliveryTimeout(cfg *kafka.ConfigMap) (time.Duration, error) {
	for _, name := range []string{"message.timeout.ms", "delivery.timeout.ms"} {
		v, err := cfg.Get(name, nil)
		if err != nil || v == nil {
			continue
		}
		ms, err := strconv.Atoi(fmt.Sprint(v))
		if err != nil {
			return 0, fmt.Errorf("%s %v is not a number of milliseconds", name, v)
		}
		return time.Duration(ms) * time.Millisecond, nil
	}
	return 300 * time.Second, nil
}
