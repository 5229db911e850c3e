// Package gc decides which payloads no committed pointer can still
// reference, so that offloader gc deletes them and nothing else. It reads no
// topic and lists no store itself: the caller feeds it the records of the
// topics that may hold pointers (slim, retry, dead-letter, read_committed
// and whole) and the objects under the pipeline's key prefixes.
//
// An object is deleted only when no record read references it and it was
// written before the cutoff: the time the topics' reading began, less a
// grace period. The grace covers a pointer committed while gc runs (its
// object is written moments before the commit) and an object whose pointer
// is in a transaction still open. Objects whose pointers aged out of the
// topic's retention, and those of aborted transactions, are unreferenced
// and, once past the grace, deleted.
package gc

import (
	"github.com/offloader/offloader/pipeline"
	"github.com/offloader/offloader/pointer"
	"github.com/offloader/offloader/stores"
)

// References are the objects pointer records reference, by store name.
type References map[string]map[string]bool

// Add notes the object a record references, if it is a pointer. A record
// that is marked as a pointer but does not decode is an error: gc must not
// go on without knowing what it references.
func (r References) Add(rec *pipeline.Record) error {
	if !pointer.IsPointer(rec.Header) {
		return nil
	}
	p, err := pointer.Decode(rec.Value)
	if err != nil {
		return err
	}
	if r[p.Store] == nil {
		r[p.Store] = map[string]bool{}
	}
	r[p.Store][p.Key] = true
	return nil
}

// Count is how many objects and bytes a verdict has, with a few examples.
type Count struct {
	Objects  int64
	Bytes    int64
	Examples []string
}

func (c *Count) add(o stores.Object) {
	c.Objects++
	c.Bytes += o.Size
	if len(c.Examples) < 5 {
		c.Examples = append(c.Examples, o.Key)
	}
}

// Sweep sorts a store's objects into what is deleted and what is kept, and why.
type Sweep struct {
	// Delete: referenced by no record read, written before the cutoff.
	Delete Count
	// Referenced: a record read references it.
	Referenced Count
	// Young: unreferenced, but written after the cutoff (within the grace).
	Young Count
}

// Decide says whether object o of a store whose references are refs is to
// be deleted, and counts it.
func (s *Sweep) Decide(o stores.Object, refs map[string]bool, cutoff Cutoff) bool {
	switch {
	case refs[o.Key]:
		s.Referenced.add(o)
		return false
	case !o.Modified.Before(cutoff.Time):
		s.Young.add(o)
		return false
	}
	s.Delete.add(o)
	return true
}
