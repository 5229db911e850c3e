package resolver

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"testing"

	"github.com/offloader/offloader/pipeline"
	"github.com/offloader/offloader/stores"
	"github.com/offloader/offloader/stores/filesystem"
)

// vectors are pointer/testdata/vectors.json: records and what every reader
// must make of them (the Java deserializer reads the same file).
type vectors struct {
	Objects map[string]string `json:"objects"`
	Cases   []struct {
		Name    string      `json:"name"`
		Headers [][2]string `json:"headers"`
		Value   string      `json:"value"`
		SHA256  string      `json:"sha256"`
		Reject  string      `json:"reject"`
	} `json:"cases"`
}

// rejectClass names the class of a resolver error as the vectors do.
func rejectClass(err error) string {
	for class, target := range map[string]error{
		"malformed": ErrMalformed, "unknown_version": ErrUnknownVersion, "unknown_store": ErrUnknownStore,
		"not_found": ErrNotFound, "checksum": ErrChecksum, "too_large": ErrTooLarge,
	} {
		if errors.Is(err, target) {
			return class
		}
	}
	return "other: " + err.Error()
}

// TestTheSharedVectors: every record of the shared vectors resolves to its
// SHA-256 or is refused in its class.
func TestTheSharedVectors(t *testing.T) {
	raw, err := os.ReadFile("../pointer/testdata/vectors.json")
	if err != nil {
		t.Fatal(err)
	}
	var v vectors
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	fs, err := filesystem.Open("payloads", filesystem.Config{Root: t.TempDir(), DirMode: 0o750, FileMode: 0o640})
	if err != nil {
		t.Fatal(err)
	}
	for key, b64 := range v.Objects {
		data, _ := base64.StdEncoding.DecodeString(b64)
		if err := fs.Put(context.Background(), key, data, nil); err != nil {
			t.Fatal(err)
		}
	}
	r := New(Options{Stores: map[string]stores.Store{"payloads": fs}})
	if len(v.Cases) < 30 {
		t.Fatalf("%d cases", len(v.Cases))
	}
	for _, c := range v.Cases {
		rec := &pipeline.Record{}
		for _, h := range c.Headers {
			rec.Headers = append(rec.Headers, pipeline.Header{Key: h[0], Value: []byte(h[1])})
		}
		res, err := r.Resolve(context.Background(), []byte(c.Value), rec.Header)
		switch {
		case c.Reject != "" && (err == nil || rejectClass(err) != c.Reject):
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
