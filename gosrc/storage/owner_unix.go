//go:build unix

package storage

import (
	"io/fs"
	"syscall"
)

// identity is the file's device and inode.
func identity(st fs.FileInfo) (fileID, bool) {
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return fileID{}, false
	}
	return fileID{uint64(sys.Dev), sys.Ino}, true //nolint:unconvert // Dev is uint32 on some platforms
}
