package pyapi

import (
	"fmt"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/handle"
)

// Stream, Event and Graph live in the one registry (fast.go): every method
// first checks the wrapper's id, so a closed wrapper, or one whose owner (an
// endpoint, a coordinator) was closed, fails with a ClosedError and never
// reaches the native handle. The backends make a call racing Close safe: it
// completes on a live handle or fails with ErrClosed.

// live fails with a ClosedError (wrapping backend.ErrClosed) once id is released.
func live(what string, id handle.ID) error {
	if !handles.Live(id) {
		return fmt.Errorf("%s %v: %w", what, id, handle.ErrStale)
	}
	return nil
}

// release releases id for Close: a ClosedError if it was not live, so of two
// racing Close calls exactly one goes on to destroy the native object.
func release(what string, id handle.ID) error {
	if len(handles.Release(id)) == 0 {
		return fmt.Errorf("%s %v: %w", what, id, handle.ErrStale)
	}
	return nil
}

// fastID is the C fast path's id of a CUDA stream or event (0 otherwise).
func fastID(x any) int {
	if f, ok := x.(interface{ FastID() int64 }); ok {
		return int(f.FastID())
	}
	return 0
}

// Stream is an ordered queue of asynchronous work.
type Stream struct {
	s        backend.Stream
	id       handle.ID
	borrowed bool // its owner (an endpoint, a coordinator) destroys s
}

// newStream registers an owned stream: closing it destroys s.
func newStream(s backend.Stream) *Stream {
	st := &Stream{s: s}
	st.id = handles.Register(st)
	return st
}

// borrowStream registers s as borrowed from owner: releasing owner's id
// makes every method of the result fail with a ClosedError.
func borrowStream(owner handle.ID, s backend.Stream) (*Stream, error) {
	st := &Stream{s: s, borrowed: true}
	id, err := handles.Borrow(owner, st)
	if err != nil {
		return nil, err
	}
	st.id = id
	return st, nil
}

func (s *Stream) live() error { return live("stream", s.id) }

// do runs f once the stream is known live, tagging its error.
func (s *Stream) do(f func() error) error {
	if err := s.live(); err != nil {
		return tag(err)
	}
	return tag(f())
}

// ID is the stream's registry id (the Go fast path's argument).
func (s *Stream) ID() int { return int(s.id) }

// FastID is the stream's id in the C fast path (0: none, use ID's path).
// A borrowed stream has none: only the registry knows when its owner closed.
func (s *Stream) FastID() int {
	if s.borrowed {
		return 0
	}
	return fastID(s.s)
}

// Handle is the native stream handle (CUstream) as an int.
func (s *Stream) Handle() (int, error) {
	if err := s.live(); err != nil {
		return 0, tag(err)
	}
	return int(s.s.Handle()), nil
}

// Priority is the priority in effect.
func (s *Stream) Priority() int { return s.s.Priority() }

// Owned reports whether closing the stream destroys it.
func (s *Stream) Owned() bool { return s.s.Owned() }

// withEvent runs f once the stream and ev are both live.
func (s *Stream) withEvent(ev *Event, f func() error) error {
	if ev == nil {
		return tag(badArg("event=None, expected an Event"))
	}
	if err := ev.live(); err != nil {
		return tag(err)
	}
	return s.do(f)
}

// Record records ev on this stream.
func (s *Stream) Record(ev *Event) error {
	return s.withEvent(ev, func() error { return s.s.Record(ev.e) })
}

// WaitEvent makes later work on this stream wait for ev (no host wait).
func (s *Stream) WaitEvent(ev *Event) error {
	return s.withEvent(ev, func() error { return s.s.WaitEvent(ev.e) })
}

// Synchronize blocks until the stream's work is done (GIL released).
func (s *Stream) Synchronize() error { return s.do(s.s.Synchronize) }

// Query reports whether the stream's work is done, without blocking.
func (s *Stream) Query() (ok bool, err error) {
	err = s.do(func() (e error) { ok, e = s.s.Query(); return e })
	return ok, err
}

