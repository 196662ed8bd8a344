//go:build !unix

package storage

import (
	"io/fs"
	"os"
)

// openNonBlocking opens path (without FIFOs to block on, a plain open).
func openNonBlocking(path string, flag int) (*os.File, error) {
	return os.OpenFile(path, flag, 0o644)
}

// identity is unknown here: files are not matched across storages.
func identity(fs.FileInfo) (fileID, bool) { return fileID{}, false }
