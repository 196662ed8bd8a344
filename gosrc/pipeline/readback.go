package pipeline

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/memory"
)

// ErrPoolExhausted is returned (wrapped) when every readback buffer is held
// by an unreleased handle or a borrowed view and the pool may not grow.
var ErrPoolExhausted = errors.New("readback pool exhausted")

// ReadbackOptions configures NewReadback.
type ReadbackOptions struct {
	// Buffers is the number of pinned buffers allocated up front; 2
	// (double buffering) when 0.
	Buffers int
	// MaxBuffers lets the pool grow up to this many when every buffer is
	// held by the caller; 0 means no growth.
	MaxBuffers int
	// Stream is the stream copies run on; nil creates a dedicated one
	// (owned, closed by Close). It must not be the producers' stream, or
	// readbacks would not overlap their work.
	Stream backend.Stream
	// Priority of the dedicated stream.
	Priority int
}

// Readback copies device memory into pooled pinned host buffers
// asynchronously. ReadbackAsync returns at once: the copy runs on the
// readback stream after the producer stream's work so far, so the producer
// goes on with the next frame while this one is read back.
//
// Every buffer is memory.Shared and a handle holds one reference to its
// buffer until Release; a caller whose views outlive the handle (Python's
// NumPy views) releases only when the last of them goes. A buffer goes
// back to the pool once released and its copy completed, so neither a copy
// in flight nor a reader ever sees it handed out again; Close frees each
// buffer with its last reference.
type Readback struct {
	mu       sync.Mutex
	dev      backend.Device
	stream   backend.Stream
	ownsS    bool
	size     int
	max      int
	all      int
	free     []*memory.Shared
	retiring []*ReadbackHandle // released, copy or views maybe still running, oldest first
	mem      []*memory.Shared  // every buffer, for Close
	held     int
	events   eventPool
	closed   bool
}

// NewReadback creates a readback pool of bufferSize-byte pinned buffers.
func NewReadback(dev backend.Device, bufferSize int, opts ReadbackOptions) (*Readback, error) {
	if dev == nil {
		return nil, fmt.Errorf("NewReadback: device is nil, expected a backend.Device: %w", backend.ErrInvalid)
	}
	n := opts.Buffers
	if n == 0 {
		n = 2
	}
	switch {
	case n < 1:
		return nil, fmt.Errorf("NewReadback: buffers=%d, expected >= 1 (0 for the default of 2): %w", opts.Buffers, backend.ErrInvalid)
	case opts.MaxBuffers != 0 && opts.MaxBuffers < n:
		return nil, fmt.Errorf("NewReadback: max_buffers=%d, expected 0 or >= buffers=%d: %w", opts.MaxBuffers, n, backend.ErrInvalid)
	}
	count, countName := n, "buffers"
	if opts.MaxBuffers > n {
		count, countName = opts.MaxBuffers, "max_buffers"
	}
	if _, err := checkBytes("NewReadback", "buffer_size", bufferSize, 1, countName, count); err != nil {
		return nil, err
	}
	r := &Readback{dev: dev, stream: opts.Stream, size: bufferSize, max: max(n, opts.MaxBuffers), events: eventPool{dev: dev}}
	if r.stream == nil {
		s, err := dev.NewStream(opts.Priority)
		if err != nil {
			return nil, fmt.Errorf("NewReadback: stream: %w", err)
		}
		r.stream, r.ownsS = s, true
	}
	for range n {
		if err := r.allocLocked(); err != nil {
			return nil, errors.Join(fmt.Errorf("NewReadback: %w", err), r.Close())
		}
	}
	return r, nil
}

// Stream is the stream readback copies run on.
func (r *Readback) Stream() backend.Stream { return r.stream }

// BufferSize is the size of each pinned buffer in bytes.
func (r *Readback) BufferSize() int { return r.size }

