package engine

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/hostmem"
	"github.com/vortexgo/vortexgo/gosrc/scan"
)

// Do runs op for bindings that reach the engine by name (pyapi's
// Object.Do), with JSON args:
//
//	"shutdown"     {"Interrupt": bool}  Shutdown
//	"job_events"   {"On": bool}         SetJobEvents
//	"profiler_log" {"Path": string}     SetProfilerLog
//	"own"          {}                   Own
//	"scan_queue"   {} with: the queue   SetScanQueue (a binding's queue
//	                                    object: Queue() *scan.ScanQueue)
//	"next_events"  {"TimeoutMs": int}   NextRecordsAt into the caller's n
//	                                    int64s at dst: {"Records": count}
//
// Only next_events waits; the others are safe from a handler on the
// dispatcher thread. next_events is the dispatcher's path once pyapi's
// fast one (a registry id) is closed: it drains the last session's events.
func (e *Engine) Do(op string, args []byte, with any, dst, n int) ([]byte, error) {
	var a struct {
		Interrupt, On bool
		Path          string
		TimeoutMs     int
	}
	if len(args) > 0 {
		if err := json.Unmarshal(args, &a); err != nil {
			return nil, fmt.Errorf("engine.%s: arguments %q: %v: %w", op, args, err, backend.ErrInvalid)
		}
	}
	switch op {
	case "shutdown":
		e.Shutdown(a.Interrupt)
	case "job_events":
		e.SetJobEvents(a.On)
	case "profiler_log":
		e.SetProfilerLog(a.Path)
	case "own":
		return nil, e.Own()
	case "scan_queue":
		q, ok := with.(interface{ Queue() *scan.ScanQueue })
		if !ok {
			return nil, backend.Invalidf("engine.scan_queue: a %T, expected a ScanQueue", with)
		}
		return nil, e.SetScanQueue(q.Queue())
	case "next_events":
		k, err := e.NextRecordsAt(dst, n/EventFields, a.TimeoutMs)
		if err != nil {
			return nil, err
		}
		return fmt.Appendf(nil, `{"Records": %d}`, k), nil
	default:
		return nil, fmt.Errorf("engine: operation %q, expected shutdown, job_events, profiler_log, own, scan_queue or next_events: %w", op, backend.ErrInvalid)
	}
	return nil, nil
}

// NextRecordsAt is NextRecords for bindings: up to n records into the
// caller's n*EventFields int64s at ptr (hostmem.Span), waiting up to
// timeoutMs for the first (negative: until one arrives, 0: a poll). It
// returns the count; after the run ends and the queue drains, one
// EventDone, then 0. Entering it acknowledges the previous batch.
func (e *Engine) NextRecordsAt(ptr, n, timeoutMs int) (int, error) {
	return e.RecordsAt(ptr, n, timeoutMs, true)
}

// RecordsAt is NextRecordsAt, spinning before it parks only with spin set
// (unset: the C consumer spun on the event ring already).
func (e *Engine) RecordsAt(ptr, n, timeoutMs int, spin bool) (int, error) {
	if n <= 0 {
		return 0, backend.Invalidf("max=%d, expected > 0", n)
	}
	dst, err := hostmem.Span[int64](ptr, n*EventFields)
	if err != nil {
		return 0, err
	}
	return e.nextRecords(dst, time.Duration(max(timeoutMs, -1))*time.Millisecond, spin), nil
}
