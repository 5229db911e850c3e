package stores

import (
	"context"
	"fmt"

	"github.com/offloader/offloader/settings"
)

// Backend is what a store type registers: a constructor for its typed config
// (with defaults filled in; settings.Decode fills the rest from YAML) and a
// function that opens a store from that config.
type Backend struct {
	// NewConfig returns a pointer to a config struct holding the defaults.
	NewConfig func() any
	// Open connects to the store. name is the store's name in the pipeline file.
	Open func(ctx context.Context, name string, config any) (Store, error)
}

// Backends is the registry of store types.
var Backends settings.Registry[Backend]

// Register makes a store type available by name; a duplicate name panics.
func Register(typ string, b Backend) { Backends.Register(typ, b) }

// Open builds the store named name of type typ from its decoded config.
func Open(ctx context.Context, name, typ string, config any) (Store, error) {
	b, ok := Backends.Lookup(typ)
	if !ok {
		return nil, fmt.Errorf("store %q: unknown type %q (known: %v)", name, typ, Backends.Types())
	}
	return b.Open(ctx, name, config)
}
