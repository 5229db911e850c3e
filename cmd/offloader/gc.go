package main

import (
	"context"
	"fmt"
	"io"
	"os/signal"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/pflag"

	"github.com/offloader/offloader/config"
	"github.com/offloader/offloader/daemon"
	"github.com/offloader/offloader/gc"
	"github.com/offloader/offloader/observability"
	"github.com/offloader/offloader/settings"
)

func gcCommand() *command {
	return &command{
		name:    "gc",
		summary: "delete the payloads no record can still reference",
		usage:   "-F FILE [--pipeline NAME] [--grace DURATION] [--dry-run] [--output json]",
		help: `
Deletes the objects of the pipeline that no record can reference any more:
payloads whose pointer records aged out of the topics' retention (or were
deleted), and payloads of transactions that aborted. It deletes an object
only when it has proven three things, and keeps it, saying why, otherwise:

  no record references it: every partition of the slim, retry and
    dead-letter topics, and of the source topics from the group's committed
    offsets (where a serializer's pointer waits for the daemon), is read
    read_committed without a gap, from its log start to an end checked
    after the read; what lies past a partition's last stable offset (behind
    a transaction still open) is read uncommitted and kept whole. Whole
    records kept for the dead-letter topic (.record) are looked inside. An
    offset reset, any consumer error, or a topic that cannot be described
    (an ACL) stops gc before it deletes anything; only a topic that does
    not exist counts as empty.
  it is this pipeline's: its key lies under a prefix an offload step of
    the pipeline writes, and its metadata names the pipeline (its name and
    slim topic) as its writer. Objects of another pipeline, and objects that
    name no writer (the serializers', or written before offloader named
    writers), are kept unless the store adopts their prefix (gc_adopt).
  it is old: written more than --grace before the reading began. The grace
    may not be shorter than the pipeline's floor, errors.store_budget +
    transaction.timeout.ms + commit.interval (the longest an upload can
    precede its commit), and a store whose clock is off this machine's by
    more than a tenth of the grace (a probe object's write time tells) is
    refused.

--dry-run deletes nothing and writes nothing (no clock probe); it prints
what would be deleted. --output json prints the report as JSON (docs/payload-lifetime.md
describes it). gc needs Describe and Read on every topic it reads.`,
		example: `offloader gc -F pipeline.yaml --dry-run`,
		setup: func(c *cli, fs *pflag.FlagSet) func() int {
			src := c.pipelineFlags(fs)
			grace := fs.Duration("grace", 24*time.Hour, "keep unreferenced objects younger than this (at least the pipeline's floor)")
			dryRun := fs.Bool("dry-run", false, "delete nothing; print what would be deleted")
			outputFlag(fs)
			return func() int {
				p, code, ok := c.loadPipeline(fs.Name(), src)
				if !ok {
					return code
				}
				if floor := p.GCFloor(); *grace < floor {
					return c.usageError(fs, "%v", &gc.GraceError{Grace: *grace, Floor: floor})
				}
				if len(p.KeyPrefixes()) == 0 {
					fmt.Fprintln(c.stdout, "the pipeline writes to no store (no offload step, no gc_adopt): nothing to collect")
					return exitOK
				}
				logger, err := observability.NewLogger("console", "warn")
				if err != nil {
					return exitFailure
				}
				defer logger.Sync()
				ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
				defer stop()
				rep, err := daemon.Collect(ctx, p, daemon.CollectOptions{Grace: *grace, DryRun: *dryRun, Log: logger,
					Progress: func(format string, args ...any) {
						fmt.Fprintf(c.stderr, "offloader gc: "+format+"\n", args...)
					}})
				if rep != nil {
					if c.asJSON {
						printGCJSON(c.stdout, rep, err)
					} else {
						printGC(c.stdout, p, rep)
					}
				}
				if err != nil {
					fmt.Fprintf(c.stderr, "offloader gc: %v\n", err)
					return exitFailure
				}
				return exitOK
			}
		},
	}
}

