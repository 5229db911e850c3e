package filesystem

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// openBeneath opens name for reading beneath dir: no component may be a
// symlink or leave dir, and opening does not block (a FIFO opens at once and
// is then refused as not a regular file). Kernels before 5.6 have no openat2:
// there root confines the open, following only symlinks that stay inside it.
func openBeneath(dir *os.File, root *os.Root, name string) (*os.File, error) {
	how := unix.OpenHow{
		Flags:   unix.O_RDONLY | unix.O_NONBLOCK | unix.O_CLOEXEC | unix.O_NOFOLLOW,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	}
	for {
		fd, err := unix.Openat2(int(dir.Fd()), name, &how)
		switch {
		case err == nil:
			return os.NewFile(uintptr(fd), name), nil
		case errors.Is(err, unix.EINTR), errors.Is(err, unix.EAGAIN):
			continue
		case errors.Is(err, unix.ENOSYS):
			return root.OpenFile(name, os.O_RDONLY|unix.O_NONBLOCK|unix.O_NOFOLLOW, 0)
		}
		return nil, err
	}
}
