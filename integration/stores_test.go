package integration

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/offloader/offloader/stores"
	"github.com/offloader/offloader/stores/httpstore"
	"github.com/offloader/offloader/stores/httpstore/httpstoretest"
	"github.com/offloader/offloader/stores/s3"
)

// TestKillNineWithS3AndHTTPStores: the exactly-once pipeline on the S3
// emulator and on an HTTP store whose server fails every third request,
// killed with SIGKILL three times mid-work: every record once, every pointer
// resolves byte for byte.
func TestKillNineWithS3AndHTTPStores(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{"s3", "http"} {
		t.Run(kind, func(t *testing.T) {
			var storeYAML string
			var store stores.Store
			// Enough records that three runs, each killed a moment after its
			// tenth offload, cannot do them all: the S3 emulator is fast (a CI
			// run finished 2000 in the three runs), the HTTP server's
			// failures slow its runs down.
			n := 2000
			switch kind {
			case "s3":
				cfg := s3Config(t)
				storeYAML = fmt.Sprintf("      payloads: {type: s3, bucket: %s, endpoint: %q, path_style: true, create_bucket: true, region: us-east-1}", cfg.Bucket, s3Endpoint)
				ctx, cancel := context.WithTimeout(context.Background(), scaled(30*time.Second))
				defer cancel()
				s, err := s3.Open(ctx, "payloads", cfg)
				if err != nil {
					t.Fatal(err)
				}
				store = s
				n = 8000
			case "http":
				srv := httpstoretest.New(t, true, 400*time.Millisecond)
				storeYAML = fmt.Sprintf("      payloads: {type: http, url: %q, auth_token: %s, try_timeout: 300ms, retry_wait: 10ms}", srv.URL, httpstoretest.Token)
				cfg := httpstore.DefaultConfig()
				cfg.URL, cfg.AuthToken, cfg.TryTimeout = srv.URL, httpstoretest.Token, time.Second
				s, err := httpstore.Open("payloads", cfg)
				if err != nil {
					t.Fatal(err)
				}
				store = s
				// 2,000 were too few once partitions stopped waiting for each
				// other: a CI run finished them within one round.
				n = 5000
			}
			raw, slim := uniqueName(t, "raw"), uniqueName(t, "slim")
			createTopic(t, raw, 2, map[string]string{"max.message.bytes": "8388608"})
			createTopic(t, slim, 2, nil)
			var recs []sourceRecord
			for i := range n {
				size := 2000
				// One in ten offloaded, on both partitions (records alternate between
				// them): a partition whose records are all small may finish first, and
				// the other must still have uploads for the kills to land among.
				if i%20 == 0 || i%20 == 11 {
					size = 100 << 10
				}
				recs = append(recs, sourceRecord{partition: int32(i % 2), key: fmt.Appendf(nil, "%d", i), value: bytes.Repeat([]byte{byte(i)}, size)})
			}
			produceRecords(t, raw, recs)
			cfg := pipelineFile(t, kind, raw, slim, uniqueName(t, "g"), storeYAML, "")
			txid := "OFFLOADER_KAFKA__TRANSACTIONAL_ID=" + uniqueName(t, "tx")
			listen := "OFFLOADER_OBSERVABILITY__LISTEN=127.0.0.1:0"
			rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))
			for range 3 {
				d := startDaemon(t, cfg, txid, listen)
				waitForMetric(t, d.metricsURL(t), "offloader_offloaded_records_total", func(v float64) bool { return v >= 10 }, 60*time.Second)
				time.Sleep(time.Duration(rng.IntN(200)) * time.Millisecond)
				d.kill9()
			}
			if n := len(consumeAll(t, slim, len(recs), 3*time.Second)); n >= len(recs) {
				t.Fatalf("all %d records were done before the last kill; the test proves nothing", n)
			} else {
				t.Logf("after the last kill -9 the slim topic holds %d of %d records", n, len(recs))
			}
			d := startDaemon(t, cfg, txid)
			got := consumeAll(t, slim, len(recs), 120*time.Second)
			if code := d.stop(t, 45*time.Second); code != 0 {
				t.Errorf("final daemon exit code %d, want 0", code)
			}
			assertEachOnce(t, got, len(recs), func(i int, m *kafka.Message) {
				if v := resolve(t, store, m); !bytes.Equal(v, recs[i].value) {
					t.Fatalf("key %d resolved to %d different bytes", i, len(v))
				}
			})
		})
	}
}
