package config

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// StoreName is one name of a store: the store, in a pipeline, in a file.
type StoreName struct {
	File, Pipeline, Store string
}

func (n StoreName) String() string {
	return fmt.Sprintf("%q of pipeline %s (%s)", n.Store, n.Pipeline, n.File)
}

// SharedPlace is one physical store (Store.Place) that several store names
// resolve to.
type SharedPlace struct {
	Place string
	Names []StoreName
}

// Note says what the shared place means for offloader gc, for validate.
func (s SharedPlace) Note() string {
	names := make([]string, len(s.Names))
	for i, n := range s.Names {
		names[i] = n.String()
	}
	return fmt.Sprintf("stores %s are one physical store (%s): offloader gc matches pointers by the store's place and the key, so a pointer naming any of these names keeps its object, "+
		"and a pipeline's gc deletes there only objects under its own prefixes that name it as their writer and its Kafka cluster (docs/payload-lifetime.md, \"One store under several names\")",
		strings.Join(names, ", "), s.Place)
}

// SharedPlaces names every physical store that more than one store name
// resolves to, in the files given (by path) and across them.
func SharedPlaces(files map[string]*File) []SharedPlace {
	byPlace := map[string][]StoreName{}
	for _, path := range slices.Sorted(maps.Keys(files)) {
		f := files[path]
		for _, pname := range slices.Sorted(maps.Keys(f.Pipelines)) {
			p := f.Pipelines[pname]
			for _, sname := range slices.Sorted(maps.Keys(p.Stores)) {
				if s := p.Stores[sname]; s != nil {
					byPlace[s.Place()] = append(byPlace[s.Place()], StoreName{File: path, Pipeline: pname, Store: sname})
				}
			}
		}
	}
	var out []SharedPlace
	for _, place := range slices.Sorted(maps.Keys(byPlace)) {
		if names := byPlace[place]; len(names) > 1 {
			out = append(out, SharedPlace{Place: place, Names: names})
		}
	}
	return out
}
