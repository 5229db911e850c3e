package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/offloader/offloader/config"
	"github.com/offloader/offloader/daemon"
	"github.com/offloader/offloader/internal/kafka"
	"github.com/offloader/offloader/observability"
	"github.com/offloader/offloader/pipeline"
	"github.com/offloader/offloader/resolver"
	"github.com/offloader/offloader/settings"
	"github.com/offloader/offloader/stores"
	"github.com/offloader/offloader/stores/filesystem"
	"github.com/offloader/offloader/transforms"
)

func demoCommand() *command {
	return &command{
		name:    "demo",
		summary: "watch offloader work on a mix of small and multi-MiB records, with a report",
		usage:   "[--bootstrap HOST:PORT] [--records N] [--dir DIR] | --bootstrap HOST:PORT --produce-to TOPIC [--records N] [--sizes S,S,...]",
		help: `
Runs the real pipeline end to end and prints what it did. With no --bootstrap it
starts an in-process Kafka-protocol broker (kfake, memory only; for the demo,
never for production; only bin/offloader-demo, which make demo builds, has
it); with --bootstrap it uses your cluster instead.

It creates a raw and a slim topic (3 partitions each, names with a run id),
produces a mix of small events, values of a few hundred KiB, multi-MiB values,
tombstones and headers to the raw topic, writes a pipeline file to DIR/pipeline.yaml
(offload with threshold: auto to the filesystem store DIR/payloads, emptied of
the previous run's payloads first), runs it until
the slim topic holds every record, stops it as SIGTERM would, and reports:
records in and out, what was offloaded, raw versus slim bytes, one pointer, and a
round trip that resolves every pointer and compares SHA-256s with what was produced.

On a real cluster the topics are left in place for you to look at; delete them
with kafka-topics.sh --delete when done. Exit 1 if any record is missing,
duplicated or does not resolve to its original bytes.

--produce-to TOPIC only produces: the demo's records (or, with --sizes, values
of those sizes in turn: --sizes 2KiB,300KiB,4MiB) go to an existing topic of
your cluster, keyed order-00000, order-00001, ... (the partitioner chooses by
key), with headers source and content-type, every 50th a tombstone. Test data
for your own pipeline: see docs/getting-started.md. It needs --bootstrap; a
record the topic refuses (over its max.message.bytes) is exit 1, with the count.
-X PROP=VALUE passes a librdkafka producer property (security.protocol, sasl.*).`,
		run: func(c *cli, args []string) int {
			fs := c.flags(find("demo"))
			o := demoOptions{}
			fs.StringVar(&o.bootstrap, "bootstrap", "", "bootstrap servers of a real cluster (default: an in-process broker)")
			fs.IntVar(&o.records, "records", 300, "records to produce")
			fs.StringVar(&o.dir, "dir", "demo-data", "folder for the pipeline file and the payload store")
			fs.BoolVar(&o.verbose, "verbose", false, "show the pipeline's own log")
			fs.StringVar(&o.produceTo, "produce-to", "", "only produce the records, to this existing `TOPIC` of --bootstrap")
			fs.Func("sizes", "with --produce-to: value `SIZES` to cycle through, such as 2KiB,300KiB,4MiB", func(v string) error {
				for _, part := range strings.Split(v, ",") {
					size, err := settings.ParseSize(strings.TrimSpace(part))
					if err != nil {
						return err
					}
					if size > 15*settings.MiB {
						return fmt.Errorf("%s is over the 15MiB a demo record may have", part)
					}
					o.sizes = append(o.sizes, int(size))
				}
				return nil
			})
			o.props = map[string]string{}
			fs.Func("X", "with --produce-to: a librdkafka producer `PROP=VALUE`, repeatable", func(v string) error {
				k, val, ok := strings.Cut(v, "=")
				if !ok || k == "" {
					return fmt.Errorf("want PROP=VALUE, got %q", v)
				}
				o.props[k] = val
				return nil
			})
			if code, ok := c.parse(fs, args); !ok {
				return code
			}
			switch {
			case o.records < 1:
				fmt.Fprintf(c.stderr, "offloader demo: --records must be at least 1, got %d\n", o.records)
				return exitUsage
			case o.produceTo != "" && o.bootstrap == "":
				fmt.Fprintln(c.stderr, "offloader demo: --produce-to needs --bootstrap HOST:PORT: the records are for a topic of your cluster")
				return exitUsage
			case o.produceTo == "" && (o.sizes != nil || len(o.props) > 0):
				fmt.Fprintln(c.stderr, "offloader demo: --sizes and -X go with --produce-to")
				return exitUsage
			}
			if problems := kafka.CheckClientProperties("-X", "producer", o.props); len(problems) > 0 {
				fmt.Fprintf(c.stderr, "offloader demo: %v\n", problems.Err())
				return exitUsage
			}
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			if o.produceTo != "" {
				if err := c.produceTo(o); err != nil {
					fmt.Fprintf(c.stderr, "offloader demo: %v\n", err)
					return exitFailure
				}
				return exitOK
			}
			if err := c.demo(ctx, o); err != nil {
				fmt.Fprintf(c.stderr, "offloader demo: %v\n", err)
				return exitFailure
			}
			return exitOK
		},
	}
}

