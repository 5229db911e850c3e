package demo

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/offloader/offloader/internal/kafka/kadmin"
)

func startBroker(t *testing.T) string {
	t.Helper()
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cluster.Close)
	return strings.Join(cluster.ListenAddrs(), ",")
}

// The demo runs the real pipeline end to end on a broker it is given and
// reports a round trip of every record.
func TestTheDemoRunsEndToEnd(t *testing.T) {
	bootstrap := startBroker(t)
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	err := Run(ctx, &out, Options{Bootstrap: bootstrap, Records: 60, Dir: t.TempDir(), Version: "test",
		Environ: []string{"OFFLOADER_KAFKA__CONSUMER__ENABLE_METRICS_PUSH=false"}})
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	for _, want := range []string{"broker      " + bootstrap, "produced    60 records", "round trip  60 of 60 records arrived once, in partition order"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the report lacks %q:\n%s", want, out.String())
		}
	}
}

// ProduceTo writes values of the sizes given in turn, every 50th a
// tombstone.
func TestProduceToWritesTheSizesGiven(t *testing.T) {
	bootstrap := startBroker(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := kadmin.CreateTopics(ctx, bootstrap, 3, map[string]map[string]string{"fat": {"max.message.bytes": "16777216"}}); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := ProduceTo(&out, Producing{Bootstrap: bootstrap, Topic: "fat", Records: 100, Sizes: []int{1 << 10, 300 << 10}}); err != nil {
		t.Fatal(err)
	}
	if want := "produced 100 records (14.1 MiB, the largest value 300.0 KiB, 2 tombstones) to fat"; !strings.HasPrefix(out.String(), want) {
		t.Errorf("ProduceTo says %q, want %q", out.String(), want)
	}
}
