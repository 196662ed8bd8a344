package pyapi

import (
	"time"

	"github.com/vortexgo/vortexgo/gosrc/engine"
	"github.com/vortexgo/vortexgo/gosrc/hostmem"
)

// The engine's binding (python/vortexgo/engine/): one typed method per
// call of the Python engine; its status and timings cross as the
// ENGINE_STATUS and ENGINE_TIMINGS records (records.go).

// EngineConfig is engine.Config, wired one link at a time (gopy passes no
// slices); the wiring checks are engine.Config's.
type EngineConfig struct{ c engine.Config }

// NewEngineConfig reads engine.Config's fields from a JSON record
// (decodeRecord) and, when spin is set, its DispatchSpin from spinSeconds
// (engine.SpinSeconds: a float argument, which JSON could not carry past
// int64 nanoseconds).
func NewEngineConfig(config string, spinSeconds float64, spin bool) (*EngineConfig, error) {
	c := &EngineConfig{}
	err := decodeRecord("EngineConfig", config, &c.c)
	if err == nil && spin {
		c.c.DispatchSpin, err = engine.SpinSeconds(spinSeconds)
	}
	return tagged(c, err)
}

// Link adds stage s (an acquisition, processor, formatter or endpoint) as
// link (engine.Link); a mismatch is reported by Validate.
func (c *EngineConfig) Link(link int, s *Object) { c.c.Link(engine.Link(link), s.obj) }

// Validate checks the parameters and the wiring (ValueError naming the
// first offending field).
func (c *EngineConfig) Validate() error { return tag(c.c.Validate()) }

// Engine runs a configured pipeline (engine.Engine).
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
func (e *Engine) Err() string { return errText(e.e.Err()) }

// TakeErr is Err the first time the session's error is taken, "" after
// (engine.Engine.TakeErr: vortex raises a session's error once).
func (e *Engine) TakeErr() string { return errText(e.e.TakeErr()) }

func errText(err error) string {
	if err != nil {
		return tag(err).Error()
	}
	return ""
}

// Own makes the engine the owner of its configuration's stages
// (engine.Engine.Own): an InUseError while another engine owns one.
func (e *Engine) Own() error { return tag(e.e.Own()) }

// SetScanQueue sets the queue the next session plays
// (engine.Engine.SetScanQueue): an InUseError while a session runs.
func (e *Engine) SetScanQueue(q *ScanQueue) error { return tag(e.e.SetScanQueue(q.q)) }

// SetJobEvents makes the next sessions post a job event per block
// (engine.Engine.SetJobEvents).
func (e *Engine) SetJobEvents(on bool) { e.e.SetJobEvents(on) }

// SetProfilerLog sets the file the next sessions write their profiler
// log to (engine.Engine.SetProfilerLog; "": none).
func (e *Engine) SetProfilerLog(path string) { e.e.SetProfilerLog(path) }

// Shutdown asks the session to end without waiting, dropping the blocks
// not yet processed with interrupt (engine.Engine.Shutdown).
func (e *Engine) Shutdown(interrupt bool) { e.e.Shutdown(interrupt) }

// NextEvents takes up to n event records into the caller's
// n*engine.EventFields int64s at dst, waiting up to timeoutMs (GIL
// released): the dispatcher's path once FastNextEvents' id is closed.
func (e *Engine) NextEvents(dst, n, timeoutMs int) (int, error) {
	return nextRecords(e.e, dst, n, timeoutMs, true)
}

// nextRecords is engine.Engine.NextRecords into the caller's
// n*engine.EventFields int64s at ptr, waiting up to timeoutMs (negative:
// until one arrives, 0: a poll).
func nextRecords(e *engine.Engine, ptr, n, timeoutMs int, spin bool) (int, error) {
	if n <= 0 {
		return 0, tag(badArg("max=%d, expected > 0", n))
	}
	dst, err := hostmem.Span[int64](ptr, n*engine.EventFields)
	if err != nil {
		return 0, tag(err)
	}
	return e.NextRecords(dst, time.Duration(max(timeoutMs, -1))*time.Millisecond, spin), nil
}

