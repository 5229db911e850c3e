package integration

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
)

// numberedRecords returns n records keyed "0".."n-1" over the given partitions:
// every bigEvery-th value is big (offloaded at the tests' 64 KiB threshold), the
// others small. Values start with their index so that no two are alike.
func numberedRecords(n, partitions, bigEvery, big, small int) []sourceRecord {
	recs := make([]sourceRecord, n)
	for i := range recs {
		size := small
		if bigEvery > 0 && i%bigEvery == 0 {
			size = big
		}
		v := bytes.Repeat([]byte{byte('a' + i%26)}, size)
		copy(v, strconv.Itoa(i)+":")
		recs[i] = sourceRecord{partition: int32(i % partitions), key: []byte(strconv.Itoa(i)), value: v}
	}
	return recs
}

// waitExit waits for the daemon to exit on its own and returns its exit code.
func (d *daemon) waitExit(t testing.TB, timeout time.Duration) int {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- d.cmd.Wait() }()
	select {
	case <-done:
		return d.cmd.ProcessState.ExitCode()
	case <-time.After(scaled(timeout)):
		// SIGQUIT makes the Go runtime print every goroutine's stack: the
		// log then shows where the daemon is stuck.
		d.cmd.Process.Signal(syscall.SIGQUIT)
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			d.cmd.Process.Kill()
			<-done
		}
		t.Fatalf("the daemon did not exit within %s (SIGQUIT); the end of its log:\n%s", timeout, tail(d.output(), 400))
		return -1
	}
}

var metricsAddress = regexp.MustCompile(`serving /metrics, /healthz, /readyz.*"address": ?"([^"]+)"`)

