package cpu

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/internal/invariants"
)

// streamCore is the state shared by an owned stream and the wrappers of its
// handle.
type streamCore struct {
	handle uintptr
	refs   int // live Stream values over this core; guarded by Device.mu

	// mu serialises work from several goroutines so stream order holds; it
	// is held while an operation runs.
	mu      sync.Mutex
	closed  bool   // the owner closed the stream
	capture *Graph // non-nil while capturing
}

// Stream is an ordered queue of host work. Operations run on the calling
// goroutine before the call returns, except while capturing.
type Stream struct {
	dev    *Device
	core   *streamCore
	owned  bool
	closed atomic.Bool // this Stream value was closed
	inv    invariants.Obj
}

var (
	_ backend.Stream     = (*Stream)(nil)
	_ backend.HostStream = (*Stream)(nil)
)

// Device returns the CPU device.
func (s *Stream) Device() backend.Device { return s.dev }

// Handle returns the stream's unique id (or the wrapped handle).
func (s *Stream) Handle() uintptr { return s.core.handle }

// Priority returns 0, the only priority the CPU has.
func (s *Stream) Priority() int { return 0 }

// Owned reports whether Close destroys the stream (false for WrapStream).
func (s *Stream) Owned() bool { return s.owned }

// String names the stream for error messages and logs.
func (s *Stream) String() string { return fmt.Sprintf("cpu.Stream(%#x)", s.core.handle) }

// do runs fn in stream order, or records it while capturing. The stream
// mutex is held while fn runs so that work from other goroutines cannot
// interleave with it.
func (s *Stream) do(op string, fn func()) error {
	if s.closed.Load() {
		return s.inv.Misuse(fmt.Errorf("%s: %s: %w", op, s, backend.ErrClosed))
	}
	c := s.core
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return s.inv.Misuse(fmt.Errorf("%s: %s was closed by its owner: %w", op, s, backend.ErrClosed))
	}
	if c.capture != nil {
		c.capture.ops = append(c.capture.ops, fn)
		return nil
	}
	fn()
	return nil
}

// begin takes the stream's mutex for work that can run at once. It returns
// true with the mutex held when the caller should run the work now and then
// unlock; false (mutex released) while capturing, when the caller records a
// closure through do instead. Splitting the paths keeps the common case free
// of closure allocations: the engine records events and copies per block.
func (s *Stream) begin(op string) (bool, error) {
	if s.closed.Load() {
		return false, s.inv.Misuse(fmt.Errorf("%s: %s: %w", op, s, backend.ErrClosed))
	}
	c := s.core
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return false, s.inv.Misuse(fmt.Errorf("%s: %s was closed by its owner: %w", op, s, backend.ErrClosed))
	}
	if c.capture != nil {
		c.mu.Unlock()
		return false, nil
	}
	return true, nil
}

// Enqueue runs fn in stream order (at once, on the calling goroutine) or
// records it while capturing. fn must not issue work to this stream: the
// stream's mutex is held while it runs.
func (s *Stream) Enqueue(fn func()) error {
	if fn == nil {
		return errors.New("cpu.Stream.Enqueue: fn=nil, expected a function")
	}
	return s.do("cpu.Stream.Enqueue", fn)
}

// Record records ev, which must be a CPU event. It completes at once (or on
// replay, while capturing).
func (s *Stream) Record(ev backend.Event) error {
	const op = "cpu.Stream.Record"
	e, ok := ev.(*Event)
	if !ok || e == nil {
		return fmt.Errorf("%s: ev is a %T, expected a *cpu.Event from cpu.Default().NewEvent", op, ev)
	}
	if err := e.checkOpen(op); err != nil {
		return err
	}
	if now, err := s.begin(op); err != nil {
		return err
	} else if now {
		e.record()
		s.core.mu.Unlock()
		return nil
	}
	return s.do(op, e.record)
}

// WaitEvent makes later work wait for ev. A CPU event is complete once
// recorded, so that is a no-op. An event of another backend (a CUDA event
// guarding data this stream will read) is waited for by blocking the
// caller: this stream's later work runs on the caller's goroutine, so
// blocking here is the only way to order it after ev.
func (s *Stream) WaitEvent(ev backend.Event) error {
	const op = "cpu.Stream.WaitEvent"
	if ev == nil {
		return fmt.Errorf("%s: ev=nil, expected an event", op)
	}
	if e, ok := ev.(*Event); ok {
		if err := e.checkOpen(op); err != nil {
			return err
		}
		return s.do(op, func() {})
	}
	var err error
	if derr := s.do(op, func() { err = ev.Synchronize() }); derr != nil {
		return derr
	}
	if err != nil {
		return fmt.Errorf("%s: waiting for foreign event: %w", op, err)
	}
	return nil
}

// checkNotCapturing rejects host synchronisation during capture, as CUDA
// does (cudaErrorStreamCaptureUnsupported): a graph cannot contain a host
// wait, and allowing it here would hide that bug until the code runs on a
// GPU.
func (s *Stream) checkNotCapturing(op string) error {
	if s.closed.Load() {
		return s.inv.Misuse(fmt.Errorf("%s: %s: %w", op, s, backend.ErrClosed))
	}
	c := s.core
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.closed:
		return s.inv.Misuse(fmt.Errorf("%s: %s was closed by its owner: %w", op, s, backend.ErrClosed))
	case c.capture != nil:
		return fmt.Errorf("%s: %s is capturing a graph, expected EndCapture first", op, s)
	}
	return nil
}

// Synchronize waits for work another goroutine is running on the stream;
// the caller's own work is already done.
func (s *Stream) Synchronize() error {
	return s.checkNotCapturing("cpu.Stream.Synchronize")
}

