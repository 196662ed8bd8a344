package pyapi

import (
	"time"

	"github.com/vortexgo/vortexgo/gosrc/engine"
)

// EngineConfig is engine.Config, wired one link at a time (gopy passes no
// slices); the wiring checks are engine.Config's.
type EngineConfig struct{ c engine.Config }

// NewEngineConfig reads engine.Config's fields from a JSON record
// (decodeRecord; DispatchSpin in nanoseconds).
func NewEngineConfig(config string) (*EngineConfig, error) {
	c := &EngineConfig{}
	return tagged(c, decodeRecord("EngineConfig", config, &c.c))
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

// FastNextEvents is engine.Engine.RecordsAt for the engine of registry id
// id (GIL released; spin 0: no spin, after the C wait on the event ring): a
// function, as gopy resolves methods through a map and reflection.
func FastNextEvents(id, ptr, n, timeoutMs, spin int) (int, error) {
	e, err := lookup[*engine.Engine]("engine", id)
	if err != nil {
		return 0, tag(err)
	}
	return tagged(e.RecordsAt(ptr, n, timeoutMs, spin != 0))
}

// EventRing lends the session's event queue to the dispatcher's C wait.
func (e *Engine) EventRing() (*Object, error) {
	r, err := e.e.EventRing()
	return tagged(&Object{obj: r}, err)
}
