package integration

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestANewGroupStartsWhereStartFromSays: on a raw topic with history, a new
// group copies all of it with start_from: earliest, what came at or after a
// time with a time, and only what is written after it started with latest;
// the first start logs which it used and how many records that means.
func TestANewGroupStartsWhereStartFromSays(t *testing.T) {
	t.Parallel()
	raw := uniqueName(t, "raw")
	createTopic(t, raw, 2, nil)
	recs := numberedRecords(200, 2, 0, 0, 500)
	produceRecords(t, raw, recs[:100])
	time.Sleep(1500 * time.Millisecond)
	from := time.Now().UTC()
	time.Sleep(1500 * time.Millisecond)
	produceRecords(t, raw, recs[100:160])

	pipeline := func(name string) (string, string) {
		slim := uniqueName(t, "slim-"+name)
		createTopic(t, slim, 2, nil)
		storeYAML := fmt.Sprintf("      payloads: {type: filesystem, root: %q}", t.TempDir())
		return slim, pipelineFile(t, name, raw, slim, uniqueName(t, "g"), storeYAML, "")
	}
	bounded := func(name, startFrom string, want int) {
		slim, cfg := pipeline(name)
		d := startOffloader(t, []string{"run", "-F", cfg, "--until-end"}, "OFFLOADER_SOURCE__START_FROM="+startFrom)
		if code := d.waitExit(t, 60*time.Second); code != 0 {
			t.Fatalf("start_from %s: exit code %d", startFrom, code)
		}
		if got := len(consumeAll(t, slim, want, 30*time.Second)); got != want {
			t.Errorf("start_from %s: the slim topic holds %d records, want %d", startFrom, got, want)
		}
		if line := fmt.Sprintf(`"start_from": %q, "records": %d`, startFrom, want); !strings.Contains(d.output(), line) {
			t.Errorf("start_from %s: the log lacks %s:\n%s", startFrom, line, d.output())
		}
	}
	bounded("earliest", "earliest", 160)
	bounded("since", from.Format(time.RFC3339Nano), 60)

	slim, cfg := pipeline("latest")
	d := startDaemon(t, cfg, "OFFLOADER_SOURCE__START_FROM=latest", "OFFLOADER_OBSERVABILITY__LISTEN=127.0.0.1:0")
	waitReady(t, d.metricsURL(t), 60*time.Second)
	produceRecords(t, raw, recs[160:])
	if got := len(consumeAll(t, slim, 40, 60*time.Second)); got != 40 {
		t.Errorf("start_from latest: the slim topic holds %d records, want the 40 written after the start", got)
	}
	if code := d.stop(t, 45*time.Second); code != 0 {
		t.Errorf("exit code %d after SIGTERM", code)
	}
}
