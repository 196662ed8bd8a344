//go:build unix

// Package nowait opens files without waiting for another process: open(2)
// of a FIFO blocks until the other end opens it, which would hang a
// storage's open (no reader) or a file acquisition's prepare (no writer)
// beyond Ctrl-C. Open passes O_NONBLOCK so that open(2) returns at once,
// then clears it, so that the caller's checks (a regular file, expected)
// see the file and later reads and writes behave as usual.
package nowait

import (
	"errors"
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

// Open opens path with flag (os.O_RDONLY, os.O_WRONLY|os.O_CREATE...) and
// perm, never waiting for a FIFO's other end.
func Open(path string, flag int, perm os.FileMode) (*os.File, error) {
	for {
		fd, err := unix.Open(path, flag|unix.O_NONBLOCK|unix.O_CLOEXEC, uint32(perm.Perm()))
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
