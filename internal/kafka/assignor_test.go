package kafka

import (
	"testing"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/offloader/offloader/memory"
)

// A group whose members use an eager assignor is joined with it (a rolling
// upgrade from a version that used librdkafka's eager default); an empty or
// missing group, or one of cooperative members, is joined with
// cooperative-sticky.
func TestTheAssignorFollowsTheGroupsMembers(t *testing.T) {
	for _, c := range []struct {
		name string
		v    groupView
		want string
		kept bool
	}{
		{"no group yet", groupView{state: kafka.ConsumerGroupStateDead}, "cooperative-sticky", false},
		{"empty group that used range", groupView{state: kafka.ConsumerGroupStateEmpty, assignor: "range"}, "cooperative-sticky", false},
		{"members on range", groupView{state: kafka.ConsumerGroupStateStable, assignor: "range", members: 2}, "range", true},
		{"members on roundrobin", groupView{state: kafka.ConsumerGroupStateStable, assignor: "roundrobin", members: 1}, "roundrobin", true},
		{"members on cooperative-sticky", groupView{state: kafka.ConsumerGroupStateStable, assignor: "cooperative-sticky", members: 3}, "cooperative-sticky", false},
		{"members of another client's strategy", groupView{state: kafka.ConsumerGroupStateStable, assignor: "sticky", members: 1}, "cooperative-sticky", false},
	} {
		got, kept := chooseAssignor(c.v)
		if got != c.want || kept != c.kept {
			t.Errorf("%s: chose %q (kept %v), want %q (kept %v)", c.name, got, kept, c.want, c.kept)
		}
		if !c.v.settled() {
			t.Errorf("%s: not settled, want settled", c.name)
		}
	}
	if (groupView{state: kafka.ConsumerGroupStatePreparingRebalance, members: 2}).settled() {
		t.Error("a rebalance with members and no agreed strategy counts as settled; want it waited for")
	}
}

// The chosen assignor is the consumer's strategy unless the user's
// properties set one, and librdkafka takes it.
func TestTheUsersAssignorWins(t *testing.T) {
	p := Pipeline{Name: "p", TransactionalID: "offloader-p", Group: "g", Assignor: "range", Client: Client{Consumer: map[string]string{}}}
	if got := (*consumerConfig(p, memory.Plan{}))["partition.assignment.strategy"]; got != "range" {
		t.Errorf("partition.assignment.strategy %v, want the chosen range", got)
	}
	p.Consumer["partition.assignment.strategy"] = "cooperative-sticky"
	if got := (*consumerConfig(p, memory.Plan{}))["partition.assignment.strategy"]; got != "cooperative-sticky" {
		t.Errorf("partition.assignment.strategy %v, want the user's cooperative-sticky", got)
	}
	p.Consumer = map[string]string{}
	p.Assignor = DefaultAssignor
	cm := consumerConfig(p, memory.Plan{})
	delete(*cm, "bootstrap.servers")
	c, err := kafka.NewConsumer(cm)
	if err != nil {
		t.Fatalf("librdkafka refuses the default assignor: %v", err)
	}
	go drain(c.Logs())
	c.Close()
}
