// Package client is how offloader's librdkafka clients are made: one
// configuration builder per client kind (the transactional producer and the
// group consumer of a pipeline, an admin client, a Reader, a plain
// producer), each merging defaults, the memory budget's sizes, the user's
// properties and the settings offloader fixes, in that order; the check of
// librdkafka property names and values (properties.go); the client log
// stream, said once per broker outage (logs.go); and the bundled
// allocator's heap (malloc.go). It takes options (Client, Pipeline), never
// the pipeline file.
//
//	c, err := kafka.NewConsumer(client.ConsumerConfig(p, plan))
//	go client.Log(log, c.Logs(), away)
package client

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/offloader/offloader/memory"
	"github.com/offloader/offloader/settings"
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

// ProducerConfig is the producer's librdkafka configuration for a pipeline,
// its queue sized from plan (librdkafka's default is 1 GiB of C memory), its
// transaction.timeout.ms the pipeline's (config's default when the user sets
// none, not librdkafka's minute).
func ProducerConfig(p Pipeline, plan memory.Plan) *kafka.ConfigMap {
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
		// librdkafka's log goes to the pipeline's logger (Log).
		"go.logs.channel.enable": true,
		// The client's defaults are channels of a million slots, 23 MB of
		// pointers the garbage collector scans every cycle. Events (client
		// errors) are drained and logged (logEvents); ProduceChannel is unused.
		"go.events.channel.size":  1000,
		"go.produce.channel.size": 1,
	})
}

// ConsumerConfig is the consumer's librdkafka configuration for a pipeline,
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
func ConsumerConfig(p Pipeline, plan memory.Plan) *kafka.ConfigMap {
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

// AdminConfig is an admin client's configuration: the consumer's
// connection settings, and only those.
func AdminConfig(c Client) *kafka.ConfigMap {
	cm := kafka.ConfigMap{"go.logs.channel.enable": true, "go.delivery.reports": false}
	for k, v := range *ConsumerConfig(Pipeline{Client: c}, memory.Plan{}) {
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

// ReaderConfig is a Reader's configuration: a consumer that joins no group
// and commits nothing, read_committed (or, uncommitted, read_uncommitted),
// that says where each partition ends and never resets an offset.
func ReaderConfig(c Client, uncommitted bool) *kafka.ConfigMap {
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

// readerOwned are the consumer properties a Reader sets itself, each with
// why: given by a user, they would be overwritten without a word.
var readerOwned = map[string]string{
	"bootstrap.servers":    "give the brokers with -b",
	"group.id":             "a reader joins no group: it assigns itself the partitions it reads and commits nothing",
	"enable.auto.commit":   "a reader commits nothing",
	"enable.partition.eof": "a reader needs it to know where each partition ends",
	"auto.offset.reset":    "a reader never skips: an offset no longer in the log is an error, not a jump",
	"isolation.level":      "a reader reads committed records (read_committed)",
}

// CheckReaderProperties refuses the properties a Reader sets itself, each
// with the reason, where path (such as "-X") names the flag that gave them.
// isolation.level is refused only when isolation is false: a caller that
// takes it sets ReaderOptions.Uncommitted from it (ReaderIsolation).
func CheckReaderProperties(path string, props map[string]string, isolation bool) settings.Problems {
	var problems settings.Problems
	for _, name := range slices.Sorted(maps.Keys(props)) {
		why, owned := readerOwned[name]
		if owned && !(isolation && name == "isolation.level") {
			problems.Add(path+" "+name, "offloader sets it: %s", why)
		}
	}
	return problems
}

// ReaderIsolation takes isolation.level out of props: whether it asks for
// read_uncommitted. A value other than read_committed or read_uncommitted
// is an error.
func ReaderIsolation(props map[string]string) (uncommitted bool, err error) {
	level, given := props["isolation.level"]
	delete(props, "isolation.level")
	switch {
	case !given || level == "read_committed":
		return false, nil
	case level == "read_uncommitted":
		return true, nil
	}
	return false, fmt.Errorf("isolation.level must be read_committed or read_uncommitted, got %q", level)
}

// PlainProducerConfig is an idempotent producer's configuration, outside
// any pipeline (the demo's records), with delivery reports for each.
func PlainProducerConfig(c Client, maxBytes int) *kafka.ConfigMap {
	return configMap(nil, nil, c.Producer, kafka.ConfigMap{
		"bootstrap.servers": c.Bootstrap, "enable.idempotence": true, "linger.ms": 5,
		"message.max.bytes": maxBytes, "go.delivery.reports": true, "enable.metrics.push": false,
	})
}
