package config

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/offloader/offloader/gc"
	"github.com/offloader/offloader/settings"
	"github.com/offloader/offloader/stores"
	"github.com/offloader/offloader/transforms"
)

// Writer is the pipeline's identity as the writer of its objects (their
// stores.MetaWriter metadata): its name and its slim topic, so that two
// pipelines of one name in different files, on one store, are told apart.
func (p *Pipeline) Writer() string { return p.Name + "@" + p.SlimTopic }

// KeyPrefixes are the key prefixes, by store, that the pipeline's offload
// steps write under, then those its stores adopt for gc (gc_adopt).
func (p *Pipeline) KeyPrefixes() []gc.Prefix {
	var out []gc.Prefix
	seen := map[[2]string]int{}
	add := func(store, prefix string, adopted bool) {
		k := [2]string{store, prefix}
		if i, ok := seen[k]; ok {
			// A store may adopt the prefix the pipeline writes under:
			// its objects that name no writer or cluster (written by
			// earlier versions) are then the pipeline's too.
			out[i].Adopted = out[i].Adopted || adopted
			return
		}
		seen[k] = len(out)
		out = append(out, gc.Prefix{Store: store, Prefix: prefix, Adopted: adopted})
	}
	for _, step := range p.Transforms {
		if step == nil {
			continue
		}
		if w, ok := step.Config.(transforms.KeyWriter); ok {
			store, prefix := w.WritesUnder(p.Name)
			add(store, prefix, false)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(p.Stores)) {
		if s := p.Stores[name]; s != nil {
			for _, prefix := range s.GCAdopt {
				add(name, prefix, true)
			}
		}
	}
	return out
}

// GCFloor is the shortest grace offloader gc takes for this pipeline
// (gc.Floor of its store budget, transaction.timeout.ms and commit
// interval).
func (p *Pipeline) GCFloor() time.Duration {
	return gc.Floor(p.Errors.StoreBudget, p.TransactionTimeout(), p.Commit.Interval)
}

// nested reports whether one key prefix lies within the other (or equals
// it), segment by segment: "orders" and "orders/eu" are nested, "orders"
// and "orders-eu" are not.
func nested(a, b string) bool {
	return strings.HasPrefix(a+"/", b+"/") || strings.HasPrefix(b+"/", a+"/")
}

// validatePrefixes refuses two pipelines of one file whose key prefixes on
// one store (the same type and settings) are equal or nested: each one's gc
// would take the other's objects under its prefix for its own.
func (f *File) validatePrefixes(problems *settings.Problems) {
	names := slices.Sorted(maps.Keys(f.Pipelines))
	for i, a := range names {
		for _, b := range names[i+1:] {
			pa, pb := f.Pipelines[a], f.Pipelines[b]
			for _, x := range pa.KeyPrefixes() {
				for _, y := range pb.KeyPrefixes() {
					if !nested(x.Prefix, y.Prefix) || !sameStore(pa.Stores[x.Store], pb.Stores[y.Store]) {
						continue
					}
					problems.Add(fmt.Sprintf("pipelines.%s", b), "writes under key prefix %q of store %q, which is the store pipeline %s writes under %q: "+
						"the prefixes of two pipelines on one store must not be equal or nested, or gc of one could delete the other's payloads; set a distinct prefix: on the offload step",
						y.Prefix, y.Store, a, x.Prefix)
				}
			}
		}
	}
}

// sameStore reports whether two store definitions name one store: one
// place.
func sameStore(a, b *Store) bool {
	return a != nil && b != nil && a.Place() == b.Place()
}

// Place is the physical place the store keeps its objects in
// (stores.Located), or, for a type that does not say, its type and
// settings.
func (s *Store) Place() string {
	if l, ok := s.Config.(stores.Located); ok {
		return l.Place()
	}
	return s.Type + ":" + fmt.Sprint(s.Settings)
}

// StorePlaces are the places of the pipeline's stores, by name.
func (p *Pipeline) StorePlaces() map[string]string {
	out := map[string]string{}
	for name, s := range p.Stores {
		if s != nil {
			out[name] = s.Place()
		}
	}
	return out
}