// printGC prints what gc read, proved, kept and deleted.
func printGC(w io.Writer, p *config.Pipeline, rep *gc.Report) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TOPIC\tROLE\tPARTITION\tREAD (committed)\tLAST STABLE\tHIGH WATERMARK\tNOTE")
	var open []string
	for _, t := range rep.Topics {
		if t.Missing {
			fmt.Fprintf(tw, "%s\t%s\t-\t-\t-\t-\tdoes not exist: references nothing\n", t.Topic, t.Role)
			continue
		}
		for _, pr := range t.Partitions {
			var notes []string
			if pr.StartAfter != pr.StartBefore {
				notes = append(notes, fmt.Sprintf("log start moved %d -> %d during the read (those records were deleted from Kafka)", pr.StartBefore, pr.StartAfter))
			}
			if pr.To < pr.End {
				notes = append(notes, fmt.Sprintf("%d..%d read uncommitted: %d pointers kept", pr.To, pr.End, pr.UncommittedPointers))
			}
			if pr.Open() {
				open = append(open, fmt.Sprintf("%s[%d] from offset %d (high watermark %d): every pointer past it is kept (kafka-transactions.sh --bootstrap-server %s describe-producers --topic %s --partition %d names its producer)",
					t.Topic, pr.Partition, pr.Stable, pr.End, p.Kafka.BootstrapServers, t.Topic, pr.Partition))
			}
			note := strings.Join(notes, "; ")
			if note == "" {
				note = "last stable = high watermark"
			}
			fmt.Fprintf(tw, "%s\t%s\t%d\t%d..%d\t%d\t%d\t%s\n", t.Topic, t.Role, pr.Partition, pr.From, pr.To, pr.Stable, pr.End, note)
		}
	}
	tw.Flush()
	fmt.Fprintf(w, "\n%d pointers read (%d more inside whole records)", rep.Pointers, rep.Inside)
	if rep.NotPointers > 0 {
		fmt.Fprintf(w, "; %d records marked as pointers are none and reference nothing, for example:\n  %s", rep.NotPointers, strings.Join(rep.NotPointerExamples, "\n  "))
	}
	fmt.Fprintln(w)
	for _, o := range open {
		fmt.Fprintf(w, "waiting on a transaction open on %s\n", o)
	}
	verb := "DELETED"
	if rep.DryRun {
		verb = "WOULD DELETE"
	}
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "STORE\tPREFIX\t%s\tREFERENCED\tUNCOMMITTED\tYOUNG\tOTHER WRITER\tNO WRITER\tOTHER CLUSTER\tNO CLUSTER\tOUTSIDE PREFIX\n", verb)
	for _, s := range rep.Sweeps {
		prefix := s.Prefix + "/"
		if s.Adopted {
			prefix += " (adopted)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", s.Store, prefix, countOf(s.Deleted), countOf(s.Referenced), countOf(s.Uncommitted),
			countOf(s.Young), countOf(s.OtherWriter), countOf(s.NoWriter), countOf(s.OtherCluster), countOf(s.NoCluster), countOf(s.Outside))
	}
	tw.Flush()
	fmt.Fprintf(w, "\nkept: referenced by a committed record; UNCOMMITTED referenced only past a last stable offset; YOUNG written after %s (grace %s);\n"+
		"OTHER WRITER another pipeline's (writer metadata); NO WRITER names none, under a prefix not adopted (gc_adopt);\n"+
		"OTHER CLUSTER written for another Kafka cluster (cluster metadata), whose topics gc did not read; NO CLUSTER this pipeline's but written before objects named their cluster, under a prefix not adopted;\n"+
		"OUTSIDE PREFIX the store listed a key outside the prefix asked for\n",
		rep.Cutoff.Format(time.RFC3339), rep.Grace)
	for _, s := range rep.Sweeps {
		for _, c := range []struct {
			what string
			c    gc.Count
		}{{strings.ToLower(verb), s.Deleted}, {"kept, another writer's", s.OtherWriter}, {"kept, no writer", s.NoWriter},
			{"kept, another Kafka cluster's", s.OtherCluster}, {"kept, no cluster (adopt the prefix, gc_adopt, once only this cluster writes there)", s.NoCluster},
			{"kept, outside the prefix (this store's listing ignores its prefix: check its server)", s.Outside}} {
			if c.c.Objects > 0 {
				fmt.Fprintf(w, "%s under %s/ %s, for example: %s\n", s.Store, s.Prefix, c.what, strings.Join(c.c.Examples, ", "))
			}
		}
	}
}

func countOf(c gc.Count) string {
	return fmt.Sprintf("%d (%s)", c.Objects, settings.Size(c.Bytes).Approx())
}

// printGCJSON prints the report, and the error that stopped gc, if any.
func printGCJSON(w io.Writer, rep *gc.Report, err error) {
	doc := struct {
		*gc.Report
		Grace string `json:"grace"`
		Error string `json:"error,omitempty"`
	}{Report: rep, Grace: rep.Grace.String()}
	if err != nil {
		doc.Error = err.Error()
	}
	printJSON(w, doc)
}
