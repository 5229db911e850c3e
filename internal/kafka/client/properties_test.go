package client

import (
	"strings"
	"testing"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/offloader/offloader/memory"
)

// A typo in a librdkafka property or a bad value is found before run, each
// at its path; valid properties pass.
func TestCheckPropertiesFindsTyposAndBadValues(t *testing.T) {
	p := Client{
		Consumer: map[string]string{"fetch.queue.backoff.ms": "10", "session.timeout.ms": "soon"},
		Producer: map[string]string{"linger.msx": "5", "compression.type": "lz4", "acks": "all", "sasl.passwordx": "hunter2", "zzz.nothing.like.it": "1"},
	}
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
	if problems := CheckProperties("pipelines.p", Client{Producer: map[string]string{"linger.ms": "5"}}); len(problems) != 0 {
		t.Errorf("valid properties: %s", problems)
	}
}

// Whatever run's clients refuse, validate refuses first, at the property's
// path and in librdkafka's words: settings that contradict the idempotent,
// transactional producer run builds, and a JAAS configuration, which is
// blamed on sasl.jaas.config alone.
func TestValidateRefusesWhatRunRefuses(t *testing.T) {
	for name, value := range map[string]string{"acks": "1", "retries": "0", "max.in.flight.requests.per.connection": "10", "max.in.flight": "6"} {
		p := Pipeline{Name: "p", TransactionalID: "offloader-p", Client: Client{Bootstrap: "127.0.0.1:1", Producer: map[string]string{name: value}}}
		_, runErr := kafka.NewProducer(ProducerConfig(p, memory.Plan{}))
		problems := CheckProperties("pipelines.p", p.Client)
		if runErr == nil || len(problems) != 1 || problems[0].Path != "pipelines.p.kafka.producer."+name ||
			!strings.Contains(problems[0].Message, runErr.Error()) {
			t.Errorf("%s: %s: run's producer says %v; validate says %s", name, value, runErr, problems)
		}
	}
	p := Client{Consumer: map[string]string{"sasl.jaas.config": "x required;", "sasl.password": "hunter2", "sasl.username": "u"}}
	problems := CheckProperties("pipelines.p", p)
	if len(problems) != 1 || problems[0].Path != "pipelines.p.kafka.consumer.sasl.jaas.config" {
		t.Errorf("a JAAS configuration: %s; want one problem, on sasl.jaas.config", problems)
	}
}

// The properties CheckReaderProperties refuses are exactly those the
// reader's configuration sets over a user's: a user's value for any other
// reaches the consumer, so nothing is dropped without a word.
func TestTheReaderRefusesExactlyThePropertiesItOverwrites(t *testing.T) {
	user := map[string]string{}
	for name := range readerOwned {
		user[name] = "users-value"
	}
	user["fetch.queue.backoff.ms"] = "users-value" // a default of the reader's: the user's wins
	cm := ReaderConfig(Client{Bootstrap: "b:1", Consumer: user}, false)
	for name := range user {
		_, owned := readerOwned[name]
		if overwritten := (*cm)[name] != "users-value"; overwritten != owned {
			t.Errorf("%s: overwritten by the reader %v, refused by CheckReaderProperties %v", name, overwritten, owned)
		}
	}
	for name := range *cm {
		if _, owned := readerOwned[name]; !owned && user[name] == "" && name != "fetch.queue.backoff.ms" {
			user[name] = "users-value"
		}
	}
	cm = ReaderConfig(Client{Bootstrap: "b:1", Consumer: user}, false)
	for name, v := range *cm {
		if _, owned := readerOwned[name]; !owned && v != "users-value" {
			t.Errorf("the reader overwrites %s, which CheckReaderProperties lets through", name)
		}
	}
}
