package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
)

// For a compacted fat topic, check --create-missing creates the slim and
// dead-letter topics compacted, with no shorter retention, so that they keep
// the latest value of each key once the fat topic is gone; a slim topic
// made by hand with cleanup.policy=delete is a problem check names, with
// the command that fixes it.
func TestTopicPolicyFollowsACompactedSource(t *testing.T) {
	t.Parallel() // its own topics; runs beside the other parallel tests
	raw, slim, dead := uniqueName(t, "raw"), uniqueName(t, "slim"), uniqueName(t, "dlt")
	createTopic(t, raw, 2, map[string]string{"cleanup.policy": "compact", "max.message.bytes": "8388608"})
	storeYAML := "      payloads: {type: filesystem, root: " + t.TempDir() + "}"
	cfg := pipelineFile(t, "compacted", raw, slim, uniqueName(t, "g"), storeYAML, "    errors: {dead_letter_topic: "+dead+"}")
	if out, err := command(offloaderBinary(t), "check", "-F", cfg, "--create-missing").CombinedOutput(); err != nil {
		t.Fatalf("check --create-missing: %v\n%s", err, out)
	}
	for _, topic := range []string{slim, dead} {
		got := topicConfig(t, topic, "cleanup.policy", "retention.ms")
		if got["cleanup.policy"] != "compact" || got["retention.ms"] != "-1" {
			t.Errorf("%s was created with %v, want cleanup.policy=compact and retention.ms=-1, as the compacted source keeps", topic, got)
		}
	}

	byHand := uniqueName(t, "slim")
	createTopic(t, byHand, 2, map[string]string{"cleanup.policy": "delete", "retention.ms": "604800000"})
	cfg = pipelineFile(t, "compacted", raw, byHand, uniqueName(t, "g"), storeYAML, "    errors: {dead_letter_topic: "+dead+"}")
	out, err := command(offloaderBinary(t), "check", "-F", cfg).CombinedOutput()
	if exitCode(err) != 1 || !strings.Contains(string(out), "slim topic "+byHand+" would lose what source topic "+raw+" keeps: it is not compacted") ||
		!strings.Contains(string(out), "--add-config 'cleanup.policy=compact") {
		t.Errorf("check on a slim topic that deletes what the source compacts: exit %d\n%s", exitCode(err), out)
	}
}

// topicConfig reads the named configs of topic.
func topicConfig(t *testing.T, topic string, names ...string) map[string]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), scaled(30*time.Second))
	defer cancel()
	res, err := newAdmin(t).DescribeConfigs(ctx, []kafka.ConfigResource{{Type: kafka.ResourceTopic, Name: topic}})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, n := range names {
		out[n] = res[0].Config[n].Value
	}
	return out
}