// ReadbackAsync starts copying n bytes at device address src into a pooled
// pinned buffer, after the work queued so far on producer (the stream that
// writes src), and returns at once. The producer must not overwrite src
// until the copy is done: alternate two sources, or call
// ReadbackHandle.StreamWait on the producer first.
//
// When no buffer is free it reclaims released ones whose copies finished,
// then grows (up to MaxBuffers); failing that, if a released buffer's copy
// is still running it waits for the oldest one: a deliberate host wait
// that applies back-pressure instead of letting pinned memory grow without
// bound. If every buffer is held by an unreleased handle or a view it
// returns ErrPoolExhausted.
func (r *Readback) ReadbackAsync(src uintptr, n int, producer backend.Stream) (*ReadbackHandle, error) {
	switch {
	case producer == nil:
		return nil, fmt.Errorf("ReadbackAsync: producer stream is nil, expected the stream that writes src: %w", backend.ErrInvalid)
	case n < 0 || n > r.size:
		return nil, fmt.Errorf("ReadbackAsync: nbytes=%d, expected 0 <= nbytes <= %d (the buffer size): %w", n, r.size, ErrHostTooSmall)
	case src == 0 && n > 0:
		return nil, fmt.Errorf("ReadbackAsync: src is 0, expected a device address: %w", backend.ErrInvalid)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, fmt.Errorf("ReadbackAsync: %w", backend.ErrClosed)
	}
	sh, err := r.takeLocked()
	if err != nil {
		return nil, fmt.Errorf("ReadbackAsync: %w", err)
	}
	own, err := sh.Borrow()
	if err != nil { // unreachable: pool buffers stay open until Close, which holds r.mu
		return nil, fmt.Errorf("ReadbackAsync: %w", err)
	}
	ready, err := r.events.get()
	if err != nil {
		_ = own.Release() // not the last reference: the pool still owns sh
		r.free = append(r.free, sh)
		return nil, fmt.Errorf("ReadbackAsync: %w", err)
	}
	done, err := r.events.get()
	if err != nil {
		r.events.put(ready)
		_ = own.Release()
		r.free = append(r.free, sh)
		return nil, fmt.Errorf("ReadbackAsync: %w", err)
	}
	err = producer.Record(ready)
	if err == nil {
		err = r.stream.WaitEvent(ready)
	}
	// The wait captured the record, so ready is free again at once.
	r.events.put(ready)
	if err == nil {
		err = r.stream.Copy(sh.Ptr(), src, n)
	}
	if err == nil {
		err = r.stream.Record(done)
	}
	if err != nil {
		// The copy may already be queued: keep the buffer (own is never
		// released) and done out of circulation (a leak beats a buffer
		// overwritten under a reader).
		return nil, fmt.Errorf("ReadbackAsync: %w", err)
	}
	r.held++
	return &ReadbackHandle{r: r, mem: sh, own: own, n: n, done: done}, nil
}

// takeLocked finds a buffer for a new readback (see ReadbackAsync).
func (r *Readback) takeLocked() (*memory.Shared, error) {
	r.reclaimLocked()
	if len(r.free) == 0 && r.all < r.max {
		if err := r.allocLocked(); err != nil {
			return nil, err
		}
	}
	if len(r.free) == 0 {
		// Back-pressure: see ReadbackAsync. Only a buffer nobody views
		// can come back, so wait for the oldest such copy.
		for _, h := range r.retiring {
			if h.mem.Borrowers() == 0 {
				if err := h.done.Synchronize(); err != nil {
					return nil, err
				}
				break
			}
		}
		r.reclaimLocked()
	}
	if len(r.free) == 0 {
		return nil, fmt.Errorf("all %d pinned buffers are held by unreleased handles or their views, expected Release "+
			"(and dropping the views) first or max_buffers > %d: %w", r.all, r.all, ErrPoolExhausted)
	}
	sh := r.free[len(r.free)-1]
	r.free = r.free[:len(r.free)-1]
	return sh, nil
}

// reclaimLocked returns released buffers whose copies completed and that
// nobody views any more. Copies on one stream finish in order, so the
// first copy still running ends the scan; viewed buffers stay retiring.
func (r *Readback) reclaimLocked() {
	kept := r.retiring[:0]
	running := false
	for _, h := range r.retiring {
		if !running && h.done != nil {
			if ok, err := h.done.Query(); err == nil && !ok {
				running = true
			} else {
				r.events.put(h.done)
				h.done = nil
			}
		}
		if h.done == nil && h.mem.Borrowers() == 0 {
			r.free = append(r.free, h.mem)
			continue
		}
		kept = append(kept, h)
	}
	clear(r.retiring[len(kept):])
	r.retiring = kept
}

func (r *Readback) allocLocked() error {
	b, err := r.dev.AllocPinned(r.size)
	if err != nil {
		return fmt.Errorf("pinned buffer of %d bytes: %w", r.size, err)
	}
	sh := memory.NewShared(b)
	r.all++
	r.mem = append(r.mem, sh)
	r.free = append(r.free, sh)
	return nil
}

// ReadbackStats counts a readback pool's buffers.
type ReadbackStats struct {
	// Total buffers allocated, Free to hand out, Held by unreleased
	// handles, Retiring: released while their copy ran or views remain.
	Total, Free, Held, Retiring int
}

// Stats reports the pool's buffers.
func (r *Readback) Stats() ReadbackStats {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.closed {
		r.reclaimLocked()
	}
	return ReadbackStats{Total: r.all, Free: len(r.free), Held: r.held, Retiring: len(r.retiring)}
}

