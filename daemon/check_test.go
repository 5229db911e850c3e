package daemon

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/offloader/offloader/limits"
)

// Check reads the topics and limits on the cluster, creates what is missing
// when asked, samples the offload step's if:, and tries each store; with no
// broker at the bootstrap it says what to change, and still tries the store
// in its own time.
func TestCheckReportsKafkaTheSampleAndTheStores(t *testing.T) {
	bootstrap, _ := startWithRecords(t)
	p := loadPipeline(t, bootstrap, "", offloadTo(t))
	p.SlimTopic = "slim.new" // missing until CreateMissing
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var progress []string
	say := func(format string, args ...any) { progress = append(progress, format) }

	rep := Check(ctx, p, CheckOptions{KafkaTimeout: 20 * time.Second, Progress: say})
	if rep.OK || !rep.Kafka.Reached || len(rep.Kafka.Problems) == 0 || rep.Sample != nil {
		t.Fatalf("with the slim topic missing: %+v; want not ok, Kafka reached, a problem, no sample", rep)
	}
	rep = Check(ctx, p, CheckOptions{CreateMissing: true, KafkaTimeout: 20 * time.Second, Sample: 2, Progress: say})
	if !rep.OK || len(rep.Kafka.Created) != 1 || rep.Kafka.Created[0] != "slim.new" || len(rep.Kafka.Limits) == 0 || len(rep.Stores.Checks) < 3 || rep.Sample != nil {
		t.Fatalf("--create-missing: %+v; want ok, slim.new created, the table, the store checks, no sample (no if:)", rep)
	}
	if len(progress) < 4 || !strings.HasPrefix(progress[0], "checking Kafka at") {
		t.Errorf("progress %q; want what Check waits on", progress)
	}

	p.Transforms[0].If = loadPipeline(t, bootstrap, "", `
    stores:
      payloads: {type: filesystem, root: /tmp}
    transforms:
      - {type: offload, store: payloads, if: {type: has_header, name: big}}`).Transforms[0].If
	rep = Check(ctx, p, CheckOptions{KafkaTimeout: 20 * time.Second, Sample: 2})
	if rep.OK || rep.Sample == nil || rep.Sample.Records != 6 || len(rep.Sample.Problems) != 1 {
		t.Fatalf("an if: that passes the big records by: %+v (sample %+v); want not ok, 6 sampled, 1 problem", rep, rep.Sample)
	}

	p.Kafka.BootstrapServers = "127.0.0.1:1"
	rep = Check(ctx, p, CheckOptions{KafkaTimeout: time.Second, BootstrapFrom: "$OFFLOADER_KAFKA__BOOTSTRAP_SERVERS"})
	if rep.OK || rep.Kafka.Reached || !strings.Contains(rep.Kafka.Fix, "no broker at 127.0.0.1:1 answered within 1s: check $OFFLOADER_KAFKA__BOOTSTRAP_SERVERS") {
		t.Fatalf("no broker: %+v; want not reached, the fix naming the variable", rep.Kafka)
	}
	if len(rep.Stores.Problems) != 0 || len(rep.Stores.Checks) < 3 {
		t.Errorf("no broker: the store was blamed or not tried: %+v", rep.Stores)
	}
}

// A pipeline file's own figures reach the size check: the first offload
// step's threshold, a rehydrate step's max_size, and each store's object
// lifetime.
func TestAPipelinesOwnFiguresReachTheSizeCheck(t *testing.T) {
	p := loadPipeline(t, "127.0.0.1:9", "", fmt.Sprintf(`    stores:
      blob: {type: filesystem, root: %q, object_lifetime: 168h}
      kept: {type: filesystem, root: %q}
    transforms:
      - {type: offload, store: blob, threshold: 500KiB}
      - {type: offload, store: kept, threshold: 100KiB}
`, t.TempDir(), t.TempDir()))
	f := &limits.Figures{Slim: limits.TopicInfo{Name: "slim", Role: "slim", Exists: true, MaxMessageBytes: 1 << 20}, ProducerMaxMessageBytes: 1 << 20, BrokerMessageMaxBytes: 1 << 20}
	addPipeline(f, p)
	if !f.HasOffload || f.Threshold != 500<<10 {
		t.Errorf("offload %v, threshold %d; want the first offload step's 512000", f.HasOffload, f.Threshold)
	}
	if len(f.ObjectLifetimes) != 1 || f.ObjectLifetimes["blob"] != 168*time.Hour {
		t.Errorf("lifetimes %v, want blob's 168h only", f.ObjectLifetimes)
	}
}
