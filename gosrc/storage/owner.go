package storage

import (
	"fmt"
	"io/fs"
	"os"
	"sync"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/internal/nowait"
)

// fileID names a file independently of the path it was opened by (a
// symbolic link, a relative path, a hard link all give the same one).
type fileID struct{ dev, ino uint64 }

// owner is a storage that holds a file open for writing. The registry
// below lets a newer storage opening the same file take it over.
type owner interface {
	// inUse reports whether an engine writes through the storage now.
	inUse() bool
	// supersede closes the storage's file without writing to it again:
	// another storage truncated it and owns its bytes from now on.
	supersede(by string)
}

var (
	// openMu serialises the opens, so that two storages opening one file
	// at once cannot both take it. Never held while a storage's own lock
	// is taken for anything but supersede (see openOwned).
	openMu sync.Mutex
	// owners maps each file a storage writes to that storage. A sync.Map,
	// not a map under openMu: a storage forgets its file from inside its
	// Close, which may run while an open holding openMu waits for that
	// storage's claim, and must not wait for openMu in turn.
	owners sync.Map // fileID -> owner
)

// ErrSuperseded is returned (wrapped) by a storage whose file another
// storage opened since (a notebook cell run twice): the older storage let
// go of the file without touching it. It wraps backend.ErrClosed: Python's
// ClosedError.
var ErrSuperseded error = superseded{}

type superseded struct{}

func (superseded) Error() string {
	return "the file was opened by another storage since, so this one closed without touching it again, expected open(config) first"
}
func (superseded) Unwrap() error { return backend.ErrClosed }

// fileKind describes a file type in the words of an error message.
func fileKind(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO (named pipe)"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDir != 0:
		return "a directory"
	case m&fs.ModeDevice != 0 && m&fs.ModeCharDevice == 0:
		return "a block device"
	}
	return "not a regular file"
}

// writableKind refuses what a storage cannot write as a file: a regular
// file is taken, and so is a character device (/dev/null as a sink,
// /dev/full to test a full disk), whose writes never wait for another
// process. A FIFO or a socket is refused: opening one blocks until a
// reader appears and every write waits for that reader, inside a call
// that Ctrl-C cannot interrupt, and a stack seeks and rewrites its
// header, which a pipe cannot do. A block device is refused too: a stack
// truncates its file, and a mistyped /dev/sdX would be overwritten.
func writableKind(what, path string, m fs.FileMode) error {
	if m.IsRegular() || m&fs.ModeCharDevice != 0 {
		return nil
	}
	return backend.Invalidf("%s: path=%q is %s, expected a regular file (or /dev/null to discard the data): "+
		"vortexgo storages write files they can seek in and that never wait for another process", what, path, fileKind(m))
}

// checkWritablePath refuses a path that exists and is no file a storage
// can write (writableKind), before a library that opens it by name (HDF5)
// would block on it.
func checkWritablePath(what, path string) error {
	st, err := os.Stat(path)
	if err != nil {
		return nil // a new file, or an error the open reports in its words
	}
	return writableKind(what, path, st.Mode())
}

// openOwned opens path for writing (flag: os.O_RDWR or os.O_WRONLY) as
// the file of storage o, created and truncated, and registers it.
//
// It never blocks: the open is non-blocking (a FIFO without a reader
// would otherwise hang it), and the file's type is checked on the open
// descriptor before anything is truncated. A regular file that another
// open storage of this process writes (the same stack opened twice in a
// notebook) is taken over: the older storage closes it without writing
// again, so its finalizer cannot rewrite the newer file's header. While an
// engine writes through the older storage the open is refused with
// backend.ErrInUse instead.
func openOwned(what, path string, flag int, o owner) (*os.File, fileID, error) {
	// The common case in clear words; the check on the open descriptor
	// below covers a path replaced in between.
	if err := checkWritablePath(what, path); err != nil {
		return nil, fileID{}, err
	}
	f, err := nowait.Open(path, flag|os.O_CREATE, 0o644) // a FIFO without a reader would block open()
	if err != nil {
		return nil, fileID{}, fmt.Errorf("%s: path=%q cannot be written: %w", what, path, err)
	}
	st, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return nil, fileID{}, fmt.Errorf("%s: path=%q: %w", what, path, err)
	}
	if err := writableKind(what, path, st.Mode()); err != nil {
		_ = f.Close()
		return nil, fileID{}, err
	}
	if !st.Mode().IsRegular() {
		return f, fileID{}, nil // a device: no bytes of its own to protect
	}
	id, ok := identity(st)
	if !ok {
		return f, fileID{}, nil
	}
	openMu.Lock()
	defer openMu.Unlock()
	if prev, ok := owners.Load(id); ok && prev != o {
		old := prev.(owner)
		if old.inUse() {
			_ = f.Close()
			return nil, fileID{}, fmt.Errorf("%s: path=%q is the file of another open storage that an engine writes to; "+
				"stop that engine and close its storage first, or choose another path: %w", what, path, backend.ErrInUse)
		}
		old.supersede(path)
	}
	if err := f.Truncate(0); err != nil {
		owners.CompareAndDelete(id, o)
		_ = f.Close()
		return nil, fileID{}, fmt.Errorf("%s: path=%q cannot be truncated: %w", what, path, err)
	}
	owners.Store(id, o)
	return f, id, nil
}

// forget unregisters o's file (a no-op when a newer storage took it).
func forget(id fileID, o owner) {
	if id != (fileID{}) {
		owners.CompareAndDelete(id, o)
	}
}
