package engine

import "github.com/offloader/offloader/pipeline"

// consumed counts each source offset once in this process as consumed,
// whatever sent it back to be read again (a rewind, a dropped batch, an
// assignment lost and won back): a record read again counts as reread.
type consumed struct {
	// next holds, per partition, the offset after the highest record
	// counted.
	next map[Partition]*int64
	// last is next's entry of the partition of the record counted last
	// (records come in runs of one partition): no lookup for the next.
	last     *int64
	lastPart Partition
}

// reread counts rec, and reports whether it was read before.
func (c *consumed) reread(rec *pipeline.Record) bool {
	next := c.last
	if next == nil || c.lastPart.Partition != rec.Partition || c.lastPart.Topic != rec.Topic {
		p := Partition{Topic: rec.Topic, Partition: rec.Partition}
		if next = c.next[p]; next == nil {
			next = new(int64)
			*next = -1 // nothing counted yet
			c.next[p] = next
		}
		c.last, c.lastPart = next, p
	}
	if rec.Offset < *next {
		return true
	}
	*next = rec.Offset + 1
	return false
}
