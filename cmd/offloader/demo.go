package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/pflag"

	"github.com/offloader/offloader/demo"
	"github.com/offloader/offloader/internal/kafka/client"
	"github.com/offloader/offloader/settings"
)

func demoCommand() *command {
	return &command{
		name:    "demo",
		summary: "watch offloader work on a mix of small and multi-MiB records, with a report",
		usage:   "[--brokers HOST:PORT] [--records N] [--dir DIR] | --brokers HOST:PORT --produce-to TOPIC [--records N] [--sizes S,S,...]",
		help: `
Runs the real pipeline end to end and prints what it did. With no --brokers it
starts an in-process Kafka-protocol broker (kfake, memory only; for the demo,
never for production; only bin/offloader-demo, which make demo builds, has
it); with --brokers it uses your cluster instead.

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
for your own pipeline: see docs/getting-started.md. It needs --brokers; a
record the topic refuses (over its max.message.bytes) is exit 1, with the count.
-X PROP=VALUE passes a librdkafka producer property (security.protocol, sasl.*).`,
		example: `offloader demo
offloader demo -b 127.0.0.1:19092 --produce-to payments.raw --records 40 --sizes 2KiB,300KiB,4MiB`,
		setup: func(c *cli, fs *pflag.FlagSet) func() int {
			o := demoOptions{}
			fs.StringVarP(&o.bootstrap, "brokers", "b", "", "bootstrap `BROKERS` of a real cluster (default: an in-process broker)")
			fs.IntVar(&o.records, "records", 300, "records to produce")
			fs.StringVar(&o.dir, "dir", "demo-data", "folder for the pipeline file and the payload store")
			fs.BoolVar(&o.verbose, "verbose", false, "show the pipeline's own log")
			fs.StringVar(&o.produceTo, "produce-to", "", "only produce the records, to this existing `TOPIC` of --brokers")
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
			propertyFlag(fs, "producer (with --produce-to)", o.props)
			return func() int {
				switch {
				case o.records < 1:
					fmt.Fprintf(c.stderr, "offloader demo: --records must be at least 1, got %d\n", o.records)
					return exitUsage
				case o.produceTo != "" && o.bootstrap == "":
					fmt.Fprintln(c.stderr, "offloader demo: --produce-to needs --brokers HOST:PORT: the records are for a topic of your cluster")
					return exitUsage
				case o.produceTo == "" && (o.sizes != nil || len(o.props) > 0):
					fmt.Fprintln(c.stderr, "offloader demo: --sizes and -X go with --produce-to")
					return exitUsage
				}
				if problems := client.CheckClientProperties("-X", "producer", o.props); len(problems) > 0 {
					fmt.Fprintf(c.stderr, "offloader demo: %v\n", problems.Err())
					return exitUsage
				}
				ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
				defer stop()
				if o.produceTo != "" {
					p := demo.Producing{Bootstrap: o.bootstrap, Topic: o.produceTo, Records: o.records, Sizes: o.sizes, Properties: o.props}
					if err := demo.ProduceTo(c.stdout, p); err != nil {
						fmt.Fprintf(c.stderr, "offloader demo: %v\n", err)
						return exitFailure
					}
					return exitOK
				}
				run := demo.Options{Bootstrap: o.bootstrap, Records: o.records, Dir: o.dir, Verbose: o.verbose, Environ: c.environ, Version: version, Commit: commit,
					Binary: strings.TrimSuffix(os.Args[0], "-demo")}
				if err := demo.Run(ctx, c.stdout, run); err != nil {
					fmt.Fprintf(c.stderr, "offloader demo: %v\n", err)
					return exitFailure
				}
				return exitOK
			}
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
