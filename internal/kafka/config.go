// Package kafka is offloader's edge to Kafka on confluent-kafka-go (cgo,
// bundled librdkafka), the only package besides cmd/ and the client
// adapters that imports it. It takes options (Client, Pipeline), never the
// pipeline file. Its concepts, a file or two each: one librdkafka
// configuration builder per client kind (config.go); the group Source and
// transactional Session the engine (pipeline/engine) runs against, with the
// stuck-call watchdog that replaces a stuck producer (group.go, session.go,
// ends.go); the admin calls (inspect.go: the survey; createtopics.go,
// topics.go: topic creation; groups.go: group offsets); the Reader that
// never skips (reader.go) and topiclog.Log over it (topiclog.go: gc,
// migrate verify and translate-offsets read through it; cat and analyze
// stream a Reader as a topiclog.Source); the removal of a static member
// (leave.go);
// and the check of librdkafka properties (properties.go).
package kafka

import (
	"strconv"
	"strings"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/offloader/offloader/memory"
)

// Defaults for librdkafka properties the user did not set.
var (
	consumerDefaults = kafka.ConfigMap{
		"auto.offset.reset":    "earliest",
		"max.poll.interval.ms": 300000,
		// When the prefetch queue is full (queued.max.messages.kbytes), librdkafka
		// postpones the next fetch by this much; its default of 1000 ms starves the
		// loop after every slow batch (store uploads, commits) once the queue drains.
		"fetch.queue.backoff.ms": 10,
		// A consumer whose first metadata said a subscribed topic was
		// unknown (seen right after a restart, as a static member rejoining
		// at once) would wait librdkafka's default 5 minutes to look again,
		// holding no partitions: it looks again within 10 s.
		"topic.metadata.refresh.interval.ms": 10000,
	}
	producerDefaults = kafka.ConfigMap{
		"linger.ms": 5,
		// Same key -> same partition as the Java clients' default partitioner.
		"partitioner": "murmur2_random",
	}
)

// LibraryVersion is the version of the librdkafka bundled into the build.
func LibraryVersion() string {
	_, v := kafka.LibraryVersion()
	return v
}

func configMap(defaults, budget kafka.ConfigMap, user map[string]string, fixed kafka.ConfigMap) *kafka.ConfigMap {
	cm := kafka.ConfigMap{}
	for k, v := range defaults {
		cm[k] = v
	}
	for k, v := range budget {
		if !setByUser(user, k) {
			cm[k] = v
		}
	}
	for k, v := range user {
		cm[k] = v
	}
	for k, v := range fixed {
		cm[k] = v
	}
	return &cm
}

// setByUser reports whether user sets name or an alias of it.
func setByUser(user map[string]string, name string) bool {
	canonical := func(n string) string {
		if c, ok := properties().canonical[n]; ok {
			return c
		}
		return n
	}
	for k := range user {
		if canonical(k) == canonical(name) {
			return true
		}
	}
	return false
}

// producerConfig is the producer's librdkafka configuration for a pipeline,
// its queue sized from plan (librdkafka's default is 1 GiB of C memory), its
// transaction.timeout.ms the pipeline's (config's default when the user sets
// none, not librdkafka's minute).
func producerConfig(p Pipeline, plan memory.Plan) *kafka.ConfigMap {
	budget := kafka.ConfigMap{}
	if p.TransactionTimeout > 0 {
		budget["transaction.timeout.ms"] = int(p.TransactionTimeout.Milliseconds())
	}
	if plan.ProduceQueue > 0 {
		budget["queue.buffering.max.kbytes"] = int(plan.ProduceQueue >> 10)
		budget["queue.buffering.max.messages"] = plan.ProduceMessages
	}
	return configMap(producerDefaults, budget, p.Producer, kafka.ConfigMap{
		"bootstrap.servers":  p.Bootstrap,
		"transactional.id":   p.TransactionalID,
		"enable.idempotence": true,
		// Nothing reads delivery reports: a failed delivery fails the commit.
		"go.delivery.reports": false,
		// librdkafka's log goes to the pipeline's logger (logClient).
		"go.logs.channel.enable": true,
		// The client's defaults are channels of a million slots, 23 MB of
		// pointers the garbage collector scans every cycle. Events (client
		// errors) are drained and logged (logEvents); ProduceChannel is unused.
		"go.events.channel.size":  1000,
		"go.produce.channel.size": 1,
	})
}

