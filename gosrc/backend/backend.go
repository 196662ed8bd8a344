// Package backend defines the contract that both compute backends (gosrc/cuda
// and gosrc/cpu) implement: devices, streams, events, memory and graphs.
//
// Everything above this package (memory, pipeline, engine, pyapi) is written
// against these interfaces, so the same pipeline runs on a GPU or on the CPU.
//
// # Semantics
//
// A Stream is an ordered queue of work. On CUDA, work is asynchronous with
// respect to the host; on the CPU backend every operation runs to completion
// on the calling goroutine before the call returns (like Warp's "cpu"
// device), so events recorded on a CPU stream are complete as soon as
// Record returns. Code that is correct under CUDA's asynchronous rules is
// therefore also correct on the CPU backend.
//
// Pointers are plain uintptr values: device pointers on CUDA (unified
// addressing, so host and device pointers share one space) and host
// addresses on the CPU. Memory behind them is never on the Go heap, so the
// Go garbage collector neither moves nor frees it and the pointers may be
// handed to Python, CuPy or PyTorch.
package backend

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
)

// Kind names a backend.
type Kind int

const (
	// CPU is the synchronous host backend.
	CPU Kind = iota
	// CUDA is the NVIDIA GPU backend (driver API through a dlopen'd shim).
	CUDA
)