type demoOptions struct {
	bootstrap string
	records   int
	dir       string
	verbose   bool
	produceTo string
	sizes     []int             // --sizes
	props     map[string]string // -X
}

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

func (c *cli) demo(ctx context.Context, o demoOptions) error {
	out := c.stdout
	bootstrap := o.bootstrap
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

	recs := demoMix(o.records)
	started := time.Now()
	rawBytes, err := demoProduce(bootstrap, raw, recs)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "produced    %d records, %s, in %s\n", len(recs), bytesIEC(rawBytes), time.Since(started).Round(time.Millisecond))

	dir, err := filepath.Abs(o.dir)
	if err != nil {
		return err
	}
	file, err := demoPipelineFile(dir, bootstrap, raw, slim, group, runID, o.bootstrap == "")
	if err != nil {
		return err
	}
	f, err := config.Load(file, config.Options{Environ: c.environ})
	if err != nil {
		return fmt.Errorf("loading the demo's own pipeline file: %w", err)
	}
	p, err := f.Select("")
	if err != nil {
		return err
	}
	level := "warn"
	if o.verbose {
		level = "info"
	}
	logger, err := observability.NewLogger("console", level)
	if err != nil {
		return err
	}
	defer logger.Sync()
	fmt.Fprintf(out, "pipeline    %s (offload, threshold: auto, payloads in %s)\n", file, filepath.Join(dir, "payloads", runID))
	inspectCtx, cancelInspect := context.WithTimeout(ctx, 30*time.Second)
	topology, err := kafka.Inspect(inspectCtx, daemon.Kafka(p), logger)
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
		_, err := runPipeline(runCtx, p, logger, daemon.Options{}, nil)
		done <- err
	}()
	got, err := demoConsume(ctx, bootstrap, slim, len(recs), done)
	elapsed := time.Since(started)
	stopPipeline()
	if runErr := <-done; runErr != nil && err == nil {
		err = fmt.Errorf("the pipeline failed: %w", runErr)
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
	return demoReport(out, recs, got, res, rawBytes, elapsed, file, o.bootstrap == "")
}

func demoTopics(ctx context.Context, bootstrap, raw, slim string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	// The raw topic takes the multi-MiB records the demo is about.
	return kafka.CreateTopics(ctx, bootstrap, 3, map[string]map[string]string{raw: {"max.message.bytes": "16777216"}, slim: nil})
}

func demoProduce(bootstrap, topic string, recs []demoRecord) (int64, error) {
	out := make([]*pipeline.Record, len(recs))
	var total int64
	for i, r := range recs {
		out[i] = &pipeline.Record{Topic: topic, Partition: r.partition, Key: []byte(r.key), Value: r.value, Headers: r.headers}
		total += int64(len(r.key) + len(r.value))
	}
	if err := kafka.Produce(bootstrap, nil, out, 16<<20, 2*time.Minute); err != nil {
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
	note := "# Its topics stay on " + bootstrap + ": offloader run -c " + filepath.Join(dir, "pipeline.yaml") + " runs it again.\n"
	if inProcess {
		note = "# It ran against the demo's in-process broker, which is gone: offloader demo\n" +
			"# --bootstrap HOST:PORT writes one for a broker that stays.\n"
	}
	body := note + fmt.Sprintf(`# Written by offloader demo. Try: offloader validate -c %[1]s --print
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
	r, err := kafka.OpenReader(kafka.ReaderOptions{
		Bootstrap: bootstrap, Properties: map[string]string{"enable.metrics.push": "false"},
		Topic: topic, From: kafka.Start{Offset: kafka.Beginning}, Follow: true,
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
			return nil, fmt.Errorf("the pipeline stopped with %d of %d records in the slim topic: %v", len(got), n, err)
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