// consumerConfig is the consumer's librdkafka configuration for a pipeline,
// its prefetch sized from plan (none when plan is zero): with the high-level
// consumer, queued.max.messages.kbytes bounds one queue for all partitions,
// and fetch.max.bytes a fetch response over all its partitions, each of
// which may fill it (librdkafka's defaults, 64 MiB and 50 MiB with 1 MiB per
// partition, let a response grow with the partitions fetched).
// A receive.message.max.bytes of the user's caps the fetch size, which
// librdkafka wants 512 bytes below it.
// The member is static (KIP-345): its group.instance.id is the stable
// identity its transactional.id is made of, so that an instance restarted
// after a crash gets its partitions back at once instead of waiting for its
// predecessor's session to expire; a kafka.consumer group.instance.id of the
// user's wins.
func consumerConfig(p Pipeline, plan memory.Plan) *kafka.ConfigMap {
	defaults := kafka.ConfigMap{}
	if p.TransactionalID != "" {
		defaults["group.instance.id"] = p.TransactionalID
	}
	for k, v := range consumerDefaults {
		defaults[k] = v
	}
	budget := kafka.ConfigMap{}
	if plan.Fetch > 0 {
		fetch := plan.Fetch
		if r, err := strconv.ParseInt(p.Consumer["receive.message.max.bytes"], 10, 64); err == nil {
			fetch = min(fetch, r-512)
		}
		budget["queued.max.messages.kbytes"] = int(plan.PrefetchQueue >> 10)
		budget["queued.min.messages"] = plan.PrefetchMessages
		budget["fetch.max.bytes"] = int(fetch)
		budget["fetch.message.max.bytes"] = int(fetch) // max.partition.fetch.bytes
	}
	fixed := kafka.ConfigMap{
		"bootstrap.servers":        p.Bootstrap,
		"isolation.level":          "read_committed",
		"enable.auto.commit":       false,
		"enable.auto.offset.store": false,
		"go.logs.channel.enable":   true,
	}
	if p.Group != "" {
		fixed["group.id"] = p.Group
	}
	return configMap(defaults, budget, p.Consumer, fixed)
}

// adminConfig is an admin client's configuration: the consumer's
// connection settings, and only those.
func adminConfig(c Client) *kafka.ConfigMap {
	cm := kafka.ConfigMap{"go.logs.channel.enable": true, "go.delivery.reports": false}
	for k, v := range *consumerConfig(Pipeline{Client: c}, memory.Plan{}) {
		if isAdminSetting(k) {
			cm[k] = v
		}
	}
	return &cm
}

// adminSettings are the prefixes of the client properties that concern the
// connection: the only ones the admin client gets (the consumer's fetch
// settings would make it warn that it ignores them).
var adminSettings = []string{"bootstrap.servers", "security.", "sasl.", "ssl.", "ssl_", "socket.", "broker.", "client.", "reconnect.",
	"connections.", "enable.metrics.push", "enable.ssl.", "enable.sasl.", "https.", "api.version", "debug", "resolve.canonical.", "metadata.", "topic.metadata."}

func isAdminSetting(name string) bool {
	for _, prefix := range adminSettings {
		if strings.HasPrefix(name, prefix) {
			return true
		}
	}
	return false
}

// readerConfig is a Reader's configuration: a consumer that joins no group
// and commits nothing, read_committed (or, uncommitted, read_uncommitted),
// that says where each partition ends and never resets an offset.
func readerConfig(c Client, uncommitted bool) *kafka.ConfigMap {
	isolation := "read_committed"
	if uncommitted {
		isolation = "read_uncommitted"
	}
	return configMap(kafka.ConfigMap{
		// As the pipeline's consumer: a reader that drains its prefetch queue
		// fast must not wait librdkafka's default second for the next fetch
		// (analyze and verify read at half the copy loop's speed with it).
		"fetch.queue.backoff.ms": 10,
	}, nil, c.Consumer, kafka.ConfigMap{
		"bootstrap.servers":    c.Bootstrap,
		"group.id":             "offloader-reader", // required by librdkafka; nothing is committed
		"enable.auto.commit":   false,
		"isolation.level":      isolation,
		"enable.partition.eof": true,
		// librdkafka's default, largest, turns an offset that retention deleted
		// under the reader into a jump to the end: every record between would
		// be skipped without a word (offloader gc took that for the end).
		"auto.offset.reset": "error",
	})
}

// plainProducerConfig is an idempotent producer's configuration, outside
// any pipeline (the demo's records), with delivery reports for each.
func plainProducerConfig(c Client, maxBytes int) *kafka.ConfigMap {
	return configMap(nil, nil, c.Producer, kafka.ConfigMap{
		"bootstrap.servers": c.Bootstrap, "enable.idempotence": true, "linger.ms": 5,
		"message.max.bytes": maxBytes, "go.delivery.reports": true, "enable.metrics.push": false,
	})
}
