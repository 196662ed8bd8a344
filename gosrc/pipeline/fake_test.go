package pipeline

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vortexgo/vortexgo/gosrc/backend"
)

// fakeDevice is an asynchronous stand-in for a GPU: every stream is a
// goroutine running its queue in order, events complete when a stream
// reaches them, and stream waits snapshot the event's latest record as
// CUDA's do. Memory lives in a fake address space (no unsafe), so copies
// between bad addresses fail loudly. Copies sleep copyDelay to make a slow
// stream; hostSyncs counts every host-blocking call.
type fakeDevice struct {
	kind      backend.Kind
	copyDelay time.Duration

	mu       sync.Mutex
	next     uintptr
	mem      map[uintptr][]byte
	streams  []*fakeStream
	handles  atomic.Uintptr
	events   atomic.Int64 // created
	hostSync atomic.Int64
}

func newFakeDevice(kind backend.Kind) *fakeDevice {
	return &fakeDevice{kind: kind, next: 0x10000, mem: map[uintptr][]byte{}}
}

func (d *fakeDevice) Kind() backend.Kind               { return d.kind }
func (d *fakeDevice) Ordinal() int                     { return 0 }
func (d *fakeDevice) Name() string                     { return "fake" }
func (d *fakeDevice) ComputeCapability() (int, int)    { return 0, 0 }
func (d *fakeDevice) MemInfo() (uint64, uint64, error) { return 1 << 30, 1 << 30, nil }
func (d *fakeDevice) StreamPriorityRange() (int, int)  { return 0, -5 }
func (d *fakeDevice) WrapStream(uintptr) (backend.Stream, error) {
	return nil, errors.New("fake: no wrap")
}

func (d *fakeDevice) NewStream(priority int) (backend.Stream, error) {
	s := &fakeStream{dev: d, handle: d.handles.Add(1), prio: max(-5, min(0, priority))}
	s.cond = sync.NewCond(&s.mu)
	go s.run()
	d.mu.Lock()
	d.streams = append(d.streams, s)
	d.mu.Unlock()
	return s, nil
}

func (d *fakeDevice) NewEvent(timing bool) (backend.Event, error) {
	d.events.Add(1)
	e := &fakeEvent{dev: d, handle: d.handles.Add(1), timing: timing}
	return e, nil
}

