//go:build linux

package storage

import (
	"errors"
	"fmt"
	"io/fs"

	"golang.org/x/sys/unix"
)

// reserver holds a descriptor of our own on a file another library writes
// (HDF5Stack's), to reserve disk space ahead of its writes and, after a
// failed write, to keep it from writing any more (freeze).
type reserver struct {
	path string
	fd   int
	dev  uint64
	ino  uint64
}

// openReserver opens path for writing and checks that it is the file
// behind libFD (the library's descriptor). Anything else (a device, a
// driver without a descriptor, another file) gives a nil reserver: no
// reservation, writes go on unguarded, as before.
func openReserver(path string, libFD int) (*reserver, error) {
	var lib unix.Stat_t
	if libFD < 0 || unix.Fstat(libFD, &lib) != nil || lib.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, nil
	}
	fd, err := unix.Open(path, unix.O_WRONLY|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open (to reserve space)", Path: path, Err: err}
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Dev != lib.Dev || st.Ino != lib.Ino || fd == libFD {
		_ = unix.Close(fd)
		return nil, nil // renamed or replaced under us: not the library's file
	}
	return &reserver{path: path, fd: fd, dev: uint64(st.Dev), ino: st.Ino}, nil //nolint:unconvert // Dev's type varies
}

// reserve makes sure the file can grow by need bytes beyond its current
// size: the disk blocks are allocated now (fallocate, keeping the size, so
// readers see no change) and the size stays within RLIMIT_FSIZE. It fails
// with ENOSPC or EFBIG, having changed nothing the library relies on.
// Filesystems without fallocate are not reserved on (only the limit is
// checked).
func (r *reserver) reserve(need int64) error {
	if r == nil || need <= 0 {
		return nil
	}
	var st unix.Stat_t
	if err := unix.Fstat(r.fd, &st); err != nil {
		return &fs.PathError{Op: "fstat (to reserve space)", Path: r.path, Err: err}
	}
	end := st.Size + need
	var lim unix.Rlimit
	if unix.Getrlimit(unix.RLIMIT_FSIZE, &lim) == nil && lim.Cur != unix.RLIM_INFINITY && uint64(end) > lim.Cur {
		return &fs.PathError{Op: fmt.Sprintf("reserve %d bytes (file size %d, RLIMIT_FSIZE %d)", need, st.Size, lim.Cur),
			Path: r.path, Err: unix.EFBIG}
	}
	for {
		err := unix.Fallocate(r.fd, unix.FALLOC_FL_KEEP_SIZE, st.Size, need)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, unix.EINTR):
			continue
		case errors.Is(err, unix.EOPNOTSUPP), errors.Is(err, unix.ENOSYS):
			return nil
		}
		return &fs.PathError{Op: fmt.Sprintf("reserve %d bytes (file size %d)", need, st.Size), Path: r.path, Err: err}
	}
}

// freeze replaces the library's descriptor libFD with a read-only one of
// the same file: from then on its writes fail (EBADF) and the file stays
// as it is, so that closing the library's state after a failed write adds
// nothing half-written. It reports whether it did.
func (r *reserver) freeze(libFD int) bool {
	if r == nil || libFD < 0 || libFD == r.fd {
		return false
	}
	var lib unix.Stat_t
	if unix.Fstat(libFD, &lib) != nil || uint64(lib.Dev) != r.dev || lib.Ino != r.ino { //nolint:unconvert
		return false
	}
	ro, err := unix.Open(fmt.Sprintf("/proc/self/fd/%d", r.fd), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer unix.Close(ro)
	var st unix.Stat_t
	if unix.Fstat(ro, &st) != nil || st.Ino != r.ino {
		return false
	}
	return unix.Dup3(ro, libFD, unix.O_CLOEXEC) == nil
}

// release gives back what a reservation left beyond the file's end
// (truncating to its own size frees blocks fallocate kept past it) and
// closes the descriptor.
func (r *reserver) release() {
	if r == nil {
		return
	}
	var st unix.Stat_t
	if unix.Fstat(r.fd, &st) == nil {
		_ = unix.Ftruncate(r.fd, st.Size)
	}
	_ = unix.Close(r.fd)
	r.fd = -1
}
