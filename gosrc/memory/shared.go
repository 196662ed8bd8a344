package memory

import (
	"fmt"
	"sync"

	"github.com/vortexgo/vortexgo/gosrc/backend"
)

// Shared is memory with counted users: one reference for its owner and one
// for each borrower (a DLPack capsule, a NumPy view, a tensor view, a
// readback result, a stage of a running engine). The buffer is freed when
// the last reference is released, never while a borrower still reads it:
// CuPy's pointer = (owner, offset) rule, kept in Go so that every language
// and call path obeys it.
//
// Close releases the owner's reference: new borrows fail with ErrClosed at
// once, and the memory goes back when the last borrower lets go.
type Shared struct {
	mu     sync.Mutex
	buf    backend.Buffer
	refs   int  // owner (until Close) + live borrows
	closed bool // the owner released its reference
	freed  bool
	err    error // the Free error, reported by whoever released last
}

// NewShared takes ownership of buf; the caller holds the owner's reference.
func NewShared(buf backend.Buffer) *Shared {
	return &Shared{buf: buf, refs: 1}
}

// Buffer is the memory. Use it only while holding a reference.
func (s *Shared) Buffer() backend.Buffer { return s.buf }

// Ptr is the memory's address.
func (s *Shared) Ptr() uintptr { return s.buf.Ptr() }

// Size is the memory's length in bytes.
func (s *Shared) Size() int { return s.buf.Size() }

// Closed reports whether the owner released its reference.
func (s *Shared) Closed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// Freed reports whether the memory went back (no reference left).
func (s *Shared) Freed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.freed
}

// Borrowers is the number of live borrows.
func (s *Shared) Borrowers() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return s.refs
	}
	return s.refs - 1
}

// Borrow takes a reference for a borrower; Release on the result gives it
// back. It fails with ErrClosed once the owner closed: a borrow starts only
// from a live owner.
func (s *Shared) Borrow() (*Borrow, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, fmt.Errorf("memory: borrow: %w (the owner freed it)", backend.ErrClosed)
	}
	s.refs++
	return &Borrow{s: s}, nil
}

// Close releases the owner's reference; the memory is freed now if nothing
// borrows it, else when the last borrower releases. A second Close fails
// with ErrClosed.
func (s *Shared) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return fmt.Errorf("memory: close: %w", backend.ErrClosed)
	}
	s.closed = true
	return s.unrefLocked()
}

// unrefLocked drops one reference and frees at zero; it unlocks s.mu.
func (s *Shared) unrefLocked() error {
	s.refs--
	if s.refs > 0 {
		s.mu.Unlock()
		return nil
	}
	s.freed = true
	buf := s.buf
	s.mu.Unlock()
	// Free outside the lock: on CUDA it may wait for work still using the
	// memory (the driver's rule), and nothing else needs s meanwhile.
	err := buf.Free()
	s.mu.Lock()
	s.err = err
	s.mu.Unlock()
	return err
}

// Check fails with ErrInvalid unless [ptr, ptr+n) lies inside the memory:
// operations named by (memory, address) check it before touching a byte,
// so a wrong size or address is an error instead of a stray write.
func (s *Shared) Check(ptr uintptr, n int) error {
	base, size := s.buf.Ptr(), s.buf.Size()
	if n < 0 || ptr < base || ptr-base > uintptr(size) || uintptr(n) > uintptr(size)-(ptr-base) {
		return fmt.Errorf("memory: %d bytes at 0x%x, expected a range inside the %d bytes at 0x%x: %w",
			n, ptr, size, base, backend.ErrInvalid)
	}
	return nil
}

// Reachable refuses work on stream st that would fault: a CPU stream
// dereferencing GPU memory, or a CUDA kernel on host memory the driver does
// not know (ErrInvalid). CUDA copies (copying) reach any host address and,
// with unified addressing, any device's memory.
func (s *Shared) Reachable(st backend.Stream, copying bool) error {
	md, sd := s.buf.Device(), st.Device()
	pinnedCUDA := s.buf.Kind() == backend.PinnedMem && md.Kind() == backend.CUDA
	switch {
	case md.Kind() == sd.Kind() && md.Ordinal() == sd.Ordinal(),
		sd.Kind() == backend.CPU && (md.Kind() == backend.CPU || pinnedCUDA),
		sd.Kind() == backend.CUDA && (copying || pinnedCUDA):
		return nil
	}
	return fmt.Errorf("memory: %s memory of %s:%d on a stream of %s:%d, expected a stream that can reach it: %w",
		s.buf.Kind(), md.Kind(), md.Ordinal(), sd.Kind(), sd.Ordinal(), backend.ErrInvalid)
}

// Borrow is one borrower's reference to Shared memory.
type Borrow struct {
	once     sync.Once
	s        *Shared
	released bool // under s.mu
}

// Borrow takes another reference through b, for a borrower's borrower (a
// view of a view, an operation through a view). Unlike Shared.Borrow it
// works after the owner closed, since b keeps the memory alive; it fails
// with ErrClosed once b was released.
func (b *Borrow) Borrow() (*Borrow, error) {
	b.s.mu.Lock()
	defer b.s.mu.Unlock()
	if b.released {
		return nil, fmt.Errorf("memory: borrow through a released borrow: %w", backend.ErrClosed)
	}
	b.s.refs++
	return &Borrow{s: b.s}, nil
}

// Shared is the memory borrowed.
func (b *Borrow) Shared() *Shared { return b.s }

// Ptr is the borrowed memory's address.
func (b *Borrow) Ptr() uintptr { return b.s.Ptr() }

// Release gives the reference back, freeing the memory if it was the last
// one. Releasing twice is a no-op, so finalizers and explicit releases may
// both run; so is releasing a nil Borrow (no memory was borrowed).
func (b *Borrow) Release() error {
	if b == nil {
		return nil
	}
	var err error
	b.once.Do(func() {
		b.s.mu.Lock()
		b.released = true
		err = b.s.unrefLocked()
	})
	return err
}
