package pipeline

import (
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/memory"
)

// BufferState is where one TripleBuffer slot is in its cycle.
type BufferState uint8

// The slot cycle: Free -> Uploading -> Processing -> Downloading -> Free.
const (
	Free BufferState = iota
	Uploading
	Processing
	Downloading
)

// String returns the state's name in lower case.
func (s BufferState) String() string {
	switch s {
	case Free:
		return "free"
	case Uploading:
		return "uploading"
	case Processing:
		return "processing"
	case Downloading:
		return "downloading"
	}
	return fmt.Sprintf("BufferState(%d)", uint8(s))
}

// Layout of TripleBuffer.word. The three slot states and the rotation live
// in one word so that every transition is a single compare-and-swap: a
// goroutine can never see the rotation of one moment and the states of
// another.
const (
	stateBits    = 2
	stateMask    = 1<<stateBits - 1
	baseShift    = 3 * stateBits // bits 6-7: the slot uploading this round
	baseMask     = 3
	genShift     = baseShift + 2 // bits 8-63: number of Advance calls
	numSlots     = 3
	genIncrement = 1 << genShift
)

// TripleBuffer is three equal device buffers rotating through the upload,
// process and download stages, so that one buffer can be filled while the
// next is processed and a third is read back.
//
// In round r (r = number of Advance calls) the slots are assigned
// upload = r%3, process = (r-1)%3, download = (r-2)%3. Each Get call moves
// its stage's slot one state forward and fails (nil, false) when the slot
// is not in the state that stage expects: the upload slot must be Free,
// the process slot Uploading, the download slot Processing. Advance
// returns the download slot to Free and rotates.
//
// The states are host bookkeeping only: they say which buffer each stage
// owns, not whether the device has finished with it. Device ordering comes
// from events (see ManagedGpuContext.TripleBufferedStep). All methods are
// safe for concurrent use; each transition is one atomic compare-and-swap.
//
// Each slot is memory.Shared: a view of a slot (Borrow) keeps it alive
// after Close, which only drops the triple buffer's own references.
type TripleBuffer struct {
	dev   backend.Device
	bufs  [numSlots]backend.Buffer
	mem   [numSlots]*memory.Shared
	n     int
	dtype backend.DType
	word  atomic.Uint64
	freed atomic.Bool
}

// NewTripleBuffer allocates three device buffers of size elements of dtype
// on dev.
func NewTripleBuffer(dev backend.Device, size int, dtype backend.DType) (*TripleBuffer, error) {
	if dev == nil {
		return nil, fmt.Errorf("NewTripleBuffer: device is nil, expected a backend.Device: %w", backend.ErrInvalid)
	}
	if !dtype.Valid() {
		return nil, fmt.Errorf("NewTripleBuffer: dtype=%v, expected a defined backend.DType: %w", dtype, backend.ErrInvalid)
	}
	nbytes, err := checkBytes("NewTripleBuffer", "size", size, dtype.Size(), "slots", numSlots)
	if err != nil {
		return nil, err
	}
	tb := &TripleBuffer{dev: dev, n: size, dtype: dtype}
	for i := range tb.bufs {
		b, err := dev.Alloc(nbytes)
		if err != nil {
			for _, prev := range tb.bufs[:i] {
				_ = prev.Free() // already failing; the allocation error is the one to report
			}
			return nil, fmt.Errorf("NewTripleBuffer: allocating slot %d of %d bytes: %w", i, nbytes, err)
		}
		tb.bufs[i] = b
		tb.mem[i] = memory.NewShared(b)
	}
	return tb, nil
}

// Size is the number of elements in each buffer.
func (tb *TripleBuffer) Size() int { return tb.n }

// Bytes is the size of each buffer in bytes.
func (tb *TripleBuffer) Bytes() int { return tb.n * tb.dtype.Size() }

// DType is the element type.
func (tb *TripleBuffer) DType() backend.DType { return tb.dtype }

// Device is the device holding the buffers.
func (tb *TripleBuffer) Device() backend.Device { return tb.dev }

// Buffer returns slot i's buffer regardless of its state, or nil when i
// is not 0, 1 or 2. Use it only while the triple buffer is open, or
// through a Borrow.
func (tb *TripleBuffer) Buffer(i int) backend.Buffer {
	if i < 0 || i >= numSlots {
		return nil
	}
	return tb.bufs[i]
}

// Borrow takes a reference to slot i that keeps its memory alive until it
// is released, even after Close. It fails with ErrInvalid for a bad slot
// and ErrClosed once the triple buffer is closed.
func (tb *TripleBuffer) Borrow(i int) (*memory.Borrow, error) {
	if i < 0 || i >= numSlots {
		return nil, fmt.Errorf("TripleBuffer.Borrow: slot=%d, expected 0, 1 or 2: %w", i, backend.ErrInvalid)
	}
	b, err := tb.mem[i].Borrow()
	if err != nil {
		return nil, fmt.Errorf("TripleBuffer.Borrow: %w", err)
	}
	return b, nil
}

