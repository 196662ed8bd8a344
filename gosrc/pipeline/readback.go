package pipeline

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/vortexgo/vortexgo/gosrc/backend"
)

// ErrPoolExhausted is returned (wrapped) when every readback buffer is held
// by an unreleased handle and the pool may not grow.
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
// goes on with the next frame while this one is read back. A buffer goes
// back to the pool only when the handle is released and its copy has
// completed, so a copy in flight never lands in a buffer handed out again.
type Readback struct {
	mu       sync.Mutex
	dev      backend.Device
	stream   backend.Stream
	ownsS    bool
	size     int
	max      int
	all      []backend.Buffer
	free     []backend.Buffer
	retiring []*ReadbackHandle // released, copy maybe still running, oldest first
	held     int
	events   eventPool
	closed   bool
}

// NewReadback creates a readback pool of bufferSize-byte pinned buffers.
func NewReadback(dev backend.Device, bufferSize int, opts ReadbackOptions) (*Readback, error) {
	if dev == nil {
		return nil, errors.New("NewReadback: device is nil, expected a backend.Device")
	}
	if bufferSize <= 0 {
		return nil, fmt.Errorf("NewReadback: bufferSize=%d, expected bufferSize > 0", bufferSize)
	}
	n := opts.Buffers
	if n == 0 {
		n = 2
	}
	if n < 1 {
		return nil, fmt.Errorf("NewReadback: Buffers=%d, expected Buffers >= 1 (0 for the default of 2)", opts.Buffers)
	}
	if opts.MaxBuffers != 0 && opts.MaxBuffers < n {
		return nil, fmt.Errorf("NewReadback: MaxBuffers=%d, expected 0 or MaxBuffers >= Buffers=%d", opts.MaxBuffers, n)
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
		if _, err := r.allocLocked(); err != nil {
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
// bound. If every buffer is held by an unreleased handle it returns
// ErrPoolExhausted.
func (r *Readback) ReadbackAsync(src uintptr, n int, producer backend.Stream) (*ReadbackHandle, error) {
	switch {
	case producer == nil:
		return nil, errors.New("ReadbackAsync: producer stream is nil, expected the stream that writes src")
	case n < 0 || n > r.size:
		return nil, fmt.Errorf("ReadbackAsync: n=%d, expected 0 <= n <= %d (the buffer size): %w", n, r.size, ErrHostTooSmall)
	case src == 0 && n > 0:
		return nil, errors.New("ReadbackAsync: src is 0, expected a device address")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, fmt.Errorf("ReadbackAsync: %w", backend.ErrClosed)
	}
	buf, err := r.takeLocked()
	if err != nil {
		return nil, fmt.Errorf("ReadbackAsync: %w", err)
	}
	ready, err := r.events.get()
	if err != nil {
		r.free = append(r.free, buf)
		return nil, fmt.Errorf("ReadbackAsync: %w", err)
	}
	done, err := r.events.get()
	if err != nil {
		r.events.put(ready)
		r.free = append(r.free, buf)
		return nil, fmt.Errorf("ReadbackAsync: %w", err)
	}
	err = producer.Record(ready)
	if err == nil {
		err = r.stream.WaitEvent(ready)
	}
	// The wait captured the record, so ready is free again at once.
	r.events.put(ready)
	if err == nil {
		err = r.stream.Copy(buf.Ptr(), src, n)
	}
	if err == nil {
		err = r.stream.Record(done)
	}
	if err != nil {
		// The copy may already be queued: keep buf and done out of
		// circulation (a leak beats a buffer overwritten under a reader).
		return nil, fmt.Errorf("ReadbackAsync: %w", err)
	}
	r.held++
	return &ReadbackHandle{r: r, buf: buf, n: n, done: done}, nil
}

// takeLocked finds a buffer for a new readback (see ReadbackAsync).
func (r *Readback) takeLocked() (backend.Buffer, error) {
	r.reclaimLocked()
	if len(r.free) == 0 && len(r.all) < r.max {
		if _, err := r.allocLocked(); err != nil {
			return nil, err
		}
	}
	if len(r.free) == 0 && len(r.retiring) > 0 {
		// Back-pressure: see ReadbackAsync.
		if err := r.retiring[0].done.Synchronize(); err != nil {
			return nil, err
		}
		r.reclaimLocked()
	}
	if len(r.free) == 0 {
		return nil, fmt.Errorf("all %d pinned buffers are held by unreleased handles, expected Release first or MaxBuffers > %d: %w",
			len(r.all), len(r.all), ErrPoolExhausted)
	}
	b := r.free[len(r.free)-1]
	r.free = r.free[:len(r.free)-1]
	return b, nil
}

// reclaimLocked returns released buffers whose copies completed, oldest
// first; copies on one stream finish in order.
func (r *Readback) reclaimLocked() {
	k := 0
	for _, h := range r.retiring {
		if ok, err := h.done.Query(); err == nil && !ok {
			break
		}
		r.free = append(r.free, h.buf)
		r.events.put(h.done)
		h.done = nil
		k++
	}
	if k > 0 {
		clear(r.retiring[:k])
		r.retiring = r.retiring[k:]
	}
}

func (r *Readback) allocLocked() (backend.Buffer, error) {
	b, err := r.dev.AllocPinned(r.size)
	if err != nil {
		return nil, fmt.Errorf("pinned buffer of %d bytes: %w", r.size, err)
	}
	r.all = append(r.all, b)
	r.free = append(r.free, b)
	return b, nil
}

// Stats reports the pool: buffers allocated, free, held by handles, and
// released but still copying.
func (r *Readback) Stats() (total, free, held, retiring int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reclaimLocked()
	return len(r.all), len(r.free), r.held, len(r.retiring)
}

// Close waits for the readback stream (its copies write the buffers about
// to be freed), then frees every buffer, including those of unreleased
// handles, which become invalid. Closing twice is an error.
func (r *Readback) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return fmt.Errorf("Readback.Close: %w", backend.ErrClosed)
	}
	r.closed = true
	errs := []error{r.stream.Synchronize()}
	r.reclaimLocked()
	for _, b := range r.all {
		errs = append(errs, b.Free())
	}
	r.all, r.free = nil, nil
	errs = append(errs, r.events.close())
	if r.ownsS {
		errs = append(errs, r.stream.Close())
	}
	return errors.Join(errs...)
}

// ReadbackHandle is one readback in flight or done.
type ReadbackHandle struct {
	r        *Readback
	buf      backend.Buffer
	n        int
	done     backend.Event
	mu       sync.Mutex
	released bool
}

// Done reports whether the copy has completed, without blocking.
func (h *ReadbackHandle) Done() (bool, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.released {
		return false, fmt.Errorf("ReadbackHandle.Done: %w", backend.ErrClosed)
	}
	return h.done.Query()
}

// Wait blocks the host until the copy completes or timeout passes
// (negative: no limit; zero: just check).
func (h *ReadbackHandle) Wait(timeout time.Duration) error {
	h.mu.Lock()
	if h.released {
		h.mu.Unlock()
		return fmt.Errorf("ReadbackHandle.Wait: %w", backend.ErrClosed)
	}
	ev := h.done
	h.mu.Unlock()
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
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.released {
		return fmt.Errorf("ReadbackHandle.StreamWait: %w", backend.ErrClosed)
	}
	if err := s.WaitEvent(h.done); err != nil {
		return fmt.Errorf("ReadbackHandle.StreamWait: %w", err)
	}
	return nil
}

// Buffer is the pinned buffer the copy lands in; read it only after Done
// or Wait, and not after Release.
func (h *ReadbackHandle) Buffer() backend.Buffer { return h.buf }

// Ptr is the address of the copied bytes (Buffer().Ptr()).
func (h *ReadbackHandle) Ptr() uintptr { return h.buf.Ptr() }

// Len is the number of bytes copied.
func (h *ReadbackHandle) Len() int { return h.n }

// Release gives the buffer back. It rejoins the pool once the copy has
// completed, so releasing early is safe. Releasing twice is an error, as
// is releasing while another goroutine waits on the handle.
func (h *ReadbackHandle) Release() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.released {
		return fmt.Errorf("ReadbackHandle.Release: %w", backend.ErrClosed)
	}
	h.released = true
	r := h.r
	r.mu.Lock()
	defer r.mu.Unlock()
	r.held--
	if r.closed {
		return nil // Close freed the buffer already
	}
	r.retiring = append(r.retiring, h)
	r.reclaimLocked()
	return nil
}
