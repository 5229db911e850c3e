package integration

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/offloader/offloader/pointer"
	"github.com/offloader/offloader/resolver"
	"github.com/offloader/offloader/stores"
)

// pythonVerdicts runs the documented minimal Python reader's resolve() on each case
// (value and headers) and returns, per case, the SHA-256 of what it resolved
// to, or "error".
const pythonVerdicts = `
import base64, hashlib, json, sys
sys.path.insert(0, sys.argv[1])
import minimal_reader as rp
stores = rp.open_stores(["disk=file:" + sys.argv[2]])
for case in json.load(sys.stdin):
    value = base64.b64decode(case["value"])
    headers = [(k, v.encode()) for k, v in case["headers"]]
    try:
        print(hashlib.sha256(rp.resolve(value, headers, stores)).hexdigest())
    except Exception:
        print("error")
`

// TestGoAndPythonReadersAgreeOnPointers: the Go resolver and the Python
// example in docs/pointer-format.md take the same records for pointers and
// refuse the same forged ones: one rule, as documented.
func TestGoAndPythonReadersAgreeOnPointers(t *testing.T) {
	t.Parallel()
	python := pythonEnv(t)
	root := t.TempDir()
	store := openFS(t, root)
	payload := []byte("the payload, nineteen+")
	if err := store.Put(context.Background(), "p/t/0/1", payload, nil); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(t.TempDir(), "secret"), []byte("secret"), 0o600)
	os.Symlink(filepath.Join(root, "p", "t", "0", "1"), filepath.Join(root, "p", "t", "0", "link"))
	good := pointer.Pointer{Store: "disk", Key: "p/t/0/1", Size: int64(len(payload)), SHA256: pointer.Digest(sha256.Sum256(payload)), Codec: pointer.CodecNone, StoredSize: int64(len(payload))}
	forge := func(change func(*pointer.Pointer)) []byte {
		p := good
		change(&p)
		return p.Encode()
	}
	var gz bytes.Buffer
	w := gzip.NewWriter(&gz)
	w.Write(payload)
	w.Close()
	v1 := [][2]string{{pointer.HeaderLargeMessage, "true"}, {pointer.HeaderPointer, "v1"}}
	type testCase struct {
		name    string
		value   []byte
		headers [][2]string
		valid   bool // resolves (to payload, or to the value itself)
	}
	cases := []testCase{
		{"no headers", []byte("plain"), nil, true},
		{"large-message alone", good.Encode(), [][2]string{{pointer.HeaderLargeMessage, "true"}}, true},
		{"v1 pointer", good.Encode(), v1, true},
		{"v1 without large-message", good.Encode(), [][2]string{{pointer.HeaderPointer, "v1"}}, true},
		{"marker v2", good.Encode(), [][2]string{{pointer.HeaderPointer, "v2"}}, false},
		{"marker V1", good.Encode(), [][2]string{{pointer.HeaderPointer, "V1"}}, false},
		{"marker ' v1'", good.Encode(), [][2]string{{pointer.HeaderPointer, " v1"}}, false},
		{"last marker wins", good.Encode(), [][2]string{{pointer.HeaderPointer, "v1"}, {pointer.HeaderPointer, "v2"}}, false},
		{"member STORE", []byte(strings.Replace(string(good.Encode()), `"store"`, `"STORE"`, 1)), v1, false},
		{"member twice", []byte(strings.Replace(string(good.Encode()), `"v":1,`, `"v":1,"store":"disk",`, 1)), v1, false},
		{"null member", []byte(strings.Replace(string(good.Encode()), `"codec":"none"`, `"codec":null`, 1)), v1, false},
		{"v true", []byte(strings.Replace(string(good.Encode()), `"v":1`, `"v":true`, 1)), v1, false},
		{"size 22.0", []byte(strings.Replace(string(good.Encode()), `"size":22`, `"size":22.0`, 1)), v1, false},
		{"wrong hash", forge(func(p *pointer.Pointer) { p.SHA256 = strings.Repeat("ab", 32) }), v1, false},
		{"dot-dot key", forge(func(p *pointer.Pointer) { p.Key = "../secret" }), v1, false},
		{"symlink key", forge(func(p *pointer.Pointer) { p.Key = "p/t/0/link" }), v1, false},
		{"stored_size under the object", forge(func(p *pointer.Pointer) { p.Size, p.StoredSize = 5, 5 }), v1, false},
		{"inline gzip", gz.Bytes(), [][2]string{{pointer.HeaderInlineCodec, "gzip"}, {pointer.HeaderInlineSize, "22"}}, true},
		{"inline size +22", gz.Bytes(), [][2]string{{pointer.HeaderInlineCodec, "gzip"}, {pointer.HeaderInlineSize, "+22"}}, false},
		{"inline size 21", gz.Bytes(), [][2]string{{pointer.HeaderInlineCodec, "gzip"}, {pointer.HeaderInlineSize, "21"}}, false},
	}
	type wire struct {
		Value   string      `json:"value"`
		Headers [][2]string `json:"headers"`
	}
	var in []wire
	for _, c := range cases {
		if c.headers == nil {
			c.headers = [][2]string{}
		}
		in = append(in, wire{Value: base64.StdEncoding.EncodeToString(c.value), Headers: c.headers})
	}
	stdin, _ := json.Marshal(in)
	cmd := command(python, "-c", pythonVerdicts, "../docs/examples", root)
	cmd.Stdin = bytes.NewReader(stdin)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("python: %v\n%s", err, stderr.String())
	}
	verdicts := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(verdicts) != len(cases) {
		t.Fatalf("python gave %d verdicts for %d cases:\n%s", len(verdicts), len(cases), out)
	}
	res := resolver.New(resolver.Options{Stores: map[string]stores.Store{"disk": store}})
	for i, c := range cases {
		header := func(name string) ([]byte, bool) {
			for j := len(c.headers) - 1; j >= 0; j-- {
				if c.headers[j][0] == name {
					return []byte(c.headers[j][1]), true
				}
			}
			return nil, false
		}
		goVerdict := "error"
		if r, err := res.Resolve(context.Background(), c.value, header); err == nil {
			goVerdict = pointer.Digest(sha256.Sum256(r.Value))
		}
		if goVerdict != verdicts[i] {
			t.Errorf("%s: Go says %s, Python says %s", c.name, goVerdict, verdicts[i])
		}
		if (goVerdict != "error") != c.valid {
			t.Errorf("%s: resolved %v, want %v", c.name, goVerdict != "error", c.valid)
		}
	}
}
