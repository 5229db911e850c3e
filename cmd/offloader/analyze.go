package main

import (
	"context"
	"fmt"
	"io"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"

	"github.com/spf13/pflag"

	"github.com/offloader/offloader/config"
	"github.com/offloader/offloader/daemon"
	"github.com/offloader/offloader/internal/kafka/client"
	"github.com/offloader/offloader/internal/kafka/reader"
	"github.com/offloader/offloader/observability"
	"github.com/offloader/offloader/settings"
)

func analyzeCommand() *command {
	return &command{
		name:    "analyze",
		summary: "what offloading would do to a topic: sizes, largest records, offload figures, size gates broken today",
		usage:   "[-F FILE | -b BROKERS -t TOPIC] [-p N] [-o START] [--to END] [--sample N] [--threshold SIZE|auto] [--output json]",
		help: `
Reads a topic (read_committed, without joining a group or changing anything)
and reports, for people or (--output json) for tools:

  - records and bytes per partition;
  - a size histogram in powers of two, with p50, p90, p99 and the maximum;
  - the largest records (partition, offset, size, key and header bytes);
  - what an offload step at the threshold would do: records and bytes moved
    to the store, and the slim topic's resulting size;
  - the records that break a size gate of the topic today: its own
    max.message.bytes (or the broker's message.max.bytes, when the topic
    does not override it), its max.decompressed.message.bytes (Kafka 4.4),
    and a consumer's fetch.max.bytes and receive.message.max.bytes (with -X
    or the file's settings);
  - the records that would go to the dead-letter topic: over the slim
    topic's limit and passed by the offload step's if:, or with a key or
    headers that alone are over it (stored whole).

Sizes are the producer's estimate of a record (key, value, headers and record
framing), the figure the offload step and the gates use.

With -F FILE it reads the pipeline's source topic (-t for another), takes the
client settings from the file and the threshold from its offload step (auto:
the slim topic's limit less 4 KiB). Without a file, -b and -t say what to
read, and --threshold auto takes the producer's default message.max.bytes and
the broker's limit.

What to read: -p N (repeatable; default every partition), -o START
(beginning, end, N, -N or @TIME as for cat), --to END (an offset, or @TIME:
stop each partition there), --sample N (the last N records of each
partition: quick on a large topic).`,
		example: `offloader analyze -b 127.0.0.1:19092 -t orders.fat --sample 1000
offloader analyze -F pipeline.yaml --threshold 256KiB --output json`,
		setup: func(c *cli, fs *pflag.FlagSet) func() int {
			var bootstrap, topic, from, to, threshold string
			var sample, top int
			props := map[string]string{}
			var parts []int32
			src := c.pipelineFlags(fs)
			fs.StringVarP(&bootstrap, "brokers", "b", "", "bootstrap `BROKERS` (default: the pipeline file's)")
			fs.StringVarP(&topic, "topic", "t", "", "`TOPIC` to analyze (default: the pipeline's source topic)")
			propertyFlag(fs, "consumer", props)
			partitionFlag(fs, &parts)
			fs.StringVarP(&from, "offset", "o", "beginning", "`START`: beginning, N, -N or @TIME")
			fs.StringVar(&to, "to", "", "`END` of each partition: an offset or @TIME (default: its end now)")
			fs.IntVar(&sample, "sample", 0, "only the last `N` records of each partition")
			fs.StringVar(&threshold, "threshold", "", "offload threshold: a `SIZE` or auto (default: the pipeline's, else auto)")
			fs.IntVar(&top, "top", 10, "how many of the largest records to list")
			outputFlag(fs)
			return func() int {
				start, err := parseStart(from)
				switch {
				case err != nil:
					return c.usageError(fs, "-o: %v", err)
				case start.Offset == reader.End && start.Time.IsZero() && start.Tail == 0:
					return c.usageError(fs, "-o end reads nothing to analyze: give beginning, N, -N or @TIME")
				case sample < 0 || top < 0:
					return c.usageError(fs, "--sample and --top must not be negative")
				case *src.file == "" && (bootstrap == "" || topic == ""):
					return c.usageError(fs, "say what to read: -b BROKERS -t TOPIC, or -F FILE (a pipeline file)")
				}
				if sample > 0 {
					start = reader.Start{Tail: int64(sample)}
				}
				o := daemon.AnalyzeOptions{Topic: topic, Partitions: parts, From: start, Top: top}
				switch threshold {
				case "":
				case "auto":
					o.Auto = true
				default:
					size, err := settings.ParseSize(threshold)
					switch {
					case err != nil:
						return c.usageError(fs, "--threshold: %v", err)
					case size <= 0:
						return c.usageError(fs, "--threshold must be a size above 0, or auto")
					}
					o.Threshold = int(size)
				}
				if to != "" {
					end, err := parseEnd(to)
					if err != nil {
						return c.usageError(fs, "--to: %v", err)
					}
					o.To = &end
				}
				if problems := append(client.CheckReaderProperties("-X", props, false), client.CheckClientProperties("-X", "consumer", props)...); len(problems) > 0 {
					return c.usageError(fs, "%v", problems.Err())
				}
				p := &config.Pipeline{Name: "analyze", Kafka: config.Kafka{BootstrapServers: bootstrap, Consumer: props}}
				if *src.file != "" {
					var code int
					var ok bool
					if p, code, ok = c.loadPipeline(fs.Name(), src); !ok {
						return code
					}
					if bootstrap != "" {
						p.Kafka.BootstrapServers = bootstrap
					}
					for k, v := range props {
						p.Kafka.Consumer[k] = v
					}
					if topic == "" {
						if len(p.Source.Topics) > 1 {
							return c.usageError(fs, "the pipeline reads %d topics: say which with -t", len(p.Source.Topics))
						}
						topic = p.Source.Topics[0]
					}
				}
				o.Topic = topic
				logger, err := observability.NewLogger("console", "warn")
				if err != nil {
					return exitFailure
				}
				defer logger.Sync()
				o.Log = logger
				ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
				defer stop()
				rep, err := daemon.Analyze(ctx, p, o)
				if err != nil {
					fmt.Fprintf(c.stderr, "offloader analyze: %v\n", err)
					return exitFailure
				}
				if c.asJSON {
					c.printJSON(rep)
					return exitOK
				}
				printAnalysis(c.stdout, rep)
				return exitOK
			}
		},
	}
}

