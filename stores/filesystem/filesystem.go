// Package filesystem is the embedded default payload store: objects are files
// under a root directory, written atomically (temporary file, fsync, rename,
// directory fsync) so a crash never leaves a half-written payload under its key.
//
//	stores:
//	  local:
//	    type: filesystem
//	    root: /var/lib/offloader/payloads
package filesystem

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/offloader/offloader/settings"
	"github.com/offloader/offloader/stores"
)

// Config is the YAML of a filesystem store.
type Config struct {
	// Root is the directory objects live under; created if missing.
	Root string `key:"root" required:"true"`
	// DirMode and FileMode are the permissions of created directories and files.
	DirMode  int `key:"dir_mode"`
	FileMode int `key:"file_mode"`
}

// Validate implements settings.Validator.
func (c *Config) Validate(path string, problems *settings.Problems) {
	if c.DirMode < 0 || c.DirMode > 0o777 {
		problems.Add(path+".dir_mode", "must be a permission between 0 and 0777 (octal in YAML: 0o750)")
	}
	if c.FileMode < 0 || c.FileMode > 0o777 {
		problems.Add(path+".file_mode", "must be a permission between 0 and 0777 (octal in YAML: 0o640)")
	}
}

func init() {
	stores.Register("filesystem", stores.Backend{
		NewConfig: func() any { return &Config{DirMode: 0o750, FileMode: 0o640} },
		Open: func(_ context.Context, name string, config any) (stores.Store, error) {
			return Open(name, *config.(*Config))
		},
	})
}

// Store is a filesystem payload store.
type Store struct {
	name string
	root string
	cfg  Config
}

// Open creates the root directory if needed and returns the store.
func Open(name string, cfg Config) (*Store, error) {
	root, err := filepath.Abs(cfg.Root)
	if err != nil {
		return nil, fmt.Errorf("store %q: root %q: %w", name, cfg.Root, err)
	}
	if err := os.MkdirAll(root, fs.FileMode(cfg.DirMode)); err != nil {
		return nil, fmt.Errorf("store %q: creating root: %w", name, err)
	}
	return &Store{name: name, root: root, cfg: cfg}, nil
}

func (s *Store) fail(op, key string, err error) error {
	kind := stores.Permanent
	switch {
	case errors.Is(err, fs.ErrNotExist):
		kind = stores.NotFound
	case errors.Is(err, context.DeadlineExceeded):
		kind = stores.Retryable
	}
	return &stores.Error{Store: s.name, Op: op, Key: key, Kind: kind, Err: err}
}

// path maps a key to a file below the root, refusing keys that would leave it.
func (s *Store) path(op, key string) (string, error) {
	if err := stores.ValidateKey(key); err != nil {
		return "", &stores.Error{Store: s.name, Op: op, Key: key, Kind: stores.Permanent, Err: err}
	}
	return filepath.Join(s.root, filepath.FromSlash(key)), nil
}

// Put writes value atomically: readers see the old object or the whole new one.
func (s *Store) Put(ctx context.Context, key string, value []byte, _ stores.Metadata) error {
	if err := ctx.Err(); err != nil {
		return s.fail("put", key, err)
	}
	path, err := s.path("put", key)
	if err != nil {
		return err
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, fs.FileMode(s.cfg.DirMode)); err != nil {
		return s.fail("put", key, err)
	}
	tmp, err := os.CreateTemp(dir, ".put-*")
	if err != nil {
		return s.fail("put", key, err)
	}
	committed := false
	defer func() {
		if !committed {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if _, err := tmp.Write(value); err != nil {
		return s.fail("put", key, err)
	}
	if err := tmp.Chmod(fs.FileMode(s.cfg.FileMode)); err != nil {
		return s.fail("put", key, err)
	}
	if err := tmp.Sync(); err != nil {
		return s.fail("put", key, err)
	}
	if err := tmp.Close(); err != nil {
		return s.fail("put", key, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return s.fail("put", key, err)
	}
	committed = true
	// The rename is durable only once the directory entry is.
	if d, err := os.Open(dir); err == nil {
		syncErr := d.Sync()
		d.Close()
		if syncErr != nil {
			return s.fail("put", key, syncErr)
		}
	}
	return nil
}

// Get reads the whole object.
func (s *Store) Get(ctx context.Context, key string) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, s.fail("get", key, err)
	}
	path, err := s.path("get", key)
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, s.fail("get", key, err)
	}
	return b, nil
}

// Stat returns the object's size.
func (s *Store) Stat(ctx context.Context, key string) (stores.Info, error) {
	if err := ctx.Err(); err != nil {
		return stores.Info{}, s.fail("stat", key, err)
	}
	path, err := s.path("stat", key)
	if err != nil {
		return stores.Info{}, err
	}
	fi, err := os.Stat(path)
	if err != nil {
		return stores.Info{}, s.fail("stat", key, err)
	}
	if !fi.Mode().IsRegular() {
		return stores.Info{}, s.fail("stat", key, fs.ErrNotExist)
	}
	return stores.Info{Size: fi.Size()}, nil
}

// Delete removes the object; a missing object is not an error.
func (s *Store) Delete(ctx context.Context, key string) error {
	if err := ctx.Err(); err != nil {
		return s.fail("delete", key, err)
	}
	path, err := s.path("delete", key)
	if err != nil {
		return err
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return s.fail("delete", key, err)
	}
	return nil
}

// Close releases nothing; files are closed after each call.
func (s *Store) Close() error { return nil }
