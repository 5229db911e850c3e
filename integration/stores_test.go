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
			// The store is reached through a fault proxy that holds its
			// calls for the kills (killMidUpload).
			var proxy *faultProxy
			switch kind {
			case "s3":
				cfg := s3Config(t)
				var endpoint string
				endpoint, proxy = endpointThroughProxy(t, s3Endpoint)
				storeYAML = fmt.Sprintf("      payloads: {type: s3, bucket: %s, endpoint: %q, path_style: true, create_bucket: true, region: us-east-1}", cfg.Bucket, endpoint)
				ctx, cancel := context.WithTimeout(context.Background(), scaled(30*time.Second))
				defer cancel()
				s, err := s3.Open(ctx, "payloads", cfg)
				if err != nil {
					t.Fatal(err)
				}
				store = s
			case "http":
				srv := httpstoretest.New(t, true, 400*time.Millisecond)
				var endpoint string
				endpoint, proxy = endpointThroughProxy(t, srv.URL)
				storeYAML = fmt.Sprintf("      payloads: {type: http, url: %q, auth_token: %s, try_timeout: 300ms, retry_wait: 10ms}", endpoint, httpstoretest.Token)
				cfg := httpstore.DefaultConfig()
				cfg.URL, cfg.AuthToken, cfg.TryTimeout = srv.URL, httpstoretest.Token, time.Second
				s, err := httpstore.Open("payloads", cfg)
				if err != nil {
					t.Fatal(err)
				}
				store = s
			}
			raw, slim := uniqueName(t, "raw"), uniqueName(t, "slim")
			createTopic(t, raw, 2, map[string]string{"max.message.bytes": "8388608"})
			createTopic(t, slim, 2, nil)
			var recs []sourceRecord
			for i := range 2000 {
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
			rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))
			for round := range 3 {
				// Held after 20, 40 and 60 payloads (of 200: each round
				// sends no more than its hold point, retries included, so the
				// next one still reaches its own), at a byte of a request the
				// dice choose.
				after := int64(20+20*round)*(100<<10+1<<10) + rng.Int64N(100<<10)
				killMidUpload(t, proxy, after, func() *daemon { return startDaemon(t, cfg, txid) })
			}
			if n := len(consumeAll(t, slim, len(recs), 3*time.Second)); n >= len(recs) {
				t.Fatalf("all %d records were in the slim topic after a kill -9 with store calls held", n)
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
