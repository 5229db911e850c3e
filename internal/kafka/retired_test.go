package kafka

import (
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// A producer's errors are errors until the instance replaces it; then its
// lines (its replacement fencing it, say) are INFO and say it was replaced.
func TestAReplacedProducersFencingIsNoError(t *testing.T) {
	core, logs := observer.New(zapcore.DebugLevel)
	l := newRetiredLog(zap.New(core))
	l.With(zap.String("kafka_client", "rdkafka#producer-3")).Error("Fatal error: Broker: Producer fenced by a newer instance")
	l.retire()
	l.With(zap.String("kafka_client", "rdkafka#producer-3")).Error("Fatal error: Broker: Producer fenced by a newer instance")
	l.Debug("a debug line stays debug")
	all := logs.All()
	if len(all) != 3 {
		t.Fatalf("%d lines, want 3", len(all))
	}
	if all[0].Level != zapcore.ErrorLevel || strings.Contains(all[0].Message, "replaced") {
		t.Errorf("before the replacement: %s %q, want the error as it was", all[0].Level, all[0].Message)
	}
	if all[1].Level != zapcore.InfoLevel || !strings.HasPrefix(all[1].Message, "a transactional producer replaced by this instance, closing: Fatal error") ||
		all[1].ContextMap()["kafka_client"] != "rdkafka#producer-3" {
		t.Errorf("after it: %s %q %v, want INFO saying it was replaced, with its fields", all[1].Level, all[1].Message, all[1].ContextMap())
	}
	if all[2].Level != zapcore.DebugLevel {
		t.Errorf("a debug line became %s", all[2].Level)
	}
}
