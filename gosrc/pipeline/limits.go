package pipeline

import (
	"fmt"

	"github.com/vortexgo/vortexgo/gosrc/backend"
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

// checkBytes returns count*size*elem (the bytes of one of count buffers
// of size elements of elem bytes is size*elem) after checking each factor
// is positive and the total at most MaxBytes without overflowing.
func checkBytes(what string, size, elem, count int) (int, error) {
	switch {
	case size <= 0:
		return 0, fmt.Errorf("%s=%d, expected > 0: %w", what, size, backend.ErrInvalid)
	case count > MaxBuffers:
		return 0, fmt.Errorf("%s: %d buffers, expected at most %d: %w", what, count, MaxBuffers, backend.ErrTooLarge)
	case size > MaxBytes/elem/max(count, 1):
		return 0, fmt.Errorf("%s=%d: %d x %d bytes x %d buffers exceeds %d bytes: %w",
			what, size, size, elem, max(count, 1), MaxBytes, backend.ErrTooLarge)
	}
	return size * elem, nil
}