// Query reports false only while another goroutine is running work on the
// stream. It never blocks.
func (s *Stream) Query() (bool, error) {
	const op = "cpu.Stream.Query"
	if s.closed.Load() {
		return false, s.inv.Misuse(fmt.Errorf("%s: %s: %w", op, s, backend.ErrClosed))
	}
	c := s.core
	if !c.mu.TryLock() {
		return false, nil
	}
	defer c.mu.Unlock()
	switch {
	case c.closed:
		return false, s.inv.Misuse(fmt.Errorf("%s: %s was closed by its owner: %w", op, s, backend.ErrClosed))
	case c.capture != nil:
		return false, fmt.Errorf("%s: %s is capturing a graph, expected EndCapture first", op, s)
	}
	return true, nil
}

func checkPtr(op, name string, p uintptr, n int) error {
	if p == 0 && n > 0 {
		return fmt.Errorf("%s: %s=0 with n=%d, expected a non-null address", op, name, n)
	}
	return nil
}

// Copy copies n bytes from src to dst (memmove: the ranges may overlap).
func (s *Stream) Copy(dst, src uintptr, n int) error {
	const op = "cpu.Stream.Copy"
	if err := checkSize(op, n); err != nil {
		return err
	}
	if err := errors.Join(checkPtr(op, "dst", dst, n), checkPtr(op, "src", src, n)); err != nil {
		return err
	}
	if now, err := s.begin(op); err != nil {
		return err
	} else if now {
		memmove(dst, src, n)
		s.core.mu.Unlock()
		return nil
	}
	return s.do(op, func() { memmove(dst, src, n) })
}

// Copy2D copies height rows of width bytes from src (rows spitch bytes
// apart) to dst (rows dpitch bytes apart).
func (s *Stream) Copy2D(dst uintptr, dpitch int, src uintptr, spitch int, width, height int) error {
	const op = "cpu.Stream.Copy2D"
	switch {
	case width < 0:
		return fmt.Errorf("%s: width=%d, expected width >= 0", op, width)
	case height < 0:
		return fmt.Errorf("%s: height=%d, expected height >= 0", op, height)
	case dpitch < width:
		return fmt.Errorf("%s: dpitch=%d, expected dpitch >= width (%d)", op, dpitch, width)
	case spitch < width:
		return fmt.Errorf("%s: spitch=%d, expected spitch >= width (%d)", op, spitch, width)
	}
	n := width * height
	if err := errors.Join(checkPtr(op, "dst", dst, n), checkPtr(op, "src", src, n)); err != nil {
		return err
	}
	return s.do(op, func() {
		if dpitch == width && spitch == width {
			memmove(dst, src, n) // contiguous: one copy
			return
		}
		for row := range height {
			memmove(dst+uintptr(row*dpitch), src+uintptr(row*spitch), width)
		}
	})
}

// Memset sets n bytes at dst to v.
func (s *Stream) Memset(dst uintptr, v byte, n int) error {
	const op = "cpu.Stream.Memset"
	if err := checkSize(op, n); err != nil {
		return err
	}
	if err := checkPtr(op, "dst", dst, n); err != nil {
		return err
	}
	if now, err := s.begin(op); err != nil {
		return err
	} else if now {
		memset(dst, v, n)
		s.core.mu.Unlock()
		return nil
	}
	return s.do(op, func() { memset(dst, v, n) })
}

// BeginCapture starts recording work issued to the stream (by any
// goroutine) into a graph instead of running it.
func (s *Stream) BeginCapture() error {
	const op = "cpu.Stream.BeginCapture"
	if s.closed.Load() {
		return s.inv.Misuse(fmt.Errorf("%s: %s: %w", op, s, backend.ErrClosed))
	}
	c := s.core
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.closed:
		return s.inv.Misuse(fmt.Errorf("%s: %s was closed by its owner: %w", op, s, backend.ErrClosed))
	case c.capture != nil:
		return fmt.Errorf("%s: %s is already capturing, expected EndCapture first", op, s)
	}
	c.capture = &Graph{}
	return nil
}

// EndCapture stops recording and returns the graph of the recorded work.
func (s *Stream) EndCapture() (backend.Graph, error) {
	const op = "cpu.Stream.EndCapture"
	if s.closed.Load() {
		return nil, s.inv.Misuse(fmt.Errorf("%s: %s: %w", op, s, backend.ErrClosed))
	}
	c := s.core
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.closed:
		return nil, s.inv.Misuse(fmt.Errorf("%s: %s was closed by its owner: %w", op, s, backend.ErrClosed))
	case c.capture == nil:
		return nil, fmt.Errorf("%s: %s is not capturing, expected BeginCapture first", op, s)
	}
	g := c.capture
	c.capture = nil
	g.inv = invariants.Track("cpu.Graph", c.handle)
	return g, nil
}

// Capturing reports whether a capture is in progress.
func (s *Stream) Capturing() bool {
	c := s.core
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.capture != nil
}

// Close releases the stream. Closing the owner makes its wrappers fail with
// backend.ErrClosed; closing a wrapper affects only that wrapper. A second
// Close returns an error wrapping backend.ErrClosed.
func (s *Stream) Close() error {
	if !s.closed.CompareAndSwap(false, true) {
		return s.inv.Misuse(fmt.Errorf("cpu.Stream.Close: %s already closed: %w", s, backend.ErrClosed))
	}
	if s.owned {
		c := s.core
		c.mu.Lock() // waits for work in progress on other goroutines
		c.closed = true
		c.capture = nil
		c.mu.Unlock()
	}
	s.dev.release(s.core, s.owned)
	s.inv.Release()
	return nil
}
