// Package filesystem is the embedded default payload store: objects are files
// under a root directory, written atomically (temporary file, fsync, rename,
// directory fsync) so a crash never leaves a half-written payload under its key.
//
//	stores:
//	  local:
//	    type: filesystem
//	    root: /var/lib/offloader/payloads
//
// The store never leaves its root: writes go through an os.Root, and reads
// open the object beneath the root without following any symbolic link
// (openat2 with RESOLVE_BENEATH and RESOLVE_NO_SYMLINKS on Linux). Only regular
// files are objects; a symlink, directory, FIFO or device under a key reads as
// "not found", with nothing said about what is there. An object's metadata
// (its owner, see stores.MetaOwner) is kept in a JSON file of the same key
// under <root>/.offloader-meta/.
package filesystem

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/offloader/offloader/settings"
	"github.com/offloader/offloader/stores"
)

// Config is the YAML of a filesystem store.
type Config struct {
	// Root is the directory objects live under; created if missing.
	Root string `key:"root" required:"true"`
	// DirMode is the permission of the directories it creates.
	DirMode int `key:"dir_mode" range:"0-511"`
	// FileMode is the permission of the objects it writes.
	FileMode int `key:"file_mode" range:"0-511"`
}

// Place implements stores.Located: the root as an absolute path, with
// symbolic links resolved where it exists.
func (c *Config) Place() string {
	root, err := filepath.Abs(c.Root)
	if err != nil {
		root = filepath.Clean(c.Root)
	}
	if real, err := filepath.EvalSymlinks(root); err == nil {
		root = real
	}
	return "filesystem:" + root
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
		Spec:     func(spec string) (map[string]any, error) { return map[string]any{"root": spec}, nil },
		SpecForm: "ROOT_DIRECTORY",
	})
}

// metaDir holds the objects' metadata files; no key may start with it.
const metaDir = ".offloader-meta"

// readChunk is how much Get reads between checks of its context.
const readChunk = 1 << 20

// errNoObject is what every read of something that is not an object under the
// root says: missing, a symlink, a directory, a FIFO. It tells nothing more.
var errNoObject = fmt.Errorf("no object under this key: %w", fs.ErrNotExist)

// Store is a filesystem payload store.
type Store struct {
	name string
	cfg  Config
	// root confines writes; dir (the same directory) is what reads open
	// objects beneath.
	root *os.Root
	dir  *os.File
}

// Open creates the root directory if needed and returns the store.
func Open(name string, cfg Config) (*Store, error) {
	abs, err := filepath.Abs(cfg.Root)
	if err != nil {
		return nil, fmt.Errorf("store %q: root %q: %w", name, cfg.Root, err)
	}
	if err := os.MkdirAll(abs, fs.FileMode(cfg.DirMode)); err != nil {
		return nil, fmt.Errorf("store %q: creating root: %w", name, err)
	}
	root, err := os.OpenRoot(abs)
	if err != nil {
		return nil, fmt.Errorf("store %q: opening root: %w", name, err)
	}
	dir, err := os.Open(abs)
	if err != nil {
		root.Close()
		return nil, fmt.Errorf("store %q: opening root: %w", name, err)
	}
	return &Store{name: name, cfg: cfg, root: root, dir: dir}, nil
}

func (s *Store) fail(op, key string, err error) error {
	kind := stores.Permanent
	switch {
	case errors.Is(err, fs.ErrNotExist):
		kind = stores.NotFound
	case errors.Is(err, context.DeadlineExceeded):
		kind = stores.Retryable
	case errors.Is(err, context.Canceled):
		kind = stores.Canceled
	}
	return &stores.Error{Store: s.name, Op: op, Key: key, Kind: kind, Err: err}
}

// check refuses keys that would leave the root or reach the metadata.
func (s *Store) check(op, key string) error {
	err := stores.ValidateKey(key)
	if err == nil && (key == metaDir || strings.HasPrefix(key, metaDir+"/")) {
		err = fmt.Errorf("%w: %q is inside the store's metadata directory %s", stores.ErrInvalidKey, key, metaDir)
	}
	if err != nil {
		return &stores.Error{Store: s.name, Op: op, Key: key, Kind: stores.Permanent, Err: err}
	}
	return nil
}

func metaPath(key string) string { return metaDir + "/" + key + ".json" }

// Put writes value atomically: readers see the old object or the whole new one.
// The metadata is written first, so an object never exists without its owner.
// Only the object is synced: a metadata file lost or cut short by a machine
// crash reads as naming no owner, and costs no second pair of fsyncs per put.
func (s *Store) Put(ctx context.Context, key string, value []byte, meta stores.Metadata) error {
	if err := ctx.Err(); err != nil {
		return s.fail("put", key, err)
	}
	if err := s.check("put", key); err != nil {
		return err
	}
	existing, err := s.readMeta(key)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return s.fail("put", key, err)
	}
	if err := stores.Conflict(existing, meta); err != nil {
		return s.fail("put", key, err)
	}
	if len(meta) > 0 {
		b, err := json.Marshal(meta)
		if err != nil {
			return s.fail("put", key, err)
		}
		if err := s.writeAtomic(metaPath(key), b, false); err != nil {
			return s.fail("put", key, err)
		}
	}
	if err := s.writeAtomic(key, value, true); err != nil {
		return s.fail("put", key, err)
	}
	return nil
}

