package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/pflag"

	"github.com/offloader/offloader/admin"
	"github.com/offloader/offloader/pipeline/engine"
	"github.com/offloader/offloader/settings"
)

const adminHelp = `
The instance is found at --url, or at the observability.listen address of the
pipeline in -F FILE, else $OFFLOADER_OBSERVABILITY__LISTEN, else
127.0.0.1:9464 (an address on all interfaces, 0.0.0.0:9464, is reached on
127.0.0.1). The bearer token is --token, else
$OFFLOADER_OBSERVABILITY__ADMIN_TOKEN, else the file's
observability.admin_token. Each instance answers for itself: with several
replicas, ask each (kubectl exec POD -- offloader ..., kubectl port-forward,
or the pod's address).`

func statusCommand() *command {
	return &command{
		name:    "status",
		summary: "show what a running instance does: state, partitions and lag, last commit, pauses, stores",
		usage:   "[--url URL | -F FILE [--pipeline NAME]] [--token T] [--output json] [--healthz]",
		help: `
Renders the admin API's GET /status of a running instance (offloader run) as
tables: its state (RUNNING, PAUSED, UNASSIGNED, STOPPING, FAILED, or STARTING
before it joined its group), who paused it and why, each partition it holds
with its position, committed offset and lag (refreshed every 5 s), the last
commit, what it committed since it started (records, offloaded, retried,
dead-lettered, dropped, transactions), and each payload store's health.

--output json prints the document as the API answers it. --healthz asks /healthz
instead and exits 0 when the instance is healthy, 1 when not (the container
image's HEALTHCHECK).
` + adminHelp + `

Exit 1: the instance does not answer, refuses the token, or is unhealthy.`,
		example: `offloader status --url http://127.0.0.1:9464
offloader status -F pipeline.yaml --output json | jq .partitions`,
		setup: func(c *cli, fs *pflag.FlagSet) func() int {
			target := c.adminFlags(fs)
			outputFlag(fs)
			healthz := fs.Bool("healthz", false, "only ask /healthz: exit 0 when healthy, 1 when not")
			return func() int {
				client, code, ok := c.adminClient(fs.Name(), target)
				if !ok {
					return code
				}
				ctx, cancel := context.WithTimeout(context.Background(), *target.timeout)
				defer cancel()
				if *healthz {
					if err := client.Healthy(ctx); err != nil {
						fmt.Fprintf(c.stderr, "offloader status: %v\n", err)
						return exitFailure
					}
					fmt.Fprintln(c.stdout, "healthy")
					return exitOK
				}
				st, err := client.Status(ctx)
				if err != nil {
					fmt.Fprintf(c.stderr, "offloader status: %v\n", err)
					return exitFailure
				}
				if c.asJSON {
					c.printJSON(st)
					return exitOK
				}
				printStatus(c.stdout, st, time.Now())
				return exitOK
			}
		},
	}
}

func pauseCommand() *command {
	return &command{
		name:    "pause",
		summary: "pause a running instance: it commits the batch in hand, then consumes nothing until resumed",
		usage:   "[--url URL | -F FILE [--pipeline NAME]] [--token T] [--reason TEXT]",
		help: `
POST /pause on a running instance: it commits the batch in hand, then stops
consuming the partitions it holds, and those a rebalance gives it, until
offloader resume. Nothing is skipped: it resumes at the committed offsets.
While paused, /readyz answers 503 and offloader_paused is 1. The pause lasts
until a restart unless the pipeline sets observability.pause_file.

It waits up to 30 s for the instance to obey and prints its status; if the
batch in hand is still committing then, it says so (the pause follows).
` + adminHelp,
		example: `offloader pause -F pipeline.yaml --reason "store maintenance"`,
		setup: func(c *cli, fs *pflag.FlagSet) func() int {
			target := c.adminFlags(fs)
			reason := fs.String("reason", "", "why, shown by offloader status (at most 256 bytes)")
			return func() int {
				return c.steer(fs.Name(), target, func(ctx context.Context, cl *admin.Client) (admin.Status, bool, error) {
					return cl.Pause(ctx, *reason)
				})
			}
		},
	}
}

func resumeCommand() *command {
	return &command{
		name:    "resume",
		summary: "resume an instance an operator paused",
		usage:   "[--url URL | -F FILE [--pipeline NAME]] [--token T]",
		help: `
POST /resume on a running instance paused by offloader pause (or POST
/pause): it consumes again from its committed offsets, and removes the
observability.pause_file if the pipeline sets one. A pause for an unavailable
store ends by itself once the store answers; resume does not end that one.
` + adminHelp,
		example: `offloader resume --url http://127.0.0.1:9464`,
		setup: func(c *cli, fs *pflag.FlagSet) func() int {
			target := c.adminFlags(fs)
			return func() int {
				return c.steer(fs.Name(), target, func(ctx context.Context, cl *admin.Client) (admin.Status, bool, error) {
					return cl.Resume(ctx)
				})
			}
		},
	}
}

// adminTarget are the flags that find an instance's admin API.
type adminTarget struct {
	url, token *string
	pipeline   pipelineSource
	timeout    *time.Duration
}

func (c *cli) adminFlags(fs *pflag.FlagSet) adminTarget {
	return adminTarget{
		url:      fs.String("url", "", "the instance's listener, such as http://127.0.0.1:9464 (default: -F FILE's observability.listen, else that)"),
		token:    fs.String("token", "", "bearer token of the admin API (default $OFFLOADER_OBSERVABILITY__ADMIN_TOKEN, else -F FILE's observability.admin_token)"),
		pipeline: c.pipelineFlags(fs),
		timeout:  fs.Duration("timeout", 45*time.Second, "how long to wait for the answer"),
	}
}