// metricsURL returns the base URL of a daemon started with observability.listen
// 127.0.0.1:0, read from its start-up log.
func (d *daemon) metricsURL(t testing.TB) string {
	t.Helper()
	deadline := within(30 * time.Second)
	for time.Now().Before(deadline) {
		if m := metricsAddress.FindStringSubmatch(d.output()); m != nil {
			return "http://" + m[1]
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("the daemon never logged its metrics address")
	return ""
}

// metric scrapes one unlabelled (apart from pipeline) sample from /metrics; a
// metric not exported yet reads 0.
func metric(t testing.TB, base, name string) float64 {
	t.Helper()
	if values := metricSamples(t, base, name); len(values) > 0 {
		return values[0]
	}
	return 0
}

// metricTotal is the sum of the named metric's samples on /metrics.
func metricTotal(t testing.TB, base, name string) float64 {
	t.Helper()
	total := 0.0
	for _, v := range metricSamples(t, base, name) {
		total += v
	}
	return total
}

// metricSamples are the values of the named metric's samples on /metrics,
// in the order served.
func metricSamples(t testing.TB, base, name string) []float64 {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatalf("scraping %s: %v", base, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var out []float64
	for _, line := range strings.Split(string(body), "\n") {
		series, value, ok := strings.Cut(line, " ")
		if !ok || line[0] == '#' || (series != name && !strings.HasPrefix(series, name+"{")) {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err != nil {
			t.Fatalf("metric %s: %q", name, line)
		}
		out = append(out, v)
	}
	return out
}

// waitForMetric waits until cond holds for the named metric.
func waitForMetric(t *testing.T, base, name string, cond func(float64) bool, timeout time.Duration) float64 {
	t.Helper()
	deadline := within(timeout)
	for {
		v := metric(t, base, name)
		if cond(v) {
			return v
		}
		if time.Now().After(deadline) {
			t.Fatalf("metric %s is %v after %s", name, v, timeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitReady waits until the daemon's /readyz answers 200: it holds partitions.
func waitReady(t testing.TB, base string, timeout time.Duration) {
	t.Helper()
	deadline := within(timeout)
	for readyz(t, base) != http.StatusOK {
		if time.Now().After(deadline) {
			t.Fatalf("%s/readyz did not answer 200 within %s", base, timeout)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func readyz(t testing.TB, base string) int {
	t.Helper()
	code, _ := readyzBody(t, base)
	return code
}

// readyzBody returns /readyz's status code and body.
func readyzBody(t testing.TB, base string) (int, string) {
	t.Helper()
	resp, err := http.Get(base + "/readyz")
	if err != nil {
		t.Fatalf("GET /readyz: %v", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

func setTopicConfig(t *testing.T, topic, name, value string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), scaled(30*time.Second))
	defer cancel()
	adm := newAdmin(t)
	res, err := adm.IncrementalAlterConfigs(ctx, []kafka.ConfigResource{{
		Type: kafka.ResourceTopic, Name: topic,
		Config: []kafka.ConfigEntry{{Name: name, Value: value, IncrementalOperation: kafka.AlterOperationSet}},
	}})
	if err != nil || res[0].Error.Code() != kafka.ErrNoError {
		t.Fatalf("setting %s=%s on %s: %v %v", name, value, topic, err, res)
	}
	// The broker applies a dynamic config from its metadata, where
	// DescribeConfigs reads it: once it reads back, the topic's log has it.
	var got string
	for deadline := within(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		desc, err := adm.DescribeConfigs(ctx, []kafka.ConfigResource{{Type: kafka.ResourceTopic, Name: topic}})
		if err == nil && len(desc) == 1 {
			if got = desc[0].Config[name].Value; got == value {
				return
			}
		}
	}
	t.Fatalf("%s of %s reads %q, not the %q set, 30 s on", name, topic, got, value)
}

// services runs scripts/services.sh (stop|start azurite) as the test suite's
// services were started with it.
func services(t *testing.T, action, service string) {
	t.Helper()
	if servicesScript == "" {
		t.Fatal("TEST_SERVICES_SCRIPT is not set: this test stops and starts Azurite with scripts/services.sh; run it with `make test`")
	}
	out, err := command("bash", servicesScript, action, service).CombinedOutput()
	if err != nil {
		t.Fatalf("services.sh %s %s: %v\n%s", action, service, err, out)
	}
}

// TestAbortMidBatchLeavesNoDuplicatesOrGaps forces real transaction aborts: the
// slim topic's max.message.bytes is lowered under one inline record while the
// daemon runs, so the broker rejects it and the transaction holding it (and
// records of the other partition already written) must abort. Once the limit is
// raised again the batch is reprocessed; read_committed readers see every record
// exactly once, in order, while read_uncommitted ones also see the aborted copies.
func TestAbortMidBatchLeavesNoDuplicatesOrGaps(t *testing.T) {
	t.Parallel()
	// One source partition spread over two slim partitions by key: every
	// transaction writes to both, so when one partition's produce fails, records
	// already written to the other must be aborted.
	raw, slim := uniqueName(t, "raw"), uniqueName(t, "slim")
	createTopic(t, raw, 1, nil)
	createTopic(t, slim, 2, map[string]string{"max.message.bytes": "1048576"})
	storeYAML := fmt.Sprintf("      payloads: {type: filesystem, root: %q}", t.TempDir())
	cfg := pipelineFile(t, "abort", raw, slim, uniqueName(t, "g"), storeYAML, "    partitioning: key_hash\n")

	d := startDaemon(t, cfg, "OFFLOADER_KAFKA__TRANSACTIONAL_ID="+uniqueName(t, "tx"), "OFFLOADER_OBSERVABILITY__LISTEN=127.0.0.1:0")
	base := d.metricsURL(t)
	waitReady(t, base, 30*time.Second)
	// The broker checks max.message.bytes against whole record batches: a
	// transaction's batch per partition (at most 200 records of 100 bytes) fits
	// in 40,000 bytes, record 151 alone (50,000 bytes, inline under the 64 KiB
	// threshold) does not.
	setTopicConfig(t, slim, "max.message.bytes", "40000")
	recs := numberedRecords(400, 1, 0, 0, 100)
	recs[151].value = append(recs[151].value, make([]byte, 49900)...)
	produceRecords(t, raw, recs)

	waitForMetric(t, base, "offloader_transactions_aborted_total", func(v float64) bool { return v >= 1 }, 60*time.Second)
	setTopicConfig(t, slim, "max.message.bytes", "1048576")

	got := consumeAll(t, slim, len(recs), 90*time.Second)
	if code := d.stop(t, 45*time.Second); code != 0 {
		t.Errorf("daemon exit code %d after SIGTERM, want 0", code)
	}
	partitions := map[int32]int{}
	assertEachOnce(t, got, len(recs), func(i int, m *kafka.Message) {
		partitions[m.TopicPartition.Partition]++
		if !bytes.Equal(m.Value, recs[i].value) {
			t.Fatalf("key %d: slim value of %d bytes differs from the %d produced", i, len(m.Value), len(recs[i].value))
		}
	})
	if len(partitions) != 2 {
		t.Fatalf("key_hash put the records in slim partitions %v, want both", partitions)
	}
	all := consumeIsolated(t, slim, "read_uncommitted", len(recs)+1, 30*time.Second)
	t.Logf("read_committed: %d records; read_uncommitted: %d (aborted copies included)", len(got), len(all))
	if len(all) <= len(recs) {
		t.Errorf("read_uncommitted sees %d records, want more than %d: no aborted transaction wrote records, so the test did not exercise the abort path", len(all), len(recs))
	}
}

// TestTwoInstancesShareTheGroup: two daemons in one group split the partitions
// and both commit; then one gets SIGTERM while records keep coming, commits what
// it holds, leaves, and the other takes over. Every record appears once, in order.
func TestTwoInstancesShareTheGroup(t *testing.T) {
	t.Parallel()
	twoInstancesShareTheGroup(t, "", 8000)
}

// TestTwoCooperativeInstancesShareTheGroup: the same with cooperative-sticky,
// whose rebalances are incremental: the partitions that move are committed
// before they go, so no rebalance aborts a transaction, and the partitions
// kept go on.
func TestTwoCooperativeInstancesShareTheGroup(t *testing.T) {
	t.Parallel()
	twoInstancesShareTheGroup(t, "cooperative-sticky", 4000)
}

// twoInstancesShareTheGroup runs two instances of one pipeline (with the
// assignor, "" for the default) over n records; the first leaves mid-run.
func twoInstancesShareTheGroup(t *testing.T, assignor string, n int) {
	raw, slim, root, cfg := filesystemPipeline(t, "pair", 4)
	if assignor != "" {
		body, err := os.ReadFile(cfg)
		if err != nil {
			t.Fatal(err)
		}
		body = bytes.Replace(body, []byte("consumer: {session.timeout.ms: 6000, heartbeat.interval.ms: 1000}"), fmt.Appendf(nil, "consumer: {session.timeout.ms: 6000, heartbeat.interval.ms: 1000, partition.assignment.strategy: %s}", assignor), 1)
		if err := os.WriteFile(cfg, body, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	listen := "OFFLOADER_OBSERVABILITY__LISTEN=127.0.0.1:0"
	debug := "OFFLOADER_OBSERVABILITY__LOG_LEVEL=debug" // a line per committed transaction

	recs := numberedRecords(n, 4, 20, 100<<10, 1000)
	a := startDaemon(t, cfg, listen, debug, "OFFLOADER_KAFKA__TRANSACTIONAL_ID="+uniqueName(t, "tx-a"))
	b := startDaemon(t, cfg, listen, debug, "OFFLOADER_KAFKA__TRANSACTIONAL_ID="+uniqueName(t, "tx-b"))
	aURL, bURL := a.metricsURL(t), b.metricsURL(t)
	// /readyz answers 200 once an instance holds partitions; the second gets
	// some only in the rebalance that splits them.
	for _, base := range []string{aURL, bURL} {
		waitReady(t, base, 60*time.Second)
	}
	produceRecords(t, raw, recs[:n/2])

	positive := func(v float64) bool { return v > 0 }
	for name, base := range map[string]string{"first": aURL, "second": bURL} {
		n := waitForMetric(t, base, "offloader_transactions_committed_total", positive, 60*time.Second)
		out := waitForMetric(t, base, "offloader_records_out_total", positive, 60*time.Second)
		t.Logf("%s instance: %v transactions, %v records so far", name, n, out)
	}
	if assignor == "cooperative-sticky" {
		// The second instance's arrival revoked some of the first's
		// partitions: committed first, never aborted.
		if aborts := metric(t, aURL, "offloader_transactions_aborted_total"); aborts != 0 {
			t.Errorf("the first instance aborted %v transactions in a cooperative rebalance, want 0", aborts)
		}
	}

	// SIGTERM the first instance while it works through the second wave.
	produceRecords(t, raw, recs[n/2:])
	start := time.Now()
	if code := a.stop(t, 45*time.Second); code != 0 {
		t.Errorf("first instance exit code %d after SIGTERM, want 0", code)
	}
	t.Logf("first instance stopped %s after SIGTERM", time.Since(start).Round(time.Millisecond))
	for _, want := range []string{"stopping: committing the batch in hand", "pipeline stopped"} {
		if !strings.Contains(a.output(), want) {
			t.Errorf("first instance's log lacks %q", want)
		}
	}

	got := consumeAll(t, slim, len(recs), 120*time.Second)
	if assignor == "cooperative-sticky" {
		if aborts := metric(t, bURL, "offloader_transactions_aborted_total"); aborts != 0 {
			t.Errorf("the second instance aborted %v transactions, want 0: it only gained partitions", aborts)
		}
	}
	if code := b.stop(t, 45*time.Second); code != 0 {
		t.Errorf("second instance exit code %d after SIGTERM, want 0", code)
	}
	// Each source record's offset is committed once, by one instance: a batch
	// dropped in a rebalance aborts and is not counted.
	ca, cb := committedInLog(a.output()), committedInLog(b.output())
	if ca == 0 || cb == 0 || ca+cb != len(recs) {
		t.Errorf("the instances logged %d + %d records committed, want %d, some by each", ca, cb, len(recs))
	}
	assertSlimHolds(t, got, recs, root)
}

// TestStoreOutageLosesNothing takes Azurite away (its own fault proxy in front
// of it, so that the other tests go on) (1) before the daemon starts: it
// exits 1 naming the store, having consumed nothing; (2) mid-run: within the
// store budget the daemon logs the failing store and counts the slow call
// (offloader_store_calls_slow), then it pauses loudly (log, offloader_paused, /readyz 503 with the reason, for the
// whole outage) for longer than its store budget and resumes when Azurite is
// back, logging both once. Every record arrives exactly once.
func TestStoreOutageLosesNothing(t *testing.T) {
	t.Parallel()
	azure, azurite := azureThroughProxy(t)
	raw, slim := uniqueName(t, "raw"), uniqueName(t, "slim")
	createTopic(t, raw, 2, map[string]string{"max.message.bytes": "8388608"})
	createTopic(t, slim, 2, nil)
	container := uniqueName(t, "c")
	storeYAML := fmt.Sprintf("      payloads: {type: azblob, container: %s, create_container: true, connection_string: %q, "+
		"max_retries: 1, try_timeout: 1s, retry_delay: 100ms}", container, azure)
	// Over the 5 s after which a retrying store call is logged and counted.
	const budget = 8 * time.Second
	cfg := pipelineFile(t, "outage", raw, slim, uniqueName(t, "g"), storeYAML,
		fmt.Sprintf("    errors: {store_budget: %s}\n", budget))
	txid := "OFFLOADER_KAFKA__TRANSACTIONAL_ID=" + uniqueName(t, "tx")
	recs := numberedRecords(1200, 2, 4, 100<<10, 1000)
	produceRecords(t, raw, recs)

	azurite.down()
	d := startDaemon(t, cfg, txid)
	if code := d.waitExit(t, 60*time.Second); code != 1 {
		t.Fatalf("with Azurite down at start the daemon exited %d, want 1", code)
	}
	if want := `nothing was consumed: payload store \"payloads\" (azblob) is not usable`; !strings.Contains(d.output(), want) {
		t.Fatalf("the start-up failure does not say %s:\n%s", want, d.output())
	}
	if n := len(consumeAll(t, slim, 1, 3*time.Second)); n != 0 {
		t.Fatalf("the slim topic holds %d records after a failed start", n)
	}

	azurite.up(t)
	// Azurite goes away mid-upload after 50 payloads: with records still to
	// offload, however fast the machine.
	azurite.holdAfter(50 * (100<<10 + 1<<10))
	d = startDaemon(t, cfg, txid, "OFFLOADER_OBSERVABILITY__LISTEN=127.0.0.1:0")
	base := d.metricsURL(t)
	azurite.waitHeld(t, 60*time.Second)
	azurite.down()
	// Within the budget the pipeline stands still, and says so.
	waitForMetric(t, base, "offloader_store_calls_slow", func(v float64) bool { return v >= 1 }, 15*time.Second)
	if paused := metric(t, base, "offloader_paused"); paused != 0 {
		t.Errorf("paused before the store budget ran out")
	}
	waitForMetric(t, base, "offloader_paused", func(v float64) bool { return v == 1 }, 30*time.Second)
	pausedAt := metric(t, base, "offloader_records_out_total")
	// Probed through a store budget of retries, /readyz never flaps.
	probes, ready := 0, 0
	for end := within(budget); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		code, body := readyzBody(t, base)
		probes++
		if code != http.StatusServiceUnavailable || !strings.Contains(body, `paused: store "payloads" unavailable since `) {
			ready++
			t.Logf("/readyz while paused: %d %q", code, body)
		}
	}
	if ready > 0 {
		t.Errorf("/readyz answered other than 503 with the pause's reason to %d of %d probes during the outage", ready, probes)
	}
	if out := metric(t, base, "offloader_records_out_total"); out != pausedAt {
		t.Errorf("records out went from %v to %v while the store was down", pausedAt, out)
	}
	// One outage, one pause: said once, and no resume while the store is down.
	// Once it is back, a machine too busy for the store's 1 s try timeout may
	// pause the pipeline again, which is the store budget doing its work.
	during := d.output()
	for line, want := range map[string]int{"pipeline paused": 1, "pipeline resumed": 0} {
		if n := strings.Count(during, line); n != want {
			t.Errorf("%q logged %d times during the outage, want %d", line, n, want)
		}
	}
	azurite.up(t)

	got := consumeAll(t, slim, len(recs), 120*time.Second)
	for _, name := range []string{"offloader_paused", "offloader_store_calls_slow"} {
		if v := metric(t, base, name); v != 0 {
			t.Errorf("%s is %v after the store came back", name, v)
		}
	}
	if code, body := readyzBody(t, base); code != http.StatusOK {
		t.Errorf("/readyz answers %d %q after the store came back, want 200", code, body)
	}
	if n := strings.Count(d.output(), "pipeline resumed"); n == 0 {
		t.Errorf("the resume was never logged")
	}
	if code := d.stop(t, 45*time.Second); code != 0 {
		t.Errorf("daemon exit code %d after SIGTERM, want 0", code)
	}
	store := openAzure(t, container)
	offloaded := 0
	assertEachOnce(t, got, len(recs), func(i int, m *kafka.Message) {
		if _, ok := headerValue(m.Headers, "offloader-pointer"); ok {
			offloaded++
		}
		if v := resolve(t, store, m); !bytes.Equal(v, recs[i].value) {
			t.Fatalf("key %d resolved to %d different bytes", i, len(v))
		}
	})
	if offloaded != len(recs)/4 {
		t.Errorf("%d records offloaded, want %d", offloaded, len(recs)/4)
	}
}

// TestBrokerRestartLosesAndDuplicatesNothing restarts the Kafka broker while the
// daemon works: the daemon rides it out (aborting and reprocessing what the
// restart cut) and every record appears once.
func TestBrokerRestartLosesAndDuplicatesNothing(t *testing.T) {
	brokerRestart(t, 0)
}

// TestABrokerAwayLongerThanTheTransactionTimeout: the same with the broker
// away 15 s, past the default transaction.timeout.ms of 10 s. Back, the
// broker aborts the transaction left open by bumping the producer's epoch,
// which librdkafka reports as the producer fenced: the daemon replaces its
// producer and goes on instead of stopping as it would for a twin.
func TestABrokerAwayLongerThanTheTransactionTimeout(t *testing.T) {
	brokerRestart(t, 15*time.Second)
}

// brokerRestart runs a pipeline while the broker stops, stays away for
// away, and starts again.
func brokerRestart(t *testing.T, away time.Duration) {
	raw, slim, cfg, azurite, store := heldAzurePipeline(t, "restart", 2)
	recs := numberedRecords(6000, 2, 10, 100<<10, 2000)
	produceRecords(t, raw, recs)

	// The uploads are held after 60 payloads until the broker is away: it
	// stops with records consumed and not committed, however fast the machine.
	azurite.holdAfter(60 * (100<<10 + 1<<10))
	d := startDaemon(t, cfg, "OFFLOADER_KAFKA__TRANSACTIONAL_ID="+uniqueName(t, "tx"))
	azurite.waitHeld(t, 90*time.Second)
	services(t, "stop", "kafka")
	azurite.release()
	t.Cleanup(func() { services(t, "start", "kafka") })
	time.Sleep(away) // the outage itself: nothing to wait on
	services(t, "start", "kafka")
	if err := waitForBroker(60 * time.Second); err != nil {
		t.Fatalf("the broker did not come back: %v", err)
	}
	// A transactional call cut by the restart takes up to its deadline
	// (transaction.timeout.ms) before it aborts; an abort that cannot reach
	// the coordinator then replaces the producer, whose start waits for it.
	got := consumeAll(t, slim, len(recs), 240*time.Second)
	if d.cmd.ProcessState != nil {
		t.Fatalf("the daemon exited during the broker restart (code %d)", d.cmd.ProcessState.ExitCode())
	}
	if code := d.stop(t, 45*time.Second); code != 0 {
		t.Errorf("exit code %d after SIGTERM", code)
	}
	// The broker being away is a warning, once per broker and outage, not
	// an error line per connection attempt.
	out := d.output()
	if !strings.Contains(out, "a Kafka broker cannot be reached") {
		t.Errorf("the broker being away was not logged")
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, "\tERROR\t") && (strings.Contains(line, "Connect to") || strings.Contains(line, "Connection refused") || strings.Contains(line, "Disconnected") || strings.Contains(line, "Broker transport failure")) {
			t.Errorf("the broker being away was logged as an error: %s", line)
		}
	}
	// librdkafka can leave a transactional call stuck after a restart
	// (librdkafka #5456); the daemon then replaces its producer.
	if n := strings.Count(out, "transactional producer stuck"); n > 0 {
		t.Logf("the daemon replaced a stuck producer %d time(s)", n)
	}
	// librdkafka can fence a lone static member after a restart; the
	// daemon then rejoins with the same group.instance.id.
	if n := strings.Count(out, "rejoining with the same group.instance.id"); n > 0 {
		t.Logf("the daemon rejoined its group %d time(s) after being fenced as a static member", n)
	}
	if n := strings.Count(out, "the transactional producer was fenced: replacing it"); n > 0 {
		t.Logf("the daemon replaced its fenced producer %d time(s)", n)
	}
	assertEachOnce(t, got, len(recs), func(i int, m *kafka.Message) {
		if v := resolve(t, store, m); !bytes.Equal(v, recs[i].value) {
			t.Fatalf("key %d resolved to %d different bytes", i, len(v))
		}
	})
}

// TestAnInstanceFencedByItsTwinSaysSo: a second instance started with the
// first one's transactional.id fences it; at its next transaction the first
// stops with exit 1 and a
// message that says it was fenced and what to change (not librdkafka's
// "Local: Fatal error"), and every record still arrives exactly once.
func TestAnInstanceFencedByItsTwinSaysSo(t *testing.T) {
	t.Parallel()
	raw, slim, root, cfg := filesystemPipeline(t, "twins", 2)
	txid := "OFFLOADER_KAFKA__TRANSACTIONAL_ID=" + uniqueName(t, "tx")
	recs := numberedRecords(2000, 2, 10, 100<<10, 1000)
	produceRecords(t, raw, recs[:1000])
	first := startDaemon(t, cfg, txid, "OFFLOADER_OBSERVABILITY__LISTEN=127.0.0.1:0")
	waitForMetric(t, first.metricsURL(t), "offloader_transactions_committed_total", func(v float64) bool { return v > 0 }, 60*time.Second)
	second := startDaemon(t, cfg, txid, "OFFLOADER_OBSERVABILITY__LISTEN=127.0.0.1:0")
	// The second's InitTransactions fences the first's producer; the first
	// notices at its next transaction, on the partition the rebalance leaves it.
	waitReady(t, second.metricsURL(t), 60*time.Second)
	produceRecords(t, raw, recs[1000:])
	if code := first.waitExit(t, 60*time.Second); code != 1 {
		t.Fatalf("the fenced instance exited %d, want 1", code)
	}
	out := first.output()
	if !strings.Contains(out, "fenced: another instance started with this one's transactional.id") || !strings.Contains(out, "give each instance its own kafka.transactional_id") {
		t.Errorf("the fenced instance's log does not say it was fenced and what to change:\n%s", out)
	}
	got := consumeAll(t, slim, len(recs), 90*time.Second)
	if code := second.stop(t, 45*time.Second); code != 0 {
		t.Errorf("the second instance exited %d after SIGTERM, want 0", code)
	}
	store := openFS(t, root)
	assertEachOnce(t, got, len(recs), func(i int, m *kafka.Message) {
		if v := resolve(t, store, m); !bytes.Equal(v, recs[i].value) {
			t.Fatalf("key %d resolved to %d different bytes", i, len(v))
		}
	})
}
