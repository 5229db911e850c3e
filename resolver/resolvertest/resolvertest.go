// Package resolvertest reads the shared pointer v1 vectors
// (pointer/testdata/vectors.json) that every reader's tests must pass: the
// Go resolver's, the integration suite's on the real broker, and the Java
// deserializer's.
package resolvertest

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/offloader/offloader/resolver"
)

// Vectors are the shared records and what every reader must make of them.
type Vectors struct {
	// Objects are the store's objects by key, base64.
	Objects map[string]string `json:"objects"`
	Cases   []Case            `json:"cases"`
	// Filesystem are the cases of a filesystem store's layout.
	Filesystem struct {
		Layout Layout `json:"layout"`
		Cases  []Case `json:"cases"`
	} `json:"filesystem"`
}

// Layout is what a filesystem store's root holds beside its objects.
type Layout struct {
	// Files are written under the root directly (not through the store),
	// Outside beside the root; both base64.
	Files   map[string]string `json:"files"`
	Outside map[string]string `json:"outside"`
	// Directories and FIFOs are created under the root; Symlinks are
	// links under the root to their targets (relative to the link).
	Directories []string          `json:"directories"`
	FIFOs       []string          `json:"fifos"`
	Symlinks    map[string]string `json:"symlinks"`
}

// LayOut makes l in root (a directory in a directory of its own: Outside
// goes to root's parent).
func (l Layout) LayOut(root string) error {
	write := func(dir string, files map[string]string) error {
		for name, b64 := range files {
			b, err := base64.StdEncoding.DecodeString(b64)
			if err != nil {
				return err
			}
			path := filepath.Join(dir, filepath.FromSlash(name))
			if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
				return err
			}
			if err := os.WriteFile(path, b, 0o640); err != nil {
				return err
			}
		}
		return nil
	}
	if err := write(root, l.Files); err != nil {
		return err
	}
	if err := write(filepath.Dir(root), l.Outside); err != nil {
		return err
	}
	for _, d := range l.Directories {
		if err := os.MkdirAll(filepath.Join(root, filepath.FromSlash(d)), 0o750); err != nil {
			return err
		}
	}
	for _, f := range l.FIFOs {
		if err := syscall.Mkfifo(filepath.Join(root, filepath.FromSlash(f)), 0o640); err != nil {
			return err
		}
	}
	for link, target := range l.Symlinks {
		if err := os.Symlink(filepath.FromSlash(target), filepath.Join(root, filepath.FromSlash(link))); err != nil {
			return err
		}
	}
	return nil
}

// Case is one record: resolved to SHA256, or refused in class Reject.
type Case struct {
	Name    string      `json:"name"`
	Headers [][2]string `json:"headers"`
	Value   string      `json:"value"`
	// ValueBase64, when set, is the value's bytes (any, not only UTF-8).
	ValueBase64 string `json:"value_base64"`
	SHA256      string `json:"sha256"`
	Reject      string `json:"reject"`
}

// Bytes is the case's record value.
func (c Case) Bytes() []byte {
	if c.ValueBase64 != "" {
		b, err := base64.StdEncoding.DecodeString(c.ValueBase64)
		if err != nil {
			panic("vectors: " + c.Name + ": value_base64: " + err.Error())
		}
		return b
	}
	return []byte(c.Value)
}

// Load reads the vectors at path, decoding the objects.
func Load(path string) (Vectors, map[string][]byte, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return Vectors{}, nil, err
	}
	var v Vectors
	if err := json.Unmarshal(raw, &v); err != nil {
		return Vectors{}, nil, err
	}
	objects := map[string][]byte{}
	for key, b64 := range v.Objects {
		if objects[key], err = base64.StdEncoding.DecodeString(b64); err != nil {
			return Vectors{}, nil, err
		}
	}
	return v, objects, nil
}

// classes are the resolver's errors by the vectors' class names.
var classes = map[string]error{
	"malformed": resolver.ErrMalformed, "unknown_version": resolver.ErrUnknownVersion, "unknown_store": resolver.ErrUnknownStore,
	"not_found": resolver.ErrNotFound, "checksum": resolver.ErrChecksum, "too_large": resolver.ErrTooLarge,
}

// Class names the class of a resolver error as the vectors do.
func Class(err error) string {
	for class, target := range classes {
		if errors.Is(err, target) {
			return class
		}
	}
	return "other: " + err.Error()
}

// ClassOfText is Class for the text of a resolver error (what offloader cat
// prints): the class whose error's text it contains.
func ClassOfText(text string) string {
	for class, target := range classes {
		if strings.Contains(text, target.Error()) {
			return class
		}
	}
	return "other: " + text
}
