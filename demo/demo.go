// Package demo shows offloader at work: it produces a mix of small and
// multi-MiB records, runs the real pipeline on them (on a broker of the
// user's, or, built with the demo tag, an in-process one), resolves every
// pointer and reports what happened. ProduceTo writes the same test records
// to a topic of the user's cluster.
package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/offloader/offloader/config"
	"github.com/offloader/offloader/daemon"
	"github.com/offloader/offloader/internal/kafka/kadmin"
	"github.com/offloader/offloader/internal/kafka/reader"
	"github.com/offloader/offloader/observability"
	"github.com/offloader/offloader/pipeline"
	"github.com/offloader/offloader/resolver"
	"github.com/offloader/offloader/settings"
	"github.com/offloader/offloader/stores"
	"github.com/offloader/offloader/stores/filesystem"
	"github.com/offloader/offloader/transforms"
)

// demoRecord is one record the demo produces, kept to verify the round trip.
type demoRecord struct {
	partition int32
	key       string
	value     []byte // nil: tombstone
	headers   []pipeline.Header
}

// demoMix returns n records: mostly small JSON events, every 10th a few hundred
// KiB (some over the auto threshold of about 1 MB, most under), every 20th
// 1-6 MiB, every 50th a tombstone. Seeded, so every run produces the same bytes.
func demoMix(n int) []demoRecord {
	rng := rand.New(rand.NewPCG(1159, 782))
	random := func(size int) []byte { return randomBytes(rng, size) }
	recs := make([]demoRecord, n)
	for i := range recs {
		r := demoRecord{partition: int32(i % 3), key: fmt.Sprintf("order-%05d", i),
			headers: []pipeline.Header{{Key: "source", Value: []byte("offloader-demo")}}}
		switch {
		case i%50 == 49:
			// tombstone: value stays nil
		case i%20 == 3:
			r.value = random(1<<20 + rng.IntN(5<<20))
			r.headers = append(r.headers, pipeline.Header{Key: "content-type", Value: []byte("application/octet-stream")})
		case i%10 == 5:
			r.value = random(300<<10 + rng.IntN(900<<10))
			r.headers = append(r.headers, pipeline.Header{Key: "content-type", Value: []byte("application/octet-stream")})
		default:
			note := strings.Repeat("x", rng.IntN(3000))
			r.value = fmt.Appendf(nil, `{"order":%d,"customer":"c-%d","amount":%d.%02d,"note":%q}`, i, rng.IntN(1000), rng.IntN(500), rng.IntN(100), note)
			r.headers = append(r.headers, pipeline.Header{Key: "content-type", Value: []byte("application/json")})
		}
		recs[i] = r
	}
	return recs
}

// randomBytes returns size bytes from rng: values that do not compress.
func randomBytes(rng *rand.Rand, size int) []byte {
	b := make([]byte, size)
	for i := 0; i < size; i += 8 {
		v := rng.Uint64()
		for j := 0; j < 8 && i+j < size; j++ {
			b[i+j] = byte(v >> (8 * j))
		}
	}
	return b
}

// Options shape a demo run.
type Options struct {
	// Bootstrap is a real cluster's ("": the in-process broker, in a build
	// with the demo tag).
	Bootstrap string
	// Records is how many records to produce.
	Records int
	// Dir holds the pipeline file and the payload store.
	Dir string
	// Verbose shows the pipeline's own log.
	Verbose bool
	// Environ is the environment the pipeline file is loaded with.
	Environ []string
	// Version and Commit are the build's, for the pipeline's log.
	Version, Commit string
	// Binary is the daemon's command, in the commands the report suggests
	// (default offloader).
	Binary string
}

