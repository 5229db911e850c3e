package integration

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// TestTheLogIsOneJSONStream: with log_format: json every line the daemon
// writes is a JSON object, librdkafka's own lines included (they go through
// the same logger), at info and at debug level; no error carries a stack
// trace.
func TestTheLogIsOneJSONStream(t *testing.T) {
	t.Parallel()
	for _, level := range []string{"info", "debug"} {
		raw, slim, _, cfg := filesystemPipeline(t, "json-"+level, 2)
		recs := numberedRecords(300, 2, 10, 100<<10, 500)
		produceRecords(t, raw, recs)
		env := []string{"OFFLOADER_OBSERVABILITY__LOG_FORMAT=json", "OFFLOADER_OBSERVABILITY__LOG_LEVEL=" + level,
			// A consumer setting the admin client does not use: it must not warn.
			"OFFLOADER_KAFKA__CONSUMER__MAX.PARTITION.FETCH.BYTES=16777216"}
		if level == "debug" {
			// librdkafka's own debug lines, so that some surely pass.
			env = append(env, "OFFLOADER_KAFKA__CONSUMER__DEBUG=cgrp")
		}
		d := startDaemon(t, cfg, env...)
		consumeAll(t, slim, len(recs), 60*time.Second)
		if code := d.stop(t, 45*time.Second); code != 0 {
			t.Fatalf("%s: exit code %d", level, code)
		}
		lines := strings.Split(strings.TrimSpace(d.output()), "\n")
		fromClient := 0
		for i, line := range lines {
			var entry map[string]any
			if err := json.Unmarshal([]byte(line), &entry); err != nil {
				t.Fatalf("%s: line %d is not JSON: %q", level, i+1, line)
			}
			if _, ok := entry["kafka_client"]; ok {
				fromClient++
			}
			if _, ok := entry["stacktrace"]; ok {
				t.Errorf("%s: line %d carries a stack trace: %q", level, i+1, line)
			}
			if strings.Contains(line, "CONFWARN") {
				t.Errorf("%s: a client warned about its configuration: %q", level, line)
			}
		}
		if len(lines) < 5 {
			t.Errorf("%s: only %d log lines", level, len(lines))
		}
		if level == "debug" && fromClient == 0 {
			t.Errorf("no librdkafka line reached the log at debug level with debug: cgrp")
		}
	}
}

// TestCheckCreatesNothingWhileTheSourceIsMissing: the topics --create-missing
// makes take their partitions and limits from the source; without it, it
// creates none and says why.
func TestCheckCreatesNothingWhileTheSourceIsMissing(t *testing.T) {
	t.Parallel()
	raw, slim, dead := uniqueName(t, "raw"), uniqueName(t, "slim"), uniqueName(t, "dlt")
	cfg := newPipeline(t, "early", raw, slim, "g").with(t, `
errors: {dead_letter_topic: %s}
`, dead).file(t)
	out, err := command(offloaderBinary(t), "check", "-F", cfg, "--create-missing").CombinedOutput()
	if code := exitCode(err); code != 1 || !strings.Contains(string(out), "source topic "+raw+" does not exist, so nothing was created") {
		t.Fatalf("check --create-missing exit code %d:\n%s", code, out)
	}
	for _, topic := range []string{slim, dead} {
		md, err := newAdmin(t).GetMetadata(&topic, false, 5000)
		if err != nil {
			t.Fatal(err)
		}
		if tm, ok := md.Topics[topic]; ok && len(tm.Partitions) > 0 {
			t.Errorf("%s was created although the source is missing", topic)
		}
	}
}
