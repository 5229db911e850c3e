package filesystem

import (
	"context"
	"os"
	"path/filepath"
	"testing"

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