func (d *fakeDevice) alloc(n int, kind backend.MemKind) (backend.Buffer, error) {
	if n < 0 {
		return nil, fmt.Errorf("fake alloc: n=%d", n)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	p := d.next
	d.next += uintptr(n+4095) &^ 4095
	d.next += 4096 // guard gap
	d.mem[p] = make([]byte, n)
	return &fakeBuffer{dev: d, ptr: p, n: n, kind: kind}, nil
}

func (d *fakeDevice) Alloc(n int) (backend.Buffer, error)       { return d.alloc(n, backend.DeviceMem) }
func (d *fakeDevice) AllocPinned(n int) (backend.Buffer, error) { return d.alloc(n, backend.PinnedMem) }

func (d *fakeDevice) Synchronize() error {
	d.mu.Lock()
	ss := append([]*fakeStream(nil), d.streams...)
	d.mu.Unlock()
	for _, s := range ss {
		if err := s.Synchronize(); err != nil && !errors.Is(err, backend.ErrClosed) {
			return err
		}
	}
	return nil
}

// bytes resolves [p, p+n) to a slice of one allocation.
func (d *fakeDevice) bytes(p uintptr, n int) ([]byte, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for base, b := range d.mem {
		if p >= base && p+uintptr(n) <= base+uintptr(len(b)) {
			return b[p-base : p-base+uintptr(n)], nil
		}
	}
	return nil, fmt.Errorf("fake: [%#x, +%d) is not inside one allocation", p, n)
}

// write and read are the test's host access to fake memory; callers order
// them with events or stream syncs, as with real device memory.
func (d *fakeDevice) write(p uintptr, data []byte) {
	b, err := d.bytes(p, len(data))
	if err != nil {
		panic(err)
	}
	copy(b, data)
}

func (d *fakeDevice) read(p uintptr, n int) []byte {
	b, err := d.bytes(p, n)
	if err != nil {
		panic(err)
	}
	return append([]byte(nil), b...)
}

type fakeBuffer struct {
	dev   *fakeDevice
	ptr   uintptr
	n     int
	kind  backend.MemKind
	freed atomic.Bool
}

func (b *fakeBuffer) Ptr() uintptr           { return b.ptr }
func (b *fakeBuffer) Size() int              { return b.n }
func (b *fakeBuffer) Kind() backend.MemKind  { return b.kind }
func (b *fakeBuffer) Device() backend.Device { return b.dev }
func (b *fakeBuffer) Free() error {
	if !b.freed.CompareAndSwap(false, true) {
		return backend.ErrClosed
	}
	b.dev.mu.Lock()
	delete(b.dev.mem, b.ptr)
	b.dev.mu.Unlock()
	return nil
}

// fakeCapture is a graph being recorded: the tasks of every stream that
// joined it, in issue order (which respects their dependencies).
type fakeCapture struct {
	origin *fakeStream
	tasks  []func()
	joined []*fakeStream
}

type fakeStream struct {
	dev    *fakeDevice
	handle uintptr
	prio   int

	mu      sync.Mutex
	cond    *sync.Cond
	queue   []func()
	issued  uint64 // tasks enqueued
	done    uint64 // tasks finished
	closed  bool
	capture *fakeCapture
	ops     atomic.Int64 // tasks run, for tests
}

func (s *fakeStream) run() {
	s.mu.Lock()
	for {
		for len(s.queue) == 0 && !s.closed {
			s.cond.Wait()
		}
		if len(s.queue) == 0 {
			s.mu.Unlock()
			return
		}
		t := s.queue[0]
		s.queue = s.queue[1:]
		s.mu.Unlock()
		t()
		s.ops.Add(1)
		s.mu.Lock()
		s.done++
		s.cond.Broadcast()
	}
}

// enqueue appends t to the stream, or to the capture it belongs to.
func (s *fakeStream) enqueue(t func()) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return backend.ErrClosed
	}
	if s.capture != nil {
		s.capture.tasks = append(s.capture.tasks, t)
		return nil
	}
	s.queue = append(s.queue, t)
	s.issued++
	s.cond.Broadcast()
	return nil
}

func (s *fakeStream) Device() backend.Device  { return s.dev }
func (s *fakeStream) Handle() uintptr         { return s.handle }
func (s *fakeStream) Priority() int           { return s.prio }
func (s *fakeStream) Owned() bool             { return true }
func (s *fakeStream) Enqueue(fn func()) error { return s.enqueue(fn) }

func (s *fakeStream) Record(ev backend.Event) error {
	e := ev.(*fakeEvent)
	s.mu.Lock()
	c := s.capture
	s.mu.Unlock()
	e.mu.Lock()
	if c != nil {
		// Inside a capture an event only carries a dependency.
		e.captured = c
		e.mu.Unlock()
		return nil
	}
	r := &fakeRecord{done: make(chan struct{})}
	e.captured, e.cur = nil, r
	e.mu.Unlock()
	return s.enqueue(func() {
		r.at = time.Now()
		close(r.done)
	})
}

func (s *fakeStream) WaitEvent(ev backend.Event) error {
	e := ev.(*fakeEvent)
	e.mu.Lock()
	r, c := e.cur, e.captured
	e.mu.Unlock()
	if c != nil {
		s.mu.Lock()
		if s.capture == nil { // joins the capture, like CUDA's fork pattern
			s.capture = c
			c.joined = append(c.joined, s)
		}
		s.mu.Unlock()
		return nil
	}
	return s.enqueue(r.wait)
}

func (s *fakeStream) Synchronize() error {
	s.dev.hostSync.Add(1)
	s.mu.Lock()
	defer s.mu.Unlock()
	target := s.issued
	for s.done < target {
		s.cond.Wait()
	}
	return nil
}

func (s *fakeStream) Query() (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.done == s.issued, nil
}

func (s *fakeStream) Copy(dst, src uintptr, n int) error {
	if n < 0 {
		return fmt.Errorf("fake Copy: n=%d", n)
	}
	// Resolve now so bad addresses fail at issue time, as CUDA reports
	// invalid values synchronously.
	db, err := s.dev.bytes(dst, n)
	if err != nil {
		return err
	}
	sb, err := s.dev.bytes(src, n)
	if err != nil {
		return err
	}
	delay := s.dev.copyDelay
	return s.enqueue(func() {
		if delay > 0 {
			time.Sleep(delay)
		}
		copy(db, sb)
	})
}

