// Package confluent adapts the resolver to confluent-kafka-go messages (the
// resolver itself needs no cgo; this adapter does, through the client).
package confluent

import (
	"context"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/offloader/offloader/resolver"
)

// Header returns a lookup of m's headers (the last of a repeated name, as Kafka
// clients read them).
func Header(m *kafka.Message) func(string) ([]byte, bool) {
	return func(name string) ([]byte, bool) {
		for i := len(m.Headers) - 1; i >= 0; i-- {
			if m.Headers[i].Key == name {
				return m.Headers[i].Value, true
			}
		}
		return nil, false
	}
}

// Resolve returns m's original value.
func Resolve(ctx context.Context, r *resolver.Resolver, m *kafka.Message) (resolver.Result, error) {
	return r.Resolve(ctx, m.Value, Header(m))
}
