package gc

import (
	"context"
	"fmt"
	"regexp"

	"github.com/offloader/offloader/pipeline"
	"github.com/offloader/offloader/pointer"
	"github.com/offloader/offloader/resolver"
	"github.com/offloader/offloader/stores"
)

// versionLike is what a pointer version of some offloader looks like: a
// record marked so with a version other than v1 is a pointer gc cannot read.
// Any other marker value cannot be a pointer of any version.
var versionLike = regexp.MustCompile(`^v[0-9]{1,4}$`)

// maxWholeRecord bounds the whole-record objects gc reads to look inside.
const maxWholeRecord = 1 << 30

// noter notes what the records it is given reference.
type noter struct {
	refs references
	// place is the place of the store a pointer names (Plan.place).
	place   func(store string) string
	rep     *Report
	records int
	// wholes are the pointers to whole-record objects, to look inside.
	wholes []wholeRecord
}

type wholeRecord struct {
	p    pointer.Pointer
	kind refKind
	at   string
}

// note returns the callback that notes each record of a read as a
// reference of kind, counting pointers per partition in counts when given.
func (n *noter) note(kind refKind, counts map[int32]*int) func(*pipeline.Record) error {
	return func(r *pipeline.Record) error {
		n.records++
		at := fmt.Sprintf("%s[%d]@%d", r.Topic, r.Partition, r.Offset)
		p, ok, err := n.classify(r.Header, r.Value, at, r)
		if err != nil || !ok {
			return err
		}
		n.rep.Pointers++
		if c := counts[r.Partition]; c != nil {
			*c++
		}
		n.refs.add(n.place(p.Store), p.Key, kind)
		if _, whole := r.Header(pointer.HeaderRecord); whole {
			n.wholes = append(n.wholes, wholeRecord{p: p, kind: kind, at: at})
		}
		return nil
	}
}

// classify says whether a record is a pointer and to what. A record marked
// as a pointer of an unknown version is an error; one whose marker or value
// cannot be a pointer of any version references nothing and is listed.
func (n *noter) classify(header func(string) ([]byte, bool), value []byte, at string, r *pipeline.Record) (pointer.Pointer, bool, error) {
	if !pointer.IsPointer(header) {
		return pointer.Pointer{}, false, nil
	}
	if err := pointer.CheckVersion(header); err != nil {
		v, _ := header(pointer.HeaderPointer)
		if versionLike.Match(v) {
			return pointer.Pointer{}, false, &UnknownVersionError{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, Version: string(v)}
		}
		n.rep.notPointer(at, err)
		return pointer.Pointer{}, false, nil
	}
	p, err := pointer.Decode(value)
	if err != nil {
		n.rep.notPointer(at, err)
		return pointer.Pointer{}, false, nil
	}
	return p, true, nil
}

// lookInside reads each whole-record object that a record references and
// notes what the record kept there references, when it was a pointer.
func (n *noter) lookInside(ctx context.Context, open map[string]stores.Store) error {
	res := resolver.New(resolver.Options{Stores: open, MaxSize: maxWholeRecord, NotFound: resolver.NotFoundSkip})
	for _, w := range n.wholes {
		if _, ok := open[w.p.Store]; !ok {
			return fmt.Errorf("%s keeps a whole record in store %q, which this pipeline does not configure: gc cannot look inside it to see what it references", w.at, w.p.Store)
		}
		got, err := res.ResolvePointer(ctx, w.p.Encode(), markedV1)
		switch {
		case err != nil:
			return fmt.Errorf("looking inside the whole record that %s keeps (store %q key %s): %w", w.at, w.p.Store, w.p.Key, err)
		case got.Skipped:
			continue // gone: what it held is referenced by nothing
		}
		whole, err := pointer.DecodeRecord(got.Value)
		if err != nil {
			return fmt.Errorf("looking inside the whole record that %s keeps (store %q key %s): %w", w.at, w.p.Store, w.p.Key, err)
		}
		inner := &pipeline.Record{Topic: whole.Topic, Partition: whole.Partition, Offset: whole.Offset, Value: whole.Value}
		for _, h := range whole.Headers {
			inner.Headers = append(inner.Headers, pipeline.Header{Key: string(h.Key), Value: h.Value})
		}
		p, ok, err := n.classify(inner.Header, inner.Value, w.at+" (the record kept whole)", inner)
		if err != nil {
			return fmt.Errorf("the whole record that %s keeps: %w", w.at, err)
		}
		if ok {
			n.refs.add(n.place(p.Store), p.Key, w.kind)
			n.rep.Inside++
		}
	}
	return nil
}

// markedV1 is the header of a record marked as a v1 pointer.
func markedV1(name string) ([]byte, bool) {
	if name == pointer.HeaderPointer {
		return []byte(pointer.Version1), true
	}
	return nil, false
}
