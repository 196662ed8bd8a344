//go:build unix

package acquire

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// mapFile maps length bytes of f from off (a page boundary) read-only and shared: the page
// cache's own pages, no copy.
func mapFile(f *os.File, off, length int64) ([]byte, error) {
	if length <= 0 || int64(int(length)) != length || off < 0 || off%int64(os.Getpagesize()) != 0 {
		return nil, fmt.Errorf("mapping %d bytes at %d, expected 1..%d at a page boundary", length, off, int64(^uint(0)>>1))
	}
	b, err := unix.Mmap(int(f.Fd()), off, int(length), unix.PROT_READ, unix.MAP_SHARED)
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
