package pyapi

import (
	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/handle"
)

// Stream, Event and Graph live in the one registry (fast.go): every method
// first checks the wrapper's id, so a closed wrapper, or one whose owner (an
// endpoint, a coordinator) was closed, fails with a ClosedError and never
// reaches the native handle. The backends make a call racing Close safe: it
// completes on a live handle or fails with ErrClosed. Their per-call
// operations are StreamOp and the fast functions (fast.go).

// checked runs f once id (a what) is known live.
func checked(what string, id handle.ID, f func() error) error {
	if err := handles.Check(what, id); err != nil {
		return err
	}
	return f()
}

// Stream is an ordered queue of asynchronous work.
type Stream struct {
	Object
	s        backend.Stream
	borrowed bool // its owner (an endpoint, a coordinator) destroys s
}

// newStream registers s as owned (closing the wrapper destroys it, or
// forgets an adopted one), or passes err on. A CUDA stream is published
// for the C fast path: the wrapper lives exactly as long as its native
// stream, and Close releases the id (waiting for C calls) before it
// destroys the stream.
func newStream(s backend.Stream, err error) (*Stream, error) {
	if err != nil {
		return nil, tag(err)
	}
	st := &Stream{s: s}
	st.Object = Object{obj: s, id: handles.RegisterNative(st, native(s))}
	return st, nil
}

// borrowStream registers s as borrowed from owner: releasing owner's id
// makes every method of the result fail with a ClosedError. It is not
// published for the C fast path, which knows no owners: its calls take the
// Go paths, which check the owner on every call.
func borrowStream(owner handle.ID, s backend.Stream) (*Stream, error) {
	st := &Stream{s: s, borrowed: true}
	id, err := handles.Borrow(owner, st)
	if err != nil {
		return nil, err
	}
	st.Object = Object{obj: s, id: id}
	return st, nil
}

// do runs f once the stream is known live, tagging its error.
func (s *Stream) do(f func() error) error { return tag(checked("stream", s.id, f)) }

// onStream runs f on s's native stream once s is known live (a stream
// argument of another object's method; gopy never passes None as nil).
func onStream(s *Stream, f func(backend.Stream) error) error {
	return checked("stream", s.id, func() error { return f(s.s) })
}

// Handle is the native stream handle (CUstream) as an int.
func (s *Stream) Handle() (h int, err error) {
	err = s.do(func() error { h = int(s.s.Handle()); return nil })
	return h, err
}

// Priority is the priority in effect.
func (s *Stream) Priority() int { return s.s.Priority() }

// Owned reports whether closing the stream destroys it.
func (s *Stream) Owned() bool { return s.s.Owned() }

// BeginCapture starts capturing this stream's work into a graph.
func (s *Stream) BeginCapture() error { return s.do(s.s.BeginCapture) }

// EndCapture ends the capture and returns the instantiated graph.
func (s *Stream) EndCapture() (*Graph, error) {
	var g backend.Graph
	if err := s.do(func() (err error) { g, err = s.s.EndCapture(); return err }); err != nil {
		return nil, err
	}
	gr := &Graph{g: g}
	gr.Object = Object{obj: g, id: handles.Register(gr)}
	return gr, nil
}

// Close releases the stream: its id (and every id borrowed from it) stops
// naming it first, on every path, and no C fast call holds it once the
// release returns. Closing a borrowed stream only forgets the wrapper.
func (s *Stream) Close() error {
	if err := handles.Close("stream", s.id); err != nil || s.borrowed {
		return tag(err)
	}
	return tag(s.s.Close())
}

// Event marks a point in a stream; Object.Close releases it.
type Event struct {
	Object
	e backend.Event
}

func newEvent(e backend.Event, err error) (*Event, error) {
	if err != nil {
		return nil, tag(err)
	}
	ev := &Event{e: e}
	ev.Object = Object{obj: e, id: handles.RegisterNative(ev, native(e))} // Object.Close releases the id first
	return ev, nil
}

// Handle is the native event handle as an int.
func (e *Event) Handle() (h int, err error) {
	err = checked("event", e.id, func() error { h = int(e.e.Handle()); return nil })
	return h, tag(err)
}

// ElapsedTime returns milliseconds from e to end.
func (e *Event) ElapsedTime(end *Event) (ms float64, err error) {
	err = checked("event", end.id, func() error {
		return checked("event", e.id, func() error { t, err := e.e.ElapsedTime(end.e); ms = float64(t); return err })
	})
	return ms, tag(err)
}

// Graph is an instantiated CUDA graph (a recorded op list on the CPU);
// Object.Close releases it.
type Graph struct {
	Object
	g backend.Graph
}

// Launch replays the graph on s.
func (g *Graph) Launch(s *Stream) error {
	return tag(checked("graph", g.id, func() error { return onStream(s, g.g.Launch) }))
}

// Nodes is the number of operations in the graph.
func (g *Graph) Nodes() (n int, err error) {
	err = checked("graph", g.id, func() error { n = g.g.Nodes(); return nil })
	return n, tag(err)
}
