package engine

import (
	"time"

	"github.com/vortexgo/vortexgo/gosrc/backend"
)

// Invalid returns an error matching backend.ErrInvalid (Python ValueError)
// with the given message, which should name the field and the value
// expected (backend.Invalidf, under the name the stage packages above the
// engine use; the storage package, below it, calls backend's).
func Invalid(format string, args ...any) error { return backend.Invalidf(format, args...) }

// TooLarge returns an error matching backend.ErrTooLarge (Python
// MemoryError): a size refused before anything was allocated
// (backend.TooLargef).
func TooLarge(format string, args ...any) error { return backend.TooLargef(format, args...) }

// MulSize is backend.MulSize: the product of non-negative sizes, ok=false
// when it overflows an int.
func MulSize(factors ...int) (n int, ok bool) { return backend.MulSize(factors...) }

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
