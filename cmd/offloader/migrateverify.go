package main

import (
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"go.uber.org/zap"

	"github.com/spf13/pflag"

	"github.com/offloader/offloader/config"
	"github.com/offloader/offloader/daemon"
	"github.com/offloader/offloader/migration"
	"github.com/offloader/offloader/observability"
)

func verifyCommand() *command {
	return &command{
		name:    "migrate verify",
		summary: "check that every source record the pipeline committed is in the slim topic once or dead-lettered",
		usage:   "-F FILE [--pipeline NAME] [--deep] [--output json]",
		help: `
Checks the parity of what the pipeline's group has committed: per source
partition, source records = slim records + dead-lettered ones, and the same
digest over (key, original value SHA-256, headers, timestamp) in source order.
--deep also downloads every payload and checks its SHA-256. Exit 1 on a
mismatch, naming the partition and the first offset that differs.`,
		example: `offloader migrate verify -F pipeline.yaml --deep
offloader migrate verify -F pipeline.yaml --output json | jq -e .ok`,
		setup: func(c *cli, fs *pflag.FlagSet) func() int {
			src := c.pipelineFlags(fs)
			deep := fs.Bool("deep", false, "download every payload and check its SHA-256")
			outputFlag(fs)
			return func() int {
				p, code, ok := c.loadPipeline("migrate verify", src)
				if !ok {
					return code
				}
				logger, err := observability.NewLogger("console", "warn")
				if err != nil {
					return exitFailure
				}
				defer logger.Sync()
				return c.verify(context.Background(), p, *deep, logger)
			}
		},
	}
}

// verify checks parity and prints the table; it returns the exit code.
func (c *cli) verify(ctx context.Context, p *config.Pipeline, deep bool, logger *zap.Logger) int {
	started := time.Now()
	results, malformed, err := daemon.Verify(ctx, p, deep, logger)
	if err != nil {
		fmt.Fprintf(c.stderr, "offloader migrate verify: %v\n", err)
		return exitFailure
	}
	rep := parityReport{OK: true, Deep: deep, WithoutSource: malformed, Seconds: time.Since(started).Seconds(), Partitions: []parityPartition{}}
	for _, r := range results {
		rep.OK = rep.OK && r.OK()
		rep.Partitions = append(rep.Partitions, parityPartition{Topic: r.Topic, Partition: r.Partition.Partition, From: r.From, To: r.To,
			Source: r.Source, Slim: r.Slim, DeadLettered: r.DeadLettered, Digest: hex.EncodeToString(r.SlimDigest[:]), OK: r.OK(), Problem: r.Problem})
	}
	if c.asJSON {
		c.printJSON(rep)
		if !rep.OK {
			return exitFailure
		}
		return exitOK
	}
	failed := printParity(c.stdout, results)
	if malformed > 0 {
		fmt.Fprintf(c.stdout, "note: %d slim records name no source record (no offloader-source header): written by something else, or before the header existed\n", malformed)
	}
	how := "pointers checked by their sha256 field"
	if deep {
		how = "every payload downloaded and checked"
	}
	if failed > 0 {
		fmt.Fprintf(c.stdout, "parity FAILED on %d of %d partitions (%s, %s)\n", failed, len(results), how, time.Since(started).Round(time.Millisecond))
		return exitFailure
	}
	fmt.Fprintf(c.stdout, "parity OK: %d partitions, every source record is in the slim topic once or dead-lettered (%s, %s)\n", len(results), how, time.Since(started).Round(time.Millisecond))
	return exitOK
}

// parityReport is migrate verify's result, as --output json prints it
// (docs/schemas/verify.json).
type parityReport struct {
	OK   bool `json:"ok"`
	Deep bool `json:"deep"`
	// WithoutSource are slim records that name no source record.
	WithoutSource int               `json:"slim_records_without_source"`
	Seconds       float64           `json:"seconds"`
	Partitions    []parityPartition `json:"partitions"`
}

// parityPartition is one source partition's verdict.
type parityPartition struct {
	Topic        string `json:"topic"`
	Partition    int32  `json:"partition"`
	From         int64  `json:"from_offset"`
	To           int64  `json:"to_offset"`
	Source       int    `json:"source_records"`
	Slim         int    `json:"slim_records"`
	DeadLettered int    `json:"dead_lettered"`
	Digest       string `json:"digest"`
	OK           bool   `json:"ok"`
	Problem      string `json:"problem,omitempty"`
}

func printParity(w io.Writer, results []migration.Result) (failed int) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "PARTITION\tOFFSETS\tSOURCE\tSLIM\tDEAD-LETTERED\tDIGEST\tVERDICT")
	for _, r := range results {
		verdict := "ok"
		if !r.OK() {
			verdict, failed = "FAILS: "+r.Problem, failed+1
		}
		fmt.Fprintf(tw, "%s\t%d-%d\t%d\t%d\t%d\t%s\t%s\n", r.Partition, r.From, r.To, r.Source, r.Slim, r.DeadLettered, hex.EncodeToString(r.SlimDigest[:6]), verdict)
	}
	tw.Flush()
	return failed
}
