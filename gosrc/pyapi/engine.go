package pyapi

import (
	"time"

	"github.com/vortexgo/vortexgo/gosrc/endpoint"
	"github.com/vortexgo/vortexgo/gosrc/engine"
	"github.com/vortexgo/vortexgo/gosrc/hostmem"
)

// EngineConfig is engine.Config built one link at a time (gopy passes no
// slices); the wiring checks are engine.Config's.
type EngineConfig struct {
	c       engine.Config
	tensors []*endpoint.StackTensorEndpoint // charged to the process budget by NewEngine
}

// NewEngineConfig returns a configuration (engine.Config's fields;
// dispatchSpinUs in microseconds, 0 = default, < 0 = none).
func NewEngineConfig(recordsPerBlock, blocksToAllocate, preloadCount, blocksToAcquire, slots, eventQueueSize int, dropEvents bool, dispatchSpinUs int) *EngineConfig {
	c := engine.Config{
		RecordsPerBlock: recordsPerBlock, BlocksToAllocate: blocksToAllocate,
		PreloadCount: preloadCount, BlocksToAcquire: blocksToAcquire,
		Slots: slots, EventQueueSize: eventQueueSize,
		DispatchSpin: time.Duration(dispatchSpinUs) * time.Microsecond,
	}
	if dropEvents {
		c.EventPolicy = engine.QueueDrop
	}
	return &EngineConfig{c: c}
}

// AddAcquisition starts an acquisition node.
func (c *EngineConfig) AddAcquisition(a *Acquisition) { c.c.AddAcquisition(a.stage()) }

// AddAcquisitionProcessor feeds the latest acquisition to p.
func (c *EngineConfig) AddAcquisitionProcessor(p *Processor) { c.c.AppendProcessor(p.stage()) }

// AddProcessor starts a processor node.
func (c *EngineConfig) AddProcessor(p *Processor) { c.c.AddProcessor(p.stage()) }

// AddProcessorFormatter routes the latest processor to f.
func (c *EngineConfig) AddProcessorFormatter(f *Formatter) { c.c.AppendFormatter(f.stage()) }

// AddFormatter starts a formatter node.
func (c *EngineConfig) AddFormatter(f *Formatter) { c.c.AddFormatter(f.stage()) }

// AddFormatterEndpoint routes the latest formatter to e; NewEngine gives a
// tensor endpoint the process's budgeted allocator for its volume.
func (c *EngineConfig) AddFormatterEndpoint(e *Endpoint) {
	c.c.AppendEndpoint(e.stage())
	if e != nil && e.tensor != nil {
		c.tensors = append(c.tensors, e.tensor)
	}
}

// The stage accessors are nil-safe: a nil wrapper gives a nil interface,
// which engine.Config records as a wiring error naming the call.
func (a *Acquisition) stage() engine.Acquisition {
	if a == nil {
		return nil
	}
	return a.a
}

func (p *Processor) stage() engine.Processor {
	if p == nil {
		return nil
	}
	return p.p
}

func (f *Formatter) stage() engine.Formatter {
	if f == nil {
		return nil
	}
	return f.f
}

func (e *Endpoint) stage() engine.Endpoint {
	if e == nil {
		return nil
	}
	return e.e
}

// Validate checks the parameters and the wiring (ValueError naming the
// first offending field).
func (c *EngineConfig) Validate() error { return tag(c.c.Validate()) }

// Engine runs a configured pipeline (engine.Engine).
type Engine struct{ e *engine.Engine }

// NewEngine builds an engine for cfg on dev; nothing is allocated until
// Prepare. Tensor endpoints are charged to the process memory budget.
func NewEngine(dev *Device, cfg *EngineConfig) (*Engine, error) {
	if dev == nil || cfg == nil {
		return nil, tag(badArg("NewEngine: device and config, expected a Device and an EngineConfig"))
	}
	for _, t := range cfg.tensors {
		if t.Allocator == nil && t.Tensor() == nil {
			a, err := dev.allocator("endpoint volume")
			if err != nil {
				return nil, tag(err)
			}
			t.Allocator = a
		}
	}
	e, err := engine.New(cfg.c, dev.d)
	return tagged(&Engine{e: e}, err)
}

// Prepare validates (ValueError naming the field) and allocates everything
// the run needs.
func (e *Engine) Prepare() error { return tag(e.e.Prepare()) }

// SetCallbackSync makes the engine wait for endpoint id's callbacks at
// volume boundaries (engine.Engine.SetCallbackSync); before Start.
func (e *Engine) SetCallbackSync(id int, on bool) error { return tag(e.e.SetCallbackSync(id, on)) }

// SetEventMask posts only the event kinds whose bits are set for endpoint
// id (engine.EventMask: update 1, segment 2, volume 4, scan 8); before Start.
func (e *Engine) SetEventMask(id, bits int) error {
	ks, err := engine.EventMask(bits)
	if err != nil {
		return tag(err)
	}
	return tag(e.e.SetEventMask(id, ks...))
}

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

// Done reports whether the run has ended.
func (e *Engine) Done() bool { return e.e.Done() }

// Err is the error that ended the run, tagged with its class, or "".
func (e *Engine) Err() string {
	if err := e.e.Err(); err != nil {
		return tag(err).Error()
	}
	return ""
}

// RecordCallbackErrors adds n to the callback error count.
func (e *Engine) RecordCallbackErrors(n int) { e.e.RecordCallbackErrors(n) }

// StatusInto writes the status record (engine.StatusFields int64) at ptr.
func (e *Engine) StatusInto(ptr int) error {
	dst, err := hostmem.Span[int64](ptr, engine.StatusFields)
	if err == nil {
		s := e.e.Status()
		s.Record(dst)
	}
	return tag(err)
}

// TimingsInto writes the timing record (engine.TimingFields float64) at ptr.
func (e *Engine) TimingsInto(ptr int) error {
	dst, err := hostmem.Span[float64](ptr, engine.TimingFields)
	if err == nil {
		t := e.e.Timings()
		t.Record(dst)
	}
	return tag(err)
}

// NextEventsInto writes up to n event records (engine.EventFields int64
// each) at ptr, waiting up to timeoutMs for the first (negative: until one
// arrives; GIL released). It returns the count; after the run ends and the
// queue drains, one "done" event, then 0.
func (e *Engine) NextEventsInto(ptr, n, timeoutMs int) (int, error) {
	if n <= 0 {
		return 0, tag(badArg("max=%d, expected > 0", n))
	}
	dst, err := hostmem.Span[int64](ptr, n*engine.EventFields)
	if err != nil {
		return 0, tag(err)
	}
	return e.e.NextRecords(dst, time.Duration(max(timeoutMs, -1))*time.Millisecond), nil
}

// Close stops the run if needed and frees the blocks; endpoints,
// processors and acquisitions stay open (and may now be closed).
func (e *Engine) Close() error { return tag(e.e.Close()) }
