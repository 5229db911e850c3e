package client

import "time"

// Client is how a client reaches the cluster: the bootstrap servers and the
// user's librdkafka properties of each client kind (security, SASL, sizes).
// Admin clients take the consumer's connection settings.
type Client struct {
	Bootstrap          string
	Consumer, Producer map[string]string
}

// Pipeline is what the Kafka edge knows of a pipeline: its clients, its
// topics and its group. The daemon makes it from the pipeline file.
type Pipeline struct {
	Client
	Name string
	// TransactionalID is the producer's transactional.id, and the
	// consumer's group.instance.id unless Consumer sets one.
	TransactionalID string
	Group           string
	SourceTopics    []string
	SlimTopic       string
	RetryTopics     []string
	DeadLetterTopic string // "": none
	// Preserve: each source partition writes to the slim partition of the
	// same number (partitioning: preserve).
	Preserve           bool
	TransactionTimeout time.Duration
	// StartFrom is where a source partition the group has no committed offset
	// on starts.
	StartFrom StartFrom
}

// StartFrom is where a partition without a committed offset starts: at its
// beginning (the zero value), its end (Latest), or the first record at or
// after Time.
type StartFrom struct {
	Latest bool
	Time   time.Time
	// Said is how the pipeline file says it, for the log.
	Said string
}

// GroupInstanceID is the consumer's group.instance.id: the Consumer
// property, else the transactional id.
func (p Pipeline) GroupInstanceID() string {
	if id := p.Consumer["group.instance.id"]; id != "" {
		return id
	}
	return p.TransactionalID
}
