package client

import (
	"fmt"
	"strings"
	"testing"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/offloader/offloader/memory"
)

// TestClientsAreSizedFromTheMemoryBudget: the consumer's prefetch and the
// producer's queue carry the budget's figures, librdkafka takes them, and a
// property the user sets (or an alias of it) wins over the budget's.
func TestClientsAreSizedFromTheMemoryBudget(t *testing.T) {
	plan := memory.Split(64<<20, 1, 8, 1_000_000)
	p := Pipeline{Name: "p", TransactionalID: "offloader-p", Client: Client{Consumer: map[string]string{}, Producer: map[string]string{}}}
	consumer, producer := ConsumerConfig(p, plan), ProducerConfig(p, plan)
	for _, c := range []struct {
		cm         *kafka.ConfigMap
		name, want string
	}{
		{consumer, "queued.max.messages.kbytes", "8192"},
		{consumer, "fetch.max.bytes", "8388608"},
		{consumer, "fetch.message.max.bytes", "8388608"},
		{consumer, "queued.min.messages", "4096"},
		{producer, "queue.buffering.max.kbytes", "16384"},
		{producer, "queue.buffering.max.messages", "8192"},
	} {
		if got := fmt.Sprint((*c.cm)[c.name]); got != c.want {
			t.Errorf("%s = %s, want %s", c.name, got, c.want)
		}
	}
	// librdkafka takes what every budget the configuration allows derives.
	for _, inFlight := range []int64{16 << 20, 256 << 20, 4 << 30} {
		for _, brokers := range []int{1, 5} {
			plan := memory.Split(inFlight, brokers, 1024, 8<<20)
			for side, cm := range map[string]*kafka.ConfigMap{"consumer": ConsumerConfig(p, plan), "producer": ProducerConfig(p, plan)} {
				props := map[string]string{}
				for k, v := range *cm {
					// go.* are the Go client's own, typed: not librdkafka's.
					if k != "bootstrap.servers" && k != "transactional.id" && !strings.HasPrefix(k, "go.") {
						props[k] = fmt.Sprint(v)
					}
				}
				if msg := tryClient(side, props); msg != "" {
					t.Errorf("librdkafka refuses the %s's properties for a budget of %d MiB and %d brokers: %s", side, inFlight>>20, brokers, msg)
				}
			}
		}
	}

	// The user's figures win, by their own name or an alias; a receive cap
	// of theirs lowers the fetch size to fit under it.
	p.Consumer = map[string]string{"max.partition.fetch.bytes": "2097152", "receive.message.max.bytes": "3000000"}
	p.Producer = map[string]string{"queue.buffering.max.kbytes": "1024"}
	consumer, producer = ConsumerConfig(p, plan), ProducerConfig(p, plan)
	if _, set := (*consumer)["fetch.message.max.bytes"]; set || (*consumer)["max.partition.fetch.bytes"] != "2097152" {
		t.Errorf("the user's max.partition.fetch.bytes did not win over the budget's fetch.message.max.bytes: %v", *consumer)
	}
	if got := (*consumer)["fetch.max.bytes"]; got != 3000000-512 {
		t.Errorf("fetch.max.bytes = %v, want 512 under the user's receive.message.max.bytes", got)
	}
	if got := (*producer)["queue.buffering.max.kbytes"]; got != "1024" {
		t.Errorf("queue.buffering.max.kbytes = %v, want the user's 1024", got)
	}
	// A zero plan (the admin client's) adds nothing.
	if _, set := (*ConsumerConfig(p, memory.Plan{}))["queued.max.messages.kbytes"]; set {
		t.Error("a zero plan set queued.max.messages.kbytes")
	}
}
