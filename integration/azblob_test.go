package integration

import (
	"context"
	"testing"
	"time"

	"github.com/offloader/offloader/settings"
	"github.com/offloader/offloader/stores/azblob"
	"github.com/offloader/offloader/stores/storetest"
)

// TestAzureBlobConformance runs the store conformance suite against Azurite, with
// a small single_put_max so the multi-MiB case is staged in parallel blocks.
func TestAzureBlobConformance(t *testing.T) {
	cfg := azblob.DefaultConfig()
	cfg.ConnectionString = azureConnStr
	cfg.Container = uniqueName(t, "c")
	cfg.CreateContainer = true
	cfg.SinglePutMax = settings.MiB
	cfg.BlockSize = settings.MiB
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := azblob.Open(ctx, "blob", cfg)
	if err != nil {
		t.Fatal(err)
	}
	storetest.Run(t, s)
}
