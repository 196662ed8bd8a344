package pyapi

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vortexgo/vortexgo/gosrc/engine"
)

// EventFields is the number of int64 fields of one event record written by
// Engine.NextEventsInto: kind, endpoint, sample, scan_idx, volume_idx,
// bscan_idx, timestamp_ns.
const EventFields = 7

// EngineConfig collects the engine's parameters and its wiring. Wiring is
// built one link at a time (gopy passes no slices): AddAcquisition starts
// a node and AddAcquisitionProcessor appends to the latest, and likewise
// for processors and formatters.
type EngineConfig struct {
	c     engine.Config
	acqs  []acqLink
	procs []procLink
	fmts  []fmtLink
	errs  []error
}

type acqLink struct {
	a     *Acquisition
	procs []*Processor
}

type procLink struct {
	p    *Processor
	fmts []*Formatter
}

type fmtLink struct {
	f   *Formatter
	eps []*Endpoint
}

// NewEngineConfig returns a configuration; slots 0 and eventQueueSize 0
// take the engine's defaults; dropEvents drops events when the queue is
// full instead of waiting for the dispatcher; dispatchSpinUs is
// engine.Config.DispatchSpin in microseconds (0 = default, < 0 = none).
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

func (c *EngineConfig) fail(format string, args ...any) error {
	err := badArg(format, args...)
	c.errs = append(c.errs, err)
	return tag(err)
}

// AddAcquisition starts an acquisition node.
func (c *EngineConfig) AddAcquisition(a *Acquisition) error {
	if a == nil {
		return c.fail("EngineConfig.add_acquisition: acquisition=None, expected an acquisition")
	}
	c.acqs = append(c.acqs, acqLink{a: a})
	return nil
}

// AddAcquisitionProcessor feeds the latest acquisition to p.
func (c *EngineConfig) AddAcquisitionProcessor(p *Processor) error {
	if len(c.acqs) == 0 || p == nil {
		return c.fail("EngineConfig.add_acquisition: processors must be processors, after an acquisition")
	}
	n := &c.acqs[len(c.acqs)-1]
	n.procs = append(n.procs, p)
	return nil
}

// AddProcessor starts a processor node.
func (c *EngineConfig) AddProcessor(p *Processor) error {
	if p == nil {
		return c.fail("EngineConfig.add_processor: processor=None, expected a processor")
	}
	c.procs = append(c.procs, procLink{p: p})
	return nil
}

// AddProcessorFormatter routes the latest processor to f.
func (c *EngineConfig) AddProcessorFormatter(f *Formatter) error {
	if len(c.procs) == 0 || f == nil {
		return c.fail("EngineConfig.add_processor: formatters must be formatters, after a processor")
	}
	n := &c.procs[len(c.procs)-1]
	n.fmts = append(n.fmts, f)
	return nil
}

// AddFormatter starts a formatter node.
func (c *EngineConfig) AddFormatter(f *Formatter) error {
	if f == nil {
		return c.fail("EngineConfig.add_formatter: formatter=None, expected a formatter")
	}
	c.fmts = append(c.fmts, fmtLink{f: f})
	return nil
}

// AddFormatterEndpoint routes the latest formatter to e.
func (c *EngineConfig) AddFormatterEndpoint(e *Endpoint) error {
	if len(c.fmts) == 0 || e == nil {
		return c.fail("EngineConfig.add_formatter: endpoints must be endpoints, after a formatter")
	}
	n := &c.fmts[len(c.fmts)-1]
	n.eps = append(n.eps, e)
	return nil
}

