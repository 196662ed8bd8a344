package pyapi

import (
	"fmt"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/handle"
)

// Stream is an ordered queue of asynchronous work.
type Stream struct {
	s        backend.Stream
	id       handle.ID // in the registry (fast.go): both call paths name it by id
	borrowed bool      // its owner (an endpoint, a coordinator) destroys s
}

// newStream registers an owned stream: closing it destroys s.
func newStream(s backend.Stream) *Stream {
	st := &Stream{s: s}
	st.id = handles.Register(st)
	return st
}

// borrowStream registers s as borrowed from owner (an endpoint's or a
// coordinator's stream): releasing owner's id makes every method of the
// result fail with a ClosedError instead of reaching a destroyed handle.
func borrowStream(owner handle.ID, s backend.Stream) (*Stream, error) {
	st := &Stream{s: s, borrowed: true}
	id, err := handles.Borrow(owner, st)
	if err != nil {
		return nil, err
	}
	st.id = id
	return st, nil
}

// live fails with a ClosedError once the stream (or its owner) was closed.
func (s *Stream) live() error {
	if !handles.Live(s.id) {
		return fmt.Errorf("stream %v: %w", s.id, handle.ErrStale)
	}
	return nil
}

// ID is the stream's registry id (the fast path's argument).
func (s *Stream) ID() int { return int(s.id) }

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

// DeviceKind is "cuda" or "cpu".
func (s *Stream) DeviceKind() string { return s.s.Device().Kind().String() }

// DeviceOrdinal is the owning device's ordinal.
func (s *Stream) DeviceOrdinal() int { return s.s.Device().Ordinal() }

// pair checks that the stream and ev are both live.
func (s *Stream) pair(ev *Event) error {
	if ev == nil {
		return badArg("event=None, expected an Event")
	}
	if err := s.live(); err != nil {
		return err
	}
	return ev.live()
}

// Record records ev on this stream.
func (s *Stream) Record(ev *Event) error {
	if err := s.pair(ev); err != nil {
		return tag(err)
	}
	return tag(s.s.Record(ev.e))
}

// WaitEvent makes later work on this stream wait for ev (no host wait).
func (s *Stream) WaitEvent(ev *Event) error {
	if err := s.pair(ev); err != nil {
		return tag(err)
	}
	return tag(s.s.WaitEvent(ev.e))
}

// Synchronize blocks until the stream's work is done (GIL released).
func (s *Stream) Synchronize() error {
	if err := s.live(); err != nil {
		return tag(err)
	}
	return tag(s.s.Synchronize())
}

// Query reports whether the stream's work is done, without blocking.
func (s *Stream) Query() (bool, error) {
	if err := s.live(); err != nil {
		return false, tag(err)
	}
	ok, err := s.s.Query()
	return ok, tag(err)
}

// Copy copies nbytes from src to dst in stream order.
func (s *Stream) Copy(dst, src, nbytes int) error {
	if nbytes < 0 {
		return tag(badArg("nbytes=%d, expected nbytes >= 0", nbytes))
	}
	if nbytes == 0 {
		return nil
	}
	if err := s.live(); err != nil {
		return tag(err)
	}
	return tag(s.s.Copy(uintptr(dst), uintptr(src), nbytes))
}

// Copy2D copies height rows of width bytes between pitched layouts.
func (s *Stream) Copy2D(dst, dpitch, src, spitch, width, height int) error {
	if width < 0 || height < 0 || dpitch < width || spitch < width {
		return tag(badArg("copy2d: width=%d height=%d dpitch=%d spitch=%d, expected 0 <= width <= pitches and height >= 0",
			width, height, dpitch, spitch))
	}
	if err := s.live(); err != nil {
		return tag(err)
	}
	return tag(s.s.Copy2D(uintptr(dst), dpitch, uintptr(src), spitch, width, height))
}

// Memset sets nbytes at dst to value in stream order.
func (s *Stream) Memset(dst, value, nbytes int) error {
	if value < 0 || value > 255 {
		return tag(badArg("value=%d, expected 0 <= value <= 255", value))
	}
	if nbytes < 0 {
		return tag(badArg("nbytes=%d, expected nbytes >= 0", nbytes))
	}
	if err := s.live(); err != nil {
		return tag(err)
	}
	return tag(s.s.Memset(uintptr(dst), byte(value), nbytes))
}