// Close waits for the readback stream (its copies write the buffers about
// to be released), then drops the pool's reference to every buffer: each
// is freed now, or with the last handle or view that still uses it, so a
// result being read is never freed under its reader. Handles stay usable
// until released (their copies are complete). Closing twice is an error.
func (r *Readback) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return fmt.Errorf("Readback.Close: %w", backend.ErrClosed)
	}
	r.closed = true
	errs := []error{r.stream.Synchronize()}
	for _, h := range r.retiring {
		r.events.put(h.done)
		h.done = nil
	}
	r.retiring, r.free = nil, nil
	for _, sh := range r.mem {
		errs = append(errs, sh.Close())
	}
	r.mem = nil
	errs = append(errs, r.events.close())
	if r.ownsS {
		errs = append(errs, r.stream.Close())
	}
	return errors.Join(errs...)
}

// ReadbackHandle is one readback in flight or done. It holds a reference
// to its buffer until Release.
type ReadbackHandle struct {
	r        *Readback
	mem      *memory.Shared
	own      *memory.Borrow
	n        int
	mu       sync.Mutex
	done     backend.Event // nil once returned to the pool (after Close: complete)
	released bool
}

// event returns the completion event, or nil when the copy is known
// complete (the pool closed after waiting for it).
func (h *ReadbackHandle) event(what string) (backend.Event, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.released {
		return nil, fmt.Errorf("ReadbackHandle.%s: handle released: %w", what, backend.ErrClosed)
	}
	h.r.mu.Lock()
	defer h.r.mu.Unlock()
	if h.r.closed {
		return nil, nil // Close waited for every copy and closed the events
	}
	return h.done, nil
}

// Done reports whether the copy has completed, without blocking.
func (h *ReadbackHandle) Done() (bool, error) {
	ev, err := h.event("Done")
	if err != nil || ev == nil {
		return err == nil, err
	}
	return ev.Query()
}

// Wait blocks the host until the copy completes or timeout passes
// (negative: no limit; zero: just check).
func (h *ReadbackHandle) Wait(timeout time.Duration) error {
	ev, err := h.event("Wait")
	if err != nil || ev == nil {
		return err
	}
	if err := waitEvent(ev, timeout); err != nil {
		return fmt.Errorf("ReadbackHandle.Wait: %w", err)
	}
	return nil
}

// StreamWait makes s wait, on the device, for the copy to finish reading
// its source: call it on the producer stream before it overwrites src (a
// renderer alternating two targets does not need it). It does not block
// the host.
func (h *ReadbackHandle) StreamWait(s backend.Stream) error {
	if s == nil {
		return fmt.Errorf("ReadbackHandle.StreamWait: stream is nil: %w", backend.ErrInvalid)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.released {
		return fmt.Errorf("ReadbackHandle.StreamWait: handle released: %w", backend.ErrClosed)
	}
	h.r.mu.Lock()
	defer h.r.mu.Unlock()
	if h.r.closed {
		return nil
	}
	if err := s.WaitEvent(h.done); err != nil {
		return fmt.Errorf("ReadbackHandle.StreamWait: %w", err)
	}
	return nil
}

// Buffer is the pinned buffer the copy lands in; read it only after Done
// or Wait, and not after Release.
func (h *ReadbackHandle) Buffer() backend.Buffer { return h.mem.Buffer() }

// Ptr is the address of the copied bytes (Buffer().Ptr()).
func (h *ReadbackHandle) Ptr() uintptr { return h.mem.Ptr() }

// Len is the number of bytes copied.
func (h *ReadbackHandle) Len() int { return h.n }

// Close is Release: the handle is an io.Closer for bindings.
func (h *ReadbackHandle) Close() error { return h.Release() }

// Release gives the handle's reference back. The buffer rejoins the pool
// once the copy has completed and every view let go, so releasing early
// is safe. Releasing twice is an error.
func (h *ReadbackHandle) Release() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.released {
		return fmt.Errorf("ReadbackHandle.Release: %w", backend.ErrClosed)
	}
	h.released = true
	r := h.r
	r.mu.Lock()
	r.held--
	var errs []error
	if !r.closed {
		r.retiring = append(r.retiring, h)
	} else if h.done != nil {
		// Close synchronized the stream, so the copy is complete, and the
		// closed pool takes no event back: this handle's is closed here.
		errs = append(errs, h.done.Close())
		h.done = nil
	}
	r.mu.Unlock()
	// After Close this may be the last reference, and frees the buffer.
	err := errors.Join(append(errs, h.own.Release())...)
	r.mu.Lock()
	if !r.closed {
		r.reclaimLocked()
	}
	r.mu.Unlock()
	return err
}
