package cpu

import (
	"errors"
	"fmt"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/internal/invariants"
)

// Buffer is host memory obtained with an anonymous mmap. Its address is
// page aligned and stable until Free.
type Buffer struct {
	dev   *Device
	kind  backend.MemKind
	mem   []byte  // the mapping, kept for Munmap; nil when size is 0
	ptr   uintptr // &mem[0], immutable so Ptr never races with Free
	size  int
	freed atomic.Bool
	inv   invariants.Obj
}

var _ backend.Buffer = (*Buffer)(nil)

func (d *Device) alloc(op string, n int, kind backend.MemKind) (*Buffer, error) {
	if err := checkSize(op, n); err != nil {
		return nil, err
	}
	if n > backend.MaxBytes {
		return nil, fmt.Errorf("%s: n=%d, expected at most %d bytes: %w", op, n, backend.MaxBytes, backend.ErrTooLarge)
	}
	if limit := hostLimit(); limit > 0 && uint64(n) > limit {
		// Linux overcommits anonymous mappings: a mapping larger than the
		// host's memory may succeed and the process is then killed when the
		// pages are touched. Refuse it here, where it is still an error.
		return nil, fmt.Errorf("%s: n=%d, expected at most the host's %d bytes of memory and swap: %w",
			op, n, limit, backend.ErrTooLarge)
	}
	b := &Buffer{dev: d, kind: kind, size: n}
	if n == 0 {
		// mmap rejects length 0; an empty buffer has address 0, like a
		// zero-length NumPy array's data pointer may be.
		b.inv = invariants.Track("cpu.Buffer", 0)
		return b, nil
	}
	mem, err := unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANON)
	if errors.Is(err, unix.ENOMEM) {
		// The kernel refused the mapping: a MemoryError for the caller, not
		// an OS failure.
		return nil, fmt.Errorf("%s: n=%d: mmap: %v: %w", op, n, err, backend.ErrTooLarge)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: n=%d: mmap: %w", op, n, err)
	}
	b.mem = mem
	b.ptr = uintptr(unsafe.Pointer(&mem[0]))
	b.inv = invariants.Track("cpu.Buffer", b.ptr)
	return b, nil
}

// Ptr returns the address of the first byte, or 0 after Free and for an
// empty buffer. In invariant builds Ptr after Free panics: our code must
// not ask for the address of memory it freed.
func (b *Buffer) Ptr() uintptr {
	if b.freed.Load() {
		if invariants.Enabled {
			_ = b.inv.Misuse(fmt.Errorf("cpu.Buffer.Ptr: buffer of %d bytes: %w", b.size, backend.ErrClosed))
		}
		return 0
	}
	return b.ptr
}

// Size returns the length in bytes.
func (b *Buffer) Size() int { return b.size }

// Kind reports DeviceMem or PinnedMem, as requested at allocation.
func (b *Buffer) Kind() backend.MemKind { return b.kind }

// Device returns the CPU device.
func (b *Buffer) Device() backend.Device { return b.dev }

// Bytes returns the buffer's memory as a slice (nil after Free). The slice
// must not be used after Free.
func (b *Buffer) Bytes() []byte {
	if b.freed.Load() {
		if invariants.Enabled {
			_ = b.inv.Misuse(fmt.Errorf("cpu.Buffer.Bytes: buffer of %d bytes: %w", b.size, backend.ErrClosed))
		}
		return nil
	}
	return b.mem
}

// Free unmaps the memory. A second Free returns an error wrapping
// backend.ErrClosed.
func (b *Buffer) Free() error {
	if !b.freed.CompareAndSwap(false, true) {
		return b.inv.Misuse(fmt.Errorf("cpu.Buffer.Free: buffer of %d bytes already freed: %w", b.size, backend.ErrClosed))
	}
	b.inv.Release()
	if b.mem == nil {
		return nil
	}
	if err := unix.Munmap(b.mem); err != nil {
		return fmt.Errorf("cpu.Buffer.Free: munmap of %d bytes: %w", b.size, err)
	}
	return nil
}
