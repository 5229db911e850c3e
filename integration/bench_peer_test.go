package integration

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	sdk "github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
)

// peerThreads is the peer's num.stream.threads: its best setting in the
// side-by-side runs of issue 36; peerPartitions the raw and slim topics'
// partitions, one per thread.
const (
	peerThreads    = 6
	peerPartitions = 6
)

// BenchmarkPeer runs offloader side by side with the stack a team would
// otherwise assemble: Kafka Streams with exactly_once_v2 and 6 stream
// threads, its values through bakdata's large-message-serde, on the same
// broker, the same records and the same Azurite store (clients/java's
// PeerPipeline). The workloads are BenchmarkMemoryBudget's, W2 with 1,000
// records; a value over the slim topic's limit less 4 KiB (offloader's
// threshold: auto, and the serde's large.message.max.byte.size) is stored in
// Azurite. After one untimed run warms the broker (warmBroker), each runs
// twice, offloader, peer, peer, offloader, reading the same
// raw topic of 6 partitions into a new slim topic, each with offloader's
// defaults (128 MiB memory.in_flight, info logging) and the JVM's. One clock
// for both (groupClock): from the exec of the process to the group's
// committed offsets summing to every record, asked every 100 ms; the steady
// state is the second half of the records. It reports each one's rates, their
// ratios, and their peak RSS and CPU; for W2 and W3 also the store's own
// rate (1 MiB uploads, 16 at once, before the four runs and after them) and
// each one's rate as a share of it. Run with make bench.
func BenchmarkPeer(b *testing.B) {
	cp := javaBenchClasspath(b)
	workloads := []struct {
		name    string
		records int
		sizes   []int
	}{
		{"W1-1KiB", 300_000, []int{1 << 10}},
		{"W2-1MiB", 1000, []int{1 << 20}},
		{"W3-mixed", 4000, mixedSizes()},
	}
	threshold := 1048588 - 4096 // the broker's default message.max.bytes, less 4 KiB
	warmBroker(b)
	for range b.N {
		for _, w := range workloads {
			raw := uniqueName(b, "raw")
			createTopic(b, raw, peerPartitions, map[string]string{"max.message.bytes": "4194304"})
			total := fillSizes(b, raw, w.records, peerPartitions, w.sizes)
			mb := float64(total) / 1e6
			// The store's own rate: 1 MiB uploads at the pipeline's upload
			// concurrency, before the four runs and after them.
			var plain time.Duration
			if w.name != "W1-1KiB" {
				plain += plainStoreWrites(b, "azblob", 400, 1<<20, 16)
			}
			var ours, peer [2]pipelineRunResult
			for i, peerFirst := range []bool{false, true, true, false} {
				slim, container := uniqueName(b, "slim"), uniqueName(b, "c")
				createTopic(b, slim, peerPartitions, nil)
				syscall.Sync()
				var r pipelineRunResult
				if peerFirst {
					r = runPeer(b, cp, raw, slim, container, threshold, w.records)
					peer[i/2] = r
				} else {
					store := fmt.Sprintf("payloads: {type: azblob, container: %s, create_container: true, connection_string: %q}", container, azureConnStr)
					r = runOffloaderAsPeer(b, raw, slim, w.records, store)
					ours[i/2] = r
				}
				deleteContainer(b, container)
				deleteTopics(b, []string{slim})
				who := map[bool]string{false: "offloader", true: "peer"}[peerFirst]
				benchLog("%s %s: %.1f MB/s start to end, %.1f records/s in the second half, peak RSS %d MiB, CPU %.1f s",
					w.name, who, mb/r.elapsed.Seconds(), r.steadyRate(), r.rss>>20, r.cpu.Seconds())
			}
			deleteTopics(b, []string{raw})
			o, p := ours[0].plus(ours[1]), peer[0].plus(peer[1])
			if w.name != "W1-1KiB" {
				plain += plainStoreWrites(b, "azblob", 400, 1<<20, 16)
				store := float64(2*400<<20) / 1e6 / plain.Seconds()
				b.ReportMetric(store, w.name+"-store-MB/s")
				b.ReportMetric(2*mb/o.elapsed.Seconds()/store, w.name+"-offloader/store")
				b.ReportMetric(2*mb/p.elapsed.Seconds()/store, w.name+"-peer/store")
				benchLog("%s: the store alone %.1f MB/s; offloader %.2f of it, the peer %.2f", w.name, store, 2*mb/o.elapsed.Seconds()/store, 2*mb/p.elapsed.Seconds()/store)
			}
			b.ReportMetric(2*mb/o.elapsed.Seconds(), w.name+"-offloader-MB/s")
			b.ReportMetric(2*mb/p.elapsed.Seconds(), w.name+"-peer-MB/s")
			b.ReportMetric(p.elapsed.Seconds()/o.elapsed.Seconds(), w.name+"-offloader/peer")
			b.ReportMetric(o.steadyRate()/p.steadyRate(), w.name+"-steady-offloader/peer")
			b.ReportMetric(float64(o.rss)/float64(p.rss), w.name+"-rss-offloader/peer")
			b.ReportMetric(o.cpu.Seconds()/p.cpu.Seconds(), w.name+"-cpu-offloader/peer")
			benchLog("%s: offloader/peer %.2f start to end, %.2f in the second half; peak RSS %d / %d MiB (%.2f); CPU %.1f / %.1f s",
				w.name, p.elapsed.Seconds()/o.elapsed.Seconds(), o.steadyRate()/p.steadyRate(), o.rss>>20, p.rss>>20,
				float64(o.rss)/float64(p.rss), o.cpu.Seconds(), p.cpu.Seconds())
		}
	}
}

