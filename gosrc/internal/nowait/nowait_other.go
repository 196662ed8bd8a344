//go:build !unix

// Package nowait opens files without waiting for another process (see
// nowait_unix.go); elsewhere there are no FIFOs to wait for: a plain open.
package nowait

import "os"

// Open opens path with flag and perm.
func Open(path string, flag int, perm os.FileMode) (*os.File, error) {
	return os.OpenFile(path, flag, perm)
}