// parseEnd reads --to: an offset, or @TIME.
func parseEnd(s string) (reader.Start, error) {
	if strings.HasPrefix(s, "@") {
		return parseStart(s)
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return reader.Start{}, fmt.Errorf("want an offset or @TIME, got %q", s)
	}
	return reader.Start{Offset: n}, nil
}

func printAnalysis(w io.Writer, r daemon.Analysis) {
	fmt.Fprintf(w, "topic %s: %d records, %s, read in %.1fs\n\n", r.Topic, r.Records, settings.Size(r.Bytes).Approx(), r.Elapsed)
	if r.Records == 0 {
		fmt.Fprintln(w, "nothing to analyze in the range read")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "PARTITION\tRECORDS\tBYTES\t")
	for _, p := range r.Partitions {
		fmt.Fprintf(tw, "%d\t%d\t%s\t\n", p.Partition, p.Records, settings.Size(p.Bytes).Approx())
	}
	tw.Flush()
	fmt.Fprintf(w, "\nrecord sizes: p50 %s, p90 %s, p99 %s, max %s\n", settings.Size(r.P50).Approx(), settings.Size(r.P90).Approx(), settings.Size(r.P99).Approx(), settings.Size(r.Max).Approx())
	var most int64
	for _, b := range r.Histogram {
		most = max(most, b.Records)
	}
	for _, b := range r.Histogram {
		bar := strings.Repeat("#", int((b.Records*40+most-1)/most))
		if b.Records == 0 {
			bar = ""
		}
		fmt.Fprintf(w, "  %9s - %-9s %8d %s\n", settings.Size(b.From).Approx(), settings.Size(b.To).Approx(), b.Records, bar)
	}
	fmt.Fprintf(w, "\nlargest records:\n")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  PARTITION\tOFFSET\tSIZE\tKEY BYTES\tHEADER BYTES")
	for _, l := range r.Largest {
		fmt.Fprintf(tw, "  %d\t%d\t%s\t%d\t%d\n", l.Partition, l.Offset, settings.Size(l.Size).Approx(), l.KeyBytes, l.HeaderBytes)
	}
	tw.Flush()
	o := r.Offload
	fmt.Fprintf(w, "\noffloading at %s (%s):\n", settings.Size(o.Threshold).Approx(), r.Threshold)
	fmt.Fprintf(w, "  %d records (%.1f%%) offloaded, %s to the store\n", o.Records, 100*float64(o.Records)/float64(r.Records), settings.Size(o.Bytes).Approx())
	fmt.Fprintf(w, "  slim topic %s (%.1f%% of %s)", settings.Size(o.SlimBytes).Approx(), 100*float64(o.SlimBytes)/float64(max(r.Bytes, 1)), settings.Size(r.Bytes).Approx())
	if o.AlreadyPointers > 0 {
		fmt.Fprintf(w, "; %d records already are pointers", o.AlreadyPointers)
	}
	if o.DeadLettered > 0 {
		fmt.Fprintf(w, "\n  %d records the offload step's if: passes by are over the slim topic's limit: they would go to the dead-letter topic (for example %s)",
			o.DeadLettered, strings.Join(o.DeadLetteredExamples, ", "))
	}
	if o.WholeRecords > 0 {
		fmt.Fprintf(w, "\n  %d records have a key or headers that alone, with a pointer for the value, are over the slim topic's limit: offloading cannot make them fit, so they would go to the dead-letter topic, each stored whole (for example %s)",
			o.WholeRecords, strings.Join(o.WholeRecordsExamples, ", "))
	}
	fmt.Fprintf(w, "\n\nsize gates today:\n")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  GATE\tLIMIT\tRECORDS OVER\tFIRST")
	for _, g := range r.Gates {
		first := g.First
		if first == "" {
			first = "-"
		}
		fmt.Fprintf(tw, "  %s\t%d\t%d\t%s\n", g.Name, g.Limit, g.Records, first)
	}
	tw.Flush()
}