// build returns the engine.Config with the wiring applied.
func (c *EngineConfig) build() (engine.Config, error) {
	if len(c.errs) > 0 {
		return engine.Config{}, c.errs[0]
	}
	cfg := c.c
	for _, n := range c.acqs {
		procs := make([]engine.Processor, len(n.procs))
		for i, p := range n.procs {
			procs[i] = p.p
		}
		cfg.AddAcquisition(n.a.a, procs...)
	}
	for _, n := range c.procs {
		fmts := make([]engine.Formatter, len(n.fmts))
		for i, f := range n.fmts {
			fmts[i] = f.f
		}
		cfg.AddProcessor(n.p.p, fmts...)
	}
	for _, n := range c.fmts {
		eps := make([]engine.Endpoint, len(n.eps))
		for i, e := range n.eps {
			eps[i] = e.e
		}
		cfg.AddFormatter(n.f.f, eps...)
	}
	return cfg, nil
}

// Validate checks the parameters and the wiring, naming the first
// offending field (ValueError).
func (c *EngineConfig) Validate() error {
	cfg, err := c.build()
	if err != nil {
		return tag(err)
	}
	if err := cfg.Validate(); err != nil {
		return tag(badArg("%v", err))
	}
	return nil
}

// Engine runs a configured pipeline (engine.Engine).
type Engine struct {
	e      *engine.Engine
	dev    *Device
	evMu   sync.Mutex
	events []engine.Event // the dispatcher's scratch, reused
	// startMono is CLOCK_MONOTONIC (ns) read just before engine.Start
	// set the base of the events' timestamps: an event's time on Python's
	// time.monotonic_ns clock is startMono + its timestamp (at most the
	// few hundred ns of Start's lock earlier than the truth).
	startMono atomic.Int64
}

// NewEngine builds an engine for cfg on dev; nothing is allocated until
// Prepare. Tensor endpoints are charged to the process memory budget.
func NewEngine(dev *Device, cfg *EngineConfig) (*Engine, error) {
	if dev == nil {
		return nil, tag(badArg("device=None, expected a Device"))
	}
	if cfg == nil {
		return nil, tag(badArg("config=None, expected an EngineConfig"))
	}
	c, err := cfg.build()
	if err != nil {
		return nil, tag(err)
	}
	for _, n := range cfg.fmts {
		for _, ep := range n.eps {
			if ep.tensor != nil && ep.tensor.Allocator == nil && ep.tensor.Tensor() == nil {
				a, err := allocatorFor(dev.d, "endpoint volume")
				if err != nil {
					return nil, tag(err)
				}
				ep.tensor.Allocator = a
			}
		}
	}
	e, err := engine.New(c, dev.d)
	if err != nil {
		return nil, tag(err)
	}
	return &Engine{e: e, dev: dev}, nil
}

// Prepare validates (ValueError naming the field) and allocates
// everything the run needs.
func (e *Engine) Prepare() error {
	if err := e.e.Prepare(); err != nil {
		if strings.HasPrefix(err.Error(), "Config.") {
			return tag(badArg("%v", err))
		}
		return tag(err)
	}
	return nil
}

// SetCallbackSync makes the engine wait for endpoint id's callbacks at
// volume boundaries (engine.Engine.SetCallbackSync); before Start.
func (e *Engine) SetCallbackSync(id int, on bool) error { return tag(e.e.SetCallbackSync(id, on)) }

// SetEventMask posts only the listed event kinds for endpoint id (a
// comma-separated list of "update", "segment", "volume", "scan"); before
// Start.
func (e *Engine) SetEventMask(id int, kinds string) error {
	var ks []engine.EventKind
	for _, name := range strings.Split(kinds, ",") {
		switch strings.TrimSpace(name) {
		case "":
		case "update":
			ks = append(ks, engine.EventUpdate)
		case "segment":
			ks = append(ks, engine.EventSegment)
		case "volume":
			ks = append(ks, engine.EventVolume)
		case "scan":
			ks = append(ks, engine.EventScan)
		default:
			return tag(badArg("event kind %q, expected update, segment, volume or scan", name))
		}
	}
	return tag(e.e.SetEventMask(id, ks...))
}

// Start starts the pipeline's goroutines.
func (e *Engine) Start() error {
	mono := MonotonicNs()
	if err := e.e.Start(); err != nil {
		return tag(err)
	}
	e.startMono.Store(mono)
	return nil
}