// engineStatusRecord is engine.Status as a record (ENGINE_STATUS): its
// numeric fields under their names, bools as 0 or 1; the error text is
// Err's.
type engineStatusRecord struct {
	BlocksAcquired, BlocksProcessed, BlocksFormatted, BlocksDropped, Volumes int64
	CallbackErrors, EventsDropped, InFlight, Running, Dispatched, Allocated  int64
	ProfilerDropped, Done, Prepared, Started, Active, Closed                 int64
	FramesReceived, FramesDropped, FramesIncomplete                          int64
}

// Status writes the engine's ENGINE_STATUS record (engine.Engine.Status)
// into the caller's n bytes at dst (putRecord).
func (e *Engine) Status(dst, n int) (int, error) {
	s := e.e.Status()
	return putRecord(dst, n, &engineStatusRecord{
		s.BlocksAcquired, s.BlocksProcessed, s.BlocksFormatted, s.BlocksDropped, s.Volumes,
		s.CallbackErrors, s.EventsDropped, int64(s.InFlight), flag(s.Running), s.Dispatched, int64(s.Allocated),
		s.ProfilerDropped, flag(s.Done), flag(s.Prepared), flag(s.Started), flag(s.Active), flag(s.Closed),
		s.Frames.Received, s.Frames.Dropped, s.Frames.Incomplete})
}

func flag(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// engineTimingsRecord is engine.TimingSummary as a record
// (ENGINE_TIMINGS, milliseconds): per stage, StageStats' fields prefixed
// with the stage (acquire_count, acquire_mean ... upload_p99).
type engineTimingsRecord struct {
	AcquireCount                                                int64
	AcquireMean, AcquireMin, AcquireMax, AcquireP50, AcquireP99 float64
	ProcessCount                                                int64
	ProcessMean, ProcessMin, ProcessMax, ProcessP50, ProcessP99 float64
	FormatCount                                                 int64
	FormatMean, FormatMin, FormatMax, FormatP50, FormatP99      float64
	UploadCount                                                 int64
	UploadMean, UploadMin, UploadMax, UploadP50, UploadP99      float64
}

// Timings writes the engine's ENGINE_TIMINGS record
// (engine.Engine.Timings) into the caller's n bytes at dst.
func (e *Engine) Timings(dst, n int) (int, error) {
	t := e.e.Timings()
	a, p, f, u := t.Acquire, t.Process, t.Format, t.Upload
	return putRecord(dst, n, &engineTimingsRecord{
		int64(a.Count), a.Mean, a.Min, a.Max, a.P50, a.P99,
		int64(p.Count), p.Mean, p.Min, p.Max, p.P50, p.P99,
		int64(f.Count), f.Mean, f.Min, f.Max, f.P50, f.P99,
		int64(u.Count), u.Mean, u.Min, u.Max, u.P50, u.P99})
}

// RecordCallbackErrors adds n to the callback error count.
func (e *Engine) RecordCallbackErrors(n int) { e.e.RecordCallbackErrors(n) }

// FastNextEvents is Engine.NextEvents for the engine of registry id id
// (GIL released; spin 0: no spin, after the C wait on the event ring): a
// function, as gopy resolves methods through a map and reflection.
func FastNextEvents(id, ptr, n, timeoutMs, spin int) (int, error) {
	e, err := lookup[*engine.Engine]("engine", id)
	if err != nil {
		return 0, tag(err)
	}
	return nextRecords(e, ptr, n, timeoutMs, spin != 0)
}

// EventRing lends the session's event queue to the dispatcher's C wait
// (an error before the first Start).
func (e *Engine) EventRing() (*EventRing, error) {
	r, err := e.e.EventRing()
	return tagged(&EventRing{r}, err)
}

// EventRing is a session's event queue lent to the dispatcher's C wait
// (engine.EventRing): the holder keeps the ring mapped while it reads it.
type EventRing struct{ r *engine.EventRing }

// Addr is the ring's address, for _fastcall.ring_next.
func (r *EventRing) Addr() int { return int(r.r.Addr()) }

// Ack wakes the stages waiting for the acknowledgement the C wait stored
// (ring_next's -2).
func (r *EventRing) Ack() { r.r.Ack() }
