package engine_test

import (
	"math"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/cpu"
	"github.com/vortexgo/vortexgo/gosrc/endpoint"
	"github.com/vortexgo/vortexgo/gosrc/engine"
	"github.com/vortexgo/vortexgo/gosrc/format"
	gio "github.com/vortexgo/vortexgo/gosrc/io"
	"github.com/vortexgo/vortexgo/gosrc/marker"
	"github.com/vortexgo/vortexgo/gosrc/scan"
)

// The rest of vortex's Generate stage: strobes, scanner_warp, the queue's
// callbacks while the engine plays it, transitions within the limits, and
// the planner finished on stop.

// strobeWord is vortex's strobe word at acquisition sample s for the
// strobes the tests use: SampleStrobe and SegmentStrobe (flags all).
func strobeWord(strobes []engine.Strobe, markers []marker.Marker, s int64) uint32 {
	var w uint32
	for _, st := range strobes {
		if st.Polarity == engine.PolarityLow {
			w |= 1 << st.Line
		}
	}
	for _, st := range strobes {
		on := false
		switch st.Kind {
		case engine.SampleStrobe:
			on = (s+int64(st.Phase))%int64(st.Divisor) < int64(st.Duration)
		case engine.SegmentStrobe:
			for _, m := range markers {
				if m.Kind == marker.SegmentBoundary && s >= m.Sample+int64(st.Delay) && s < m.Sample+int64(st.Delay+st.Duration) {
					on = true
				}
			}
		}
		if on && st.Polarity == engine.PolarityHigh {
			w |= 1 << st.Line
		} else if on {
			w &^= 1 << st.Line
		}
	}
	return w
}

// TestIOStrobesPerLead: every IO records vortex's strobes beside the
// waveform, delayed like it for its lead (vortex computes them on the
// acquisition's samples in the largest lead's buffer, the smaller leads
// start with lead_strobes).
func TestIOStrobesPerLead(t *testing.T) {
	const samples, records, maxLead = 4, 6, 5
	_, ref, n := reference(t, rasterScan(t, true, 0), 0, records)
	// the engine's queue runs maxLead samples ahead: its markers are the
	// reference's shifted by it
	markers := make([]marker.Marker, len(ref))
	for i, m := range ref {
		markers[i] = m
		markers[i].Sample += maxLead
	}
	strobes := []engine.Strobe{
		engine.NewSampleStrobe(0, 3, engine.PolarityHigh, 1, 1),
		engine.NewSampleStrobe(2, 7, engine.PolarityLow, 2, 0),
		engine.NewMarkerStrobe(engine.SegmentStrobe, 6, engine.PolarityHigh, 8, 2, marker.AllFlags),
	}
	planner, err := format.NewFormatPlanner(format.DefaultFormatPlannerConfig(3, 4))
	require.NoError(t, err)
	acq, proc := newFakeAcq(samples), newFakeProc(samples)
	cfg := engine.Config{RecordsPerBlock: records, BlocksToAllocate: 4, PreloadCount: 2, Strobes: strobes, LeadStrobes: 1 << 9}
	cfg.AddAcquisition(acq, proc)
	cfg.AddProcessor(proc, planner)
	cfg.AddFormatter(planner)
	leads := []int{0, 2, maxLead}
	ios := make([]*gio.SimIO, len(leads))
	for i, l := range leads {
		ios[i], err = gio.NewSimIO(gio.SimConfig{RecordSamples: 1 << 12})
		require.NoError(t, err)
		cfg.AddIO(ios[i], engine.IOConfig{LeadSamples: l, Preload: true})
	}
	e, err := engine.New(cfg, cpu.Default())
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, e.Close()) })
	require.NoError(t, e.ScanQueue().Append(rasterScan(t, true, 0), nil, scan.ScanBoundary()))
	require.NoError(t, e.Prepare())
	require.NoError(t, e.Start())
	require.NoError(t, e.Wait())
	high := 0
	for i, l := range leads {
		got := make([]uint32, n)
		first, rows := ios[i].RecordedStrobes(got)
		require.Equal(t, int64(0), first)
		require.Equal(t, n, rows)
		for k := range n {
			want := uint32(1 << 9) // lead_strobes, before the largest lead's first sample
			if j := k - (maxLead - l); j >= 0 {
				want = strobeWord(strobes, markers, int64(j))
			}
			require.Equal(t, want, got[k], "lead %d sample %d", l, k)
			if got[k]&(1<<6) != 0 {
				high++
			}
		}
	}
	require.Positive(t, high, "the segment strobe fired")
}

// posEndpoint records the target and measured positions each block
// brings (vortex's sample_target and sample_actual).
type posEndpoint struct {
	stream         backend.Stream
	target, actual []float64
}