// Copy copies nbytes from src to dst in stream order.
func (s *Stream) Copy(dst, src, nbytes int) error {
	if nbytes < 0 {
		return tag(badArg("nbytes=%d, expected nbytes >= 0", nbytes))
	}
	return s.do(func() error { return s.s.Copy(uintptr(dst), uintptr(src), nbytes) })
}

// Memset sets nbytes at dst to value in stream order.
func (s *Stream) Memset(dst, value, nbytes int) error {
	if value < 0 || value > 255 {
		return tag(badArg("value=%d, expected 0 <= value <= 255", value))
	}
	if nbytes < 0 {
		return tag(badArg("nbytes=%d, expected nbytes >= 0", nbytes))
	}
	return s.do(func() error { return s.s.Memset(uintptr(dst), byte(value), nbytes) })
}

// BeginCapture starts capturing this stream's work into a graph.
func (s *Stream) BeginCapture() error { return s.do(s.s.BeginCapture) }

// EndCapture ends the capture and returns the instantiated graph.
func (s *Stream) EndCapture() (*Graph, error) {
	var g backend.Graph
	if err := s.do(func() (err error) { g, err = s.s.EndCapture(); return err }); err != nil {
		return nil, err
	}
	gr := &Graph{g: g}
	gr.id = handles.Register(gr)
	return gr, nil
}

// Close releases the stream: its id (and every id borrowed from it) stops
// naming it first. Closing a borrowed stream only forgets the wrapper.
func (s *Stream) Close() error {
	if err := release("stream", s.id); err != nil || s.borrowed {
		return tag(err)
	}
	return tag(s.s.Close())
}

// Event marks a point in a stream.
type Event struct {
	e  backend.Event
	id handle.ID
}

func newEvent(e backend.Event) *Event {
	ev := &Event{e: e}
	ev.id = handles.Register(ev)
	return ev
}

func (e *Event) live() error { return live("event", e.id) }

func (e *Event) do(f func() error) error {
	if err := e.live(); err != nil {
		return tag(err)
	}
	return tag(f())
}

// ID is the event's registry id (the Go fast path's argument).
func (e *Event) ID() int { return int(e.id) }

// FastID is the event's id in the C fast path (0: none).
func (e *Event) FastID() int { return fastID(e.e) }

// Handle is the native event handle as an int.
func (e *Event) Handle() (int, error) {
	if err := e.live(); err != nil {
		return 0, tag(err)
	}
	return int(e.e.Handle()), nil
}

// Query reports whether the event has completed.
func (e *Event) Query() (ok bool, err error) {
	err = e.do(func() (err error) { ok, err = e.e.Query(); return err })
	return ok, err
}

// Synchronize blocks until the event completes (GIL released).
func (e *Event) Synchronize() error { return e.do(e.e.Synchronize) }

// ElapsedTime returns milliseconds from e to end.
func (e *Event) ElapsedTime(end *Event) (ms float64, err error) {
	if end == nil {
		return 0, tag(badArg("end=None, expected an Event"))
	}
	if err := end.live(); err != nil {
		return 0, tag(err)
	}
	err = e.do(func() error { t, err := e.e.ElapsedTime(end.e); ms = float64(t); return err })
	return ms, err
}

// Close releases the event; its id stops naming it first.
func (e *Event) Close() error {
	if err := release("event", e.id); err != nil {
		return tag(err)
	}
	return tag(e.e.Close())
}

// Graph is an instantiated CUDA graph (a recorded op list on the CPU).
type Graph struct {
	g  backend.Graph
	id handle.ID
}

// Launch replays the graph on s.
func (g *Graph) Launch(s *Stream) error {
	if s == nil {
		return tag(badArg("stream=None, expected a Stream"))
	}
	if err := live("graph", g.id); err != nil {
		return tag(err)
	}
	return s.do(func() error { return g.g.Launch(s.s) })
}

// Nodes is the number of operations in the graph.
func (g *Graph) Nodes() (int, error) {
	if err := live("graph", g.id); err != nil {
		return 0, tag(err)
	}
	return g.g.Nodes(), nil
}

// Close releases the graph.
func (g *Graph) Close() error {
	if err := release("graph", g.id); err != nil {
		return tag(err)
	}
	return tag(g.g.Close())
}
