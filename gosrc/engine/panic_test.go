package engine_test

import (
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/cpu"
	"github.com/vortexgo/vortexgo/gosrc/endpoint"
	"github.com/vortexgo/vortexgo/gosrc/engine"
	"github.com/vortexgo/vortexgo/gosrc/format"
	"github.com/vortexgo/vortexgo/gosrc/guard"
)

// trigger panics at the nth call of the stage method named at.
type trigger struct {
	at    string
	nth   int64
	calls atomic.Int64
}

func (tr *trigger) hit(where string) {
	if where == tr.at && tr.calls.Add(1) == tr.nth {
		panic("boom in " + where)
	}
}

// The fakes of fakes_test.go with a trigger in the methods the engine's
// goroutines call.
type panicAcq struct {
	*fakeAcq
	tr *trigger
}

func (a panicAcq) Fill(dst []uint16, records int) (int, error) {
	a.tr.hit("Fill")
	return a.fakeAcq.Fill(dst, records)
}

func (a panicAcq) Stop() error {
	a.tr.hit("Stop")
	return a.fakeAcq.Stop()
}

type panicProc struct {
	*fakeProc
	tr *trigger
}

func (p panicProc) Process(slot int, s backend.Stream, in uintptr, records int, out, out8 uintptr) error {
	p.tr.hit("Process")
	return p.fakeProc.Process(slot, s, in, records, out, out8)
}

// orderedPanicProc is orderedProc (submit_test.go) with the trigger: the
// engine gives an OrderedProcessor's blocks to its slots' submitters.
type orderedPanicProc struct {
	*orderedProc
	tr *trigger
}

// Process is the inline path's call (one goroutine submits every slot).
func (p orderedPanicProc) Process(slot int, s backend.Stream, in uintptr, records int, out, out8 uintptr) error {
	defer p.tr.hit("Process") // after its turn passed, as ProcessTicket's
	return p.orderedProc.Process(slot, s, in, records, out, out8)
}

func (p orderedPanicProc) ProcessTicket(t uint64, slot int, s backend.Stream, in uintptr, records int, out, out8 uintptr) error {
	defer p.tr.hit("Process") // after its turn passed: the panic must not hold up the order
	return p.orderedProc.ProcessTicket(t, slot, s, in, records, out, out8)
}

type panicEndpoint struct {
	*endpoint.NullEndpoint
	tr *trigger
}

func (e panicEndpoint) Format(b *engine.BlockData, plan *engine.FormatPlan) error {
	e.tr.hit("Format")
	return e.NullEndpoint.Format(b, plan)
}

func (e panicEndpoint) Flush() error {
	e.tr.hit("Flush")
	return e.NullEndpoint.Flush()
}

// settleGoroutines waits (up to 5 s) for the goroutine count to come back
// to at most want, and returns the last count.
func settleGoroutines(want int) int {
	deadline := time.Now().Add(5 * time.Second)
	n := runtime.NumGoroutine()
	for n > want && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
		n = runtime.NumGoroutine()
	}
	return n
}

