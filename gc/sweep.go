package gc

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/offloader/offloader/stores"
)

// Count is how many objects and bytes a verdict has, with a few examples.
type Count struct {
	Objects  int64    `json:"objects"`
	Bytes    int64    `json:"bytes"`
	Examples []string `json:"examples"`
}

func (c *Count) add(key string, size int64) {
	c.Objects++
	c.Bytes += size
	if len(c.Examples) < 5 {
		c.Examples = append(c.Examples, key)
	}
}

// Sweep is what became of one prefix's objects, and why.
type Sweep struct {
	Store   string `json:"store"`
	Prefix  string `json:"prefix"`
	Adopted bool   `json:"adopted"`
	// Deleted (or, in a dry run, would be): unreferenced, old, this
	// pipeline's.
	Deleted Count `json:"deleted"`
	// Referenced: a committed record references it.
	Referenced Count `json:"referenced"`
	// Uncommitted: only a record past a partition's stable end references
	// it (behind an open transaction, or committed during the read).
	Uncommitted Count `json:"uncommitted"`
	// Young: written after the cutoff.
	Young Count `json:"young"`
	// OtherWriter: its metadata names another pipeline as its writer.
	OtherWriter Count `json:"other_writer"`
	// NoWriter: its metadata names no writer, under a prefix not adopted.
	NoWriter Count `json:"no_writer"`
	// OtherCluster: its metadata names another Kafka cluster, whose topics
	// gc did not read.
	OtherCluster Count `json:"other_cluster"`
	// NoCluster: its metadata names this pipeline as its writer but no
	// cluster (written before objects named their cluster), under a
	// prefix not adopted.
	NoCluster Count `json:"no_cluster"`
	// Outside: the listing returned a key outside the prefix asked for.
	Outside Count `json:"outside_prefix"`
}

// Listed is every object the listing returned.
func (s *Sweep) Listed() int64 { return s.Deleted.Objects + s.Kept() }

// Kept is every object the sweep kept.
func (s *Sweep) Kept() int64 {
	return s.Referenced.Objects + s.Uncommitted.Objects + s.Young.Objects + s.OtherWriter.Objects + s.NoWriter.Objects + s.OtherCluster.Objects + s.NoCluster.Objects + s.Outside.Objects
}

// sweepPrefix lists one prefix and deletes what no record references, that
// is old, and that is the pipeline's by its metadata (read afresh with
// Stat, so that an object rewritten since the listing is seen young).
func sweepPrefix(ctx context.Context, plan Plan, s stores.Store, p Prefix, refs references, cutoff time.Time) (Sweep, error) {
	sw := Sweep{Store: p.Store, Prefix: p.Prefix, Adopted: p.Adopted}
	under := p.Prefix + "/"
	listed := 0
	err := s.List(ctx, under, func(o stores.Object) error {
		listed++
		switch kind := refs[plan.place(p.Store)][o.Key]; {
		case !strings.HasPrefix(o.Key, under):
			sw.Outside.add(o.Key, o.Size)
			return nil
		case kind == committedRef:
			sw.Referenced.add(o.Key, o.Size)
			return nil
		case kind == uncommittedRef:
			sw.Uncommitted.add(o.Key, o.Size)
			return nil
		case !o.Modified.Before(cutoff):
			sw.Young.add(o.Key, o.Size)
			return nil
		}
		info, err := s.Stat(ctx, o.Key)
		switch {
		case errors.Is(err, stores.ErrNotFound):
			return nil // deleted meanwhile
		case err != nil:
			return err
		case !info.Modified.IsZero() && !info.Modified.Before(cutoff):
			sw.Young.add(o.Key, o.Size) // written again since it was listed
			return nil
		}
		for _, id := range []struct {
			meta, ours   string
			none, others *Count
		}{
			{stores.MetaWriter, plan.Writer, &sw.NoWriter, &sw.OtherWriter},
			{stores.MetaCluster, plan.Cluster, &sw.NoCluster, &sw.OtherCluster},
		} {
			switch said := info.Metadata[id.meta]; {
			case said == id.ours, said == "" && p.Adopted:
			case said == "":
				id.none.add(o.Key, o.Size)
				return nil
			default:
				id.others.add(o.Key+" ("+id.meta+" "+said+")", o.Size)
				return nil
			}
		}
		if !plan.DryRun {
			if err := s.Delete(ctx, o.Key); err != nil {
				return err
			}
		}
		sw.Deleted.add(o.Key, o.Size)
		return nil
	})
	if err != nil {
		verb := "deleted"
		if plan.DryRun {
			verb = "would have been deleted"
		}
		return sw, fmt.Errorf("store %q under %s: %w (%d objects %s before it)", p.Store, under, err, sw.Deleted.Objects, verb)
	}
	return sw, nil
}
