package config

import (
	"fmt"
	"maps"
	"net"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/offloader/offloader/settings"
	"github.com/offloader/offloader/stores"
)

var (
	// validName is Kafka's rule for topic names, and ours for pipeline names.
	validName  = regexp.MustCompile(`^[A-Za-z0-9._-]{1,100}$`)
	validTopic = regexp.MustCompile(`^[A-Za-z0-9._-]{1,249}$`)
)

// Properties that offloader sets itself for exactly-once processing: setting them
// by hand would break it or contradict another setting. The value says where the
// setting lives instead.
var (
	reservedConsumer = map[string]string{
		"bootstrap.servers":        "set kafka.bootstrap_servers instead",
		"group.id":                 "set source.group instead",
		"enable.auto.commit":       "offloader commits offsets inside its transactions; it must stay false",
		"enable.auto.offset.store": "offloader tracks positions itself; it must stay false",
		"isolation.level":          "offloader reads only committed records (read_committed) so that aborted input is never copied",
	}
	reservedProducer = map[string]string{
		"bootstrap.servers":  "set kafka.bootstrap_servers instead",
		"transactional.id":   "set kafka.transactional_id instead",
		"enable.idempotence": "transactions need the idempotent producer; offloader turns it on",
	}
)

// defaultMaxPollInterval is librdkafka's max.poll.interval.ms, which the
// time budget is checked against.
const defaultMaxPollInterval = 300 * time.Second

// DefaultTransactionTimeout is transaction.timeout.ms when the pipeline file
// leaves it unset and the commit interval allows. An instance that dies with
// a transaction open holds read_committed readers of its partitions until it
// times out (unless its transactional.id starts again and fences it at once),
// so the shorter, the sooner they read on: librdkafka's own default is 60 s,
// Kafka Streams' for exactly-once 10 s, as here. A transaction still open
// when its coordinator comes back from a broker restart past the timeout is
// aborted with an epoch bump, which librdkafka reports as the producer being
// fenced: the instance replaces its producer and reprocesses the batch from
// its last commit (a second fencing within minutes stops it, as a twin's
// would).
const DefaultTransactionTimeout = 10 * time.Second

// defaultTransactionTimeout is transaction.timeout.ms when the pipeline file
// leaves it unset: DefaultTransactionTimeout, or, when commit.interval is
// not under half of it, the next multiple of 5 s over twice the interval. A
// transaction stays open about one commit interval: the pipeline never keeps
// one open while records wait for a store (a batch commits what finished
// and carries the uploads on, and produces nothing while a store is away).
func (p *Pipeline) defaultTransactionTimeout() time.Duration {
	held := 2 * p.Commit.Interval
	if held < DefaultTransactionTimeout {
		return DefaultTransactionTimeout
	}
	return (held/(5*time.Second) + 1) * 5 * time.Second
}

func (p *Pipeline) validate(path string, problems *settings.Problems) {
	p.validateKafka(path, problems)
	p.validateTopics(path, problems)

	if err := p.Partitioning.Validate(); err != nil {
		problems.Add(path+".partitioning", "%v", err)
	}
	if err := p.Limits.Validate(); err != nil {
		problems.Add(path+".limits", "%v", err)
	}

	if p.Commit.MaxRecords < 1 {
		problems.Add(path+".commit.max_records", "must be at least 1, got %d", p.Commit.MaxRecords)
	}
	if p.Commit.MaxBytes < settings.KiB {
		problems.Add(path+".commit.max_bytes", "must be at least 1KiB, got %s", p.Commit.MaxBytes)
	}
	if p.Commit.Interval < time.Millisecond {
		problems.Add(path+".commit.interval", "must be at least 1ms, got %s", p.Commit.Interval)
	}
	if p.Memory.InFlight < 16*settings.MiB || p.Memory.InFlight > 4*settings.GiB {
		// Above 4GiB, the derived librdkafka sizes leave its ranges
		// (fetch.message.max.bytes: 1000000000 at most).
		problems.Add(path+".memory.in_flight", "must be between 16MiB and 4GiB, got %s", p.Memory.InFlight)
	}
	if p.Memory.MaxUploads < 1 || p.Memory.MaxUploads > 1024 {
		problems.Add(path+".memory.max_uploads", "must be between 1 and 1024, got %d", p.Memory.MaxUploads)
	}

	p.validateErrors(path, problems)
	p.validateTimeBudget(path, problems)
	p.validateObservability(path, problems)
}

