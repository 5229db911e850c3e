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
	// Spec turns a store given on a command line (the SPEC of
	// --store NAME=TYPE:SPEC) into its settings, as the YAML would give them.
	Spec func(spec string) (map[string]any, error)
	// SpecForm shows what Spec takes, for --help and errors.
	SpecForm string
}

// FromSpec builds the decoded config of a store given as TYPE:SPEC on a
// command line. Problems carry path.
func FromSpec(path, typ, spec string) (any, error) {
	b, ok := Backends.Lookup(typ)
	if !ok || b.Spec == nil {
		return nil, fmt.Errorf("%s: unknown store type %q (known: %v)", path, typ, Backends.Types())
	}
	raw, err := b.Spec(spec)
	if err != nil {
		return nil, fmt.Errorf("%s: %v; want %s:%s", path, err, typ, b.SpecForm)
	}
	cfg := b.NewConfig()
	if problems := settings.Decode(path, raw, cfg); len(problems) > 0 {
		return nil, problems.Err()
	}
	return cfg, nil
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
