package integration

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/offloader/offloader/pointer"
	"github.com/offloader/offloader/stores"
	"github.com/offloader/offloader/stores/httpstore/httpstoretest"
)

// BenchmarkGC runs offloader gc over a slim topic of 1,000,000 pointers (3
// partitions) to as many objects in an HTTP store (the in-memory contract
// server, 1,000 objects a listing page), plus 10,000 unreferenced objects
// that it deletes. Reported: pointers read per second (reading the topics)
// and objects listed per second (listing, reading the writer of each
// unreferenced object, deleting it).
func BenchmarkGC(b *testing.B) {
	const pointers, orphans, partitions = 1_000_000, 10_000, 3
	raw, slim := uniqueName(b, "raw"), uniqueName(b, "slim")
	createTopic(b, raw, partitions, nil)
	createTopic(b, slim, partitions, nil)
	defer deleteTopics(b, []string{raw, slim})
	srv := httpstoretest.New(b, false, 0)
	srv.SetPageSize(1000)
	old := time.Now().Add(-time.Hour)
	meta := map[string]string{stores.MetaWriter: "bench@" + slim, stores.MetaCluster: clusterID(b, bootstrap)}
	payload := []byte("payload")
	digest := pointer.Digest(sha256.Sum256(payload))

	p, err := kafka.NewProducer(&kafka.ConfigMap{"bootstrap.servers": bootstrap, "linger.ms": 50, "batch.size": 1 << 20, "compression.type": "lz4"})
	if err != nil {
		b.Fatal(err)
	}
	go func() {
		for range p.Events() {
		}
	}()
	headers := []kafka.Header{{Key: pointer.HeaderLargeMessage, Value: []byte("true")}, {Key: pointer.HeaderPointer, Value: []byte("v1")}}
	for i := range pointers {
		key := "bench/" + raw + "/" + strconv.Itoa(i%partitions) + "/" + strconv.Itoa(i)
		srv.Seed(key, payload, meta, old)
		ptr := pointer.Pointer{Store: "payloads", Key: key, Size: int64(len(payload)), SHA256: digest, Codec: pointer.CodecNone, StoredSize: int64(len(payload))}
		for {
			err := p.Produce(&kafka.Message{TopicPartition: kafka.TopicPartition{Topic: &slim, Partition: int32(i % partitions)}, Value: ptr.Encode(), Headers: headers}, nil)
			if err == nil {
				break
			}
			if err.(kafka.Error).Code() != kafka.ErrQueueFull {
				b.Fatal(err)
			}
			p.Flush(100)
		}
	}
	for i := range orphans {
		srv.Seed(fmt.Sprintf("bench/%s/orphan/%d", raw, i), payload, meta, old)
	}
	if left := p.Flush(120_000); left != 0 {
		b.Fatalf("%d pointers not delivered", left)
	}
	p.Close()

	cfg := newPipeline(b, "bench", raw, slim, uniqueName(b, "g")).with(b, `
stores:
  payloads: {type: http, url: %q, auth_token: %s}
transforms:
  - {type: offload, store: payloads}
commit: {interval: 100ms}`, srv.URL, httpstoretest.Token).file(b)
	b.ResetTimer()
	for range b.N {
		out, err := command(offloaderBinary(b), "gc", "-F", cfg, "--grace", "30m", "--output", "json").Output()
		if err != nil {
			b.Fatalf("gc: %v\n%s", err, out)
		}
		var rep gcReport
		if err := json.Unmarshal(out, &rep); err != nil {
			b.Fatal(err)
		}
		if rep.Pointers != pointers || rep.Sweeps[0].Referenced.Objects != pointers || rep.Sweeps[0].Deleted.Objects != orphans {
			b.Fatalf("gc read %d pointers, kept %d referenced, deleted %d; want %d, %d, %d",
				rep.Pointers, rep.Sweeps[0].Referenced.Objects, rep.Sweeps[0].Deleted.Objects, pointers, pointers, orphans)
		}
		b.ReportMetric(float64(rep.Pointers)/rep.ReadSeconds, "pointers-read/s")
		b.ReportMetric(float64(rep.Sweeps[0].Listed())/rep.SweepSeconds, "objects-listed/s")
		b.Logf("read %d pointers in %.1f s; listed %d objects (deleted %d) in %.1f s",
			rep.Pointers, rep.ReadSeconds, rep.Sweeps[0].Listed(), rep.Sweeps[0].Deleted.Objects, rep.SweepSeconds)
	}
}