func (p *posEndpoint) Prepare(info engine.EndpointInfo) (err error) {
	p.stream, err = info.Device.NewStream(0)
	return err
}
func (p *posEndpoint) Stream() backend.Stream { return p.stream }
func (p *posEndpoint) Flush() error           { return nil }
func (p *posEndpoint) Close() error           { return p.stream.Close() }
func (p *posEndpoint) Format(b *engine.BlockData, _ *engine.FormatPlan) error {
	p.target = append(p.target, hostSlice[float64](b.Target.Ptr, b.Records*b.Target.Channels)...)
	p.actual = append(p.actual, hostSlice[float64](b.Actual.Ptr, b.Records*b.Actual.Channels)...)
	return nil
}

// TestScannerWarp: the positions travelling with each block are the
// lead-0 waveform and the IO's measurement through scanner_warp's forward
// (vortex's sample_target and sample_actual); the IOs still get galvo
// coordinates.
func TestScannerWarp(t *testing.T) {
	const samples, records, delay = 4, 6, 3
	wave, _, n := reference(t, rasterScan(t, false, 0.5), 0, records)
	for _, w := range []scan.Warp{scan.NoWarp(), scan.Angular(2), scan.DefaultTelecentric()} {
		t.Run(w.String(), func(t *testing.T) {
			planner, err := format.NewFormatPlanner(format.DefaultFormatPlannerConfig(3, 4))
			require.NoError(t, err)
			acq, proc := newFakeAcq(samples), newFakeProc(samples)
			ep := &posEndpoint{}
			closeEndpoint(t, ep)
			cfg := engine.Config{RecordsPerBlock: records, BlocksToAllocate: 4, PreloadCount: 2, ScannerWarp: w}
			cfg.AddAcquisition(acq, proc)
			cfg.AddProcessor(proc, planner)
			cfg.AddFormatter(planner, ep)
			io, err := gio.NewSimIO(gio.SimConfig{Feedback: true, FeedbackDelay: delay})
			require.NoError(t, err)
			cfg.AddIO(io, engine.IOConfig{Preload: true})
			e, err := engine.New(cfg, cpu.Default())
			require.NoError(t, err)
			t.Cleanup(func() { require.NoError(t, e.Close()) })
			require.NoError(t, e.ScanQueue().Append(rasterScan(t, false, 0.5), nil, scan.ScanBoundary()))
			require.NoError(t, e.Prepare())
			require.NoError(t, e.Start())
			require.NoError(t, e.Wait())
			require.Len(t, ep.target, 2*n)
			galvo := make([]float64, 2*n)
			_, rows := io.Recorded(galvo)
			require.Equal(t, n, rows)
			require.Equal(t, wave, galvo, "the IO gets galvo coordinates")
			want := make([]float64, 2*n)
			w.Forward(wave, want)
			require.InDeltaSlice(t, want, ep.target, 1e-12, "sample_target")
			measured := make([]float64, 2*n)
			copy(measured[2*delay:], wave[:2*(n-delay)])
			w.Forward(measured, want)
			require.InDeltaSlice(t, want, ep.actual, 1e-12, "sample_actual")
		})
	}
	cfg := engine.Config{RecordsPerBlock: 4, BlocksToAllocate: 2, ScannerWarp: scan.Angular(0)}
	acq, proc := newFakeAcq(4), newFakeProc(4)
	cfg.AddAcquisition(acq, proc)
	require.ErrorContains(t, cfg.Validate(), "Config.ScannerWarp.factor")
}

// queueConsumer drains the engine's events as the Python dispatcher does,
// answering EventQueueEmpty with onEmpty (which may append) before it
// asks for the next events (that acknowledges the empty event).
func queueConsumer(e *engine.Engine, onEmpty func()) (wait func() []engine.Event) {
	var evs []engine.Event
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			for _, ev := range nextEvents(e, 64, 50*time.Millisecond) {
				evs = append(evs, ev)
				if ev.Kind == engine.EventQueueEmpty {
					onEmpty()
				}
				if ev.Kind == engine.EventDone {
					return
				}
			}
		}
	}()
	return func() []engine.Event {
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			e.RequestStop()
			<-done
		}
		return evs
	}
}

// limited is a looping raster planned by vortex's default policy
// (MinimumDynamicLimited) within ThorLabs_GVS_5mm, its active segments
// checked against the limits.
func limited(t *testing.T, offset float64, loop bool) *scan.RasterScan {
	cfg := scan.NewRasterScanConfig()
	cfg.SegmentsPerVolume, cfg.SamplesPerSegment = 4, 100
	cfg.BidirectionalSegments = true
	cfg.Offset = [2]float64{offset, 0}
	cfg.Loop = loop
	s := &scan.RasterScan{}
	require.NoError(t, s.Initialize(cfg))
	return s
}

