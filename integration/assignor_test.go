package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/offloader/offloader/admin"
)

// A rolling upgrade from a version that joined with librdkafka's eager
// default: an instance of this version, which defaults to
// cooperative-sticky, joins a group whose members use range with range (the
// broker would refuse it otherwise) and takes its share of the partitions.
// Once every instance has left the group for good, the next start joins
// with cooperative-sticky. Every record reaches the slim topic once.
func TestARollingUpgradeKeepsTheGroupsEagerAssignor(t *testing.T) {
	t.Parallel() // its own topics and group
	raw, slim := uniqueName(t, "raw"), uniqueName(t, "slim")
	createTopic(t, raw, 3, map[string]string{"max.message.bytes": "8388608"})
	createTopic(t, slim, 3, nil)
	group, root := uniqueName(t, "g"), t.TempDir()
	pipeline := func(consumer string) string {
		return newPipeline(t, "upgrade", raw, slim, group).with(t, `
kafka:
  consumer: {session.timeout.ms: 6000, heartbeat.interval.ms: 1000%s}
stores:
  payloads: {type: filesystem, root: %q}
transforms:
  - {type: offload, store: payloads, threshold: 64KiB}
observability: {listen: "127.0.0.1:0", admin_token: %s, log_format: console}
`, consumer, root, adminToken).file(t)
	}
	holding := func(urls ...string) func(admin.Status) bool {
		return func(admin.Status) bool {
			total := 0
			for _, u := range urls {
				n := len(adminStatus(t, u).Partitions)
				if n == 0 {
					return false
				}
				total += n
			}
			return total == 3
		}
	}
	recs := numberedRecords(600, 3, 0, 0, 200)

	earlier := startDaemon(t, pipeline(", partition.assignment.strategy: range"), "OFFLOADER_KAFKA__TRANSACTIONAL_ID="+uniqueName(t, "tx-earlier"))
	earlierURL := earlier.metricsURL(t)
	waitForStatus(t, earlierURL, "the earlier version holding all 3 partitions", holding(earlierURL), 90*time.Second)
	upgraded := startDaemon(t, pipeline(""), "OFFLOADER_KAFKA__TRANSACTIONAL_ID="+uniqueName(t, "tx-upgraded"))
	upgradedURL := upgraded.metricsURL(t)
	waitForStatus(t, upgradedURL, "both instances holding a share of the 3 partitions", holding(earlierURL, upgradedURL), 90*time.Second)
	if got := groupProtocol(t, group); got != "range" {
		t.Errorf("the group's assignor is %q with the upgraded instance in it, want range", got)
	}
	produceRecords(t, raw, recs[:300])
	waitCommitted(t, group, raw, 300, time.Minute)

	// Both leave for good: the group empties.
	for _, d := range []struct {
		d   *daemon
		url string
	}{{earlier, earlierURL}, {upgraded, upgradedURL}} {
		if code, out := offloaderCLI(t, nil, "leave", "--url", d.url, "--token", adminToken); code != 0 || !strings.Contains(out, "leaves group for good") {
			t.Fatalf("offloader leave: exit %d\n%s", code, out)
		}
		if code := d.d.stop(t, 45*time.Second); code != 0 {
			t.Fatalf("exit code %d after SIGTERM", code)
		}
	}
	next := startDaemon(t, pipeline(""), "OFFLOADER_KAFKA__TRANSACTIONAL_ID="+uniqueName(t, "tx-next"))
	nextURL := next.metricsURL(t)
	waitForStatus(t, nextURL, "the next start holding all 3 partitions", holding(nextURL), 90*time.Second)
	if got := groupProtocol(t, group); got != "cooperative-sticky" {
		t.Errorf("the group's assignor is %q after it emptied, want cooperative-sticky", got)
	}
	produceRecords(t, raw, recs[300:])
	waitCommitted(t, group, raw, int64(len(recs)), time.Minute)
	if code := next.stop(t, 45*time.Second); code != 0 {
		t.Errorf("exit code %d after SIGTERM", code)
	}
	assertEachOnce(t, consumeAll(t, slim, len(recs), time.Minute), len(recs), nil)
}

// groupProtocol is the assignor group's members agreed on.
func groupProtocol(t *testing.T, group string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := newAdmin(t).DescribeConsumerGroups(ctx, []string{group})
	if err != nil || len(res.ConsumerGroupDescriptions) != 1 {
		t.Fatalf("describing group %s: %v %+v", group, err, res)
	}
	return res.ConsumerGroupDescriptions[0].PartitionAssignor
}