// StartMonotonicNs is the base of the events' timestamp_ns on
// CLOCK_MONOTONIC (Python's time.monotonic_ns / perf_counter_ns on Linux):
// read just before the engine took its start time, so latencies computed
// from it err by at most a few hundred ns on the long side. 0 before Start.
func (e *Engine) StartMonotonicNs() int64 { return e.startMono.Load() }

// RequestStop asks the run to stop without waiting (safe from a handler).
func (e *Engine) RequestStop() { e.e.RequestStop() }

// Stop stops the run and waits until it has drained (GIL released).
func (e *Engine) Stop() error { return tag(e.e.Stop()) }

// WaitFor waits up to timeoutMs for the run to end (GIL released).
func (e *Engine) WaitFor(timeoutMs int) bool {
	if e.e.Done() {
		return true // WaitFor(0) would pick at random between done and its timer
	}
	if timeoutMs < 0 {
		timeoutMs = 0
	}
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

// Status is the engine's counters as "key=value" lines.
func (e *Engine) Status() string {
	s := e.e.Status()
	return fmt.Sprintf("blocks_acquired=%d\nblocks_processed=%d\nblocks_formatted=%d\nblocks_dropped=%d\n"+
		"volumes=%d\ncallback_errors=%d\nevents_dropped=%d\nin_flight=%d\nrunning=%t\ndone=%t\nerror=%s",
		s.BlocksAcquired, s.BlocksProcessed, s.BlocksFormatted, s.BlocksDropped, s.Volumes,
		s.CallbackErrors, s.EventsDropped, s.InFlight, s.Running, s.Done, strings.ReplaceAll(s.Err, "\n", " "))
}

// Timings is the per-stage timing summary as "stage.stat=value" lines
// (milliseconds; stages acquire, process, format; stats count, mean, min,
// max, p50, p99).
func (e *Engine) Timings() string {
	t := e.e.Timings()
	var sb strings.Builder
	for _, st := range []struct {
		name string
		s    engine.StageStats
	}{{"acquire", t.Acquire}, {"process", t.Process}, {"format", t.Format}} {
		fmt.Fprintf(&sb, "%s.count=%d\n%s.mean=%g\n%s.min=%g\n%s.max=%g\n%s.p50=%g\n%s.p99=%g\n",
			st.name, st.s.Count, st.name, st.s.Mean, st.name, st.s.Min, st.name, st.s.Max,
			st.name, st.s.P50, st.name, st.s.P99)
	}
	return sb.String()
}

// NextEventsInto writes up to max events as EventFields int64 each into
// the caller's buffer at ptr (a NumPy int64 array of at least
// max*EventFields elements), waiting up to timeoutMs for the first
// (negative: until one arrives; GIL released). It returns the count; after
// the run ends and the queue drains, one "done" event, then 0.
func (e *Engine) NextEventsInto(ptr, max, timeoutMs int) (int, error) {
	if max <= 0 {
		return 0, tag(badArg("max=%d, expected > 0", max))
	}
	dst, err := hostSpan[int64](ptr, max*EventFields)
	if err != nil {
		return 0, tag(err)
	}
	e.evMu.Lock()
	defer e.evMu.Unlock()
	if cap(e.events) < max {
		e.events = make([]engine.Event, max)
	}
	buf := e.events[:max]
	timeout := time.Duration(timeoutMs) * time.Millisecond
	if timeoutMs < 0 {
		timeout = -1
	}
	n := e.e.NextEventsInto(buf, timeout)
	for i, ev := range buf[:n] {
		r := dst[i*EventFields : (i+1)*EventFields]
		r[0], r[1], r[2], r[3] = int64(ev.Kind), int64(ev.Endpoint), ev.Sample, ev.ScanIdx
		r[4], r[5], r[6] = int64(ev.VolumeIdx), int64(ev.BscanIdx), ev.Timestamp
	}
	return n, nil
}

// Close stops the run if needed and frees the blocks; endpoints,
// processors and acquisitions stay open.
func (e *Engine) Close() error { return tag(e.e.Close()) }
