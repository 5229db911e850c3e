package kafka

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"go.uber.org/zap"
)

// DefaultAssignor is the group consumer's partition.assignment.strategy
// when the user's properties set none and the group has no member that
// uses another: a cooperative rebalance moves only the partitions that
// change owner, so a member that joins or leaves does not stop the others.
const DefaultAssignor = "cooperative-sticky"

// eagerAssignors are librdkafka's eager (stop-the-world) assignors: a
// group's members must all use eager or all cooperative ones, as librdkafka
// takes no list that mixes the two, and the broker refuses a member whose
// strategies share none with the group's (INCONSISTENT_GROUP_PROTOCOL).
var eagerAssignors = []string{"range", "roundrobin"}

// groupView is what the assignor choice reads of the group.
type groupView struct {
	state    kafka.ConsumerGroupState
	assignor string // the strategy its members agreed on; "" between generations
	members  int
}

// settled reports whether the view says which strategy the members use, or
// that there are none.
func (v groupView) settled() bool {
	return v.members == 0 || v.assignor != "" || (v.state != kafka.ConsumerGroupStatePreparingRebalance && v.state != kafka.ConsumerGroupStateCompletingRebalance)
}

// chooseAssignor is the strategy to join a group seen as v with, when the
// user sets none: an eager one its members use, so that an instance of this
// version joins a group of earlier ones (which used librdkafka's eager
// default) in a rolling upgrade; DefaultAssignor otherwise. kept reports
// that it kept the members' eager strategy.
func chooseAssignor(v groupView) (assignor string, kept bool) {
	if v.members > 0 && slices.Contains(eagerAssignors, v.assignor) {
		return v.assignor, true
	}
	return DefaultAssignor, false
}

// assignorTries and assignorPause bound the wait for a group in a
// rebalance to agree on a strategy.
const (
	assignorTries = 10
	assignorPause = 500 * time.Millisecond
)

// groupAssignor picks the partition.assignment.strategy of p's group
// consumer (chooseAssignor) from the group as the broker describes it.
func groupAssignor(ctx context.Context, p Pipeline, log *zap.Logger) (string, error) {
	a, err := adminClient(p.Client, log)
	if err != nil {
		return "", err
	}
	defer a.Close()
	var v groupView
	for try := 1; ; try++ {
		callCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
		res, err := a.DescribeConsumerGroups(callCtx, []string{p.Group})
		cancel()
		if err != nil {
			return "", fmt.Errorf("describing group %s to choose its partition.assignment.strategy (set kafka.consumer partition.assignment.strategy to skip this): %w", p.Group, err)
		}
		if len(res.ConsumerGroupDescriptions) != 1 {
			return "", fmt.Errorf("describing group %s: %d descriptions, want 1", p.Group, len(res.ConsumerGroupDescriptions))
		}
		d := res.ConsumerGroupDescriptions[0]
		if d.Error.Code() != kafka.ErrNoError && d.Error.Code() != kafka.ErrGroupIDNotFound {
			return "", fmt.Errorf("describing group %s to choose its partition.assignment.strategy (set kafka.consumer partition.assignment.strategy to skip this): %v", p.Group, d.Error)
		}
		v = groupView{state: d.State, assignor: d.PartitionAssignor, members: len(d.Members)}
		if v.settled() || try == assignorTries {
			break
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(assignorPause):
		}
	}
	assignor, kept := chooseAssignor(v)
	switch {
	case kept:
		log.Warn("the group's members use an eager assignor: joining with it, as librdkafka cannot mix eager and cooperative members in one group; once the group is empty (every instance stopped and its session expired, or left with POST /leave), the next start uses "+DefaultAssignor+" (set kafka.consumer partition.assignment.strategy to choose one)",
			zap.String("group", p.Group), zap.String("partition.assignment.strategy", assignor), zap.Int("members", v.members))
	case !v.settled():
		log.Warn("the group stayed in a rebalance without an agreed strategy: joining with the default "+DefaultAssignor+" (if its members use an eager one, the broker refuses this member with INCONSISTENT_GROUP_PROTOCOL; set kafka.consumer partition.assignment.strategy to theirs)",
			zap.String("group", p.Group), zap.Int("members", v.members))
	default:
		log.Info("joining the group with partition.assignment.strategy "+assignor, zap.String("group", p.Group), zap.Int("members", v.members), zap.String("members_use", v.assignor))
	}
	return assignor, nil
}
