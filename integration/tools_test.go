package integration

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestKafkaToolsRunAgainstTheBroker: scripts/services.sh install tools puts
// Kafka's own command-line tools, of the broker's release, in .cache/bin:
// the fixes that offloader check prints (kafka-topics.sh, kafka-configs.sh)
// run as printed.
func TestKafkaToolsRunAgainstTheBroker(t *testing.T) {
	t.Parallel()
	out, err := command(servicesScript, "install", "tools").CombinedOutput()
	if err != nil {
		t.Fatalf("install tools: %v\n%s", err, out)
	}
	bin := filepath.Join(filepath.Dir(servicesScript), "..", ".cache", "bin")
	topic := uniqueName(t, "raw")
	createTopic(t, topic, 3, map[string]string{"max.message.bytes": "2097152"})
	for tool, want := range map[string]struct {
		args []string
		says string
	}{
		"kafka-topics.sh":  {[]string{"--describe", "--topic", topic}, "PartitionCount: 3"},
		"kafka-configs.sh": {[]string{"--describe", "--entity-type", "topics", "--entity-name", topic}, "max.message.bytes=2097152"},
	} {
		args := append([]string{"--bootstrap-server", bootstrap}, want.args...)
		out, err := command(filepath.Join(bin, tool), args...).CombinedOutput()
		if err != nil || !strings.Contains(string(out), want.says) {
			t.Errorf("%s %s: %v, output lacks %q:\n%s", tool, strings.Join(args, " "), err, want.says, out)
		}
	}
}
