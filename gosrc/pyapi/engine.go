package pyapi

import (
	"time"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/engine"
)

// EngineConfig is engine.Config, wired one link at a time (gopy passes no
// slices); the wiring checks are engine.Config's.
type EngineConfig struct{ c engine.Config }

// NewEngineConfig reads engine.Config's fields from a JSON record
// (backend.DecodeRecord; DispatchSpin in nanoseconds).
func NewEngineConfig(config string) (*EngineConfig, error) {
	c := &EngineConfig{}
	return tagged(c, backend.DecodeRecord("EngineConfig", config, &c.c))
}

// Link adds stage s (an acquisition, processor, formatter or endpoint) as
// link (engine.Link); a mismatch is reported by Validate.
func (c *EngineConfig) Link(link int, s *Object) { c.c.Link(engine.Link(link), s.obj) }

// Validate checks the parameters and the wiring (ValueError naming the
// first offending field).
func (c *EngineConfig) Validate() error { return tag(c.c.Validate()) }

// Engine runs a configured pipeline (engine.Engine); its Record is the
// status then the timings (engine.Engine.Record).
type Engine struct {
	Object
	e *engine.Engine
}

// NewEngine builds an engine for cfg on dev; nothing is allocated until
// Prepare.
func NewEngine(dev *Device, cfg *EngineConfig) (*Engine, error) {
	e, err := engine.New(cfg.c, dev.d)
	if err != nil {
		return nil, tag(err)
	}
	return &Engine{Object: owner(e), e: e}, nil // registered: FastNextEvents names it by ID
}

// Prepare validates (ValueError naming the field) and allocates everything
// the run needs.
func (e *Engine) Prepare() error { return tag(e.e.Prepare()) }

// SetCallbacks sets the event kinds endpoint id has callbacks for
// (engine.Engine.SetCallbacks: update 1, segment 2, volume 4, scan 8);
// before Start.
func (e *Engine) SetCallbacks(id, bits int) error { return tag(e.e.SetCallbacks(id, bits)) }

// Start starts the pipeline's goroutines.
func (e *Engine) Start() error { return tag(e.e.Start()) }

// StartMonotonicNs is the base of the events' timestamp_ns on Python's
// time.monotonic_ns clock (engine.Engine.StartMonotonicNs); 0 before Start.
func (e *Engine) StartMonotonicNs() int64 { return e.e.StartMonotonicNs() }

// RequestStop asks the run to stop without waiting (safe from a handler;
// a no-op before Start).
func (e *Engine) RequestStop() { e.e.RequestStop() }

// Stop stops the run and waits until it has drained (GIL released).
func (e *Engine) Stop() error { return tag(e.e.Stop()) }

// WaitFor waits up to timeoutMs for the run to end (GIL released).
func (e *Engine) WaitFor(timeoutMs int) bool {
	return e.e.WaitFor(time.Duration(timeoutMs) * time.Millisecond)
}

// Err is the error that ended the run, tagged with its class, or "".
func (e *Engine) Err() string {
	if err := e.e.Err(); err != nil {
		return tag(err).Error()
	}
	return ""
}

// RecordCallbackErrors adds n to the callback error count.
func (e *Engine) RecordCallbackErrors(n int) { e.e.RecordCallbackErrors(n) }

// FastNextEvents writes up to n event records at ptr for the engine of
// registry id id (ID), waiting up to timeoutMs for the first (GIL
// released; engine.Engine.NextRecordsAt): a package function, as gopy's
// methods resolve their handle through a locked map and reflection. A
// closed engine's id is a ClosedError (Do's "next_events" drains it).
func FastNextEvents(id, ptr, n, timeoutMs int) (int, error) {
	e, err := lookup[*engine.Engine]("engine", id)
	if err != nil {
		return 0, tag(err)
	}
	return tagged(e.NextRecordsAt(ptr, n, timeoutMs))
}

// FastWaitEvents is FastNextEvents without the spin before parking
// (engine.Engine.WaitRecordsAt): the dispatcher's call once its C loop
// spun on the event ring (EventRing) and found nothing.
func FastWaitEvents(id, ptr, n, timeoutMs int) (int, error) {
	e, err := lookup[*engine.Engine]("engine", id)
	if err != nil {
		return 0, tag(err)
	}
	return tagged(e.WaitRecordsAt(ptr, n, timeoutMs))
}

// EventRing lends the current session's event queue to the dispatcher's C
// loop (engine.EventRing; python/vortexgo/_fastcall.c ring_next). The
// queue's memory stays mapped while this object lives: the dispatcher
// keeps it for as long as it reads Addr.
type EventRing struct{ r *engine.EventRing }

// EventRing returns the current session's event ring; a ValueError
// before the first start().
func (e *Engine) EventRing() (*EventRing, error) {
	r := e.e.EventRing()
	if r == nil {
		return nil, tag(badArg("engine.EventRing: the engine has no session, expected a call after start()"))
	}
	return &EventRing{r: r}, nil
}

// Addr is the ring's address (gosrc/engine/eventring.h's layout).
func (r *EventRing) Addr() int { return int(r.r.Addr()) }

// Ack wakes the engine's stages waiting for the dispatcher's
// acknowledgement, once ring_next stored it and found them waiting.
func (r *EventRing) Ack() { r.r.Ack() }