func (p *Pipeline) validateKafka(path string, problems *settings.Problems) {
	for _, server := range strings.Split(p.Kafka.BootstrapServers, ",") {
		if p.Kafka.BootstrapServers == "" {
			break // reported as required
		}
		if _, port, err := net.SplitHostPort(strings.TrimSpace(server)); err != nil || port == "" {
			problems.Add(path+".kafka.bootstrap_servers", "%q is not host:port (list several separated by commas)", strings.TrimSpace(server))
		}
	}
	for prop, why := range reservedConsumer {
		if _, set := p.Kafka.Consumer[prop]; set {
			problems.Add(path+".kafka.consumer."+prop, "offloader sets this itself: %s", why)
		}
	}
	if proto, set := p.Kafka.Consumer["group.protocol"]; set && proto != "classic" {
		problems.Add(path+".kafka.consumer.group.protocol", "%q is not supported: the librdkafka 2.11 this build bundles ships the KIP-848 consumer group protocol as a preview that must not be used in production (it logs so), and offloader's exactly-once loop is tested with the classic protocol only; remove it (or set \"classic\"), and for incremental rebalancing set partition.assignment.strategy: cooperative-sticky instead. A build on librdkafka 2.12 or later, where KIP-848 is generally available, could lift this", proto)
	}
	for prop, why := range reservedProducer {
		if _, set := p.Kafka.Producer[prop]; set {
			problems.Add(path+".kafka.producer."+prop, "offloader sets this itself: %s", why)
		}
	}
	for _, side := range []struct {
		name  string
		props map[string]string
	}{{"consumer", p.Kafka.Consumer}, {"producer", p.Kafka.Producer}} {
		for prop := range side.props {
			if strings.HasPrefix(prop, "go.") {
				problems.Add(path+".kafka."+side.name+"."+prop, "the Go client's own go.* properties are set by offloader")
			}
		}
	}
	if id := p.Kafka.TransactionalID; id != "" && (len(id) > 249 || strings.ContainsAny(id, " \t\n")) {
		problems.Add(path+".kafka.transactional_id", "must be at most 249 characters without white space")
	}
}

func (p *Pipeline) validateTopics(path string, problems *settings.Problems) {
	// Every topic the pipeline writes must differ from every topic it reads, or
	// records would loop through the pipeline forever.
	written := map[string]string{}
	checkTopic := func(topicPath, topic string) {
		if topic != "" && !validTopic.MatchString(topic) {
			problems.Add(topicPath, "%q is not a valid Kafka topic name (letters, digits, '.', '_', '-'; at most 249)", topic)
		}
	}
	checkTopic(path+".slim_topic", p.SlimTopic)
	if p.SlimTopic != "" {
		written[p.SlimTopic] = path + ".slim_topic"
	}
	for i, rt := range p.Errors.RetryTopics {
		rtPath := fmt.Sprintf("%s.errors.retry_topics[%d].topic", path, i)
		checkTopic(rtPath, rt.Topic)
		if other, dup := written[rt.Topic]; dup && rt.Topic != "" {
			problems.Add(rtPath, "%q is already used by %s: each output topic has one role", rt.Topic, other)
		} else if rt.Topic != "" {
			written[rt.Topic] = rtPath
		}
	}
	if dlt := p.Errors.DeadLetterTopic; dlt != "" {
		dltPath := path + ".errors.dead_letter_topic"
		checkTopic(dltPath, dlt)
		if other, dup := written[dlt]; dup {
			problems.Add(dltPath, "%q is already used by %s: each output topic has one role", dlt, other)
		}
	}
	seen := map[string]bool{}
	for i, topic := range p.Source.Topics {
		topicPath := fmt.Sprintf("%s.source.topics[%d]", path, i)
		checkTopic(topicPath, topic)
		if seen[topic] {
			problems.Add(topicPath, "%q is listed twice", topic)
		}
		seen[topic] = true
		if other, loops := written[topic]; loops {
			problems.Add(topicPath, "%q is also %s: the pipeline would consume its own output", topic, other)
		}
	}
	if err := p.Source.StartFrom.Validate(); err != nil {
		problems.Add(path+".source.start_from", "%v", err)
	}
	if p.Source.Topics != nil && len(p.Source.Topics) == 0 {
		problems.Add(path+".source.topics", "required: name at least one topic")
	}
}