// warmBroker runs this tree's offloader once, untimed, over 20,000
// records of 1 KiB on 6 partitions. A benchmark's first run on a freshly
// started broker pays what no later run does (the creation of
// __consumer_offsets and __transaction_state, the group and transaction
// coordinators loading them, the broker's JIT compiling its fetch and
// produce paths): offloader's first W1 run of BenchmarkPeer ran at 39.5 MB/s
// against 82.9 for its second, and the release guard's first round at 0.4
// of its others, whichever version it was.
func warmBroker(b testing.TB) {
	b.Helper()
	raw, slim := uniqueName(b, "warm"), uniqueName(b, "warm-slim")
	createTopic(b, raw, 6, nil)
	createTopic(b, slim, 6, nil)
	defer deleteTopics(b, []string{raw, slim})
	n := 20_000
	fillSizes(b, raw, n, 6, []int{1 << 10})
	runOffloaderAsPeer(b, raw, slim, n, fmt.Sprintf("payloads: {type: filesystem, root: %q}", b.TempDir()))
}

// runPeer runs PeerPipeline from raw to slim, offloading values over
// threshold bytes to container (created here), until its group committed n
// records.
func runPeer(b testing.TB, cp, raw, slim, container string, threshold, n int) (r pipelineRunResult) {
	b.Helper()
	client, err := sdk.NewClientFromConnectionString(azureConnStr, nil)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := client.CreateContainer(context.Background(), container, nil); err != nil {
		b.Fatal(err)
	}
	app := uniqueName(b, "peer")
	start := time.Now()
	cmd := command("java", "-cp", cp, "io.offloader.serde.bench.PeerPipeline",
		bootstrap, app, raw, slim, container, azureConnStr, strconv.Itoa(threshold), strconv.Itoa(peerThreads))
	var mu sync.Mutex
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = lockedWriter{&mu, &out}, lockedWriter{&mu, &out}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	}()
	output := func() string { mu.Lock(); defer mu.Unlock(); return out.String() }
	r = groupClock(b, start, app, raw, n, func() string {
		if strings.Contains(output(), "ERROR") {
			return "the peer failed:\n" + output()
		}
		return ""
	})
	r.rss, r.cpu = peakRSS(b, cmd.Process.Pid), processCPU(b, cmd.Process.Pid)
	cmd.Process.Signal(syscall.SIGTERM)
	cmd.Wait()
	return r
}

// runOffloaderAsPeer runs the offloader binary on raw -> slim with its
// defaults (info logging) and the store named payloads, timed by
// groupClock from its exec.
func runOffloaderAsPeer(b testing.TB, raw, slim string, n int, store string) pipelineRunResult {
	b.Helper()
	group := uniqueName(b, "g")
	cfg := benchPipeline(b, raw, slim, group, store, "", "info").file(b)
	start := time.Now()
	d := startDaemon(b, cfg)
	r := groupClock(b, start, group, raw, n, func() string {
		if d.cmd.ProcessState != nil || strings.Contains(d.output(), "ERROR") {
			return "offloader failed:\n" + d.output()
		}
		return ""
	})
	r.rss, r.cpu = peakRSS(b, d.cmd.Process.Pid), processCPU(b, d.cmd.Process.Pid)
	if code := d.stop(b, 60*time.Second); code != 0 {
		b.Fatalf("daemon exit code %d", code)
	}
	return r
}

// groupClock is the one clock of offloader and the peer: from start (the
// exec of the process) until group's committed offsets on topic sum to n,
// asked every 100 ms, and the time the second half of the records took.
// The moment half of them were committed lies between two askings (each
// opens a consumer, and a fast run may commit half of its records, or all
// of them, between two): it is read off the line between those two.
// failed is asked at each turn; a text ends the benchmark with it.
func groupClock(b testing.TB, start time.Time, group, topic string, n int, failed func() string) (r pipelineRunResult) {
	b.Helper()
	deadline := start.Add(10 * time.Minute)
	var half time.Time
	before, beforeAt := int64(0), start // the last asking under half
	for {
		committed := committedTotal(b, bootstrap, group, topic)
		now := time.Now()
		if half.IsZero() && committed >= int64(n/2) {
			share := float64(int64(n/2)-before) / float64(committed-before)
			half, r.lastRecords = beforeAt.Add(time.Duration(share*float64(now.Sub(beforeAt)))), n-n/2
		} else if half.IsZero() {
			before, beforeAt = committed, now
		}
		if committed >= int64(n) {
			r.elapsed, r.lastTook = now.Sub(start), now.Sub(half)
			return r
		}
		if why := failed(); why != "" {
			b.Fatalf("group %s committed %d of %d records: %s", group, committed, n, why)
		}
		if now.After(deadline) {
			b.Fatalf("group %s committed fewer than %d records in 10 minutes", group, n)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