// SlotOf returns the slot index of b (a buffer from a Get call), or -1.
func (tb *TripleBuffer) SlotOf(b backend.Buffer) int { return tb.slotIndex(b) }

// Closed reports whether Close was called.
func (tb *TripleBuffer) Closed() bool { return tb.freed.Load() }

// Round is the number of Advance calls so far.
func (tb *TripleBuffer) Round() uint64 { return tb.word.Load() >> genShift }

// States returns the state of slots 0, 1 and 2, read atomically together.
func (tb *TripleBuffer) States() [3]BufferState {
	w := tb.word.Load()
	var s [3]BufferState
	for i := range s {
		s[i] = slotState(w, i)
	}
	return s
}

// Stage slots relative to the rotation base (the upload slot).
const (
	uploadOffset   = 0
	processOffset  = 2 // (base - 1) mod 3
	downloadOffset = 1 // (base - 2) mod 3
)

// GetUploadBuffer claims this round's upload slot (Free -> Uploading).
// It returns (nil, false) when that slot is not Free.
func (tb *TripleBuffer) GetUploadBuffer() (backend.Buffer, bool) {
	i, ok := tb.claim(uploadOffset, Free, Uploading)
	if !ok {
		return nil, false
	}
	return tb.bufs[i], true
}

// GetProcessBuffer claims this round's process slot (Uploading ->
// Processing). It returns (nil, false) when that slot is not Uploading.
func (tb *TripleBuffer) GetProcessBuffer() (backend.Buffer, bool) {
	i, ok := tb.claim(processOffset, Uploading, Processing)
	if !ok {
		return nil, false
	}
	return tb.bufs[i], true
}

// GetDownloadBuffer claims this round's download slot (Processing ->
// Downloading). It returns (nil, false) when that slot is not Processing.
func (tb *TripleBuffer) GetDownloadBuffer() (backend.Buffer, bool) {
	i, ok := tb.claim(downloadOffset, Processing, Downloading)
	if !ok {
		return nil, false
	}
	return tb.bufs[i], true
}

// Advance ends the round: the download slot, if Downloading, becomes Free,
// and the rotation moves on. It returns the new round number.
func (tb *TripleBuffer) Advance() uint64 {
	for {
		w := tb.word.Load()
		base := int(w>>baseShift) & baseMask
		d := (base + downloadOffset) % numSlots
		nw := w
		if slotState(w, d) == Downloading {
			nw = withState(nw, d, Free)
		}
		nw = nw&^(baseMask<<baseShift) | uint64((base+1)%numSlots)<<baseShift
		nw += genIncrement
		if tb.word.CompareAndSwap(w, nw) {
			return nw >> genShift
		}
	}
}

// Reset returns every slot to Free and the rotation to round 0. The caller
// must make sure no stage still uses a buffer.
func (tb *TripleBuffer) Reset() { tb.word.Store(0) }

// Close drops the triple buffer's references to its three buffers: each
// is freed now, or when its last borrower releases it. On CUDA the free
// waits for work still queued on the memory (cuMemFree synchronises), so
// closing with copies in flight waits for them instead of freeing under
// them. Closing twice is an error.
func (tb *TripleBuffer) Close() error {
	if !tb.freed.CompareAndSwap(false, true) {
		return fmt.Errorf("TripleBuffer.Close: %w", backend.ErrClosed)
	}
	var errs []error
	for _, m := range tb.mem {
		errs = append(errs, m.Close())
	}
	return errors.Join(errs...)
}

// borrowAll takes a reference to every slot for the duration of one step,
// so a concurrent Close cannot free a slot a queued copy still targets.
func (tb *TripleBuffer) borrowAll() (release func(), err error) {
	var bs []*memory.Borrow
	release = func() {
		for _, b := range bs {
			_ = b.Release() // the step's own references; a free error surfaces at Close
		}
	}
	for i := range numSlots {
		b, err := tb.Borrow(i)
		if err != nil {
			release()
			return nil, err
		}
		bs = append(bs, b)
	}
	return release, nil
}

// claim moves the slot at offset from the rotation base from state from to
// state to, returning the slot index.
func (tb *TripleBuffer) claim(offset int, from, to BufferState) (int, bool) {
	for {
		w := tb.word.Load()
		i := (int(w>>baseShift)&baseMask + offset) % numSlots
		if slotState(w, i) != from {
			return i, false
		}
		if tb.word.CompareAndSwap(w, withState(w, i, to)) {
			return i, true
		}
	}
}

// slotIndex returns the slot index of b, or -1.
func (tb *TripleBuffer) slotIndex(b backend.Buffer) int {
	for i, x := range tb.bufs {
		if x == b {
			return i
		}
	}
	return -1
}

func slotState(w uint64, i int) BufferState {
	return BufferState(w >> (i * stateBits) & stateMask)
}

func withState(w uint64, i int, s BufferState) uint64 {
	shift := i * stateBits
	return w&^(stateMask<<shift) | uint64(s)<<shift
}