// String returns "cpu" or "cuda".
func (k Kind) String() string {
	switch k {
	case CPU:
		return "cpu"
	case CUDA:
		return "cuda"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// MemKind says where a Buffer's bytes live.
type MemKind int

const (
	// DeviceMem is memory of the device (GPU global memory; plain host
	// memory on the CPU backend).
	DeviceMem MemKind = iota
	// PinnedMem is page-locked host memory: the source or target of truly
	// asynchronous copies.
	PinnedMem
)

// String returns "device" or "pinned".
func (m MemKind) String() string {
	if m == PinnedMem {
		return "pinned"
	}
	return "device"
}

// ErrClosed is returned (wrapped) by any use of a closed stream, event,
// buffer or graph.
var ErrClosed = errors.New("use of closed object")

// ErrInUse is returned (wrapped) when closing or changing something that a
// running engine, an in-flight operation or a borrower still uses: the
// call is refused rather than freeing under the user (Python: InUseError).
var ErrInUse = errors.New("in use")

// ErrInvalid is returned (wrapped) for a bad argument or configuration
// value; the wrapping text names the argument and the value expected
// (Python: ValueError).
var ErrInvalid = errors.New("invalid argument")

// Invalidf is a bad argument met while decoding a call: its text names the
// argument and the value expected, and it wraps ErrInvalid without adding
// words of its own (the text is the whole message the user reads).
func Invalidf(format string, args ...any) error { return invalid(fmt.Sprintf(format, args...)) }

type invalid string

func (e invalid) Error() string { return string(e) }
func (e invalid) Unwrap() error { return ErrInvalid }

// ErrTooLarge is returned (wrapped) when a requested size cannot be
// allocated or represented, checked before any allocation so that Go never
// dies of an impossible request (Python: MemoryError).
var ErrTooLarge = errors.New("size too large")

// TooLargef is a size refused before anything was allocated: its text
// names the size and the bound, and it wraps ErrTooLarge without adding
// words of its own (Python: MemoryError).
func TooLargef(format string, args ...any) error { return tooLarge(fmt.Sprintf(format, args...)) }

type tooLarge string

func (e tooLarge) Error() string { return string(e) }
func (e tooLarge) Unwrap() error { return ErrTooLarge }

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

// Device is one compute device.
type Device interface {
	// Kind says which backend owns the device.
	Kind() Kind
	// Ordinal is the device's index within its backend.
	Ordinal() int
	// Name is the marketing name ("NVIDIA H200", "cpu").
	Name() string
	// ComputeCapability returns (major, minor); (0, 0) on the CPU.
	ComputeCapability() (major, minor int)
	// MemInfo returns free and total device memory in bytes.
	MemInfo() (free, total uint64, err error)
	// StreamPriorityRange returns the least and greatest priority. On CUDA
	// greater priority is a smaller number (e.g. least 0, greatest -5).
	StreamPriorityRange() (least, greatest int)

	// NewStream creates a non-blocking stream. The priority is clamped to
	// StreamPriorityRange; Stream.Priority reports the value in effect.
	NewStream(priority int) (Stream, error)
	// WrapStream adopts a stream created elsewhere (CuPy, PyTorch). The
	// returned Stream does not own the handle: Close does not destroy it.
	WrapStream(handle uintptr) (Stream, error)
	// NewEvent creates an event; timing enables ElapsedTime.
	NewEvent(timing bool) (Event, error)

	// Alloc allocates n bytes of device memory.
	Alloc(n int) (Buffer, error)
	// AllocPinned allocates n bytes of page-locked host memory.
	AllocPinned(n int) (Buffer, error)

	// Synchronize blocks until all work on the device is complete.
	Synchronize() error
}

// HostRegistrar is implemented by devices that can pin host memory they
// did not allocate (CUDA: cuMemHostRegister), so that uploads from it are
// truly asynchronous DMA instead of staged copies. The CPU backend has no
// such notion and does not implement it.
type HostRegistrar interface {
	// RegisterHost pins n bytes at ptr; readOnly promises the device only
	// reads them (required for a read-only file mapping). The returned
	// Buffer's Free unpins the memory and frees nothing: the caller keeps
	// it mapped until then.
	RegisterHost(ptr uintptr, n int, readOnly bool) (Buffer, error)
}

// Stream is an ordered queue of work on one device.
type Stream interface {
	// Device returns the owning device.
	Device() Device
	// Handle is the native handle (CUstream) or a unique id on the CPU.
	Handle() uintptr
	// Priority is the priority in effect after clamping.
	Priority() int
	// Owned reports whether Close destroys the native stream.
	Owned() bool

	// Record records ev at the current tail of this stream.
	Record(ev Event) error
	// WaitEvent makes later work on this stream wait for ev, without
	// blocking the host.
	WaitEvent(ev Event) error
	// Synchronize blocks the host until all work queued so far is done.
	Synchronize() error
	// Query reports whether all work queued so far is done, without blocking.
	Query() (bool, error)

	// Copy copies n bytes from src to dst in stream order. Any pair of
	// device, pinned and pageable host pointers is allowed; copies that
	// touch pageable host memory may block the host (CUDA's rules).
	Copy(dst, src uintptr, n int) error
	// Copy2D copies height rows of width bytes from src (rows spitch bytes
	// apart) to dst (rows dpitch bytes apart) in stream order: a cropped or
	// strided copy in one operation (cuMemcpy2DAsync on CUDA).
	Copy2D(dst uintptr, dpitch int, src uintptr, spitch int, width, height int) error
	// Memset sets n bytes at dst to v in stream order.
	Memset(dst uintptr, v byte, n int) error

	// BeginCapture starts recording the work issued to this stream into a
	// graph instead of running it.
	BeginCapture() error
	// EndCapture stops recording and returns the instantiated graph.
	EndCapture() (Graph, error)
	// Capturing reports whether a capture is in progress.
	Capturing() bool

	// Close releases the stream. Closing twice is an error.
	Close() error
}

// Event marks a point in a stream.
type Event interface {
	// Handle is the native handle (CUevent) or a unique id on the CPU.
	Handle() uintptr
	// Timing reports whether the event records timestamps.
	Timing() bool
	// Query reports whether the work before the event is complete.
	Query() (bool, error)
	// Synchronize blocks the host until the event completes.
	Synchronize() error
	// ElapsedTime returns milliseconds from this event to end. Both must
	// be timing events that have completed.
	ElapsedTime(end Event) (float32, error)
	// Close releases the event.
	Close() error
}

// Buffer is an allocation of device or pinned memory.
type Buffer interface {
	// Ptr is the address of the first byte.
	Ptr() uintptr
	// Size is the length in bytes.
	Size() int
	// Kind says where the bytes live.
	Kind() MemKind
	// Device is the owning device.
	Device() Device
	// Free releases the memory. Freeing twice is an error.
	Free() error
}

// Graph is an instantiated, replayable capture of stream work.
type Graph interface {
	// Launch replays the graph on s.
	Launch(s Stream) error
	// Nodes is the number of operations in the graph.
	Nodes() int
	// Close releases the graph.
	Close() error
}
