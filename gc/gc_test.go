package gc

import (
	"strings"
	"testing"
	"time"

	"github.com/offloader/offloader/pipeline"
	"github.com/offloader/offloader/pointer"
	"github.com/offloader/offloader/stores"
)

func pointerRecord(store, key string) *pipeline.Record {
	p := pointer.Pointer{Store: store, Key: key, Size: 1, SHA256: strings.Repeat("0", 64), Codec: pointer.CodecNone, StoredSize: 1}
	return &pipeline.Record{Value: p.Encode(), Headers: []pipeline.Header{
		{Key: pointer.HeaderLargeMessage, Value: []byte("true")}, {Key: pointer.HeaderPointer, Value: []byte("v1")}}}
}

// Only an unreferenced object written before the cutoff is deleted.
func TestSweepDeletesOnlyUnreferencedOldObjects(t *testing.T) {
	refs := References{}
	for _, r := range []*pipeline.Record{pointerRecord("blob", "p/raw/0/1"), pointerRecord("other", "p/raw/0/2"), {Value: []byte("inline")}} {
		if err := refs.Add(r); err != nil {
			t.Fatal(err)
		}
	}
	began := time.Now()
	cutoff := NewCutoff(began, time.Hour)
	old, young := began.Add(-2*time.Hour), began.Add(-time.Minute)
	var s Sweep
	for _, tc := range []struct {
		o      stores.Object
		delete bool
	}{
		{stores.Object{Key: "p/raw/0/1", Size: 10, Modified: old}, false},   // referenced
		{stores.Object{Key: "p/raw/0/2", Size: 20, Modified: old}, true},    // referenced in another store only
		{stores.Object{Key: "p/raw/0/3", Size: 30, Modified: young}, false}, // within the grace
		{stores.Object{Key: "p/raw/0/4", Size: 40, Modified: old}, true},
	} {
		if got := s.Decide(tc.o, refs["blob"], cutoff); got != tc.delete {
			t.Errorf("%s: delete %v, want %v", tc.o.Key, got, tc.delete)
		}
	}
	if s.Delete.Objects != 2 || s.Delete.Bytes != 60 || s.Referenced.Objects != 1 || s.Young.Bytes != 30 {
		t.Errorf("sweep %+v", s)
	}
	bad := pointerRecord("blob", "k")
	bad.Value = []byte("{not json")
	if err := refs.Add(bad); err == nil {
		t.Error("a pointer that does not decode must stop gc")
	}
}
