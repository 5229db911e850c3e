package integration

import (
	"bytes"
	"context"
	"errors"
	"runtime"
	"runtime/metrics"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/sas"

	"github.com/offloader/offloader/pointer"
	"github.com/offloader/offloader/resolver"
	"github.com/offloader/offloader/settings"
	"github.com/offloader/offloader/stores"
	"github.com/offloader/offloader/stores/azblob"
	"github.com/offloader/offloader/stores/storetest"
)

// TestAzureBlobConformance runs the store conformance suite against Azurite, with
// a small single_put_max so the multi-MiB case is staged in parallel blocks.
func TestAzureBlobConformance(t *testing.T) {
	t.Parallel()
	cfg := azblob.DefaultConfig()
	cfg.ConnectionString = azureConnStr
	cfg.Container = uniqueName(t, "c")
	cfg.CreateContainer = true
	cfg.SinglePutMax = settings.MiB
	cfg.BlockSize = settings.MiB
	ctx, cancel := context.WithTimeout(context.Background(), scaled(30*time.Second))
	defer cancel()
	s, err := azblob.Open(ctx, "blob", cfg)
	if err != nil {
		t.Fatal(err)
	}
	storetest.Run(t, s)
}

// TestAzureBlobConformanceWithSAS: the same suite through account_url and
// sas_token, the way a team without the account key authenticates.
func TestAzureBlobConformanceWithSAS(t *testing.T) {
	t.Parallel()
	endpoint, token := accountSAS(t, sas.AccountPermissions{Read: true, Write: true, Create: true, Delete: true, List: true, Add: true})
	cfg := azblob.DefaultConfig()
	cfg.AccountURL, cfg.SASToken = endpoint, token
	cfg.Container = uniqueName(t, "c")
	cfg.CreateContainer = true
	cfg.SinglePutMax, cfg.BlockSize = settings.MiB, settings.MiB
	ctx, cancel := context.WithTimeout(context.Background(), scaled(30*time.Second))
	defer cancel()
	s, err := azblob.Open(ctx, "blob", cfg)
	if err != nil {
		t.Fatal(err)
	}
	storetest.Run(t, s)
}

// TestAzureBlobReadIsBoundedByThePointer: a forged pointer naming a 256 MiB blob
// larger than it claims costs the resolver what it claims (bounded by
// MaxSize), not the blob's size: the store refuses it from Content-Length.
// It counts the process's heap allocations, so it runs alone (not
// t.Parallel: the parallel tests start after it), where another test's
// allocations cannot land in its window; beside them, on a busy machine, it
// counted 24 MiB that were not its own.
func TestAzureBlobReadIsBoundedByThePointer(t *testing.T) {
	cfg := azblob.DefaultConfig()
	cfg.ConnectionString = azureConnStr
	cfg.Container = uniqueName(t, "c")
	cfg.CreateContainer = true
	ctx, cancel := context.WithTimeout(context.Background(), scaled(2*time.Minute))
	defer cancel()
	s, err := azblob.Open(ctx, "blob", cfg)
	if err != nil {
		t.Fatal(err)
	}
	big := bytes.Repeat([]byte("b"), 256<<20)
	if err := s.Put(ctx, "p/t/0/big", big, nil); err != nil {
		t.Fatal(err)
	}
	big = nil
	const maxSize = 64 << 20
	res := resolver.New(resolver.Options{Stores: map[string]stores.Store{"blob": s}, MaxSize: maxSize})
	for _, claim := range []int64{150, maxSize} {
		p := pointer.Pointer{Store: "blob", Key: "p/t/0/big", Size: claim, SHA256: strings.Repeat("0", 64), Codec: pointer.CodecNone, StoredSize: claim}
		runtime.GC()
		before := heapAllocs()
		_, err := res.Resolve(ctx, p.Encode(), func(name string) ([]byte, bool) { return []byte("v1"), name == pointer.HeaderPointer })
		allocated := heapAllocs() - before
		if !errors.Is(err, resolver.ErrChecksum) {
			t.Errorf("claim %d: %v, want ErrChecksum", claim, err)
		}
		if allocated > 8<<20 {
			t.Errorf("claim %d bytes of a 256 MiB blob: resolving allocated %d MiB", claim, allocated>>20)
		}
	}
}

// heapAllocs is the bytes the Go heap has handed out so far (runtime/metrics).
func heapAllocs() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}