// BeginCapture starts capturing this stream's work into a graph.
func (s *Stream) BeginCapture() error {
	if err := s.live(); err != nil {
		return tag(err)
	}
	return tag(s.s.BeginCapture())
}

// EndCapture ends the capture and returns the instantiated graph.
func (s *Stream) EndCapture() (*Graph, error) {
	if err := s.live(); err != nil {
		return nil, tag(err)
	}
	g, err := s.s.EndCapture()
	if err != nil {
		return nil, tag(err)
	}
	return &Graph{g: g}, nil
}

// Capturing reports whether a capture is in progress.
func (s *Stream) Capturing() bool { return s.s.Capturing() }

// Close releases the stream: its id (and every id borrowed from it) stops
// naming it first, so no call path can reach the destroyed handle. Closing
// a borrowed stream only forgets the wrapper: its owner destroys it.
func (s *Stream) Close() error {
	if err := s.live(); err != nil {
		return tag(err)
	}
	handles.Release(s.id)
	if s.borrowed {
		return nil
	}
	return tag(s.s.Close())
}

// String describes the stream.
func (s *Stream) String() string {
	if s.live() != nil {
		return "Stream(closed)"
	}
	return fmt.Sprintf("Stream(%s:%d, handle=0x%x, priority=%d)", s.DeviceKind(), s.DeviceOrdinal(), s.s.Handle(), s.Priority())
}

// Event marks a point in a stream.
type Event struct {
	e  backend.Event
	id handle.ID // in the registry, as Stream's
}

func newEvent(e backend.Event) *Event {
	ev := &Event{e: e}
	ev.id = handles.Register(ev)
	return ev
}

func (e *Event) live() error {
	if !handles.Live(e.id) {
		return fmt.Errorf("event %v: %w", e.id, handle.ErrStale)
	}
	return nil
}

// ID is the event's registry id (the fast path's argument).
func (e *Event) ID() int { return int(e.id) }

// Handle is the native event handle as an int.
func (e *Event) Handle() (int, error) {
	if err := e.live(); err != nil {
		return 0, tag(err)
	}
	return int(e.e.Handle()), nil
}

// Timing reports whether the event records time.
func (e *Event) Timing() bool { return e.e.Timing() }

// Query reports whether the event has completed.
func (e *Event) Query() (bool, error) {
	if err := e.live(); err != nil {
		return false, tag(err)
	}
	ok, err := e.e.Query()
	return ok, tag(err)
}

// Synchronize blocks until the event completes (GIL released).
func (e *Event) Synchronize() error {
	if err := e.live(); err != nil {
		return tag(err)
	}
	return tag(e.e.Synchronize())
}

// ElapsedTime returns milliseconds from e to end.
func (e *Event) ElapsedTime(end *Event) (float64, error) {
	if end == nil {
		return 0, tag(badArg("end=None, expected an Event"))
	}
	if err := e.live(); err != nil {
		return 0, tag(err)
	}
	if err := end.live(); err != nil {
		return 0, tag(err)
	}
	ms, err := e.e.ElapsedTime(end.e)
	return float64(ms), tag(err)
}

// Close releases the event; its id stops naming it first.
func (e *Event) Close() error {
	if err := e.live(); err != nil {
		return tag(err)
	}
	handles.Release(e.id)
	return tag(e.e.Close())
}

// Graph is an instantiated CUDA graph (a recorded op list on the CPU).
type Graph struct{ g backend.Graph }

// Launch replays the graph on s.
func (g *Graph) Launch(s *Stream) error {
	if s == nil {
		return tag(badArg("stream=None, expected a Stream"))
	}
	return tag(g.g.Launch(s.s))
}

// Nodes is the number of operations in the graph.
func (g *Graph) Nodes() int { return g.g.Nodes() }

// Close releases the graph.
func (g *Graph) Close() error { return tag(g.g.Close()) }
