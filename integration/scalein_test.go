package integration

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/offloader/offloader/admin"
)

// Scale-in without a stall. Three instances share three partitions as static
// members. One is told to leave (offloader leave) and stopped: it removes its
// static membership, and its partition is consumed again long before the
// group's session timeout. Another gets a plain SIGTERM: as documented, it
// stays a member of the group (a restart would get its partition back at
// once), and its partition moves once the session times out. Every record
// reaches the slim topic once.
func TestScaleInWithoutAStall(t *testing.T) {
	t.Parallel() // its own topics and group; runs beside the other parallel tests
	const session = 24 * time.Second
	raw, slim := uniqueName(t, "raw"), uniqueName(t, "slim")
	createTopic(t, raw, 3, map[string]string{"max.message.bytes": "8388608"})
	createTopic(t, slim, 3, nil)
	group := uniqueName(t, "g")
	cfg := newPipeline(t, "shrinking", raw, slim, group).with(t, `
kafka:
  consumer: {session.timeout.ms: %d, heartbeat.interval.ms: 1000}
stores:
  payloads: {type: filesystem, root: %q}
transforms:
  - {type: offload, store: payloads, threshold: 64KiB}
observability: {listen: "127.0.0.1:0", admin_token: %s, log_format: console}
`, session.Milliseconds(), t.TempDir(), adminToken).file(t)
	ids := []string{uniqueName(t, "tx-a"), uniqueName(t, "tx-b"), uniqueName(t, "tx-c")}
	var ds []*daemon
	var urls []string
	for _, id := range ids {
		d := startDaemon(t, cfg, "OFFLOADER_KAFKA__TRANSACTIONAL_ID="+id)
		ds = append(ds, d)
		urls = append(urls, d.metricsURL(t))
	}
	for i, u := range urls {
		waitForStatus(t, u, "instance "+ids[i]+" holding a partition", func(s admin.Status) bool { return len(s.Partitions) == 1 }, 90*time.Second)
	}
	recs := numberedRecords(900, 3, 0, 0, 200)
	produceRecords(t, raw, recs[:300])
	waitCommitted(t, group, raw, 300, time.Minute)

	// The one that leaves for good.
	if code, out := offloaderCLI(t, nil, "leave", "--url", urls[2], "--token", adminToken); code != 0 || !strings.Contains(out, "leaves group for good") {
		t.Fatalf("offloader leave: exit %d\n%s", code, out)
	}
	if code := ds[2].stop(t, 45*time.Second); code != 0 {
		t.Fatalf("exit code %d after SIGTERM", code)
	}
	if members := groupInstances(t, group); slices.Contains(members, ids[2]) {
		t.Errorf("the group still lists the removed member %s: %v", ids[2], members)
	}
	stopped := time.Now()
	produceRecords(t, raw, recs[300:600])
	waitCommitted(t, group, raw, 600, session/2)
	t.Logf("after the deliberate leave, the partitions moved and committed in %s (session timeout %s)", time.Since(stopped).Round(time.Millisecond), session)

	// A plain SIGTERM: the member stays until its session times out.
	if code := ds[1].stop(t, 45*time.Second); code != 0 {
		t.Fatalf("exit code %d after SIGTERM", code)
	}
	if members := groupInstances(t, group); !slices.Contains(members, ids[1]) {
		t.Errorf("after a plain SIGTERM the group no longer lists %s: %v; it keeps a static member until session.timeout.ms", ids[1], members)
	}
	produceRecords(t, raw, recs[600:])
	waitCommitted(t, group, raw, int64(len(recs)), session+time.Minute)

	if code := ds[0].stop(t, 45*time.Second); code != 0 {
		t.Errorf("exit code %d after SIGTERM", code)
	}
	assertEachOnce(t, consumeAll(t, slim, len(recs), time.Minute), len(recs), nil)
}

// waitCommitted waits until group has committed n records of topic (its
// offsets sum to n), or fails after timeout.
func waitCommitted(t *testing.T, group, topic string, n int64, timeout time.Duration) {
	t.Helper()
	deadline := within(timeout)
	for {
		got := sum(committedByPartition(t, bootstrap, group, topic))
		if got >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("group %s committed %d of %d records within %s", group, got, n, timeout)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// groupInstances are the group.instance.ids of group's members.
func groupInstances(t *testing.T, group string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), scaled(30*time.Second))
	defer cancel()
	res, err := newAdmin(t).DescribeConsumerGroups(ctx, []string{group})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, d := range res.ConsumerGroupDescriptions {
		for _, m := range d.Members {
			if m.GroupInstanceID != "" {
				out = append(out, m.GroupInstanceID)
			}
		}
	}
	return out
}