// Run produces the mix to a raw topic, runs the pipeline until the slim
// topic holds every record, and writes the report to out.
func Run(ctx context.Context, out io.Writer, o Options) error {
	bootstrap := o.Bootstrap
	if bootstrap == "" {
		addr, stop, err := startDemoBroker()
		if err != nil {
			return err
		}
		defer stop()
		bootstrap = addr
		fmt.Fprintf(out, "broker      in-process Kafka-protocol broker (kfake) at %s\n", bootstrap)
	} else {
		fmt.Fprintf(out, "broker      %s\n", bootstrap)
	}
	now := time.Now().UTC()
	runID := fmt.Sprintf("%s-%03d", now.Format("20060102-150405"), now.Nanosecond()/1e6)
	raw, slim, group := "offloader-demo-raw-"+runID, "offloader-demo-slim-"+runID, "offloader-demo-"+runID
	if err := demoTopics(ctx, bootstrap, raw, slim); err != nil {
		return err
	}
	fmt.Fprintf(out, "topics      %s -> %s (3 partitions each)\n", raw, slim)

	recs := demoMix(o.Records)
	started := time.Now()
	rawBytes, err := demoProduce(bootstrap, raw, recs)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "produced    %d records, %s, in %s\n", len(recs), settings.Size(rawBytes).Approx(), time.Since(started).Round(time.Millisecond))

	dir, err := filepath.Abs(o.Dir)
	if err != nil {
		return err
	}
	file, err := demoPipelineFile(dir, bootstrap, raw, slim, group, runID, o.Bootstrap == "")
	if err != nil {
		return err
	}
	f, err := config.Load(file, config.Options{Environ: o.Environ})
	if err != nil {
		return fmt.Errorf("loading the demo's own pipeline file: %w", err)
	}
	p, err := f.Select("")
	if err != nil {
		return err
	}
	level := "warn"
	if o.Verbose {
		level = "info"
	}
	logger, err := observability.NewLogger("console", level)
	if err != nil {
		return err
	}
	defer logger.Sync()
	fmt.Fprintf(out, "pipeline    %s (offload, threshold: auto, payloads in %s)\n", file, filepath.Join(dir, "payloads", runID))
	inspectCtx, cancelInspect := context.WithTimeout(ctx, 30*time.Second)
	topology, err := kadmin.Inspect(inspectCtx, daemon.Kafka(p), logger)
	cancelInspect()
	if err != nil {
		return err
	}
	limit := topology.SlimLimit()
	fmt.Fprintf(out, "threshold   %d bytes: auto is the slim topic's limit, here %s, less %s of headroom;\n"+
		"            a record over it has its value offloaded (the slim topic gets a pointer), the rest stay inline (as they are)\n",
		transforms.AutoThreshold(limit.Bytes), limit.Gate, transforms.AutoThresholdHeadroom)

	runCtx, stopPipeline := context.WithCancel(ctx)
	defer stopPipeline()
	done := make(chan error, 1)
	started = time.Now()
	go func() {
		d, err := daemon.Build(runCtx, p, daemon.Env{Version: o.Version, Commit: o.Commit, Logger: logger}, daemon.Options{})
		if err == nil {
			_, err = d.Run(runCtx)
		}
		done <- err
	}()
	got, err := demoConsume(ctx, bootstrap, slim, len(recs), done)
	elapsed := time.Since(started)
	stopPipeline()
	// A pipeline that stopped early was heard by demoConsume: its error is
	// err, and done has nothing more to say.
	if !errors.As(err, new(*pipelineStopped)) {
		if runErr := <-done; runErr != nil && err == nil {
			err = fmt.Errorf("the pipeline failed: %w", runErr)
		}
	}
	if err != nil {
		return err
	}

	store, err := filesystem.Open("payloads", filesystem.Config{Root: filepath.Join(dir, "payloads", runID), DirMode: 0o750, FileMode: 0o640})
	if err != nil {
		return err
	}
	res := resolver.New(resolver.Options{Stores: map[string]stores.Store{"payloads": store}})
	defer res.Close()
	binary := o.Binary
	if binary == "" {
		binary = "offloader"
	}
	return demoReport(out, recs, got, res, rawBytes, elapsed, file, binary, o.Bootstrap == "")
}

func demoTopics(ctx context.Context, bootstrap, raw, slim string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	// The raw topic takes the multi-MiB records the demo is about.
	return kadmin.CreateTopics(ctx, bootstrap, 3, map[string]map[string]string{raw: {"max.message.bytes": "16777216"}, slim: nil})
}

