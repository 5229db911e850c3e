package stores

import (
	"crypto/sha256"
	"strings"
	"testing"

	"github.com/offloader/offloader/pointer"
)

// A Put's body digest is the metadata's sha256 when the metadata says the
// value is stored as it is, and is computed otherwise: for another codec,
// no codec, or a digest that is not one.
func TestBodySHA256TakesTheDigestOfAValueStoredAsItIs(t *testing.T) {
	value := []byte("payload")
	want := pointer.Digest(sha256.Sum256(value))
	given := strings.Repeat("ab", sha256.Size) // not value's: shows that it was taken
	for _, c := range []struct {
		meta Metadata
		want string
	}{
		{Metadata{MetaSHA256: given, MetaCodec: pointer.CodecNone}, given},
		{Metadata{MetaSHA256: given, MetaCodec: "zstd"}, want},
		{Metadata{MetaSHA256: given}, want},
		{Metadata{MetaSHA256: "abc", MetaCodec: pointer.CodecNone}, want},
		{nil, want},
	} {
		if got := BodySHA256(value, c.meta); got != c.want {
			t.Errorf("BodySHA256 with %v = %s, want %s", c.meta, got, c.want)
		}
	}
}