func (p *Pipeline) validateErrors(path string, problems *settings.Problems) {
	e := p.Errors
	switch e.OnStoreOutage {
	case OnStoreOutagePause:
	case OnStoreOutageRetryTopic:
		if len(e.RetryTopics) == 0 {
			problems.Add(path+".errors.on_store_outage", "%q needs at least one entry in errors.retry_topics", OnStoreOutageRetryTopic)
		}
	default:
		problems.Add(path+".errors.on_store_outage", "%v", e.OnStoreOutage.Validate())
	}
	if e.StoreBudget < 100*time.Millisecond {
		problems.Add(path+".errors.store_budget", "must be at least 100ms, got %s", e.StoreBudget)
	}
	for i, rt := range e.RetryTopics {
		if rt.Delay <= 0 && rt.Topic != "" {
			problems.Add(fmt.Sprintf("%s.errors.retry_topics[%d].delay", path, i), "must be positive, such as 10s")
		}
	}
	if len(e.RetryTopics) > 0 && e.DeadLetterTopic == "" {
		problems.Add(path+".errors.dead_letter_topic", "required when retry_topics are set: records that fail their last retry go there")
	}
	switch e.Mode {
	case ModeNonBlocking:
		if len(e.RetryDelays) > 0 {
			problems.Add(path+".errors.retry_delays", "retries records in place: set mode: blocking, or use retry_topics for non-blocking retries")
		}
	case ModeBlocking:
		if len(e.RetryTopics) > 0 {
			problems.Add(path+".errors.retry_topics", "mode: blocking retries in place and uses no retry topics: set retry_delays instead")
		}
		if e.DeadLetterTopic == "" {
			problems.Add(path+".errors.dead_letter_topic", "required with mode: blocking: records that fail their last retry go there")
		}
		for i, d := range e.RetryDelays {
			if d <= 0 {
				problems.Add(fmt.Sprintf("%s.errors.retry_delays[%d]", path, i), "must be positive, such as 10s")
			}
		}
	default:
		problems.Add(path+".errors.mode", "%v", e.Mode.Validate())
	}
}

