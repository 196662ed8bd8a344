package engine

import (
	"fmt"
	"math"
	"math/bits"
	"time"

	"github.com/vortexgo/vortexgo/gosrc/backend"
)

// kindError is an error whose text is exactly its message and which
// matches a backend sentinel with errors.Is: the message names the field
// and the value expected, the sentinel gives its Python class.
type kindError struct {
	msg  string
	kind error
}

func (e *kindError) Error() string { return e.msg }
func (e *kindError) Unwrap() error { return e.kind }

// Invalid returns an error matching backend.ErrInvalid (Python ValueError)
// with the given message, which should name the field and the value
// expected. The stage packages share it so that no layer above has to
// classify errors by their text.
func Invalid(format string, args ...any) error {
	return &kindError{msg: fmt.Sprintf(format, args...), kind: backend.ErrInvalid}
}

// TooLarge returns an error matching backend.ErrTooLarge (Python
// MemoryError): a size refused before anything was allocated.
func TooLarge(format string, args ...any) error {
	return &kindError{msg: fmt.Sprintf(format, args...), kind: backend.ErrTooLarge}
}

// MulSize multiplies non-negative sizes, reporting ok=false when the
// product overflows an int (or any factor is negative): every byte size
// derived from user-supplied dimensions goes through it before an
// allocation, so that a huge request becomes an error, not a wrapped size.
func MulSize(factors ...int) (n int, ok bool) {
	p := uint64(1)
	for _, f := range factors {
		if f < 0 {
			return 0, false
		}
		hi, lo := bits.Mul64(p, uint64(f))
		if hi != 0 || lo > math.MaxInt64 {
			return 0, false
		}
		p = lo
	}
	return int(p), true
}

// Size bounds shared by the stages. They sit far above any real scan and
// far below the sizes at which Go's runtime dies instead of returning an
// error ("fatal error: out of memory" cannot be recovered).
const (
	// MaxEventQueue is the largest Config.EventQueueSize (64 B per event:
	// 1 GiB).
	MaxEventQueue = 1 << 24
	// MaxRecordsPerBlock is the largest Config.RecordsPerBlock.
	MaxRecordsPerBlock = 1 << 24
	// MaxBlocks is the largest Config.BlocksToAllocate.
	MaxBlocks = 1 << 16
	// MaxGalvoChannels bounds Config.GalvoOutputChannels and
	// GalvoInputChannels (a DAQ has a handful of analog channels).
	MaxGalvoChannels = 64
	// MaxSlots is the largest Config.Slots.
	MaxSlots = 64
	// MaxDispatchSpin is the longest Config.DispatchSpin: a spin holds a
	// core for that long after each batch of events.
	MaxDispatchSpin = time.Second
	// NoSpin is the Config.DispatchSpin of a dispatcher that never spins.
	NoSpin time.Duration = -1
	// MaxAcquisitions bounds the acquisitions of one engine (each adds a
	// raw buffer to every block).
	MaxAcquisitions = 64
)
