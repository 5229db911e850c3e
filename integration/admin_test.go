package integration

import (
	"context"
	"encoding/json"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/offloader/offloader/admin"
	"github.com/offloader/offloader/pipeline/engine"
)

const adminToken = "integration-admin-token-0123456789"

// adminStatus reads an instance's GET /status.
func adminStatus(t testing.TB, base string) admin.Status {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), scaled(10*time.Second))
	defer cancel()
	st, err := (&admin.Client{URL: base, Token: adminToken}).Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// waitForStatus polls /status until cond holds.
func waitForStatus(t testing.TB, base, what string, cond func(admin.Status) bool, timeout time.Duration) admin.Status {
	t.Helper()
	deadline := within(timeout)
	for {
		st := adminStatus(t, base)
		if cond(st) {
			return st
		}
		if time.Now().After(deadline) {
			b, _ := json.MarshalIndent(st, "", "  ")
			t.Fatalf("%s: not within %s; status:\n%s", what, timeout, b)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// offloaderCLI runs the binary with args and env; it returns the exit code
// and what it printed.
func offloaderCLI(t testing.TB, env []string, args ...string) (int, string) {
	t.Helper()
	cmd := command(offloaderBinary(t), args...)
	cmd.Env = append(cmd.Environ(), env...)
	out, err := cmd.CombinedOutput()
	return exitCode(err), string(out)
}

// dockerHealthcheck is the command of the Dockerfile's HEALTHCHECK, the
// binary's path dropped, asking url (an instance's listener) in place of
// the image's own listener.
func dockerHealthcheck(t *testing.T, url string) []string {
	t.Helper()
	m := regexp.MustCompile(`(?s)HEALTHCHECK [^\n]*\\\n\s*CMD (\[[^\]]*\])`).FindStringSubmatch(mustRead(t, "../Dockerfile"))
	if m == nil {
		t.Fatal("the Dockerfile has no HEALTHCHECK CMD [...]")
	}
	var argv []string
	if err := json.Unmarshal([]byte(m[1]), &argv); err != nil || len(argv) < 2 || argv[0] != "/usr/local/bin/offloader" {
		t.Fatalf("HEALTHCHECK CMD %s: %v", m[1], err)
	}
	i := slices.Index(argv, "--url")
	if i < 0 || i+1 >= len(argv) {
		t.Fatalf("the HEALTHCHECK %v names no --url", argv)
	}
	argv[i+1] = url
	return argv[1:]
}

// TestTheAdminAPIPausesResumesAndFollowsARebalance: an instance paused
// through the admin API commits what it holds and then consumes nothing,
// also from the partitions a rebalance gives it while paused (its status
// shows the new set), while a second instance goes on with its share; the
// resume loses and duplicates nothing. A wrong token gets 401; the
// container's HEALTHCHECK command answers.
func TestTheAdminAPIPausesResumesAndFollowsARebalance(t *testing.T) {
	t.Parallel()
	raw, slim, root, cfg := filesystemPipeline(t, "steered", 4)
	group := groupOf(t, cfg)
	env := []string{"OFFLOADER_OBSERVABILITY__LISTEN=127.0.0.1:0", "OFFLOADER_OBSERVABILITY__ADMIN_TOKEN=" + adminToken}
	a := startDaemon(t, cfg, append(env, "OFFLOADER_KAFKA__TRANSACTIONAL_ID="+uniqueName(t, "tx-a"))...)
	aURL := a.metricsURL(t)
	waitReady(t, aURL, 60*time.Second)
	recs := numberedRecords(1200, 4, 25, 100<<10, 1000)
	produceRecords(t, raw, recs[:400])
	st := waitForStatus(t, aURL, "the first 400 records committed", func(s admin.Status) bool { return s.Totals.Records == 400 }, 60*time.Second)
	if st.State != engine.StateRunning || len(st.Partitions) != 4 || st.LastCommit.IsZero() || st.Totals.Offloaded != 400/25 {
		t.Errorf("status of a running instance: %+v", st)
	}
	if len(st.Stores) != 1 || st.Stores[0].Name != "payloads" || st.Stores[0].State != "ok" {
		t.Errorf("store health: %+v", st.Stores)
	}

	// A wrong token, or none, changes nothing.
	if code, out := offloaderCLI(t, nil, "pause", "--url", aURL, "--token", "wrong-token-wrong-token"); code != 1 || !strings.Contains(out, "401") {
		t.Errorf("pause with a wrong token: exit %d\n%s", code, out)
	}
	if resp, err := http.Post(aURL+"/pause", "", nil); err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("POST /pause without a token: %v %v", resp.Status, err)
	}
	if st := adminStatus(t, aURL); st.State != engine.StateRunning {
		t.Fatalf("an unauthorized pause took effect: %s", st.State)
	}

	code, out := offloaderCLI(t, []string{"OFFLOADER_OBSERVABILITY__ADMIN_TOKEN=" + adminToken}, "pause", "--url", aURL, "--reason", "store maintenance")
	if code != 0 || !strings.Contains(out, "PAUSED") || !strings.Contains(out, "paused by operator since") || !strings.Contains(out, "store maintenance") {
		t.Fatalf("offloader pause: exit %d\n%s", code, out)
	}
	paused := adminStatus(t, aURL)
	atPause := map[int32]int64{}
	for _, p := range paused.Partitions {
		atPause[p.Partition] = p.Committed
	}
	if paused.Paused == nil || paused.Paused.By != engine.PausedByOperator || sum(atPause) != 400 {
		t.Errorf("status once paused: paused %+v, committed %v (want 400 in all)", paused.Paused, atPause)
	}
	if code, body := readyzBody(t, aURL); code != http.StatusServiceUnavailable || !strings.Contains(body, "paused by an operator: store maintenance") {
		t.Errorf("/readyz while paused: %d %s", code, body)
	}
	if v := metric(t, aURL, "offloader_paused"); v != 1 {
		t.Errorf("offloader_paused is %v while paused", v)
	}

	// Records arrive and a second instance joins: the paused one keeps the
	// partitions the rebalance leaves it, paused; the second takes the rest.
	produceRecords(t, raw, recs[400:800])
	b := startDaemon(t, cfg, append(env, "OFFLOADER_KAFKA__TRANSACTIONAL_ID="+uniqueName(t, "tx-b"))...)
	bURL := b.metricsURL(t)
	var mine []int32
	bst := waitForStatus(t, bURL, "the second instance holding partitions", func(s admin.Status) bool { return len(s.Partitions) > 0 }, 60*time.Second)
	st = waitForStatus(t, aURL, "the paused instance showing its share after the rebalance", func(s admin.Status) bool {
		return len(s.Partitions)+len(bst.Partitions) == 4 && len(s.Partitions) > 0
	}, 60*time.Second)
	if st.State != engine.StatePaused {
		t.Errorf("the first instance is %s after the rebalance, want PAUSED", st.State)
	}
	for _, p := range st.Partitions {
		mine = append(mine, p.Partition)
	}
	var theirs int
	for _, r := range recs[400:800] {
		if !slices.Contains(mine, r.partition) {
			theirs++
		}
	}
	waitForStatus(t, bURL, "the second instance committing its share", func(s admin.Status) bool { return s.Totals.Records == theirs }, 60*time.Second)
	committed := committedByPartition(t, bootstrap, group, raw)
	for _, p := range mine {
		if committed[p] != atPause[p] {
			t.Errorf("partition %d of the paused instance committed %d, %d at the pause", p, committed[p], atPause[p])
		}
	}
	// While paused, the lag of each partition it holds is what
	// kafka-consumer-groups.sh shows (end offset less committed offset),
	// in /status and on /metrics.
	ends := endOffsets(t, raw, 4)
	st = waitForStatus(t, aURL, "the paused instance's lag matching the group's", func(s admin.Status) bool {
		for _, p := range s.Partitions {
			if p.Lag != ends[p.Partition]-committed[p.Partition] {
				return false
			}
		}
		return len(s.Partitions) == len(mine)
	}, 60*time.Second)
	var lagSum int64
	for _, p := range st.Partitions {
		lagSum += p.Lag
	}
	if lagSum == 0 {
		t.Errorf("the paused instance shows no lag, though records arrived on its partitions %v while paused", mine)
	}
	if v := metricTotal(t, aURL, "offloader_consumer_lag_records"); v != float64(lagSum) {
		t.Errorf("offloader_consumer_lag_records sums to %v while paused, /status to %d", v, lagSum)
	}
	if code, out := offloaderCLI(t, []string{"OFFLOADER_OBSERVABILITY__ADMIN_TOKEN=" + adminToken}, "status", "--url", aURL); code != 0 ||
		!strings.Contains(out, "PARTITION") || !strings.Contains(out, "PAUSED") || !strings.Contains(out, "payloads  ok") {
		t.Errorf("offloader status: exit %d\n%s", code, out)
	}

	if code, out := offloaderCLI(t, []string{"OFFLOADER_OBSERVABILITY__ADMIN_TOKEN=" + adminToken}, "resume", "--url", aURL); code != 0 || !strings.Contains(out, ": RUNNING") {
		t.Fatalf("offloader resume: exit %d\n%s", code, out)
	}
	produceRecords(t, raw, recs[800:])
	got := consumeAll(t, slim, len(recs), 120*time.Second)
	assertSlimHolds(t, got, recs, root)

	// The image's HEALTHCHECK, run against the live instance: its --url
	// (the image's listener) is this instance's.
	hc := dockerHealthcheck(t, aURL)
	if code, out := offloaderCLI(t, nil, hc...); code != 0 || !strings.Contains(out, "healthy") {
		t.Errorf("HEALTHCHECK %v: exit %d\n%s", hc, code, out)
	}
	for _, d := range []*daemon{a, b} {
		if code := d.stop(t, 45*time.Second); code != 0 {
			t.Errorf("exit code %d after SIGTERM, want 0", code)
		}
	}
	if code, out := offloaderCLI(t, nil, hc...); code != 1 || !strings.Contains(out, "nothing answers") {
		t.Errorf("HEALTHCHECK of a stopped instance: exit %d\n%s", code, out)
	}
}

func sum(m map[int32]int64) int64 {
	var n int64
	for _, v := range m {
		n += v
	}
	return n
}