// validateTimeBudget checks that one store call (retries included) fits in
// the time Kafka gives a poll loop, and one commit interval in the time it
// gives a transaction.
func (p *Pipeline) validateTimeBudget(path string, problems *settings.Problems) {
	pollInterval := msProperty(p.Kafka.Consumer, "max.poll.interval.ms", defaultMaxPollInterval, path+".kafka.consumer", problems)
	txnTimeout := msProperty(p.Kafka.Producer, "transaction.timeout.ms", p.defaultTransactionTimeout(), path+".kafka.producer", problems)
	for i, d := range p.Errors.RetryDelays {
		if d >= pollInterval/2 {
			problems.Add(fmt.Sprintf("%s.errors.retry_delays[%d]", path, i), "%s must be under half the consumer's max.poll.interval.ms (%s): the loop does not poll while a blocking retry waits", d, pollInterval)
		}
	}
	if budget := p.Errors.StoreBudget; budget > 0 {
		if budget >= pollInterval/2 {
			problems.Add(path+".errors.store_budget", "%s must be under half the consumer's max.poll.interval.ms (%s), or a slow store gets the instance evicted from its group; lower store_budget or raise kafka.consumer.max.poll.interval.ms", budget, pollInterval)
		}
		// One retry layer: a store's own try must end within the budget,
		// which is the only deadline a record waits for.
		for _, name := range slices.Sorted(maps.Keys(p.Stores)) {
			s := p.Stores[name]
			if s == nil {
				continue // an empty store entry: its own problem says so
			}
			if timed, ok := s.Config.(stores.Timed); ok && timed.RequestTimeout() >= budget {
				problems.Add(path+".stores."+name+".try_timeout", "%s must be under errors.store_budget (%s): one try of a store request would outlast the whole budget a record waits for; lower try_timeout", timed.RequestTimeout(), budget)
			}
		}
	}
	if p.Commit.Interval >= txnTimeout/2 {
		problems.Add(path+".commit.interval", "%s must be under half the producer's transaction.timeout.ms (%s): a transaction stays open about one commit interval, and the broker aborts one still open at its timeout; lower commit.interval or raise kafka.producer.transaction.timeout.ms", p.Commit.Interval, txnTimeout)
	}
}

// TransactionTimeout is the producer's transaction.timeout.ms: the pipeline
// file's, or when unset the default the pipeline's time budget allows
// (ShortestTransactionTimeout or more; validate reports a value that is no
// duration).
func (p *Pipeline) TransactionTimeout() time.Duration {
	var ignored settings.Problems
	return msProperty(p.Kafka.Producer, "transaction.timeout.ms", p.defaultTransactionTimeout(), "", &ignored)
}

func msProperty(props map[string]string, name string, def time.Duration, path string, problems *settings.Problems) time.Duration {
	v, ok := props[name]
	if !ok {
		return def
	}
	ms, err := strconv.ParseInt(v, 10, 64)
	if err != nil || ms <= 0 {
		problems.Add(path+"."+name, "must be a positive number of milliseconds, got %q", v)
		return def
	}
	return time.Duration(ms) * time.Millisecond
}

// CheckListen says what is wrong with a listener address (observability.listen,
// run --listen), if anything.
func CheckListen(addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%q is not host:port such as 127.0.0.1:9464 (empty disables the listener)", addr)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return fmt.Errorf("port %q is not a number from 0 to 65535", port)
	}
	return nil
}

// minAdminToken is the shortest observability.admin_token taken.
const minAdminToken = 16

func (p *Pipeline) validateObservability(path string, problems *settings.Problems) {
	o := p.Observability
	if o.Listen != "" {
		if err := CheckListen(o.Listen); err != nil {
			problems.Add(path+".observability.listen", "%v", err)
		}
	}
	if o.AdminToken != "" && len(o.AdminToken) < minAdminToken {
		problems.Add(path+".observability.admin_token", "has %d characters; use at least %d (for example: openssl rand -hex 16)", len(o.AdminToken), minAdminToken)
	}
	if o.AdminToken != "" && o.Listen == "" {
		problems.Add(path+".observability.admin_token", "is set but observability.listen is empty: the admin API is served on that listener")
	}
	if o.PauseFile != "" && o.Listen == "" {
		problems.Add(path+".observability.pause_file", "is set but observability.listen is empty: only the admin API on that listener pauses")
	}
	switch o.LogFormat {
	case "json", "console":
	default:
		problems.Add(path+".observability.log_format", "must be \"json\" or \"console\", got %q", o.LogFormat)
	}
	switch o.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		problems.Add(path+".observability.log_level", "must be debug, info, warn or error, got %q", o.LogLevel)
	}
}
