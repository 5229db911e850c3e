package pointer

import (
	"crypto/sha256"
	"errors"
	"strings"
	"testing"
)

var digest = Digest(sha256.Sum256([]byte("payload")))

// TestEncodeDecodeRoundTrip: what the daemon writes, readers read back unchanged,
// with the members in the documented order.
func TestEncodeDecodeRoundTrip(t *testing.T) {
	p := Pointer{Store: "blob", Key: "orders/orders.raw/3/1207", Size: 7, SHA256: digest, Codec: CodecNone, StoredSize: 7}
	enc := p.Encode()
	want := `{"v":1,"store":"blob","key":"orders/orders.raw/3/1207","size":7,"sha256":"` + digest + `","codec":"none","stored_size":7}`
	if string(enc) != want {
		t.Fatalf("Encode = %s\nwant     %s", enc, want)
	}
	got, err := Decode(enc)
	if err != nil || got != p {
		t.Fatalf("Decode = %+v, %v", got, err)
	}
}

// TestDecodeRejectsForgedPointers: every malformed or forged value is a typed
// error, never a panic and never a pointer.
func TestDecodeRejectsForgedPointers(t *testing.T) {
	ok := `"store":"blob","key":"k","size":7,"sha256":"` + digest + `","codec":"none","stored_size":7`
	cases := map[string]string{
		"not JSON":            `not json`,
		"empty":               ``,
		"array":               `[1]`,
		"version 2":           `{"v":2,` + ok + `}`,
		"no version":          `{` + ok + `}`,
		"unknown member":      `{"v":1,` + ok + `,"url":"http://evil"}`,
		"missing key":         `{"v":1,"store":"blob","size":7,"sha256":"` + digest + `","codec":"none","stored_size":7}`,
		"string size":         `{"v":1,"store":"blob","key":"k","size":"7","sha256":"` + digest + `","codec":"none","stored_size":7}`,
		"negative size":       `{"v":1,"store":"blob","key":"k","size":-7,"sha256":"` + digest + `","codec":"none","stored_size":-7}`,
		"upper hex":           `{"v":1,"store":"blob","key":"k","size":7,"sha256":"` + strings.ToUpper(digest) + `","codec":"none","stored_size":7}`,
		"short hash":          `{"v":1,"store":"blob","key":"k","size":7,"sha256":"abc","codec":"none","stored_size":7}`,
		"size mismatch":       `{"v":1,"store":"blob","key":"k","size":7,"sha256":"` + digest + `","codec":"none","stored_size":8}`,
		"trailing data":       `{"v":1,` + ok + `} {}`,
		"empty store":         `{"v":1,"store":"","key":"k","size":7,"sha256":"` + digest + `","codec":"none","stored_size":7}`,
		"oversize value":      `{"v":1,` + ok + `,"pad":"` + strings.Repeat("x", MaxEncodedSize) + `"}`,
		"member in capitals":  `{"v":1,"STORE":"blob","key":"k","size":7,"sha256":"` + digest + `","codec":"none","stored_size":7}`,
		"member twice":        `{"v":1,` + ok + `,"store":"other"}`,
		"null member":         `{"v":1,"store":"blob","key":"k","size":null,"sha256":"` + digest + `","codec":"none","stored_size":7}`,
		"version as a string": `{"v":"1",` + ok + `}`,
		"fractional size":     `{"v":1,"store":"blob","key":"k","size":7.5,"sha256":"` + digest + `","codec":"none","stored_size":7}`,
	}
	for name, value := range cases {
		if p, err := Decode([]byte(value)); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: Decode = %+v, %v; want ErrMalformed", name, p, err)
		}
	}
}

// TestOnlyExactlyV1IsAKnownVersion: a record marked as a pointer of any other
// version is never taken for an ordinary value, nor for v1.
func TestOnlyExactlyV1IsAKnownVersion(t *testing.T) {
	header := func(v string) func(string) ([]byte, bool) {
		return func(name string) ([]byte, bool) { return []byte(v), name == HeaderPointer }
	}
	if err := CheckVersion(header("v1")); err != nil || !IsPointer(header("v1")) {
		t.Fatalf("v1: IsPointer %v, CheckVersion %v", IsPointer(header("v1")), err)
	}
	for _, v := range []string{"v2", "V1", " v1", "v1 ", "", "1"} {
		if !IsPointer(header(v)) {
			t.Errorf("marker %q: IsPointer false, want true (never an ordinary value)", v)
		}
		if err := CheckVersion(header(v)); !errors.Is(err, ErrUnknownVersion) {
			t.Errorf("marker %q: CheckVersion = %v, want ErrUnknownVersion", v, err)
		}
	}
	none := func(string) ([]byte, bool) { return nil, false }
	if IsPointer(none) {
		t.Error("a record without the marker is a pointer")
	}
}

// FuzzDecode: no input makes Decode panic, and whatever it accepts re-encodes to
// a value it accepts again, unchanged.
func FuzzDecode(f *testing.F) {
	f.Add(Pointer{Store: "s", Key: "a/b", Size: 1, SHA256: digest, Codec: "none", StoredSize: 1}.Encode())
	f.Add([]byte(`{"v":1}`))
	f.Fuzz(func(t *testing.T, value []byte) {
		p, err := Decode(value)
		if err != nil {
			return
		}
		again, err := Decode(p.Encode())
		if err != nil || again != p {
			t.Fatalf("accepted %q but its re-encoding gives %+v, %v", value, again, err)
		}
	})
}
