package daemon

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/offloader/offloader/internal/kafka/kadmin"
	"github.com/offloader/offloader/internal/kafka/kfaketest"
	"github.com/offloader/offloader/internal/kafka/reader"
	"github.com/offloader/offloader/stores"
	"github.com/offloader/offloader/stores/filesystem"
)

// The procedures an operator runs on a pipeline's topics and stores work on
// the cluster a bounded run left: analyze counts the records and what an
// offload step would move, verify finds parity on every partition, gc keeps
// every live payload and deletes the pipeline's own orphans, and the
// offload step's if: is sampled.
func TestTheOperatorsProceduresReadTheCluster(t *testing.T) {
	bootstrap, _ := startWithRecords(t)
	root := t.TempDir()
	p := loadPipeline(t, bootstrap, "", fmt.Sprintf(`
    stores:
      payloads: {type: filesystem, root: %q}
    transforms:
      - {type: offload, store: payloads, threshold: 512KiB}`, root))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	a, err := Analyze(ctx, p, AnalyzeOptions{Topic: "raw", Top: 3})
	if err != nil {
		t.Fatal(err)
	}
	if a.Records != 30 || a.Offload.Records != 10 || a.Offload.Threshold != 512<<10 || len(a.Largest) != 3 || a.Threshold != "the pipeline's offload step: 512KiB" {
		t.Fatalf("analyze: %d records, %d offloaded at %d (%s), %d largest listed; want 30, 10 at 512KiB from the step, 3",
			a.Records, a.Offload.Records, a.Offload.Threshold, a.Threshold, len(a.Largest))
	}
	a, err = Analyze(ctx, p, AnalyzeOptions{Topic: "raw", To: &reader.Start{Offset: 4}, Threshold: 50})
	if err != nil {
		t.Fatal(err)
	}
	if a.Records != 12 || a.Offload.Records != 12 {
		t.Fatalf("analyze --to 4 --threshold 50B: %d records, %d offloaded; want 12 and 12 (4 of each partition)", a.Records, a.Offload.Records)
	}
	if _, err := Analyze(ctx, p, AnalyzeOptions{Topic: "missing"}); err == nil || !strings.Contains(err.Error(), "topic missing does not exist") {
		t.Fatalf("analyze of a missing topic: %v", err)
	}

	d, err := Build(ctx, p, Env{Version: "test", Logger: zap.NewNop()}, Options{Bounded: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Run(ctx); err != nil {
		t.Fatal(err)
	}

	results, malformed, err := Verify(ctx, p, true, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != 3 || malformed != 0 {
		t.Fatalf("verify: %d partitions, %d slim records without a source; want 3 and 0", len(results), malformed)
	}
	for _, r := range results {
		if !r.OK() || r.Source != 10 || r.Slim != 10 {
			t.Errorf("verify %s: %d source, %d slim records: %s", r.Partition, r.Source, r.Slim, r.Problem)
		}
	}

	store, err := filesystem.Open("payloads", filesystem.Config{Root: root})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	cluster, err := kadmin.ClusterID(ctx, KafkaClient(p), zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	orphan := p.Name + "/" + cluster + "/raw/0/1000" // what an aborted transaction leaves: the pipeline's key, no pointer
	if err := store.Put(ctx, orphan, []byte("orphan"), stores.Metadata{stores.MetaWriter: p.Writer(), stores.MetaCluster: cluster}); err != nil {
		t.Fatal(err)
	}
	backdate(t, root)
	var progress []string
	rep, err := Collect(ctx, p, CollectOptions{Grace: p.GCFloor(), Progress: func(f string, args ...any) { progress = append(progress, fmt.Sprintf(f, args...)) }})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Sweeps) != 1 || rep.Pointers != 10 || rep.Sweeps[0].Referenced.Objects != 10 || rep.Sweeps[0].Deleted.Objects != 1 || len(progress) == 0 {
		t.Fatalf("gc: %d pointers read, sweeps %+v, %d progress lines; want 10 pointers, 10 referenced, 1 deleted", rep.Pointers, rep.Sweeps, len(progress))
	}
	if _, err := store.Stat(ctx, orphan); err == nil {
		t.Errorf("gc reported the orphan %s deleted, but it is still there", orphan)
	}
	if results, _, err := Verify(ctx, p, true, nil); err != nil || !results[0].OK() || !results[1].OK() || !results[2].OK() {
		t.Fatalf("after gc, a deep verify fails: %v %+v", err, results)
	}

	read, problems, err := SampleOffloadIf(ctx, p, 2)
	if err != nil || read != -1 || len(problems) != 0 {
		t.Fatalf("sampling a step with no if: read %d, problems %v, %v; want nothing read", read, problems, err)
	}
	p.Transforms[0].If = loadPipeline(t, bootstrap, "", `
    stores:
      payloads: {type: filesystem, root: /tmp}
    transforms:
      - {type: offload, store: payloads, if: {type: has_header, name: big}}`).Transforms[0].If
	read, problems, err = SampleOffloadIf(ctx, p, 2)
	if err != nil || read != 6 || len(problems) != 1 || !strings.Contains(problems[0].What, "2 of the 6 records sampled from raw") {
		t.Fatalf("sampling an if: that passes the big records by: read %d, problems %v, %v; want 6 read and 1 problem naming 2 of 6", read, problems, err)
	}
}

// backdate sets the write time of every file under root an hour back, so
// that a filesystem store's objects are past any grace at once.
func backdate(t *testing.T, root string) {
	t.Helper()
	old := time.Now().Add(-time.Hour)
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		return os.Chtimes(path, old, old)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// check --create-missing creates the slim topic a pipeline names and does
// not find, and the figures it returns are those of the topic it created.
func TestCreateMissingCreatesTheSlimTopicAndSurveysAgain(t *testing.T) {
	bootstrap := kfaketest.StartBrokerWith(t, map[string]map[string]string{"raw": {"max.message.bytes": "4194304"}})
	p := loadPipeline(t, bootstrap, "", offloadTo(t))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	f, err := Survey(ctx, p, nil)
	if err != nil {
		t.Fatal(err)
	}
	if f.Slim.Exists {
		t.Fatal("the slim topic exists before it was created")
	}
	f, created, err := CreateMissing(ctx, p, f, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	if len(created) != 1 || created[0] != "slim" || !f.Slim.Exists || f.Slim.Partitions != 3 {
		t.Fatalf("created %v; the slim topic in the figures: %+v; want slim, with the source's 3 partitions", created, f.Slim)
	}
	f, created, err = CreateMissing(ctx, p, f, zap.NewNop())
	if err != nil || len(created) != 0 || !f.Slim.Exists {
		t.Fatalf("a second time: created %v, %v; want nothing", created, err)
	}
}

// migrate's rate limits: none at 0; the store's burst is a tenth of a
// second's bytes, within 64 KiB and 1 MiB (a payload larger than the burst
// is written in parts, stores.Throttled).
func TestRateLimitsOfAMigration(t *testing.T) {
	if throttle(0) != nil || storeLimit(0) != nil {
		t.Fatal("a limit of 0 limits")
	}
	for perSecond, burst := range map[float64]int{100: 64 << 10, 2e6: 200_000, 1e9: 1 << 20} {
		if l := storeLimit(perSecond); l.Burst() != burst || float64(l.Limit()) != perSecond {
			t.Errorf("%v bytes/s: burst %d at %v/s; want burst %d", perSecond, l.Burst(), l.Limit(), burst)
		}
	}
	if throttle(1e6) == nil {
		t.Error("a records/s limit does not throttle")
	}
}
