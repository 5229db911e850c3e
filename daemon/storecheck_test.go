package daemon

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/offloader/offloader/stores"
	"github.com/offloader/offloader/stores/filesystem"
)

// verdicts is each check's verdict, by store and check.
func verdicts(rows []StoreCheck) map[string]string {
	out := map[string]string{}
	for _, r := range rows {
		out[r.Store+": "+r.Check] = r.Verdict
	}
	return out
}

// A store the offload step writes to is opened, written, read back,
// deleted and listed under the step's prefix; objects of another pipeline
// under it and payloads kept forever are warned of.
func TestCheckStoresProbesAStoreAsRunUsesIt(t *testing.T) {
	root := t.TempDir()
	p := loadPipeline(t, "127.0.0.1:1", "", fmt.Sprintf(`
    stores:
      payloads: {type: filesystem, root: %q}
    transforms:
      - {type: offload, store: payloads, prefix: orders}`, root))
	other, err := filesystem.Open("payloads", filesystem.Config{Root: root})
	if err != nil {
		t.Fatal(err)
	}
	if err := other.Put(context.Background(), "orders/raw/0/1", []byte("x"), stores.Metadata{stores.MetaWriter: "billing@billing.slim"}); err != nil {
		t.Fatal(err)
	}
	rows, problems := CheckStores(context.Background(), p, "")
	if len(problems) != 0 {
		t.Fatalf("problems: %+v", problems)
	}
	v := verdicts(rows)
	for check, want := range map[string]string{
		"payloads: open": "ok",
		"payloads: write, read back, delete under orders/": "ok",
		"payloads: list keeps to orders/":                  "ok",
		"payloads: payload lifetime":                       "WARN: kept forever",
		"payloads: writers under orders/":                  "WARN: orders/raw/0/1 was written by billing@billing.slim",
	} {
		if !strings.HasPrefix(v[check], want) {
			t.Errorf("%s: %q, want %q...", check, v[check], want)
		}
	}
}

// A store that does not open, and one only read (rehydrate), are checked
// as such, each problem with its fix.
func TestCheckStoresSaysWhatFails(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	p := loadPipeline(t, "127.0.0.1:1", "errors: {store_budget: 1s}", fmt.Sprintf(`
    stores:
      broken: {type: filesystem, root: %q}
      archive: {type: filesystem, root: %q}
    transforms:
      - {type: offload, store: broken}
      - {type: rehydrate, max_size: 1MiB}`, filepath.Join(file, "under"), t.TempDir()))
	rows, problems := CheckStores(context.Background(), p, "")
	v := verdicts(rows)
	if v["broken: open"] != "FAILS" || v["archive: read (rehydrate only)"] != "ok" {
		t.Fatalf("verdicts %v", v)
	}
	if len(problems) != 1 || !strings.Contains(problems[0].Fix, "correct the store's settings") {
		t.Fatalf("problems %+v", problems)
	}
}