// adminClient is the client that t's flags name.
func (c *cli) adminClient(cmd string, t adminTarget) (*admin.Client, int, bool) {
	cl := &admin.Client{URL: admin.BaseURL("127.0.0.1:9464"), Token: *t.token}
	if env := c.getenv("OFFLOADER_OBSERVABILITY__LISTEN"); env != "" {
		cl.URL = admin.BaseURL(env) // the listen address the container image sets
	}
	if *t.pipeline.file != "" {
		p, code, ok := c.loadPipeline(cmd, t.pipeline)
		if !ok {
			return nil, code, false
		}
		if p.Observability.Listen == "" {
			fmt.Fprintf(c.stderr, "offloader %s: pipeline %q sets no observability.listen: it serves no admin API (set one, or pass --url)\n", cmd, p.Name)
			return nil, exitUsage, false
		}
		cl.URL = admin.BaseURL(p.Observability.Listen)
		if cl.Token == "" {
			cl.Token = p.Observability.AdminToken
		}
	}
	if *t.url != "" {
		cl.URL = admin.BaseURL(*t.url)
	}
	if *t.token == "" {
		if env := c.getenv("OFFLOADER_OBSERVABILITY__ADMIN_TOKEN"); env != "" {
			cl.Token = env
		}
	}
	return cl, exitOK, true
}

func (c *cli) getenv(name string) string {
	for _, kv := range c.environ {
		if v, ok := strings.CutPrefix(kv, name+"="); ok {
			return v
		}
	}
	return ""
}

// steer runs a pause or resume and prints the status it answers with.
func (c *cli) steer(cmd string, t adminTarget, call func(context.Context, *admin.Client) (admin.Status, bool, error)) int {
	client, code, ok := c.adminClient(cmd, t)
	if !ok {
		return code
	}
	ctx, cancel := context.WithTimeout(context.Background(), *t.timeout)
	defer cancel()
	st, applied, err := call(ctx, client)
	if err != nil {
		fmt.Fprintf(c.stderr, "offloader %s: %v\n", cmd, err)
		return exitFailure
	}
	if !applied {
		fmt.Fprintf(c.stdout, "asked: the instance is still committing its batch in hand; offloader status shows when it is %sd\n\n", cmd)
	}
	printStatus(c.stdout, st, time.Now())
	return exitOK
}

// printStatus renders a status as offloader status prints it.
func printStatus(w io.Writer, st admin.Status, now time.Time) {
	fmt.Fprintf(w, "pipeline %s (instance %s, version %s): %s\n", st.Pipeline, st.Instance, st.Version, st.State)
	if p := st.Paused; p != nil {
		fmt.Fprintf(w, "paused by %s since %s (%s): %s\n", p.By, p.Since.UTC().Format(time.RFC3339), ago(now, p.Since), p.Reason)
	}
	if st.Error != "" {
		fmt.Fprintf(w, "failed: %s\n", st.Error)
	}
	last := "none yet"
	if !st.LastCommit.IsZero() {
		last = st.LastCommit.UTC().Format(time.RFC3339Nano) + " (" + ago(now, st.LastCommit) + ")"
	}
	t := st.Totals
	fmt.Fprintf(w, "last commit: %s\n", last)
	if u := st.Uploads; u != nil {
		fmt.Fprintf(w, "uploads: %d in flight of %d slots, %d waiting (the offload rate is at most %d per store latency)\n", u.InFlight, u.Slots, u.Waiting, u.Slots)
	}
	fmt.Fprintf(w, "since start: %d records committed, %d produced, %d offloaded (%s), %d retried, %d retried in place, %d dead-lettered, %d dropped, %d transactions\n\n",
		t.Records, t.Produced, t.Offloaded, settings.Size(t.OffloadedBytes), t.Retried, t.RetriedInPlace, t.DeadLettered, t.Dropped, t.Transactions)

	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "PARTITION\tPOSITION\tCOMMITTED\tLAG\t")
	for _, p := range st.Partitions {
		note := ""
		switch {
		case p.Held:
			note = "held until its next retry is due"
		case p.StalledSeconds > 0:
			note = fmt.Sprintf("has not moved for %s", time.Duration(p.StalledSeconds)*time.Second)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", engine.Partition{Topic: p.Topic, Partition: p.Partition}, known(p.Position), known(p.Committed), known(p.Lag), note)
	}
	if len(st.Partitions) == 0 {
		fmt.Fprintln(tw, "(none assigned)\t\t\t\t")
	}
	tw.Flush()
	if len(st.Stores) > 0 {
		fmt.Fprintln(w)
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "STORE\tSTATE\tLAST OK\tFAILURES\tERROR")
		for _, s := range st.Stores {
			lastOK := "never"
			if !s.LastOK.IsZero() {
				lastOK = ago(now, s.LastOK)
			}
			errText := s.Error
			if !s.FailingSince.IsZero() {
				errText = "since " + ago(now, s.FailingSince) + ": " + errText
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\n", s.Name, s.State, lastOK, s.Failures, errText)
		}
		tw.Flush()
	}
}

// known prints n, or "-" for an unknown figure (-1).
func known(n int64) string {
	if n < 0 {
		return "-"
	}
	return fmt.Sprint(n)
}

func ago(now, t time.Time) string {
	d := now.Sub(t)
	if d < 0 {
		d = 0
	}
	return d.Round(100*time.Millisecond).String() + " ago"
}
