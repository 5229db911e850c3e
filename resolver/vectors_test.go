package resolver_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"path/filepath"
	"testing"

	"github.com/offloader/offloader/pipeline"
	"github.com/offloader/offloader/resolver"
	"github.com/offloader/offloader/resolver/resolvertest"
	"github.com/offloader/offloader/stores"
	"github.com/offloader/offloader/stores/filesystem"
)

// TestTheSharedVectors: every record of the shared vectors resolves to its
// SHA-256 or is refused in its class.
func TestTheSharedVectors(t *testing.T) {
	v, objects, err := resolvertest.Load("../pointer/testdata/vectors.json")
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(t.TempDir(), "root")
	fs, err := filesystem.Open("payloads", filesystem.Config{Root: root, DirMode: 0o750, FileMode: 0o640})
	if err != nil {
		t.Fatal(err)
	}
	for key, data := range objects {
		if err := fs.Put(context.Background(), key, data, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := v.Filesystem.Layout.LayOut(root); err != nil {
		t.Fatal(err)
	}
	if len(v.Filesystem.Cases) < 8 {
		t.Fatalf("%d filesystem cases", len(v.Filesystem.Cases))
	}
	r := resolver.New(resolver.Options{Stores: map[string]stores.Store{"payloads": fs}})
	if len(v.Cases) < 30 {
		t.Fatalf("%d cases", len(v.Cases))
	}
	for _, c := range append(v.Cases, v.Filesystem.Cases...) {
		rec := &pipeline.Record{}
		for _, h := range c.Headers {
			rec.Headers = append(rec.Headers, pipeline.Header{Key: h[0], Value: []byte(h[1])})
		}
		res, err := r.Resolve(context.Background(), c.Bytes(), rec.Header)
		switch {
		case c.Reject != "" && (err == nil || resolvertest.Class(err) != c.Reject):
			t.Errorf("%s: %v, want it refused as %s", c.Name, err, c.Reject)
		case c.Reject == "" && err != nil:
			t.Errorf("%s: %v", c.Name, err)
		case c.Reject == "":
			if sum := sha256.Sum256(res.Value); hex.EncodeToString(sum[:]) != c.SHA256 {
				t.Errorf("%s: resolved to another value", c.Name)
			}
		}
	}
}
