package main

import (
	"context"
	"fmt"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"github.com/offloader/offloader/config"
	"github.com/offloader/offloader/daemon"
	"github.com/offloader/offloader/observability"
)

func checkCommand() *command {
	return &command{
		name:    "check",
		summary: "check a pipeline's topics, size limits and payload stores: will run start and work?",
		usage:   "-F FILE [--pipeline NAME] [--create-missing] [--sample N]",
		help: `
Reads, through the admin API, the broker's message.max.bytes and the partition
counts and max.message.bytes of the pipeline's source, slim, retry and dead-letter
topics, plus the producer's message.max.bytes and the consumer's
receive.message.max.bytes from the file. Then it computes the largest record each
topic may receive (a record up to the offload threshold or a pointer on the slim
topic; the same plus error headers on retry and dead-letter topics; the source
size where nothing is offloaded) and checks it against every gate:

  producer message.max.bytes   the client checks each uncompressed record
  topic max.message.bytes      the broker checks each batch; the producer cannot
                               see a topic's override, so records between the two fail
  receive.message.max.bytes    caps a whole fetch response; fetch.max.bytes does not
                               protect the consumer from a larger record
  topic max.decompressed.message.bytes
                               (Kafka 4.4) caps one record's decompressed size
                               where the broker decompresses a batch; shown when
                               the broker reports it

A retry or dead-letter record too large for its topic does not stop 'run' when
the pipeline has an offload step: its value is offloaded, or, when its key or
headers alone are too large, the whole record is stored as one object and the
dead-letter topic gets a pointer to it. So with an offload step those topics need
only room for a pointer with error headers (the table asks for the offload
threshold plus error headers); without one they need the source's size.
It prints a table (topic, gate, limit, largest record, verdict), then each problem
with the change that fixes it. 'offloader run' makes the same check at start-up and
refuses to start on a problem unless the pipeline sets limits: warn.

Then it tries each payload store the way run uses it: it opens the store as
run does at start-up (a missing container is created only when the store sets
create_container: true), and for each offload step writing to it writes a
small probe object under the step's key prefix, reads it back, compares it and
deletes it; a store only read (by rehydrate) gets one read. A second table
shows each store's checks, then each problem with its fix (a missing container,
credentials without write or read permission, a store that cannot be reached).

Exit 0 when every limit fits and every store works, 1 when something does not,
a topic is missing or Kafka cannot be reached.

--create-missing creates the missing slim, retry and dead-letter topics with as
many partitions as the largest source topic and a max.message.bytes that fits,
the slim and dead-letter topics with the sources' policy (compacted where a
source is, retention no shorter), then checks again. 'run' never creates
topics. An existing slim or dead-letter topic that would keep less than a
source (not compacted where it is, a shorter retention) is a problem.

When the offload step has an if: (a predicate, negate applied), a record it
passes by is not offloaded: over the slim topic's limit, run sends it to the
dead-letter topic. check then reads the last --sample records of each source
partition, applies the predicate as run would, and names each sampled record
bound for the dead-letter topic as a problem (--sample 0 skips this).`,
		example: `offloader check -F pipeline.yaml
offloader check -F pipeline.yaml --create-missing
offloader check -F pipeline.yaml --output json | jq .ok`,
		setup: func(c *cli, fs *pflag.FlagSet) func() int {
			src := c.pipelineFlags(fs)
			create := fs.Bool("create-missing", false, "create missing slim, retry and dead-letter topics with aligned settings")
			sample := fs.Int("sample", 1000, "with an if: on the offload step, the last `N` records of each source partition to try it on (0: none)")
			kafkaTimeout := fs.Duration("kafka-timeout", 30*time.Second, "how long Kafka has to answer (each store has the file's errors.store_budget)")
			outputFlag(fs)
			return func() int {
				switch {
				case *sample < 0:
					return c.usageError(fs, "--sample must not be negative")
				case *kafkaTimeout <= 0:
					return c.usageError(fs, "--kafka-timeout must be above 0")
				}
				p, code, ok := c.loadPipeline(fs.Name(), src)
				if !ok {
					return code
				}
				// The Kafka client's own warnings (a broker that cannot be
				// reached) go to stderr in the console format.
				logger, err := observability.NewLogger("console", "warn")
				if err != nil {
					fmt.Fprintf(c.stderr, "offloader check: %v\n", err)
					return exitFailure
				}
				defer logger.Sync()
				ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
				defer stop()
				from := ""
				if c.getenv(config.OverridePrefix+"KAFKA__BOOTSTRAP_SERVERS") != "" {
					from = "$" + config.OverridePrefix + "KAFKA__BOOTSTRAP_SERVERS (it overrides kafka.bootstrap_servers)"
				}
				rep := daemon.Check(ctx, p, daemon.CheckOptions{CreateMissing: *create, Sample: *sample, KafkaTimeout: *kafkaTimeout,
					BootstrapFrom: from, Log: logger, Progress: func(format string, args ...any) {
						fmt.Fprintf(c.stderr, format+"\n", args...)
					}})
				if c.asJSON {
					c.printJSON(rep)
				} else {
					printCheck(c.stdout, c.stderr, rep)
				}
				if !rep.OK {
					return exitFailure
				}
				return exitOK
			}
		},
	}
}
