package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/offloader/offloader/admin"
	"github.com/offloader/offloader/observability"
	"github.com/offloader/offloader/pipeline/engine"
)

// offloader status renders who paused, each partition (unknown figures as
// -), the totals and a failing store with its error and since when.
func TestStatusPrintsPausePartitionsAndStores(t *testing.T) {
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	st := admin.Status{Pipeline: "orders", Instance: "offloader-orders-1", Version: "v1.2.3",
		Status: engine.Status{
			State:  engine.StatePaused,
			Paused: &engine.PauseStatus{By: engine.PausedByOperator, Reason: "store maintenance", Since: now.Add(-90 * time.Second)},
			Partitions: []engine.PartitionStatus{
				{Topic: "orders.raw", Partition: 0, Position: 120, Committed: 120, Lag: 3},
				{Topic: "orders.retry-1", Partition: 1, Position: -1, Committed: -1, Lag: -1, Held: true},
			},
			LastCommit: now.Add(-2 * time.Second),
			Totals:     engine.Totals{Records: 500, Produced: 498, Offloaded: 20, OffloadedBytes: 20 << 20, Retried: 2, DeadLettered: 1, Dropped: 1, Transactions: 40},
			Uploads:    &engine.UploadStatus{InFlight: 16, Waiting: 5, Slots: 16},
		},
		Stores: []observability.StoreHealth{{Name: "blob", State: observability.StoreFailing, LastOK: now.Add(-time.Minute),
			FailingSince: now.Add(-30 * time.Second), Error: "HTTP 503 ServerBusy", Failures: 4}},
	}
	var out bytes.Buffer
	printStatus(&out, st, now)
	for _, want := range []string{
		"pipeline orders (instance offloader-orders-1, version v1.2.3): PAUSED",
		"paused by operator since 2026-12-01T09:58:30Z (1m30s ago): store maintenance",
		"last commit: 2026-12-01T09:59:58Z (2s ago)",
		"uploads: 16 in flight of 16 slots, 5 waiting (the offload rate is at most 16 per store latency)",
		"500 records committed, 498 produced, 20 offloaded (20MiB), 2 retried, 0 retried in place, 1 dead-lettered, 1 dropped, 40 transactions",
		"orders.raw[0]      120       120        3",
		"orders.retry-1[1]  -         -          -    held until its next retry is due",
		"blob   failing  1m0s ago  4         since 30s ago: HTTP 503 ServerBusy",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("status lacks %q:\n%s", want, out.String())
		}
	}
}

// The admin URL and token: --url and --token first, then the environment,
// then the pipeline file; a file without a listener is a usage error.
func TestStatusFindsTheInstance(t *testing.T) {
	dir := t.TempDir()
	file := func(observability string) string {
		path := filepath.Join(dir, strings.NewReplacer(" ", "", ":", "", "\"", "", "{", "", "}", "", ",", "").Replace(observability)+".yaml")
		body := "pipelines:\n  p:\n    kafka: {bootstrap_servers: \"127.0.0.1:1\"}\n    source: {topics: [raw], group: g}\n    slim_topic: slim\n    observability: " + observability + "\n"
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	withToken := file(`{listen: "0.0.0.0:7001", admin_token: "file-token-0123456789"}`)
	cases := []struct {
		env         []string
		args        []string
		url, token  string
		code        int
		stderrWants string
	}{
		{nil, nil, "http://127.0.0.1:9464", "", exitOK, ""},
		{[]string{"OFFLOADER_OBSERVABILITY__LISTEN=0.0.0.0:9500", "OFFLOADER_OBSERVABILITY__ADMIN_TOKEN=env-token"}, nil, "http://127.0.0.1:9500", "env-token", exitOK, ""},
		{nil, []string{"-F", withToken}, "http://127.0.0.1:7001", "file-token-0123456789", exitOK, ""},
		{nil, []string{"-F", withToken, "--url", "10.0.0.5:9464", "--token", "flag-token"}, "http://10.0.0.5:9464", "flag-token", exitOK, ""},
		{nil, []string{"-F", file(`{listen: ""}`)}, "", "", exitUsage, "sets no observability.listen"},
	}
	for _, c := range cases {
		var stderr bytes.Buffer
		cl := &cli{stderr: &stderr, stdout: &bytes.Buffer{}, environ: c.env}
		fs := pflag.NewFlagSet("status", pflag.ContinueOnError)
		target := cl.adminFlags(fs)
		if err := fs.Parse(c.args); err != nil {
			t.Fatal(err)
		}
		client, code, _ := cl.adminClient("status", target)
		if code != c.code || !strings.Contains(stderr.String(), c.stderrWants) {
			t.Errorf("%v %v: exit %d, %q", c.env, c.args, code, stderr.String())
			continue
		}
		if client != nil && (client.URL != c.url || client.Token != c.token) {
			t.Errorf("%v %v: %s with token %q, want %s with %q", c.env, c.args, client.URL, client.Token, c.url, c.token)
		}
	}
}
