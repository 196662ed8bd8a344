package cpu

import (
	"fmt"
	"sync"
	"time"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/internal/invariants"
)

// epoch anchors event timestamps; time.Since uses the monotonic clock, so
// elapsed times are immune to wall-clock steps.
var epoch = time.Now()

// Event marks a point in a CPU stream. Because CPU work is synchronous, an
// event is complete as soon as it is recorded (and, as on CUDA, an event
// that was never recorded also counts as complete).
type Event struct {
	id     uintptr
	timing bool

	mu       sync.Mutex
	closed   bool
	recorded bool
	stamp    time.Duration // since epoch, set by record
	inv      invariants.Obj
}

var _ backend.Event = (*Event)(nil)

// Handle returns a unique id.
func (e *Event) Handle() uintptr { return e.id }

// Timing reports whether the event records timestamps.
func (e *Event) Timing() bool { return e.timing }

// record marks the event as reached now. It runs in stream order (or on
// graph replay), so a closed event is ignored rather than reported: the
// error was already reported when the work was issued.
func (e *Event) record() {
	now := time.Since(epoch)
	e.mu.Lock()
	e.recorded = true
	e.stamp = now
	e.mu.Unlock()
}

func (e *Event) checkOpen(op string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return e.inv.Misuse(fmt.Errorf("%s: event %#x: %w", op, e.id, backend.ErrClosed))
	}
	return nil
}

// Query reports true: recorded CPU work has already run.
func (e *Event) Query() (bool, error) {
	if err := e.checkOpen("cpu.Event.Query"); err != nil {
		return false, err
	}
	return true, nil
}

// Synchronize returns at once: recorded CPU work has already run.
func (e *Event) Synchronize() error { return e.checkOpen("cpu.Event.Synchronize") }

// ElapsedTime returns the milliseconds from e to end. Both must be open,
// recorded timing events of the CPU backend.
func (e *Event) ElapsedTime(end backend.Event) (float32, error) {
	const op = "cpu.Event.ElapsedTime"
	if end == nil {
		return 0, fmt.Errorf("%s: end=nil, expected a recorded timing event", op)
	}
	other, ok := end.(*Event)
	if !ok {
		return 0, fmt.Errorf("%s: end is a %T, expected a *cpu.Event", op, end)
	}
	start, err := e.stampFor(op, "start")
	if err != nil {
		return 0, err
	}
	stop, err := other.stampFor(op, "end")
	if err != nil {
		return 0, err
	}
	return float32(float64(stop-start) / float64(time.Millisecond)), nil
}

func (e *Event) stampFor(op, role string) (time.Duration, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	switch {
	case e.closed:
		return 0, e.inv.Misuse(fmt.Errorf("%s: %s event %#x: %w", op, role, e.id, backend.ErrClosed))
	case !e.timing:
		return 0, fmt.Errorf("%s: %s event %#x was created with timing=false, expected a timing event", op, role, e.id)
	case !e.recorded:
		return 0, fmt.Errorf("%s: %s event %#x has not been recorded, expected a recorded event", op, role, e.id)
	}
	return e.stamp, nil
}

// Close releases the event; a second Close returns an error wrapping
// backend.ErrClosed.
func (e *Event) Close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return e.inv.Misuse(fmt.Errorf("cpu.Event.Close: event %#x already closed: %w", e.id, backend.ErrClosed))
	}
	e.closed = true
	e.inv.Release()
	return nil
}
