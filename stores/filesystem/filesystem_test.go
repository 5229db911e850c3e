package filesystem

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/offloader/offloader/stores"
	"github.com/offloader/offloader/stores/storetest"
)

func TestConformance(t *testing.T) {
	s, err := Open("local", Config{Root: t.TempDir(), DirMode: 0o750, FileMode: 0o640})
	if err != nil {
		t.Fatal(err)
	}
	storetest.Run(t, s)
}

// TestPutLeavesNoTemporaryFiles: an atomic write renames its temporary file away;
// nothing but the object remains.
func TestPutLeavesNoTemporaryFiles(t *testing.T) {
	root := t.TempDir()
	s, err := Open("local", Config{Root: root, DirMode: 0o750, FileMode: 0o640})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Put(context.Background(), "a/b/0", []byte("payload"), nil); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(filepath.Join(root, "a", "b"))
	if len(entries) != 1 || entries[0].Name() != "0" {
		t.Fatalf("directory holds %v, want just the object", entries)
	}
	fi, _ := os.Stat(filepath.Join(root, "a", "b", "0"))
	if fi.Mode().Perm() != 0o640 {
		t.Errorf("file mode %v, want 0640", fi.Mode().Perm())
	}
}

// TestWritesStayInsideTheRoot: a symlinked directory in the root does not let
// a Put write outside it, and the metadata directory is no key.
func TestWritesStayInsideTheRoot(t *testing.T) {
	base := t.TempDir()
	outside := filepath.Join(base, "outside")
	os.Mkdir(outside, 0o750)
	root := filepath.Join(base, "root")
	s, err := Open("local", Config{Root: root, DirMode: 0o750, FileMode: 0o640})
	if err != nil {
		t.Fatal(err)
	}
	os.Symlink(outside, filepath.Join(root, "escape"))
	if err := s.Put(context.Background(), "escape/0", []byte("x"), nil); err == nil {
		t.Error("Put through a symlink to a directory outside the root succeeded")
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Errorf("Put wrote %v outside the root", entries)
	}
	for _, key := range []string{metaDir, metaDir + "/a/0.json"} {
		if err := s.Put(context.Background(), key, []byte("{}"), nil); !errors.Is(err, stores.ErrInvalidKey) {
			t.Errorf("Put(%q) = %v, want ErrInvalidKey", key, err)
		}
	}
}
