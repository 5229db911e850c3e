package transforms

import (
	"context"
	"crypto/sha256"
	"io"
	"net/http"
	"net/http/httptest"
	"syscall"
	"testing"
	"time"

	"github.com/offloader/offloader/codec"
	"github.com/offloader/offloader/pipeline"
	"github.com/offloader/offloader/settings"
	"github.com/offloader/offloader/stores"
	"github.com/offloader/offloader/stores/filesystem"
	"github.com/offloader/offloader/stores/httpstore"
)

// BenchmarkOffloadPath measures the offload of a 1 MiB value in CPU-seconds
// per GB, beside the SHA-256 of the value alone (the one pass over it the
// path needs besides the store's own write): to a store that keeps nothing
// (the step's own work), to the filesystem store, and to the HTTP store
// against a server in the same process that reads each body and drops it
// (the client's write and the server's read both count). The difference
// between a store and the step's own work is the store's; a copy of the
// value would show as about memmove's cost per GB on top.
func BenchmarkOffloadPath(b *testing.B) {
	value := make([]byte, 1<<20)
	for i := range value {
		value[i] = byte(i * 7)
	}
	b.Run("sha256", func(b *testing.B) {
		perGB(b, len(value), func(int) {
			_ = sha256.Sum256(value)
		})
	})
	b.Run("offload-to-nothing", func(b *testing.B) {
		benchOffload(b, value, &discard{})
	})
	b.Run("offload-to-filesystem", func(b *testing.B) {
		fs, err := filesystem.Open("bench", filesystem.Config{Root: b.TempDir(), DirMode: 0o750, FileMode: 0o640})
		if err != nil {
			b.Fatal(err)
		}
		benchOffload(b, value, fs)
	})
	b.Run("offload-to-http", func(b *testing.B) {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.Copy(io.Discard, r.Body)
			w.WriteHeader(http.StatusCreated)
		}))
		b.Cleanup(srv.Close)
		cfg := httpstore.DefaultConfig()
		cfg.URL = srv.URL
		hs, err := httpstore.Open("bench", cfg)
		if err != nil {
			b.Fatal(err)
		}
		benchOffload(b, value, hs)
	})
}

// benchOffload offloads value to store, a record at a new offset each time.
func benchOffload(b *testing.B, value []byte, store stores.Store) {
	o, err := NewOffload(OffloadConfig{Store: "s", Threshold: settings.SizeOrAuto(64 * settings.KiB), KeyMode: KeyBySourceOffset, Compression: codec.None},
		Deps{Pipeline: "bench", Stores: map[string]stores.Store{"s": store}, StoreRetry: stores.DefaultRetryPolicy(time.Minute)})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	perGB(b, len(value), func(i int) {
		out, err := o.Apply(ctx, &pipeline.Record{Topic: "raw", Partition: 0, Offset: int64(i), Value: value})
		if err != nil || len(out.Value) >= len(value) {
			b.Fatalf("offload: %v", err)
		}
	})
}

// perGB runs f b.N times over size bytes each and reports the process's
// CPU-seconds per GB (user and system, every thread) beside the rate.
func perGB(b *testing.B, size int, f func(i int)) {
	b.SetBytes(int64(size))
	before := cpuTime(b)
	b.ResetTimer()
	for i := range b.N {
		f(i)
	}
	b.StopTimer()
	b.ReportMetric((cpuTime(b)-before).Seconds()/(float64(b.N)*float64(size)/1e9), "CPU-s/GB")
}

func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// discard is a Store whose Put keeps nothing.
type discard struct{ memStore }

func (*discard) Put(context.Context, string, []byte, stores.Metadata) error { return nil }
