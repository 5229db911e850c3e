// Package pointer is offloader's pointer record format, version 1: the small slim
// topic record that stands for a payload kept in a store. It is documented in
// docs/pointer-format.md so that consumers in any language can read it; this
// package is the reference implementation, with no dependency on a Kafka client.
//
// A pointer record carries the headers `large-message: true` and
// `offloader-pointer: v1`, and its value is a JSON object:
//
//	{"v":1,"store":"blob","key":"orders/orders.raw/3/1207","size":4194304,
//	 "sha256":"9f86d0...","codec":"none","stored_size":4194304}
package pointer

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"unicode/utf8"
)

// Header names and values that mark a pointer record.
const (
	// HeaderLargeMessage is KIP-1159's marker, set to "true" on every pointer record.
	HeaderLargeMessage = "large-message"
	// HeaderPointer names the pointer format version, "v1".
	HeaderPointer = "offloader-pointer"
	// Version1 is the value of HeaderPointer for this format.
	Version1 = "v1"
)

// Codecs a stored payload may be encoded with.
const CodecNone = "none"

// Headers of a value kept inline but compressed (the compress_inline step): the
// value is the named codec's encoding of HeaderInlineSize bytes (decimal).
const (
	HeaderInlineCodec = "offloader-codec"
	HeaderInlineSize  = "offloader-size"
)

// MaxEncodedSize bounds a pointer's JSON value; a longer value is not a pointer.
// (A key is at most 1,024 bytes; the rest is well under 1 KiB.)
const MaxEncodedSize = 4096

// Pointer is the value of a pointer record.
type Pointer struct {
	// Store is the name of the store in the pipeline (and consumer) configuration,
	// never a URL or a path: consumers resolve it through their own configuration.
	Store string `json:"store"`
	// Key is the object key inside that store.
	Key string `json:"key"`
	// Size is the length of the original value in bytes.
	Size int64 `json:"size"`
	// SHA256 is the lowercase hex SHA-256 of the original value.
	SHA256 string `json:"sha256"`
	// Codec is how the stored bytes are encoded ("none": stored as is).
	Codec string `json:"codec"`
	// StoredSize is the number of bytes in the store.
	StoredSize int64 `json:"stored_size"`
}

// Encode returns the pointer's JSON value.
func (p Pointer) Encode() []byte {
	// The version first, then the members in the documented order.
	b, err := json.Marshal(struct {
		V int `json:"v"`
		Pointer
	}{1, p})
	if err != nil {
		panic("pointer: encoding a struct of strings and integers failed: " + err.Error())
	}
	return b
}

// ErrMalformed is wrapped by every Decode error: the value claims to be a pointer
// (by its headers) but is not a well-formed v1 pointer.
var ErrMalformed = errors.New("malformed pointer")

var sha256Hex = regexp.MustCompile(`^[0-9a-f]{64}$`)

// members are the v1 members, exactly as spelled (encoding/json would match
// "STORE" to "store"), each with the Go type its JSON value must decode into.
func members(v *int, p *Pointer) map[string]any {
	return map[string]any{"v": v, "store": &p.Store, "key": &p.Key, "size": &p.Size,
		"sha256": &p.SHA256, "codec": &p.Codec, "stored_size": &p.StoredSize}
}

