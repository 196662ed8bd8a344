package storage

import (
	"fmt"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/claim"
)

// Status says whether a storage holds its file (vortex's ready) and, when
// not, why.
type Status int

const (
	// StatusClosed: never opened, or closed.
	StatusClosed Status = iota
	// StatusOpen: open (vortex's ready).
	StatusOpen
	// StatusSuperseded: closed because another storage opened the same
	// file since and took it over (ErrSuperseded).
	StatusSuperseded
)

// StackState is a SimpleStack's or a BroctStorage's state: Status, and
// Volumes, the volumes its file holds whole (a SimpleStack's header count;
// 0 for a closed BroctStorage).
type StackState struct {
	Status  Status
	Volumes int
}

// HDF5State is an HDF5Stack's state: Status (never StatusSuperseded),
// Allocated, the volumes in the dataset, and Volume, the current volume
// (the volumes advanced past).
type HDF5State struct {
	Status    Status
	Allocated int
	Volume    int
}

// StreamState is a SimpleStream's, StreamDump's or MarkerLog's state:
// Status, and Bytes, the bytes appended since Open.
type StreamState struct {
	Status Status
	Bytes  int64
}

// status is the Status of a storage whose file is open or not, gone when
// another storage took it over.
func status(open, gone bool) Status {
	switch {
	case open:
		return StatusOpen
	case gone:
		return StatusSuperseded
	}
	return StatusClosed
}

// State returns the stack's state.
func (s *SimpleStack) State() StackState {
	s.mu.Lock()
	defer s.mu.Unlock()
	return StackState{Status: status(s.f != nil, s.gone), Volumes: s.completed}
}

// State returns the storage's state.
func (s *BroctStorage) State() StackState {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f == nil {
		return StackState{Status: status(false, s.gone)}
	}
	return StackState{Status: StatusOpen, Volumes: int((s.farthest - s.headerEnd) / s.volumeBytes())}
}

// State returns the stack's state.
func (h *HDF5Stack) State() HDF5State {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.s == nil {
		return HDF5State{}
	}
	return HDF5State{Status: StatusOpen, Allocated: h.allocated, Volume: h.volume}
}

// State returns the storage's state.
func (a *appender) State() StreamState {
	a.mu.Lock()
	defer a.mu.Unlock()
	return StreamState{Status: status(a.f != nil, a.gone), Bytes: a.bytes}
}

// A user's call (a write, advance or seek from Python) is refused while an
// engine holds the storage: the engine's writer goroutine writes and
// advances there from Prepare until its run ends, so a call in between
// would tear a volume or interleave volumes without a word. Close and Open
// are refused the same way (claim.Claim). The engine's own writes call
// the write methods directly, never CheckUserCall.

// CheckUserCall refuses a user's call of method (the Python method's name,
// for the message) while an engine writes to the stack, with an error
// wrapping backend.ErrInUse that says to stop the engine first.
func (s *SimpleStack) CheckUserCall(method string) error {
	return notWhileEngine(&s.claim, "SimpleStack", method)
}

// CheckUserCall is SimpleStack.CheckUserCall for a BROCT storage.
func (s *BroctStorage) CheckUserCall(method string) error {
	return notWhileEngine(&s.claim, "BroctStorage", method)
}

// CheckUserCall is SimpleStack.CheckUserCall for an HDF5 stack.
func (h *HDF5Stack) CheckUserCall(method string) error {
	return notWhileEngine(&h.claim, "HDF5Stack", method)
}

// CheckUserCall is SimpleStack.CheckUserCall for a stream, stream dump or
// marker log.
func (a *appender) CheckUserCall(method string) error {
	return notWhileEngine(&a.claim, a.name, method)
}

func notWhileEngine(c *claim.Claim, what, method string) error {
	if !c.InUse() {
		return nil
	}
	if method == "" {
		method = "write"
	}
	return fmt.Errorf("%s.%s: an engine writes to this storage (one of its endpoints was prepared with it and "+
		"the engine has not finished), and a call of yours would tear or interleave its volumes; stop the engine "+
		"first (engine.stop(), or wait() for the end of its run; engine.close() for an engine prepared but never "+
		"started): %w", what, method, backend.ErrInUse)
}
