package main

import (
	"context"
	"errors"
	"fmt"
	"os/signal"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/spf13/pflag"

	"github.com/offloader/offloader/config"
	"github.com/offloader/offloader/daemon"
	"github.com/offloader/offloader/observability"
)

func migrateCommand() *command {
	return &command{
		name:    "migrate",
		summary: "move an existing fat topic's history to the slim topic, verify it, move consumer groups over",
		usage:   "-F FILE [--pipeline NAME] [--until TIME] [--start-from S] [--max-mb-per-s N] [--max-records-per-s N] [--deep] | verify ... | translate-offsets ...",
		help: `
Migrates the history of the pipeline's source topics into its slim topic:
a bounded run of the same exactly-once engine as 'offloader run', with the
pipeline's own consumer group, that stops by itself at the end offsets read
when it starts (or, with --until, at the first record after that time), then
checks parity. Records are copied one to one per partition, partition, key,
timestamp and headers kept, each slim record naming its source record in the
offloader-source header. Records that already are pointers pass through.

It is resumable: progress is the group's committed offsets, written in the
same transactions as the slim records. Kill it at any point (kill -9
included) and run the same command again: it goes on where the last commit
left it, without duplicates. Once it is done, 'offloader run' with the same
file continues at the migration's end offsets, with no gap or overlap.

A group that never committed starts as source.start_from says (earliest by
default: the whole history); --start-from overrides it for this run
(earliest, latest or an RFC 3339 time).

Rate limits, to run beside production traffic: --max-mb-per-s bounds the
bytes written to the payload stores per second (MB = 10^6 bytes),
--max-records-per-s the records read per second.

Progress: a bar on a terminal (records, rate, time left); otherwise a
"migration progress" log line every 10s and at the end, with the records
committed, the total, the percentage and the time left. When it has reached the end it checks parity per source partition
(see verify) and prints the table; exit 1 on a mismatch. Exit 0 when
interrupted (SIGTERM, SIGINT) after the batch in hand was committed: run it
again to go on.

offloader migrate verify -F FILE [--deep]
  Checks, per source partition, the records the group has committed: the
  count of source records equals the slim records plus the dead-lettered
  ones, and a digest over (key, original value SHA-256, headers, timestamp)
  in source order equals the one over the slim records (pointers by their
  sha256 field; --deep downloads each payload and checks it too). It names
  the first offset missing, duplicated or different. The chain must keep
  records as they are (offload, compress_inline); records still waiting on a
  retry topic count as missing. Exit 1 on a mismatch.

offloader migrate translate-offsets -F FILE --group G [--execute]
  Moves consumer group G (a consumer of the fat topic) to the slim topic:
  on each slim partition its offset becomes exactly the first record whose
  source record G had not consumed, found through offloader-source (no
  approximation by time). Records that went to the dead-letter topic are
  passed over; a partition G never committed on is left as it is. It prints
  the plan; --dry-run (the default) changes nothing, --execute applies it.
  It refuses a group with active members: stop its consumers first.`,
		example: `offloader migrate -F orders.yaml --max-mb-per-s 200
offloader migrate -F orders.yaml --until 2026-12-01T09:00:00Z --no-verify`,
		setup: func(c *cli, fs *pflag.FlagSet) func() int {
			src := c.pipelineFlags(fs)
			until := fs.String("until", "", "stop at the first record at or after this RFC 3339 `TIME` (default: the end offsets at start-up)")
			startFrom := fs.String("start-from", "", "where a group without a commit starts: earliest, latest or an RFC 3339 time (default: source.start_from)")
			mbps := fs.Float64("max-mb-per-s", 0, "bytes written to the payload stores per second, in `MB` (10^6 bytes); 0: no limit")
			rps := fs.Float64("max-records-per-s", 0, "records read per second; 0: no limit")
			deep := fs.Bool("deep", false, "parity: download every payload and check its SHA-256")
			noVerify := fs.Bool("no-verify", false, "skip the parity check at the end")
			return func() int {
				var untilTime time.Time
				if *until != "" {
					t, err := time.Parse(time.RFC3339, *until)
					if err != nil {
						return c.usageError(fs, "--until needs an RFC 3339 time such as 2026-12-01T09:00:00Z, got %q", *until)
					}
					untilTime = t
				}
				if *mbps < 0 || *rps < 0 {
					return c.usageError(fs, "rate limits must not be negative")
				}
				p, code, ok := c.loadPipeline(fs.Name(), src)
				if !ok {
					return code
				}
				if *startFrom != "" {
					if err := config.StartFrom(*startFrom).Validate(); err != nil {
						return c.usageError(fs, "--start-from %v", err)
					}
					p.Source.StartFrom = config.StartFrom(*startFrom)
				}
				ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
				defer stop()
				terminal := isTerminal(c.stderr)
				level := p.Observability.LogLevel
				format := p.Observability.LogFormat
				if terminal {
					format, level = "console", "warn" // the bar says how it goes
				}
				logger, err := observability.NewLogger(format, level)
				if err != nil {
					fmt.Fprintf(c.stderr, "offloader migrate: %v\n", err)
					return exitUsage
				}
				defer logger.Sync()
				o := daemon.Options{Bounded: true, Until: untilTime, MaxRecordsPerSecond: *rps, MaxStoreBytesPerSecond: *mbps * 1e6}
				progress := &migrationProgress{p: p, now: time.Now}
				if terminal {
					progress.bar = c.stderr // the bar says how it goes
				} else {
					progress.log = logger.With(zap.String("command", "migrate"))
				}
				o.Started, o.Committed = progress.start, progress.add
				defer progress.finish() // on a failure; idempotent
				collectAtHeapLimit(p, logger)
				res, err := runPipeline(ctx, p, logger.With(zap.String("command", "migrate")), o)
				// The bar ends on its own line, where it stood, before
				// anything else is printed.
				progress.finish()
				if err == nil {
					printReport(c.stdout, res.report, res.until)
				}
				if errors.Is(err, daemon.ErrStoppedBeforeStart) {
					fmt.Fprintln(c.stdout, "migration interrupted before it started: nothing was copied; run the same command again")
					return exitOK
				}
				if err != nil {
					logger.Error("migration failed", zap.Error(err))
					fmt.Fprintf(c.stderr, "offloader migrate: %v\n", err)
					return exitFailure
				}
				if !res.report.ReachedEnd {
					fmt.Fprintln(c.stdout, "migration interrupted: what was committed stays; run the same command again to go on")
					return exitOK
				}
				if *noVerify {
					return exitOK
				}
				return c.verify(context.Background(), p, *deep, logger)
			}
		},
	}
}