// writeAtomic writes data to name (relative to the root) through a temporary
// file that is renamed into place; durable syncs the file before the rename
// and the directory after it.
func (s *Store) writeAtomic(name string, data []byte, durable bool) error {
	dir := path.Dir(name)
	if err := s.root.MkdirAll(dir, fs.FileMode(s.cfg.DirMode)); err != nil {
		return err
	}
	var suffix [8]byte
	rand.Read(suffix[:])
	tmpName := path.Join(dir, ".put-"+hex.EncodeToString(suffix[:]))
	tmp, err := s.root.OpenFile(tmpName, os.O_WRONLY|os.O_CREATE|os.O_EXCL, fs.FileMode(s.cfg.FileMode))
	if err != nil {
		return err
	}
	committed := false
	defer func() {
		if !committed {
			tmp.Close()
			s.root.Remove(tmpName)
		}
	}()
	if _, err := tmp.Write(data); err != nil {
		return err
	}
	if err := tmp.Chmod(fs.FileMode(s.cfg.FileMode)); err != nil { // the umask narrowed OpenFile's mode
		return err
	}
	if durable {
		if err := tmp.Sync(); err != nil {
			return err
		}
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := s.root.Rename(tmpName, name); err != nil {
		return err
	}
	committed = true
	if !durable {
		return nil
	}
	// The rename is durable only once the directory entry is.
	d, err := s.root.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// readMeta returns the metadata stored for key (fs.ErrNotExist when none is).
// A file that does not parse (cut short by a crash) names no owner.
func (s *Store) readMeta(key string) (stores.Metadata, error) {
	f, size, err := s.open(metaPath(key))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if size > 64<<10 {
		return nil, fmt.Errorf("the metadata file of this key is over 64 KiB: not written by offloader")
	}
	b, err := io.ReadAll(io.LimitReader(f, size))
	if err != nil {
		return nil, err
	}
	var meta stores.Metadata
	if json.Unmarshal(b, &meta) != nil {
		return nil, nil
	}
	return meta, nil
}

// open opens the regular file name beneath the root without following
// symlinks, and returns it with its size.
func (s *Store) open(name string) (*os.File, int64, error) {
	f, err := openBeneath(s.dir, s.root, name)
	if err != nil {
		return nil, 0, errNoObject
	}
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		f.Close()
		return nil, 0, errNoObject
	}
	return f, fi.Size(), nil
}

// Get reads the whole object, if it holds at most limit bytes.
func (s *Store) Get(ctx context.Context, key string, limit int64) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, s.fail("get", key, err)
	}
	if err := s.check("get", key); err != nil {
		return nil, err
	}
	f, size, err := s.open(key)
	if err != nil {
		return nil, s.fail("get", key, err)
	}
	defer f.Close()
	if size > limit {
		return nil, s.fail("get", key, fmt.Errorf("%w of %d bytes", stores.ErrOverLimit, limit))
	}
	// One byte more than its size tells a file that changed while it was read.
	buf := make([]byte, size+1)
	n := 0
	for n < len(buf) {
		if err := ctx.Err(); err != nil {
			return nil, s.fail("get", key, err)
		}
		m, err := f.Read(buf[n:min(len(buf), n+readChunk)])
		n += m
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, s.fail("get", key, err)
		}
	}
	if int64(n) != size {
		return nil, &stores.Error{Store: s.name, Op: "get", Key: key, Kind: stores.Retryable, Err: errors.New("the object changed while it was read")}
	}
	return buf[:n], nil
}

// Stat returns the object's size.
func (s *Store) Stat(ctx context.Context, key string) (stores.Info, error) {
	if err := ctx.Err(); err != nil {
		return stores.Info{}, s.fail("stat", key, err)
	}
	if err := s.check("stat", key); err != nil {
		return stores.Info{}, err
	}
	f, size, err := s.open(key)
	if err != nil {
		return stores.Info{}, s.fail("stat", key, err)
	}
	defer f.Close()
	info := stores.Info{Size: size}
	if fi, err := f.Stat(); err == nil {
		info.Modified = fi.ModTime()
	}
	meta, err := s.readMeta(key)
	switch {
	case err == nil:
		info.Metadata = meta
	case !errors.Is(err, fs.ErrNotExist):
		return stores.Info{}, s.fail("stat", key, err)
	}
	return info, nil
}

// Delete removes the object and its metadata; a missing object is not an error.
func (s *Store) Delete(ctx context.Context, key string) error {
	if err := ctx.Err(); err != nil {
		return s.fail("delete", key, err)
	}
	if err := s.check("delete", key); err != nil {
		return err
	}
	for _, name := range []string{key, metaPath(key)} {
		if err := s.root.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return s.fail("delete", key, err)
		}
	}
	return nil
}

// List walks the root for the objects under prefix, leaving out the
// metadata files and anything that is not a regular file.
func (s *Store) List(ctx context.Context, prefix string, each func(stores.Object) error) error {
	err := fs.WalkDir(s.root.FS(), ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		switch {
		case d.IsDir() && name == metaDir:
			return fs.SkipDir
		case d.IsDir():
			// Skip directories that cannot hold a key with the prefix.
			if name != "." && !strings.HasPrefix(name+"/", prefix) && !strings.HasPrefix(prefix, name+"/") {
				return fs.SkipDir
			}
			return nil
		case !d.Type().IsRegular() || !strings.HasPrefix(name, prefix) || stores.ValidateKey(name) != nil ||
			strings.HasPrefix(path.Base(name), ".put-"): // a write in progress
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return nil // removed meanwhile
		}
		return each(stores.Object{Key: name, Size: info.Size(), Modified: info.ModTime()})
	})
	if err != nil && !errors.Is(err, context.Canceled) && stores.KindOf(err) != stores.Canceled {
		var se *stores.Error
		if errors.As(err, &se) {
			return err
		}
		return s.fail("list", prefix, err)
	}
	return err
}

// Close releases the root directory.
func (s *Store) Close() error {
	s.dir.Close()
	return s.root.Close()
}