func demoProduce(bootstrap, topic string, recs []demoRecord) (int64, error) {
	out := make([]*pipeline.Record, len(recs))
	var total int64
	for i, r := range recs {
		out[i] = &pipeline.Record{Topic: topic, Partition: r.partition, Key: []byte(r.key), Value: r.value, Headers: r.headers}
		total += int64(len(r.key) + len(r.value))
	}
	if err := kadmin.Produce(bootstrap, nil, out, 16<<20, 2*time.Minute); err != nil {
		return 0, fmt.Errorf("producing to %s: %w", topic, err)
	}
	return total, nil
}

// demoPipelineFile writes the pipeline the demo runs: a real pipeline file, so
// that it shows what one looks like.
func demoPipelineFile(dir, bootstrap, raw, slim, group, runID string, inProcess bool) (string, error) {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return "", err
	}
	// Only the latest run's payloads are kept: each run stores 50 MiB.
	if err := os.RemoveAll(filepath.Join(dir, "payloads")); err != nil {
		return "", fmt.Errorf("removing the previous demo's payloads: %w", err)
	}
	note := "# Its topics stay on " + bootstrap + ": offloader run -F " + filepath.Join(dir, "pipeline.yaml") + " runs it again.\n"
	if inProcess {
		note = "# It ran against the demo's in-process broker, which is gone: offloader demo\n" +
			"# --brokers HOST:PORT writes one for a broker that stays.\n"
	}
	body := note + fmt.Sprintf(`# Written by offloader demo. Try: offloader validate -F %[1]s --print
pipelines:
  demo:
    kafka:
      bootstrap_servers: %[2]q
      transactional_id: offloader-demo-%[7]s
      consumer: {enable.metrics.push: false}
      producer: {enable.metrics.push: false}
    source: {topics: [%[3]s], group: %[5]s}
    slim_topic: %[4]s
    stores:
      payloads: {type: filesystem, root: %[6]q}
    transforms:
      - type: offload
        store: payloads
        threshold: auto     # the slim topic's limit minus 4 KiB of headroom
    observability: {listen: ""}
`, filepath.Join(dir, "pipeline.yaml"), bootstrap, raw, slim, group, filepath.Join(dir, "payloads", runID), runID)
	file := filepath.Join(dir, "pipeline.yaml")
	return file, os.WriteFile(file, []byte(body), 0o640)
}

// demoConsume reads the slim topic (read_committed) until it holds n records,
// then one more second so that duplicates would show.
func demoConsume(ctx context.Context, bootstrap, topic string, n int, pipelineDone <-chan error) ([]*pipeline.Record, error) {
	r, err := reader.OpenReader(reader.ReaderOptions{
		Bootstrap: bootstrap, Properties: map[string]string{"enable.metrics.push": "false"},
		Topic: topic, From: reader.Start{Offset: reader.Beginning}, Follow: true,
	})
	if err != nil {
		return nil, err
	}
	defer r.Close()
	var got []*pipeline.Record
	deadline := time.Now().Add(5 * time.Minute)
	var grace time.Time
	for {
		if len(got) >= n && grace.IsZero() {
			grace = time.Now().Add(time.Second)
		}
		switch {
		case !grace.IsZero() && time.Now().After(grace):
			return got, nil
		case time.Now().After(deadline):
			return nil, fmt.Errorf("the slim topic holds %d of %d records after 5 minutes", len(got), n)
		case ctx.Err() != nil:
			return nil, errors.New("interrupted")
		}
		select {
		case err := <-pipelineDone:
			return nil, &pipelineStopped{got: len(got), want: n, err: err}
		default:
		}
		m, err := r.Next(ctx, 100*time.Millisecond)
		if err != nil {
			if ctx.Err() != nil {
				continue
			}
			return nil, fmt.Errorf("reading %s: %w", topic, err)
		}
		if m != nil {
			got = append(got, m)
		}
	}
}

// pipelineStopped: the pipeline ended before the slim topic held every
// record.
type pipelineStopped struct {
	got, want int
	err       error
}

func (e *pipelineStopped) Error() string {
	return fmt.Sprintf("the pipeline stopped with %d of %d records in the slim topic: %v", e.got, e.want, e.err)
}

func (e *pipelineStopped) Unwrap() error { return e.err }
