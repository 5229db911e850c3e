package stores

import (
	"crypto/sha256"
	"errors"
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

// A Put replaces an object that names no owner, or a redo of the same
// record: the same owner, writer, cluster and content. Any difference in
// one of those is refused, saying which, with ErrOwnedByOther; an existing
// object that does not name a field (written before objects named it)
// does not refuse on it.
func TestConflictRefusesAnotherRecordsWritersClustersOrContent(t *testing.T) {
	redo := Metadata{MetaOwner: "raw/0/4", MetaWriter: "orders@slim", MetaCluster: "c1", MetaSHA256: "aa"}
	with := func(key, value string) Metadata {
		m := Metadata{}
		for k, v := range redo {
			m[k] = v
		}
		if value == "" {
			delete(m, key)
		} else {
			m[key] = value
		}
		return m
	}
	for _, c := range []struct {
		existing Metadata
		want     string // "" allowed
	}{
		{nil, ""},
		{Metadata{MetaWriter: "someone"}, ""},
		{redo, ""},
		{with(MetaCluster, ""), ""},
		{with(MetaWriter, ""), ""},
		{with(MetaOwner, "raw/0/5"), "(raw/0/5, not raw/0/4)"},
		{with(MetaCluster, "c2"), "by Kafka cluster c2, not this pipeline's cluster c1"},
		{with(MetaWriter, "orders@other"), "by orders@other, not orders@slim"},
		{with(MetaSHA256, "bb"), "with other content (sha256 bb, not aa)"},
	} {
		err := Conflict(c.existing, redo)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("over %v: %v, want it replaced", c.existing, err)
		case c.want != "" && (!errors.Is(err, ErrOwnedByOther) || !strings.Contains(err.Error(), c.want)):
			t.Errorf("over %v: %v, want ErrOwnedByOther saying %q", c.existing, err, c.want)
		}
	}
}
