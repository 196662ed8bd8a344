//go:build unix

package storage

import (
	"errors"
	"io/fs"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// openNonBlocking opens path with O_NONBLOCK, then clears it: the flag is
// there only so that open(2) of a FIFO returns at once (writableKind then
// refuses it) instead of waiting for the other end; writes to the files
// taken block as usual.
func openNonBlocking(path string, flag int) (*os.File, error) {
	for {
		fd, err := unix.Open(path, flag|unix.O_NONBLOCK|unix.O_CLOEXEC, 0o644)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return nil, &fs.PathError{Op: "open", Path: path, Err: err}
		}
		if err := unix.SetNonblock(fd, false); err != nil {
			_ = unix.Close(fd)
			return nil, &fs.PathError{Op: "fcntl", Path: path, Err: err}
		}
		return os.NewFile(uintptr(fd), path), nil
	}
}

// identity is the file's device and inode.
func identity(st fs.FileInfo) (fileID, bool) {
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return fileID{}, false
	}
	return fileID{uint64(sys.Dev), sys.Ino}, true //nolint:unconvert // Dev is uint32 on some platforms
}