// checkLimits requires the recorded waveform's positions, and the
// velocities and accelerations from its finite differences, within
// ThorLabs_GVS_5mm at 100 kHz (1% for the discretisation).
func checkLimits(t *testing.T, got []float64, rows int) (maxV, maxA float64) {
	t.Helper()
	const sps = 100_000.0
	l := scan.ThorLabsGVS5mm
	for c := range 2 {
		for k := range rows {
			x := got[k*2+c]
			require.True(t, x >= l.Position.Min && x <= l.Position.Max, "position %v at %d", x, k)
			if k >= 1 {
				maxV = max(maxV, math.Abs(x-got[(k-1)*2+c])*sps)
			}
			if k >= 2 {
				a := math.Abs(x-2*got[(k-1)*2+c]+got[(k-2)*2+c]) * sps * sps
				if a > l.Acceleration*1.01 {
					t.Logf("channel %d sample %d: acceleration %.3g; positions %v", c, k, a, got[max(0, k-6)*2:min(rows, k+4)*2])
				}
				maxA = max(maxA, a)
			}
		}
	}
	assert.LessOrEqual(t, maxV, l.Velocity*1.01, "velocity")
	assert.LessOrEqual(t, maxA, l.Acceleration*1.01, "acceleration")
	return maxV, maxA
}

// TestQueueWhileRunning: while the engine plays the queue, the scans'
// callbacks are posted to the dispatcher (EventQueue) as they start and
// finish; an interrupt and an append from the empty callback switch scans
// through planned paths within the limits; the empty callback is asked
// only when the queue runs dry.
func TestQueueWhileRunning(t *testing.T) {
	const samples, records = 4, 100
	planner, err := format.NewFormatPlanner(format.DefaultFormatPlannerConfig(4, 100))
	require.NoError(t, err)
	acq, proc := newFakeAcq(samples), newFakeProc(samples)
	acq.delay = 200 * time.Microsecond
	ep := endpoint.NewNullEndpoint()
	closeEndpoint(t, ep)
	cfg := engine.Config{RecordsPerBlock: records, BlocksToAllocate: 4, PreloadCount: 2}
	cfg.AddAcquisition(acq, proc)
	cfg.AddProcessor(proc, planner)
	cfg.AddFormatter(planner, ep)
	io, err := gio.NewSimIO(gio.SimConfig{RecordSamples: 1 << 16})
	require.NoError(t, err)
	cfg.AddIO(io, engine.IOConfig{Preload: true})
	e, err := engine.New(cfg, cpu.Default())
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, e.Close()) })

	var mu sync.Mutex
	var calls []string
	cb := func(name string) scan.QueueCallback {
		return func(sample int64, ev scan.QueueEvent) {
			mu.Lock()
			calls = append(calls, name+" "+ev.String())
			mu.Unlock()
		}
	}
	q := e.ScanQueue()
	q.SetEmptyWanted(true)
	require.NoError(t, q.Append(limited(t, 0, true), cb("a"), scan.ScanBoundary()))
	empties := 0
	require.NoError(t, e.Prepare())
	wait := queueConsumer(e, func() {
		empties++
		if empties == 1 {
			// the empty callback appends a last scan, 2 units away
			assert.NoError(t, q.Append(limited(t, -2, false), cb("c"), scan.ScanBoundary()))
		}
	})
	require.NoError(t, e.Start())
	require.Eventually(t, func() bool { return e.Status().BlocksAcquired >= 10 }, 5*time.Second, time.Millisecond)
	require.NoError(t, q.Interrupt(limited(t, 3, false), cb("b"), scan.ScanBoundary()))
	require.NoError(t, e.Wait())
	evs := wait()

	mu.Lock()
	require.Equal(t, []string{"a Start", "a Interrupt", "a Abort", "b Start", "b Finish", "c Start", "c Finish"}, calls)
	mu.Unlock()
	require.Equal(t, 2, empties, "asked when b ran dry (c appended), then when c did (the run ends)")
	require.Positive(t, count(evs, engine.EventQueue, -1))
	require.Equal(t, 2, count(evs, engine.EventQueueEmpty, -1))

	got := make([]float64, 2*(1<<16))
	_, rows := io.Recorded(got)
	require.Greater(t, rows, 20*records)
	// When the queue runs dry it holds the last position at once, as
	// vortex's does (a scan without loop ends moving): that is no
	// transition, so the check ends with c's last sample.
	end := rows - 1
	for end > 0 && got[2*end] == got[2*end-2] && got[2*end+1] == got[2*end-1] {
		end--
	}
	maxV, maxA := checkLimits(t, got, end+1)
	t.Logf("%d samples: largest velocity %.0f, acceleration %.3g", rows, maxV, maxA)
	// b is centred 3 units right of a, c 2 left: the output went there.
	xs := make([]float64, rows)
	for k := range rows {
		xs[k] = got[2*k]
	}
	assert.Greater(t, maxOf(xs), 3.5, "reached b")
	assert.InDelta(t, -2, xs[rows-1], 1.1, "ends on c")
}