// Decode parses and checks a pointer value: exactly the seven v1 members, each
// once and spelled exactly, of the right type, version 1, a 64-character
// lowercase hex SHA-256, non-negative sizes, in UTF-8 (never UTF-16 or 32),
// with no replacement character (U+FFFD) in the store or key: it cannot be
// told from an escaped lone surrogate, which JSON decoders turn into it, or
// keep, or refuse, each in its own way. It does not check the key against a
// store's rules or the codec against the codecs a reader knows; resolvers do
// that.
func Decode(value []byte) (Pointer, error) {
	if len(value) > MaxEncodedSize {
		return Pointer{}, fmt.Errorf("%w: %d bytes, more than %d", ErrMalformed, len(value), MaxEncodedSize)
	}
	if !utf8.Valid(value) {
		return Pointer{}, fmt.Errorf("%w: not UTF-8", ErrMalformed)
	}
	var p Pointer
	var v int
	targets := members(&v, &p)
	dec := json.NewDecoder(bytes.NewReader(value))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return Pointer{}, fmt.Errorf("%w: not a JSON object", ErrMalformed)
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return Pointer{}, fmt.Errorf("%w: %v", ErrMalformed, err)
		}
		name, _ := tok.(string)
		target, known := targets[name]
		switch {
		case !known:
			return Pointer{}, fmt.Errorf("%w: unknown member %q", ErrMalformed, cut(name))
		case seen[name]:
			return Pointer{}, fmt.Errorf("%w: member %q appears twice", ErrMalformed, name)
		}
		seen[name] = true
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return Pointer{}, fmt.Errorf("%w: member %q: %v", ErrMalformed, name, err)
		}
		if string(raw) == "null" {
			return Pointer{}, fmt.Errorf("%w: member %q is null", ErrMalformed, name)
		}
		if err := json.Unmarshal(raw, target); err != nil {
			return Pointer{}, fmt.Errorf("%w: member %q: %v", ErrMalformed, name, err)
		}
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return Pointer{}, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return Pointer{}, fmt.Errorf("%w: data after the JSON object", ErrMalformed)
	}
	for _, name := range []string{"v", "store", "key", "size", "sha256", "codec", "stored_size"} {
		if !seen[name] {
			return Pointer{}, fmt.Errorf("%w: member %q is missing", ErrMalformed, name)
		}
	}
	switch {
	case v != 1:
		return Pointer{}, fmt.Errorf("%w: version %d, this reader knows version 1", ErrMalformed, v)
	case p.Store == "":
		return Pointer{}, fmt.Errorf("%w: empty store", ErrMalformed)
	case p.Key == "":
		return Pointer{}, fmt.Errorf("%w: empty key", ErrMalformed)
	case strings.ContainsRune(p.Key, utf8.RuneError) || strings.ContainsRune(p.Store, utf8.RuneError):
		return Pointer{}, fmt.Errorf("%w: the store or key holds U+FFFD or a lone surrogate", ErrMalformed)
	case p.Size < 0 || p.StoredSize < 0:
		return Pointer{}, fmt.Errorf("%w: negative size", ErrMalformed)
	case !sha256Hex.MatchString(p.SHA256):
		return Pointer{}, fmt.Errorf("%w: sha256 must be 64 lowercase hex characters", ErrMalformed)
	case p.Codec == "":
		return Pointer{}, fmt.Errorf("%w: empty codec", ErrMalformed)
	case p.Codec == CodecNone && p.StoredSize != p.Size:
		return Pointer{}, fmt.Errorf("%w: codec none but stored_size %d differs from size %d", ErrMalformed, p.StoredSize, p.Size)
	}
	return p, nil
}

// cut shortens a forged member name for an error message.
func cut(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}

// Digest returns the lowercase hex SHA-256 of a digest, as Pointer.SHA256 holds it.
func Digest(sum [32]byte) string { return hex.EncodeToString(sum[:]) }

// ErrUnknownVersion is returned by CheckVersion for a record marked as a
// pointer of a version this reader does not know (anything but exactly "v1").
var ErrUnknownVersion = errors.New("unknown pointer version")

// IsPointer reports whether a record's headers mark it as a pointer record:
// it carries the header offloader-pointer, whatever its value. header returns
// the value of the last header with the given name. Such a record is never an
// ordinary value: CheckVersion says whether this reader can resolve it.
func IsPointer(header func(name string) ([]byte, bool)) bool {
	_, ok := header(HeaderPointer)
	return ok
}

// CheckVersion returns nil when the record's last offloader-pointer header is
// exactly "v1", and an ErrUnknownVersion error otherwise.
func CheckVersion(header func(name string) ([]byte, bool)) error {
	v, ok := header(HeaderPointer)
	if ok && string(v) == Version1 {
		return nil
	}
	if len(v) > 16 {
		v = append(v[:16:16], "..."...)
	}
	return fmt.Errorf("%w %q: this reader knows %q", ErrUnknownVersion, v, Version1)
}
