package integration

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
)

// TestCheckNamesMisalignedLimitsAndRunRefuses: a dead-letter topic smaller than
// what it may get, a retry topic with fewer partitions than the source, and a
// slim topic whose limit is under the offload threshold: `check` names each
// with its fix and exits 1; `run` refuses to start.
func TestCheckNamesMisalignedLimitsAndRunRefuses(t *testing.T) {
	t.Parallel()
	raw, slim, retry, dead := uniqueName(t, "raw"), uniqueName(t, "slim"), uniqueName(t, "retry"), uniqueName(t, "dlt")
	createTopic(t, raw, 4, map[string]string{"max.message.bytes": "8388608"})
	createTopic(t, slim, 4, map[string]string{"max.message.bytes": "50000"})
	// The retry topic's per-record decompressed cap (Kafka 4.4), the fifth gate.
	createTopic(t, retry, 2, map[string]string{"max.decompressed.message.bytes": "20000"})
	createTopic(t, dead, 4, map[string]string{"max.message.bytes": "30000"})
	cfg := newPipeline(t, "misaligned", raw, slim, uniqueName(t, "g")).with(t, `
errors:
  retry_topics: [{topic: %s, delay: 5s}]
  dead_letter_topic: %s
stores: {payloads: {type: filesystem, root: %q}}
transforms: [{type: offload, store: payloads, threshold: 64KiB}]
`, retry, dead, t.TempDir()).file(t)

	out, err := command(offloaderBinary(t), "check", "-F", cfg).CombinedOutput()
	if code := exitCode(err); code != 1 {
		t.Fatalf("check exit code %d, want 1:\n%s", code, out)
	}
	for _, want := range []string{
		fmt.Sprintf("slim topic %s accepts batches of 50000 bytes (max.message.bytes) but may get a record of 65597", slim),
		fmt.Sprintf("--entity-name %s --add-config max.message.bytes=65597", slim),
		fmt.Sprintf("retry topic %s has 2 partitions, fewer than the source's 4", retry),
		fmt.Sprintf("--alter --topic %s --partitions 4", retry),
		fmt.Sprintf("retry topic %s takes records of at most 20000 bytes decompressed (max.decompressed.message.bytes) but may get one of 67584", retry),
		fmt.Sprintf("--entity-name %s --add-config max.decompressed.message.bytes=67584", retry),
		fmt.Sprintf("dead-letter topic %s accepts batches of 30000 bytes (max.message.bytes) but may get a record of 67645", dead),
		fmt.Sprintf("--entity-name %s --add-config max.message.bytes=67645", dead),
		"4 problems:",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("check output lacks %q:\n%s", want, out)
		}
	}
	rows := map[string]string{} // "topic gate" -> verdict
	for _, line := range strings.Split(string(out), "\n") {
		if f := strings.Fields(line); len(f) >= 6 {
			rows[f[0]+" "+strings.Join(f[2:len(f)-3], " ")] = strings.Join(f[len(f)-3:], " ")
		}
	}
	for key, want := range map[string]string{
		raw + " consumer receive.message.max.bytes":     "100000000 8389120 ok",
		slim + " topic max.message.bytes":               "50000 65597 FAILS",
		dead + " producer message.max.bytes":            "1000000 67584 ok",
		retry + " topic max.decompressed.message.bytes": "20000 67584 FAILS",
	} {
		if rows[key] != want {
			t.Errorf("table row %q = %q, want %q:\n%s", key, rows[key], want, out)
		}
	}

	d := startDaemon(t, cfg)
	if code := d.waitExit(t, 60*time.Second); code != 1 {
		t.Fatalf("run exit code %d, want 1", code)
	}
	for _, want := range []string{"size limits are not aligned", "fewer than the source's 4", "accepts batches of 30000 bytes", "max.decompressed.message.bytes"} {
		if !strings.Contains(d.output(), want) {
			t.Errorf("run's log lacks %q:\n%s", want, d.output())
		}
	}
}

// TestCheckCreatesMissingTopicsAligned: --create-missing creates the slim and
// dead-letter topics with the source's partition count and limits that fit; a
// second check finds nothing to fix.
func TestCheckCreatesMissingTopicsAligned(t *testing.T) {
	t.Parallel()
	raw, slim, dead := uniqueName(t, "raw"), uniqueName(t, "slim"), uniqueName(t, "dlt")
	createTopic(t, raw, 3, map[string]string{"max.message.bytes": "4194304"})
	cfg := newPipeline(t, "missing", raw, slim, "g").with(t, `
kafka: {producer: {message.max.bytes: 8388608}}
errors: {dead_letter_topic: %s}
`, dead).file(t)
	bin := offloaderBinary(t)
	out, err := command(bin, "check", "-F", cfg, "--create-missing").CombinedOutput()
	if code := exitCode(err); code != 0 {
		t.Fatalf("check --create-missing exit code %d:\n%s", code, out)
	}
	for _, want := range []string{"created topic " + slim, "created topic " + dead, "all limits are aligned"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	// No offload step: the slim topic gets source-size records, the
	// dead-letter topic those plus error headers.
	for topic, want := range map[string]string{slim: "4194365", dead: "4196413"} {
		ctx, cancel := context.WithTimeout(context.Background(), scaled(10*time.Second))
		res, err := newAdmin(t).DescribeConfigs(ctx, []kafka.ConfigResource{{Type: kafka.ResourceTopic, Name: topic}})
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		if got := res[0].Config["max.message.bytes"].Value; got != want {
			t.Errorf("%s: max.message.bytes %s, want %s", topic, got, want)
		}
		md, err := newAdmin(t).GetMetadata(&topic, false, 5000)
		if err != nil || len(md.Topics[topic].Partitions) != 3 {
			t.Errorf("%s: %d partitions, want 3 (%v)", topic, len(md.Topics[topic].Partitions), err)
		}
	}
	if out, err := command(bin, "check", "-F", cfg).CombinedOutput(); exitCode(err) != 0 {
		t.Errorf("second check exit %d:\n%s", exitCode(err), out)
	}
}

func exitCode(err error) int {
	if err == nil {
		return 0
	}
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	return -1
}
