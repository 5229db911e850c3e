//go:build !linux

package filesystem

import "os"

// openBeneath opens name for reading inside root. Without openat2, os.Root
// confines it: symlinks are followed only while they stay inside the root.
func openBeneath(_ *os.File, root *os.Root, name string) (*os.File, error) {
	return root.OpenFile(name, os.O_RDONLY, 0)
}
