package client

import (
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/offloader/offloader/memory"
	"github.com/offloader/offloader/settings"
)

// quotedProperty finds the property librdkafka names in a configuration
// error: `No such configuration property: "linger.msx"`, `Invalid value "x"
// for configuration property "linger.ms"`, or, first in back quotes, in a
// conflict: "`acks` must be set to `all` when `enable.idempotence` is true".
var quotedProperty = regexp.MustCompile("property:? \"([^\"]+)\"|^`([^`]+)`")

// CheckProperties checks a pipeline's kafka.consumer and kafka.producer
// properties against the bundled librdkafka, without contacting a broker:
// unknown names and bad values, each reported at its path. A property is
// checked together with the others of its side, since some are only valid in
// combination.
func CheckProperties(path string, c Client) settings.Problems {
	problems := CheckClientProperties(path+".kafka.consumer", "consumer", c.Consumer)
	return append(problems, CheckClientProperties(path+".kafka.producer", "producer", c.Producer)...)
}

// CheckClientProperties checks the librdkafka properties of one client,
// side "consumer" or "producer", each problem at path.NAME.
func CheckClientProperties(path, side string, properties map[string]string) settings.Problems {
	var problems settings.Problems
	props := maps.Clone(properties)
	// Each failure names one property; without it, the others are tried
	// again, so that every bad one is reported.
	for len(props) > 0 {
		msg := tryClient(side, props)
		if msg == "" {
			break
		}
		name := ""
		if m := quotedProperty.FindStringSubmatch(msg); m != nil {
			name = m[1] + m[2]
		}
		if strings.Contains(msg, "JAAS") {
			name = "sasl.jaas.config" // the one property it means, unnamed
		}
		name, ours := namedIn(props, name)
		if !ours {
			keys := slices.Sorted(maps.Keys(props))
			problems.Add(path, "librdkafka refuses these properties (%s): %s", strings.Join(keys, ", "), msg)
			break
		}
		value := props[name]
		if settings.IsSecret(name) {
			value = settings.Redacted
		}
		switch near := closestProperty(side, name); {
		case isUnknownProperty(msg) && near != "":
			problems.Add(path+"."+name, "unknown librdkafka property; did you mean %s?", near)
		case isUnknownProperty(msg):
			problems.Add(path+"."+name, "unknown librdkafka property (librdkafka %s lists its properties in CONFIGURATION.md)", LibraryVersion())
		case strings.Contains(msg, "`enable.idempotence`"):
			problems.Add(path+"."+name, "librdkafka refuses %q: %s (offloader's producer is transactional, so enable.idempotence is always on)", value, msg)
		default:
			problems.Add(path+"."+name, "librdkafka refuses %q: %s", value, msg)
		}
		delete(props, name)
	}
	// librdkafka meets the properties in map order: report them by path.
	slices.SortStableFunc(problems, func(a, b settings.Problem) int { return strings.Compare(a.Path, b.Path) })
	return problems
}

// tryClient creates a client of side with props and the properties run
// sets itself (a transactional, idempotent producer; a read_committed
// consumer that commits nothing by itself), and closes it: no bootstrap
// servers, so it contacts nothing. It returns librdkafka's error, or "".
// So what run's clients refuse (acks 1, retries 0, more than 5 requests in
// flight beside idempotence), validate refuses first, in the same words.
func tryClient(side string, props map[string]string) string {
	p := Pipeline{Client: Client{Consumer: props, Producer: props}, TransactionalID: "offloader-validate", Group: "offloader-validate"}
	cm := ConsumerConfig(p, memory.Plan{})
	if side == "producer" {
		cm = ProducerConfig(p, memory.Plan{})
	}
	// No bootstrap servers: the client contacts nothing.
	delete(*cm, "bootstrap.servers")
	var err error
	if side == "consumer" {
		var c *kafka.Consumer
		if c, err = kafka.NewConsumer(cm); err == nil {
			go drain(c.Logs())
			c.Close()
		}
	} else {
		var pr *kafka.Producer
		if pr, err = kafka.NewProducer(cm); err == nil {
			go drain(pr.Logs())
			pr.Close()
		}
	}
	if err == nil {
		return ""
	}
	return err.Error()
}

// drain discards a client's log until the client closes.
func drain(events chan kafka.LogEvent) {
	for range events {
	}
}