// TestStagePanicEndsTheSession: a panic in any stage the engine's
// goroutines run (the acquisition's Fill, a processor, an endpoint's
// Format, an endpoint's Flush in finish, the acquisition's Stop) ends the
// session with the panic as its error, the panic value and the stack in
// its text, EngineError (and EngineAbort for a pipeline stage) posted;
// Wait and Stop return it, the pool is whole again, the next session runs
// clean, Close returns, and no goroutine is left behind.
func TestStagePanicEndsTheSession(t *testing.T) {
	tests := []struct {
		at      string
		nth     int64
		stage   string // the goroutine or call named in the error
		endless bool   // the scan loops: only the panic ends the session
		abort   bool   // EngineAbort posted (a pipeline stage failed)
		// path: "" for a plain processor (the process and format loops),
		// or VORTEXGO_SLOT_PATH's value with an OrderedProcessor on two
		// slots (their submitters process; on the direct path they also
		// format).
		path string
	}{
		{"Fill", 3, "engine: acquire stage", true, true, ""},
		{"Process", 3, "engine: process stage", true, true, ""},
		{"Format", 3, "engine: format stage", true, true, ""},
		{"Flush", 1, "engine: endpoint #0: flush", false, false, ""},
		{"Stop", 1, "acquisition.Stop", false, false, ""},
		{"Fill", 3, "engine: acquire stage", true, true, "direct"},
		{"Process", 3, "engine: process stage", true, true, "direct"},
		{"Format", 3, "engine: format stage", true, true, "direct"},
		{"Format", 1, "engine: format stage", true, true, "direct"},
		{"Process", 3, "engine: process stage", true, true, "stages"},
		{"Format", 3, "engine: format stage", true, true, "stages"},
		{"Process", 3, "engine: process stage", true, true, "inline"},
		{"Process", 1, "engine: process stage", true, true, "inline"},
		{"Format", 3, "engine: format stage", true, true, "inline"},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%s#%d/%s", tc.at, tc.nth, tc.path), func(t *testing.T) {
			before := runtime.NumGoroutine()
			tr := &trigger{at: tc.at, nth: tc.nth}
			scan := raster{AscansPerBscan: 5, BscansPerVolume: 2, Volumes: 1}
			if tc.endless {
				scan.Volumes = 0
			}
			acq := panicAcq{newFakeAcq(4), tr}
			var proc engine.Processor = panicProc{newFakeProc(4), tr}
			cfg := engine.Config{RecordsPerBlock: 5, BlocksToAllocate: 4, PreloadCount: 2}
			if tc.path != "" {
				t.Setenv(engine.SlotPathEnv, tc.path)
				op := newOrderedProc(4)
				op.alone = tc.path == "inline"
				proc = orderedPanicProc{op, tr}
				cfg.Slots = 2
			}
			ep := panicEndpoint{endpoint.NewNullEndpoint(), tr}
			planner, err := format.NewFormatPlanner(format.DefaultFormatPlannerConfig(scan.BscansPerVolume, scan.AscansPerBscan))
			require.NoError(t, err)
			cfg.AddAcquisition(acq, proc)
			cfg.AddProcessor(proc, planner)
			cfg.AddFormatter(planner, ep)
			e, err := engine.New(cfg, cpu.Default())
			require.NoError(t, err)
			queueRaster(t, e, scan)
			require.NoError(t, e.Prepare())

			d := startDrainAfter(e)
			require.NoError(t, e.Start())
			require.True(t, e.WaitFor(10*time.Second), "the session ends after the panic (no deadlock)")
			werr := e.Wait()
			require.Error(t, werr)
			require.ErrorContains(t, werr, tc.stage+": internal error (Go panic: boom in "+tc.at+")")
			require.ErrorContains(t, werr, "goroutine ", "the stack is in the error")
			var pe *guard.PanicError
			require.ErrorAs(t, werr, &pe)
			require.Equal(t, "boom in "+tc.at, pe.Value)
			require.Equal(t, werr, e.Stop(), "Stop returns the session's error")
			require.Equal(t, werr.Error(), e.Status().Err)

			evs := d.wait(t)
			got := lifecycle(evs)
			require.Equal(t, 1, countEngine(evs, engine.EngineError), "events %v", got)
			require.Equal(t, tc.abort, countEngine(evs, engine.EngineAbort) == 1, "events %v", got)
			require.Equal(t, engine.EngineExit, got[len(got)-1])
			for _, ev := range evs {
				if ev.Kind == engine.EventEngine && engine.EngineEvent(ev.ScanIdx) == engine.EngineError {
					require.Contains(t, ev.Message, "Go panic: boom in "+tc.at)
				}
			}
			require.Zero(t, e.Status().InFlight, "every block is back in the pool")

			// The next session, with nothing panicking, runs to its end
			// over the whole pool.
			tr.at = ""
			e.ScanQueue().Reset()
			planner.Reset()
			queueRaster(t, e, raster{AscansPerBscan: 5, BscansPerVolume: 2, Volumes: 2})
			require.NoError(t, e.Start())
			require.True(t, e.WaitFor(10*time.Second), "the next session ends")
			require.NoError(t, e.Wait())
			st := e.Status()
			require.Equal(t, int64(2), st.Volumes)
			require.Zero(t, st.InFlight)

			closed := make(chan error, 1)
			go func() { closed <- errors.Join(e.Close(), ep.Close()) }()
			select {
			case err := <-closed:
				require.NoError(t, err)
			case <-time.After(10 * time.Second):
				t.Fatal("Close did not return within 10 s")
			}
			require.LessOrEqual(t, settleGoroutines(before), before, "goroutines left behind")
		})
	}
}
