package integration

import (
	"bytes"
	"fmt"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/offloader/offloader/stores/httpstore"
	"github.com/offloader/offloader/stores/httpstore/httpstoretest"
)

// An HTTP store behind a proxy that answers uploads with a redirect to a
// login page (302, which Go would follow as a GET that the page answers
// 200; and 307): run refuses to start on it, consuming nothing, and when it
// begins mid-run (a token expired, the proxy misconfigured), that is an
// outage, not bad records: no pointer to an unwritten object is committed,
// nothing is dead-lettered, the pipeline pauses (offloader_paused 1, its
// records uncommitted), and once the redirects stop every record is on the
// slim topic once, resolving to its bytes.
func TestARedirectedUploadCommitsNoPointer(t *testing.T) {
	t.Parallel() // its own topics and stores; runs beside the other parallel tests, after the serial ones
	for _, code := range []int{http.StatusFound, http.StatusTemporaryRedirect} {
		t.Run(fmt.Sprint(code), func(t *testing.T) {
			t.Parallel()
			srv, raw, slim, dead, group, cfg, recs := httpStorePipeline(t, "redirect", "")

			srv.RedirectPuts(code)
			out, err := command(offloaderBinary(t), "run", "-F", cfg, "--until-end").CombinedOutput()
			if exit, ok := err.(*exec.ExitError); !ok || exit.ExitCode() != 1 || !strings.Contains(string(out), "does not keep what it is given") ||
				!strings.Contains(string(out), "follows no redirect") {
				t.Fatalf("run on a redirecting store: %v\n%s\nwant exit 1, the probe's failure named", err, out)
			}
			if n := sum(committedByPartition(t, bootstrap, group, raw)); n != 0 {
				t.Errorf("the group committed %d records on a store that keeps nothing", n)
			}

			srv.RedirectPuts(0)
			d := startDaemon(t, cfg, "OFFLOADER_OBSERVABILITY__LISTEN=127.0.0.1:0")
			waitForMetric(t, d.metricsURL(t), "offloader_records_out_total", func(v float64) bool { return v >= 10 }, time.Minute)
			srv.RedirectPuts(code) // the proxy starts sending uploads away
			produceRecords(t, raw, recs[10:])
			waitForMetric(t, d.metricsURL(t), "offloader_paused", func(v float64) bool { return v == 1 }, time.Minute)
			if n := sum(committedByPartition(t, bootstrap, group, raw)); n >= 20 {
				t.Errorf("the group committed %d records while the store redirected every upload", n)
			}
			srv.RedirectPuts(0) // fixed
			afterTheOutage(t, d, srv, group, raw, slim, dead, recs)
		})
	}
}

// A store that starts lying after the start-up probe (201 to every PUT,
// keeping nothing): with verify_writes: head, no pointer to a missing object
// is committed and nothing is dead-lettered; the pipeline pauses
// (offloader_paused 1), and once the store keeps what it is given again,
// every record is on the slim topic once, resolving to its bytes.
func TestVerifiedWritesCommitNoPointerToALyingStore(t *testing.T) {
	t.Parallel()
	srv, raw, slim, dead, group, cfg, recs := httpStorePipeline(t, "verify", ", verify_writes: head")
	d := startDaemon(t, cfg, "OFFLOADER_OBSERVABILITY__LISTEN=127.0.0.1:0")
	waitForMetric(t, d.metricsURL(t), "offloader_records_out_total", func(v float64) bool { return v >= 10 }, time.Minute)
	srv.DropPuts(true)
	produceRecords(t, raw, recs[10:])
	waitForMetric(t, d.metricsURL(t), "offloader_paused", func(v float64) bool { return v == 1 }, time.Minute)
	if n := sum(committedByPartition(t, bootstrap, group, raw)); n >= 20 {
		t.Errorf("the group committed %d records while the store kept nothing", n)
	}
	srv.DropPuts(false)
	afterTheOutage(t, d, srv, group, raw, slim, dead, recs)
}

// afterTheOutage checks an HTTP store's outage that just ended: the pipeline
// resumes (offloader_paused 0) and commits all of recs, then stops cleanly;
// every record is on the slim topic once, resolving to its bytes from srv,
// and none was dead-lettered (an outage is the store's fault, not theirs).
func afterTheOutage(t *testing.T, d *daemon, srv *httpstoretest.Server, group, raw, slim, dead string, recs []sourceRecord) {
	t.Helper()
	waitForMetric(t, d.metricsURL(t), "offloader_paused", func(v float64) bool { return v == 0 }, 2*time.Minute)
	for deadline := within(2 * time.Minute); sum(committedByPartition(t, bootstrap, group, raw)) < int64(len(recs)); time.Sleep(200 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the group committed %d of %d records 2 minutes after the outage ended", sum(committedByPartition(t, bootstrap, group, raw)), len(recs))
		}
	}
	if code := d.stop(t, 45*time.Second); code != 0 {
		t.Errorf("exit code %d", code)
	}
	hcfg := httpstore.DefaultConfig()
	hcfg.URL, hcfg.AuthToken = srv.URL, httpstoretest.Token
	store, err := httpstore.Open("payloads", hcfg)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, m := range readToEnd(t, slim) {
		var i int
		fmt.Sscan(string(m.Key), &i)
		if !bytes.Equal(resolve(t, store, m), recs[i].value) {
			t.Errorf("slim record %d resolves to other bytes", i)
		}
		seen[string(m.Key)]++
	}
	if deadLettered := readToEnd(t, dead); len(deadLettered) != 0 {
		t.Errorf("%d records dead-lettered, want none: the outage was the store's", len(deadLettered))
	}
	for i := range recs {
		if n := seen[fmt.Sprint(i)]; n != 1 {
			t.Errorf("record %d is on the slim topic %d times, want once", i, n)
		}
	}
}

// httpStorePipeline is a pipeline offloading to a test HTTP store, srv (its
// store settings plus more), with a dead-letter topic and a store budget of
// 3 s, and 20 records for it (every 2nd one 100 KiB, offloaded), the first
// 10 of them on raw already.
func httpStorePipeline(t *testing.T, name, more string) (srv *httpstoretest.Server, raw, slim, dead, group, cfg string, recs []sourceRecord) {
	t.Helper()
	srv = httpstoretest.New(t, false, 0)
	raw, slim, dead = uniqueName(t, "raw"), uniqueName(t, "slim"), uniqueName(t, "dlt")
	createTopic(t, raw, 1, map[string]string{"max.message.bytes": "8388608"})
	createTopic(t, slim, 1, nil)
	createTopic(t, dead, 1, map[string]string{"max.message.bytes": "8388608"})
	storeYAML := fmt.Sprintf("      payloads: {type: http, url: %q, auth_token: %s, try_timeout: 1s, max_retries: 0%s}", srv.URL, httpstoretest.Token, more)
	group = uniqueName(t, "g")
	cfg = pipelineFile(t, name, raw, slim, group, storeYAML, "    errors: {dead_letter_topic: "+dead+", store_budget: 3s}")
	recs = numberedRecords(20, 1, 2, 100<<10, 500)
	produceRecords(t, raw, recs[:10])
	return srv, raw, slim, dead, group, cfg, recs
}
