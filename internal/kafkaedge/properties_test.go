package kafkaedge

import (
	"strings"
	"testing"

	"github.com/offloader/offloader/config"
)

// A typo in a librdkafka property or a bad value is found before run, each
// at its path; valid properties pass.
func TestCheckPropertiesFindsTyposAndBadValues(t *testing.T) {
	p := &config.Pipeline{Kafka: config.Kafka{
		Consumer: map[string]string{"fetch.queue.backoff.ms": "10", "session.timeout.ms": "soon"},
		Producer: map[string]string{"linger.msx": "5", "compression.type": "lz4", "acks": "all", "sasl.passwordx": "hunter2", "zzz.nothing.like.it": "1"},
	}}
	problems := CheckProperties("pipelines.p", p)
	want := []string{
		`pipelines.p.kafka.consumer.session.timeout.ms: librdkafka refuses "soon": Invalid value for configuration property "session.timeout.ms"`,
		`pipelines.p.kafka.producer.linger.msx: unknown librdkafka property; did you mean linger.ms?`,
		`pipelines.p.kafka.producer.sasl.passwordx: unknown librdkafka property; did you mean sasl.password?`,
		`pipelines.p.kafka.producer.zzz.nothing.like.it: unknown librdkafka property (librdkafka 2.`,
	}
	if len(problems) != len(want) {
		t.Fatalf("got %d problems, want %d:\n%s", len(problems), len(want), problems)
	}
	for i, w := range want {
		if !strings.Contains(problems[i].String(), w) {
			t.Errorf("problem %d = %q, want %q", i, problems[i], w)
		}
	}
	if problems := CheckProperties("pipelines.p", &config.Pipeline{Kafka: config.Kafka{Producer: map[string]string{"linger.ms": "5"}}}); len(problems) != 0 {
		t.Errorf("valid properties: %s", problems)
	}
}