func (s *fakeStream) Copy2D(dst uintptr, dpitch int, src uintptr, spitch int, width, height int) error {
	for r := range height {
		if err := s.Copy(dst+uintptr(r*dpitch), src+uintptr(r*spitch), width); err != nil {
			return err
		}
	}
	return nil
}

func (s *fakeStream) Memset(dst uintptr, v byte, n int) error {
	b, err := s.dev.bytes(dst, n)
	if err != nil {
		return err
	}
	return s.enqueue(func() {
		for i := range b {
			b[i] = v
		}
	})
}

func (s *fakeStream) BeginCapture() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.capture != nil {
		return errors.New("fake: already capturing")
	}
	s.capture = &fakeCapture{origin: s}
	return nil
}

func (s *fakeStream) EndCapture() (backend.Graph, error) {
	s.mu.Lock()
	c := s.capture
	if c == nil || c.origin != s {
		s.mu.Unlock()
		return nil, errors.New("fake: not capturing on this stream")
	}
	s.capture = nil
	s.mu.Unlock()
	for _, j := range c.joined {
		j.mu.Lock()
		j.capture = nil
		j.mu.Unlock()
	}
	return &fakeGraph{tasks: c.tasks}, nil
}

func (s *fakeStream) Capturing() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.capture != nil
}

func (s *fakeStream) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return backend.ErrClosed
	}
	s.closed = true
	s.cond.Broadcast()
	return nil
}

type fakeGraph struct{ tasks []func() }

func (g *fakeGraph) Launch(s backend.Stream) error {
	tasks := g.tasks
	return s.(*fakeStream).enqueue(func() {
		for _, t := range tasks {
			t()
		}
	})
}
func (g *fakeGraph) Nodes() int   { return len(g.tasks) }
func (g *fakeGraph) Close() error { return nil }

// fakeEvent follows CUDA: each Record starts a new record, and a stream
// wait or host sync waits for the record current when it was issued, even
// if the event is recorded again (on another stream) later.
type fakeEvent struct {
	dev    *fakeDevice
	handle uintptr
	timing bool

	mu       sync.Mutex
	cur      *fakeRecord // nil: never recorded (complete, as in CUDA)
	captured *fakeCapture
	closed   bool
}

type fakeRecord struct {
	done chan struct{}
	at   time.Time // written before done is closed
}

func (e *fakeEvent) current() *fakeRecord {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.cur
}

func (r *fakeRecord) wait() {
	if r != nil {
		<-r.done
	}
}

func (r *fakeRecord) complete() bool {
	if r == nil {
		return true
	}
	select {
	case <-r.done:
		return true
	default:
		return false
	}
}

func (e *fakeEvent) Handle() uintptr { return e.handle }
func (e *fakeEvent) Timing() bool    { return e.timing }

func (e *fakeEvent) Query() (bool, error) { return e.current().complete(), nil }

func (e *fakeEvent) Synchronize() error {
	e.dev.hostSync.Add(1)
	e.current().wait()
	return nil
}

func (e *fakeEvent) ElapsedTime(end backend.Event) (float32, error) {
	f := end.(*fakeEvent)
	if !e.timing || !f.timing {
		return 0, errors.New("fake: ElapsedTime on a non-timing event")
	}
	a, b := e.current(), f.current()
	if a == nil || b == nil || !a.complete() || !b.complete() {
		return 0, errors.New("fake: ElapsedTime on an unrecorded or incomplete event")
	}
	return float32(b.at.Sub(a.at).Seconds() * 1e3), nil
}

func (e *fakeEvent) Close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return backend.ErrClosed
	}
	e.closed = true
	return nil
}

// sleepOp returns a Func that occupies its stream for d.
func sleepOp(d time.Duration) func(backend.Stream) error {
	return func(s backend.Stream) error {
		return s.(backend.HostStream).Enqueue(func() { time.Sleep(d) })
	}
}

var (
	_ backend.Device     = (*fakeDevice)(nil)
	_ backend.HostStream = (*fakeStream)(nil)
	_ backend.Event      = (*fakeEvent)(nil)
	_ backend.Buffer     = (*fakeBuffer)(nil)
	_ backend.Graph      = (*fakeGraph)(nil)
)
