//go:build unix

package acquire

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// mapFile maps the first length bytes of f read-only and shared: the page
// cache's own pages, no copy.
func mapFile(f *os.File, length int64) ([]byte, error) {
	if length <= 0 || int64(int(length)) != length {
		return nil, fmt.Errorf("mapping %d bytes, expected 1..%d", length, int64(^uint(0)>>1))
	}
	b, err := unix.Mmap(int(f.Fd()), 0, int(length), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("mmap: %w", err)
	}
	return b, nil
}

// unmapFile undoes mapFile.
func unmapFile(b []byte) error { return unix.Munmap(b) }

// fileVersion is what Lend compares with the pin's to notice a file that
// changed under the pin: its size and modification time, from fstat (no
// allocation, unlike os.File.Stat).
type fileVersion struct {
	size  int64
	mtime unix.Timespec
}

func versionOf(f *os.File) (fileVersion, error) {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return fileVersion{}, fmt.Errorf("fstat: %w", err)
	}
	return fileVersion{size: st.Size, mtime: st.Mtim}, nil
}

// openNoWait opens path read-only without waiting for a FIFO's writer
// (O_NONBLOCK, cleared again: reads of a regular file never wait anyway).
func openNoWait(path string) (*os.File, error) {
	for {
		fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, &os.PathError{Op: "open", Path: path, Err: err}
		}
		if err := unix.SetNonblock(fd, false); err != nil {
			_ = unix.Close(fd)
			return nil, &os.PathError{Op: "fcntl", Path: path, Err: err}
		}
		return os.NewFile(uintptr(fd), path), nil
	}
}
