package main

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"go.uber.org/zap"

	"github.com/spf13/pflag"

	"github.com/offloader/offloader/config"
	"github.com/offloader/offloader/daemon"
	"github.com/offloader/offloader/limits"
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
		setup: func(c *cli, fs *pflag.FlagSet) func() int {
			src := c.pipelineFlags(fs)
			create := fs.Bool("create-missing", false, "create missing slim, retry and dead-letter topics with aligned settings")
			sample := fs.Int("sample", 1000, "with an if: on the offload step, the last `N` records of each source partition to try it on (0: none)")
			return func() int {
				if *sample < 0 {
					return c.usageError(fs, "--sample must not be negative")
				}
				p, code, ok := c.loadPipeline(fs.Name(), src)
				if !ok {
					return code
				}
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				// The Kafka client's own warnings (a broker that cannot be
				// reached) go to stderr in the console format.
				logger, err := observability.NewLogger("console", "warn")
				if err != nil {
					fmt.Fprintf(c.stderr, "offloader check: %v\n", err)
					return exitFailure
				}
				defer logger.Sync()
				code = exitOK
				if !surveyKafka(ctx, c, p, logger, *create) {
					code = exitFailure
				} else if !c.samplePredicate(ctx, p, *sample) {
					code = exitFailure
				}
				rows, problems := daemon.CheckStores(ctx, p)
				printStores(c.stdout, rows, problems)
				if len(problems) > 0 {
					code = exitFailure
				}
				return code
			}
		},
	}
}

// surveyKafka prints the limit table (creating missing topics first when
// create is set), and reports whether every limit fits.
func surveyKafka(ctx context.Context, c *cli, p *config.Pipeline, logger *zap.Logger, create bool) bool {
	figures, err := daemon.Survey(ctx, p, logger)
	if err != nil {
		fmt.Fprintf(c.stderr, "offloader check: %v\n", err)
		return false
	}
	if create {
		var created []string
		figures, created, err = daemon.CreateMissing(ctx, p, figures, logger)
		for _, t := range created {
			fmt.Fprintf(c.stdout, "created topic %s\n", t)
		}
		if err != nil {
			fmt.Fprintf(c.stderr, "offloader check: %v\n", err)
			return false
		}
	}
	rows, problems := limits.Check(figures)
	printLimits(c.stdout, rows, problems)
	return len(problems) == 0
}

func printLimits(w io.Writer, rows []limits.Row, problems []limits.Problem) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TOPIC\tROLE\tGATE\tLIMIT\tLARGEST RECORD\tVERDICT")
	for _, r := range rows {
		verdict := "ok"
		if !r.OK {
			verdict = "FAILS"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%s\n", r.Topic, r.Role, r.Gate, r.Limit, r.Largest, verdict)
	}
	tw.Flush()
	printProblems(w, problems, "all limits are aligned", "problem")
}

// printProblems lists problems, each with its fix, or says allGood.
func printProblems(w io.Writer, problems []limits.Problem, allGood, noun string) {
	if len(problems) == 0 {
		fmt.Fprintln(w, "\n"+allGood)
		return
	}
	fmt.Fprintf(w, "\n%d %s%s:\n", len(problems), noun, plural(len(problems)))
	for _, p := range problems {
		fmt.Fprintf(w, "- %s\n  fix: %s\n", p.What, p.Fix)
	}
}

// samplePredicate tries the offload step's if: on the last n records of each
// source partition (daemon.SampleOffloadIf) and prints those that run would
// send to the dead-letter topic, as problems. It reports whether there are
// none (true when the step has no if:, or n is 0).
func (c *cli) samplePredicate(ctx context.Context, p *config.Pipeline, n int) bool {
	if n == 0 {
		return true
	}
	read, problems, err := daemon.SampleOffloadIf(ctx, p, n)
	switch {
	case err != nil:
		fmt.Fprintf(c.stderr, "offloader check: %v\n", err)
		return false
	case read < 0:
		return true // the offload step has no if:
	}
	fmt.Fprintf(c.stdout, "\nthe offload step's if: tried on %d records (the last %d of each source partition)\n", read, n)
	printProblems(c.stdout, problems, "no sampled record is bound for the dead-letter topic", "problem")
	return len(problems) == 0
}
