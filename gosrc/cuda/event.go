package cuda

/*
#include "shim.h"
*/
import "C"

import (
	"fmt"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/internal/invariants"
)

// CUevent flags (cuda.h's CUevent_flags).
const (
	eventDefault       = 0x0
	eventDisableTiming = 0x2
)

// Event is a CUDA event.
type Event struct {
	dev    *Device
	ctx    C.uintptr_t
	h      C.uintptr_t
	timing bool
	g      guard // Go calls in flight; Close waits for them
	inv    invariants.Obj
}

var _ backend.Event = (*Event)(nil)

// CreateEvent creates an event. Without timing the event is made with
// CU_EVENT_DISABLE_TIMING, which makes record and wait cheaper; such an
// event cannot be used with ElapsedTime.
func (d *Device) CreateEvent(timing bool) (*Event, error) {
	flags := C.uint(eventDisableTiming)
	if timing {
		flags = eventDefault
	}
	r := C.vg_event_create(C.uintptr_t(d.ctx), flags)
	if err := errOf(r); err != nil {
		return nil, err
	}
	e := &Event{dev: d, ctx: C.uintptr_t(d.ctx), h: C.uintptr_t(r.v0), timing: timing,
		inv: invariants.Track("cuda.Event", uintptr(r.v0))}
	return e, nil
}

// Handle returns the CUevent.
func (e *Event) Handle() uintptr { return uintptr(e.h) }

// Timing reports whether the event records timestamps.
func (e *Event) Timing() bool { return e.timing }

// Device returns the device the event was created on.
func (e *Event) Device() *Device { return e.dev }

// Query reports whether the work captured by the last Record is complete.
// An event never recorded reports true (CUDA's rule).
func (e *Event) Query() (bool, error) {
	if !e.g.enter() {
		return false, e.inv.Misuse(errClosed("cuda.Event.Query"))
	}
	defer e.g.exit()
	return queryResult(C.vg_event_query(e.ctx, e.h))
}

// Synchronize blocks the host until the event completes.
func (e *Event) Synchronize() error {
	if !e.g.enter() {
		return e.inv.Misuse(errClosed("cuda.Event.Synchronize"))
	}
	defer e.g.exit()
	return errOf(C.vg_event_sync(e.ctx, e.h))
}

// ElapsedTime returns the milliseconds between this event and end. Both must
// be timing events and both must have completed (otherwise the driver
// reports CUDA_ERROR_NOT_READY).
func (e *Event) ElapsedTime(end backend.Event) (float32, error) {
	const op = "cuda.Event.ElapsedTime"
	if !e.g.enter() {
		return 0, e.inv.Misuse(errClosed(op))
	}
	defer e.g.exit()
	x, err := asEvent(op, end)
	if err != nil {
		return 0, err
	}
	defer x.g.exit()
	if !e.timing || !x.timing {
		return 0, fmt.Errorf("%s: start.Timing()=%v end.Timing()=%v, expected both true", op, e.timing, x.timing)
	}
	r := C.vg_event_elapsed(e.ctx, e.h, x.h)
	if err := errOf(r); err != nil {
		return 0, err
	}
	return float32(r.f), nil
}

// NativeSlot is what the C fast path needs to call the driver on the
// event without Go (handle.Native): its kind, context and CUevent. A
// registry that publishes it must release its id before Close.
func (e *Event) NativeSlot() (kind int32, ctx, ptr uintptr) {
	return fastKindEvent, uintptr(e.ctx), uintptr(e.h)
}

// Close destroys the event once calls in flight on it have returned (Go's,
// and the fast path's once the registry that published the event released
// its id). Closing twice returns an error wrapping backend.ErrClosed.
func (e *Event) Close() error {
	if !e.g.shut() {
		return e.inv.Misuse(errClosed("cuda.Event.Close"))
	}
	e.inv.Release()
	return errOf(C.vg_event_destroy(e.ctx, e.h))
}