func maxOf(v []float64) float64 {
	m := math.Inf(-1)
	for _, x := range v {
		m = max(m, x)
	}
	return m
}

// TestStopFinishesThePlanner: a stop in the middle of a volume ends the
// run as vortex's does, with the planner finished: the open segment,
// volume and scan are reported (the last volume partial).
func TestStopFinishesThePlanner(t *testing.T) {
	const samples, records = 4, 7
	planner, err := format.NewFormatPlanner(format.DefaultFormatPlannerConfig(3, 4))
	require.NoError(t, err)
	acq, proc := newFakeAcq(samples), newFakeProc(samples)
	acq.delay = time.Millisecond
	ep := endpoint.NewNullEndpoint()
	closeEndpoint(t, ep)
	cfg := engine.Config{RecordsPerBlock: records, BlocksToAllocate: 4, PreloadCount: 2}
	cfg.AddAcquisition(acq, proc)
	cfg.AddProcessor(proc, planner)
	cfg.AddFormatter(planner, ep)
	e, err := engine.New(cfg, cpu.Default())
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, e.Close()) })
	s := rasterScan(t, true, 0)
	c := s.Config()
	c.Loop = true
	require.NoError(t, s.Initialize(c))
	require.NoError(t, e.ScanQueue().Append(s, nil, marker.NewScanBoundary(0, 5, 0)))
	require.NoError(t, e.Prepare())
	d := startDrain(e)
	require.NoError(t, e.Start())
	require.Eventually(t, func() bool { return e.Status().BlocksAcquired >= 6 }, 5*time.Second, time.Millisecond)
	require.NoError(t, e.Stop())
	evs := d.wait(t)
	st := e.Status()
	require.Equal(t, st.BlocksAcquired, st.BlocksFormatted)
	scans := 0
	for _, ev := range evs {
		if ev.Kind == engine.EventScan {
			scans++
			assert.Equal(t, int64(5), ev.ScanIdx)
		}
	}
	require.Equal(t, 1, scans, "the looping scan is reported finished once, at the stop")
	require.Equal(t, int(st.Volumes), count(evs, engine.EventVolume, 0))
	// the last volume notification is the finish's: after every segment
	last := -1
	for i, ev := range evs {
		if ev.Kind == engine.EventVolume {
			last = i
		}
	}
	require.GreaterOrEqual(t, last, 0)
	for _, ev := range evs[last+1:] {
		require.NotEqual(t, engine.EventSegment, ev.Kind, "no segment after the final volume")
	}
}

// startFailAcq fails its Start.
type startFailAcq struct{ *fakeAcq }

func (startFailAcq) Start() error { return errFakeAcq }

// TestEmptyWaiterOnlyWhileRunning: the queue waits for an empty callback
// only while an engine runs it: not after a Start that failed, not after
// the run ended (nobody would answer, a Generate would hang).
func TestEmptyWaiterOnlyWhileRunning(t *testing.T) {
	for _, failStart := range []bool{true, false} {
		var acq engine.Acquisition = newFakeAcq(4)
		if failStart {
			acq = startFailAcq{newFakeAcq(4)}
		}
		proc := newFakeProc(4)
		planner, err := format.NewFormatPlanner(format.DefaultFormatPlannerConfig(3, 4))
		require.NoError(t, err)
		cfg := engine.Config{RecordsPerBlock: 5, BlocksToAllocate: 2}
		cfg.AddAcquisition(acq, proc)
		cfg.AddProcessor(proc, planner)
		cfg.AddFormatter(planner)
		e, err := engine.New(cfg, cpu.Default())
		require.NoError(t, err)
		q := e.ScanQueue()
		require.NoError(t, e.Prepare())
		if failStart {
			require.ErrorIs(t, e.Start(), errFakeAcq)
		} else {
			require.NoError(t, e.Start())
			require.NoError(t, e.Wait())
		}
		q.SetEmptyWanted(true)
		done := make(chan error, 1)
		go func() {
			var ms []marker.Marker
			_, _, err := q.Generate(&ms, make([]float64, 20), 2, 10, true)
			done <- err
		}()
		select {
		case err := <-done:
			require.NoError(t, err)
		case <-time.After(5 * time.Second):
			t.Fatalf("failStart=%v: Generate waits for an empty callback nobody answers", failStart)
		}
		require.NoError(t, e.Close())
	}
}
