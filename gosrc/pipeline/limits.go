package pipeline

import (
	"fmt"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/memory"
)

// Bounds checked before any allocation, so an impossible request fails
// with a clear error instead of killing the process (Go's "out of memory"
// is fatal, and a huge slice of buffers exhausts the Go heap first).
const (
	// MaxBytes is the largest total a toolkit object allocates (256 TiB):
	// far above any device, far below int overflow of byte counts. It
	// matches python/vortexgo/_validate.py's MAX_ELEMENTS.
	MaxBytes = 1 << 48
	// MaxBuffers bounds the buffer counts of readback pools and the
	// versions of a pipeline buffer.
	MaxBuffers = 1 << 16
)

// checkBytes returns size*elem, the bytes of one of count buffers of size
// elements of elem bytes, after checking size (the argument sizeName) is
// positive, count (countName) at most MaxBuffers, and the total at most
// MaxBytes without overflowing; op prefixes the messages.
//
// A count over MaxBuffers is a bad argument (ErrInvalid, a ValueError): no
// pipeline needs that many buffers whatever their size, while a total too
// large for memory is ErrTooLarge (a MemoryError).
func checkBytes(op, sizeName string, size, elem int, countName string, count int) (int, error) {
	switch {
	case size <= 0:
		return 0, fmt.Errorf("%s: %s=%d, expected > 0: %w", op, sizeName, size, backend.ErrInvalid)
	case count > MaxBuffers:
		return 0, fmt.Errorf("%s: %s=%d, expected at most %d: %w", op, countName, count, MaxBuffers, backend.ErrInvalid)
	case size > MaxBytes/elem/max(count, 1):
		return 0, fmt.Errorf("%s: %s=%d (x %d bytes) x %s=%d exceeds %d bytes: %w",
			op, sizeName, size, elem, countName, max(count, 1), MaxBytes, backend.ErrTooLarge)
	}
	return size * elem, nil
}

// charged is a device whose allocations go through a budgeted allocator.
type charged struct {
	backend.Device
	a *memory.Allocator
}

func (d charged) Alloc(n int) (backend.Buffer, error)       { return d.a.Alloc(n) }
func (d charged) AllocPinned(n int) (backend.Buffer, error) { return d.a.AllocPinned(n) }

// Charged returns a's device with every allocation charged to a's budget
// under a's purpose: the toolkit objects built on it (triple buffers,
// pipeline buffers, readback buffers) then count in the memory budget.
func Charged(a *memory.Allocator) backend.Device { return charged{Device: a.Device(), a: a} }
