package integration

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestDemoProducesTestRecordsToATopic: demo --produce-to puts the records it
// says on a topic of the cluster (sizes in turn, keys, headers, every 50th a
// tombstone), and a topic that refuses some is exit 1 with the count and
// the fix, not a silent drop.
func TestDemoProducesTestRecordsToATopic(t *testing.T) {
	t.Parallel()
	topic := uniqueName(t, "raw")
	createTopic(t, topic, 3, map[string]string{"max.message.bytes": "8388608"})
	out, err := command(offloaderBinary(t), "demo", "--brokers", bootstrap, "--produce-to", topic,
		"--records", "60", "--sizes", "100,2KiB,3MiB").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "produced 60 records (") {
		t.Fatalf("demo --produce-to: %v\n%s", err, out)
	}
	got := consumeAll(t, topic, 60, 60*time.Second)
	sizes := map[int]int{}
	for _, m := range got {
		var i int
		if _, err := fmt.Sscanf(string(m.Key), "order-%05d", &i); err != nil {
			t.Fatalf("key %q", m.Key)
		}
		want := []int{100, 2048, 3 << 20}[i%3]
		switch {
		case i%50 == 49:
			if m.Value != nil {
				t.Errorf("record %d: want a tombstone, got %d bytes", i, len(m.Value))
			}
			continue
		case len(m.Value) != want:
			t.Errorf("record %d: %d bytes, want %d", i, len(m.Value), want)
		}
		if v, _ := headerValue(m.Headers, "source"); v != "offloader-demo" {
			t.Errorf("record %d: source header %q", i, v)
		}
		sizes[len(m.Value)]++
	}
	if len(got) != 60 || sizes[100] != 20 || sizes[2048] != 19 || sizes[3<<20] != 20 {
		t.Errorf("%d records, by size %v; want 60: 20, 19 (and a tombstone), 20", len(got), sizes)
	}

	small := uniqueName(t, "raw")
	createTopic(t, small, 1, map[string]string{"max.message.bytes": "1048576"})
	out, err = command(offloaderBinary(t), "demo", "--brokers", bootstrap, "--produce-to", small,
		"--records", "6", "--sizes", "1KiB,2MiB").CombinedOutput()
	if code := exitCode(err); code != 1 || !strings.Contains(string(out), "3 of 6 records were refused; the first: 2097152 bytes to "+small) ||
		!strings.Contains(string(out), "--entity-name "+small+" --add-config max.message.bytes=16777216") {
		t.Errorf("a topic that refuses records: exit %d\n%s", code, out)
	}
}
