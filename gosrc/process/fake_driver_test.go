//go:build !gpu

package process

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/cuda"
	"github.com/vortexgo/vortexgo/gosrc/internal/fakecudatest"
)

// The slots' graphs (graphs.go) are host logic around driver calls: which
// block captures, which replays, the bounds, the fallbacks. They run here
// without a GPU against gosrc/cuda's fake driver and fake cuFFT, which
// count their calls and keep the driver's capture rules (per stream, a
// stream that waits on a captured event joins the capture). The driver is
// chosen once per process, so the checks run in a child of the test binary
// with the fakes in its environment; the outputs themselves are compared
// on the GPU (TestCUDAGraphsReplayDirectLaunches).

const fakeChildEnv = "VORTEXGO_PROCESS_FAKE_CHILD"

func TestGraphsOnTheFakeDriver(t *testing.T) {
	fakecudatest.Run(t, filepath.Join("..", "cuda", "testdata"), "TestGraphsOnTheFakeDriverChild", fakeChildEnv)
}

// fakeCounts reads the fake driver's and fake cuFFT's call counters.
type fakeCounts struct {
	calls *[13]int64 // fake_calls, indexed as fake_call_names
	execs *int64     // fake_cufft_execs
}

const (
	fakeLaunch      = 0  // cuLaunchKernel
	fakeGraphLaunch = 11 // cuGraphLaunch
)

func (f fakeCounts) read() (launches, graphLaunches, ffts int64) {
	return f.calls[fakeLaunch], f.calls[fakeGraphLaunch], *f.execs
}

func TestGraphsOnTheFakeDriverChild(t *testing.T) {
	if os.Getenv(fakeChildEnv) == "" {
		t.Skip("only runs as the child of TestGraphsOnTheFakeDriver")
	}
	require.NoError(t, cuda.Init())
	counts := fakeCounts{calls: fakecudatest.Sym[[13]int64](t, cuda.DriverPathEnv, "fake_calls"),
		execs: fakecudatest.Sym[int64](t, cuda.CUFFTPathEnv, "fake_cufft_execs")}
	refuseCapture := fakecudatest.Sym[int32](t, cuda.DriverPathEnv, "fake_refuse_capture")
	dev, err := cuda.GetDevice(0)
	require.NoError(t, err)

	const n, r = 1024, 64 // 1024 samples: cuFFT, not a one-pass kernel
	// The graph subtests count the three kernels' launches and cuFFT's
	// executions (the spectrum, FFT and output steps as separate calls);
	// the fused kernel's subtest turns it back on.
	t.Setenv(FusedEnv, "0")
	newProc := func(t *testing.T, mod func(*Config)) (*CUDAProcessor, *cuda.Stream) {
		c := smallConfig(n, r)
		c.Slots = 1
		if mod != nil {
			mod(&c)
		}
		p, err := NewCUDAProcessor(dev, c)
		require.NoError(t, err)
		require.NoError(t, p.Prepare())
		s, err := dev.CreateStream(0)
		require.NoError(t, err)
		t.Cleanup(func() {
			require.NoError(t, s.Close())
			require.NoError(t, p.Close())
		})
		return p, s
	}
	buf := func(t *testing.T, size int) uintptr {
		b, err := dev.Malloc(size)
		require.NoError(t, err)
		t.Cleanup(func() { b.Free() })
		return b.Ptr()
	}
	process := func(t *testing.T, p *CUDAProcessor, s *cuda.Stream, in, out uintptr) {
		require.NoError(t, p.Process(0, s, in, r, out, 0))
	}

	t.Run("seen once launches, twice captures, then replays", func(t *testing.T) {
		p, s := newProc(t, nil)
		in, out := buf(t, r*n*2), buf(t, r*n*4)
		for i, want := range []struct{ launches, graphs, ffts int64 }{
			{2, 0, 1}, // first sighting: the spectrum and output kernels and cuFFT, directly
			{0, 1, 0}, // second: captured on the slot's stream (no launch reaches the caller's), replayed
			{0, 1, 0}, // then replayed
			{0, 1, 0},
		} {
			l0, g0, f0 := counts.read()
			process(t, p, s, in, out)
			l1, g1, f1 := counts.read()
			if i == 1 { // the capture's own calls are counted too: two launches and cuFFT, captured
				l1, f1 = l1-2, f1-1
			}
			require.Equal(t, want, struct{ launches, graphs, ffts int64 }{l1 - l0, g1 - g0, f1 - f0}, "call %d", i)
		}
		g := p.st.slots[0].graphs
		require.Equal(t, 1, g.Stats().Captures)
		require.Equal(t, 2, g.Stats().Replays)
		require.NoError(t, g.Stats().Failed)
		require.False(t, s.Capturing())
	})

	t.Run("the fused kernel: one launch a block, no cuFFT, no plan, no spectrum scratch", func(t *testing.T) {
		t.Setenv(FusedEnv, "1")
		p, s := newProc(t, nil)
		require.NotNil(t, p.st.fused)
		require.Nil(t, p.st.slots[0].plan)
		require.Zero(t, p.st.slots[0].spectrum)
		in, out := buf(t, r*n*2), buf(t, r*n*4)
		for i, want := range []struct{ launches, graphs, ffts int64 }{
			{1, 0, 0}, // first sighting: the fused kernel, directly
			{0, 1, 0}, // second: captured, replayed
			{0, 1, 0},
		} {
			l0, g0, f0 := counts.read()
			process(t, p, s, in, out)
			l1, g1, f1 := counts.read()
			if i == 1 { // the capture's own launch
				l1--
			}
			require.Equal(t, want, struct{ launches, graphs, ffts int64 }{l1 - l0, g1 - g0, f1 - f0}, "call %d", i)
		}
	})

	t.Run("a record and a wait on the caller's stream mid-capture run, not captured", func(t *testing.T) {
		// The engine's format stage enqueues an earlier block's formatting on
		// the slot stream from another goroutine: were the capture on that
		// stream, the fake (like the driver) would take the record into it,
		// the other stream's wait would join it, and the capture would fail
		// unjoined.
		p, s := newProc(t, nil)
		other, err := dev.CreateStream(0)
		require.NoError(t, err)
		defer other.Close()
		ev, err := dev.CreateEvent(false)
		require.NoError(t, err)
		defer ev.Close()
		var errs []error
		p.st.slots[0].graphs.SetCaptureHook(func() { // s is the caller's stream
			errs = append(errs, s.Record(ev), other.WaitEvent(ev), ev.Synchronize(), other.Synchronize())
		})
		in, out := buf(t, r*n*2), buf(t, r*n*4)
		for range 3 {
			process(t, p, s, in, out)
		}
		require.Len(t, errs, 4, "one capture")
		for _, e := range errs {
			require.NoError(t, e)
		}
		require.NoError(t, p.st.slots[0].graphs.Stats().Failed)
		require.Equal(t, 1, p.st.slots[0].graphs.Stats().Replays)
		require.False(t, other.Capturing())
	})

	t.Run("bounded: 64 graphs, then direct launches", func(t *testing.T) {
		p, s := newProc(t, nil)
		in := buf(t, r*n*2)
		out := buf(t, (maxSlotGraphs+8)*r*n*4)
		at := func(i int) uintptr { return out + uintptr(i*r*n*4) }
		for i := range maxSlotGraphs + 8 { // each address set twice
			process(t, p, s, in, at(i))
			process(t, p, s, in, at(i))
		}
		g := p.st.slots[0].graphs
		require.Equal(t, maxSlotGraphs, g.Stats().Graphs)
		require.Equal(t, maxSlotGraphs, g.Stats().Captures)
		l0, g0, _ := counts.read()
		process(t, p, s, in, at(maxSlotGraphs+3)) // never captured: direct
		process(t, p, s, in, at(5))               // captured: replayed
		l1, g1, _ := counts.read()
		require.Equal(t, [2]int64{2, 1}, [2]int64{l1 - l0, g1 - g0})
	})

	t.Run("sets seen once are forgotten past 256", func(t *testing.T) {
		p, s := newProc(t, nil)
		in := buf(t, r*n*2)
		out := buf(t, (maxSlotSeen+10)*r*n*4)
		for i := range maxSlotSeen + 10 {
			process(t, p, s, in, out+uintptr(i*r*n*4))
		}
		g := p.st.slots[0].graphs
		require.LessOrEqual(t, g.Stats().Seen, maxSlotSeen)
		require.Zero(t, g.Stats().Captures, "no set came twice")
	})

	t.Run("a caller's own capture gets direct launches", func(t *testing.T) {
		p, s := newProc(t, nil)
		in, out := buf(t, r*n*2), buf(t, r*n*4)
		process(t, p, s, in, out) // seen
		require.NoError(t, s.BeginCapture())
		process(t, p, s, in, out) // second sighting, but s captures: into the caller's graph
		gr, err := s.EndCaptureGraph()
		require.NoError(t, err)
		require.NoError(t, gr.Close())
		require.Zero(t, p.st.slots[0].graphs.Stats().Captures)
		process(t, p, s, in, out) // outside the capture: captured now
		require.Equal(t, 1, p.st.slots[0].graphs.Stats().Captures)
	})

	t.Run("a capture the driver refuses falls back to direct launches", func(t *testing.T) {
		p, s := newProc(t, nil)
		in, out := buf(t, r*n*2), buf(t, r*n*4)
		*refuseCapture = 1
		defer func() { *refuseCapture = 0 }()
		for range 3 {
			l0, _, f0 := counts.read()
			process(t, p, s, in, out) // no error: the work runs directly
			l1, _, f1 := counts.read()
			require.Equal(t, [2]int64{2, 1}, [2]int64{l1 - l0, f1 - f0})
		}
		g := p.st.slots[0].graphs
		require.Error(t, g.Stats().Failed)
		require.Zero(t, g.Stats().Captures)
		require.False(t, s.Capturing())
	})

	t.Run("no graphs for large blocks or with noGraphs", func(t *testing.T) {
		big, _ := newProc(t, func(c *Config) { c.AscansPerBlock = maxGraphBlockSamples/n + 1 })
		require.Nil(t, big.st.slots[0].capture)
		t.Setenv("VORTEXGO_CUDA_GRAPHS", "0")
		off, _ := newProc(t, nil)
		require.True(t, off.noGraphs)
		require.Nil(t, off.st.slots[0].capture)
		for _, v := range []string{"off", "false", " 0"} { // a misspelt switch is refused, not ignored
			t.Setenv("VORTEXGO_CUDA_GRAPHS", v)
			_, err := NewCUDAProcessor(dev, smallConfig(n, r))
			require.ErrorIs(t, err, backend.ErrInvalid)
			require.ErrorContains(t, err, "VORTEXGO_CUDA_GRAPHS=")
			require.ErrorContains(t, err, "expected 0")
		}
	})

	t.Run("the turn's window: the environment's, else none until an engine sets it", func(t *testing.T) {
		t.Setenv("VORTEXGO_TURN_SPIN", "")
		p, _ := newProc(t, nil)
		require.Zero(t, p.order.Window())
		p.SetTurnWindow(30 * time.Microsecond)
		require.Equal(t, 30*time.Microsecond, p.order.Window())
		t.Setenv("VORTEXGO_TURN_SPIN", "45")
		q, _ := newProc(t, nil)
		require.Equal(t, 45*time.Microsecond, q.order.Window())
		for _, v := range []string{"on", "-1", "10001"} { // a misspelt window is refused, not ignored
			t.Setenv("VORTEXGO_TURN_SPIN", v)
			_, err := NewCUDAProcessor(dev, smallConfig(n, r))
			require.ErrorIs(t, err, backend.ErrInvalid)
			require.ErrorContains(t, err, "VORTEXGO_TURN_SPIN=")
		}
	})

	t.Run("the rolling average goes into the graph, its position in the key", func(t *testing.T) {
		p, s := newProc(t, func(c *Config) { c.AverageWindow = 2 * r }) // vortex's demos: two blocks
		in, out := buf(t, r*n*2), buf(t, r*n*4)
		sl, h := p.st.slots[0], p.st.hist
		// Ring position, appended and valid rows cycle (0, r, r), (r, r, 2r),
		// (0, r, 2r), then the last two: each key is captured on its second
		// sighting and replayed after, the averaging kernel inside.
		for i, want := range []struct{ launches, graphs, ffts int64 }{
			{3, 0, 1}, {3, 0, 1}, {3, 0, 1}, // first sightings: averaging, spectrum, output kernels
			{0, 1, 0}, {0, 1, 0}, // second: captured (its own calls not on the caller's stream), replayed
			{0, 1, 0}, {0, 1, 0}, {0, 1, 0},
		} {
			l0, g0, f0 := counts.read()
			process(t, p, s, in, out)
			l1, g1, f1 := counts.read()
			if i == 3 || i == 4 {
				l1, f1 = l1-3, f1-1
			}
			require.Equal(t, want, struct{ launches, graphs, ffts int64 }{l1 - l0, g1 - g0, f1 - f0}, "call %d", i)
			require.Equal(t, [2]int{(i + 1) * r % (2 * r), min((i+1)*r, 2*r)}, [2]int{h.index, h.count}, "call %d", i)
			require.Same(t, sl.averaged, h.prev)
			// Captured as an external event node: a plain record in the
			// capture would have made the caller's stream, waiting on the
			// event for the next block, join the capture.
			require.False(t, s.Capturing(), "call %d", i)
		}
		require.Equal(t, 2, sl.graphs.Stats().Captures)
		require.Equal(t, 3, sl.graphs.Stats().Replays)
		require.NoError(t, sl.graphs.Stats().Failed)
		// Without appending (vortex's append_history=False) the position
		// stays: a key of its own.
		require.NoError(t, p.ProcessHistory(0, s, in, r, out, 0, false))
		require.Equal(t, [2]int{0, 2 * r}, [2]int{h.index, h.count})
	})

	t.Run("an external record is refused outside a capture", func(t *testing.T) {
		s, err := dev.CreateStream(0)
		require.NoError(t, err)
		defer s.Close()
		ev, err := dev.CreateEvent(false)
		require.NoError(t, err)
		defer ev.Close()
		err = s.RecordExternal(ev)
		require.ErrorContains(t, err, "cuEventRecordWithFlags")
		require.NoError(t, s.BeginCapture())
		require.NoError(t, s.RecordExternal(ev))
		g, err := s.EndCaptureGraph()
		require.NoError(t, err)
		require.NoError(t, g.Close())
		require.ErrorContains(t, s.RecordExternal(nil), "expected a non-nil *cuda.Event")
	})

	t.Run("a Change starts the graphs over", func(t *testing.T) {
		p, s := newProc(t, nil)
		in, out := buf(t, r*n*2), buf(t, r*n*4)
		process(t, p, s, in, out)
		process(t, p, s, in, out)
		require.Equal(t, 1, p.st.slots[0].graphs.Stats().Graphs)
		c := p.Config()
		c.Levels = [2]float32{0, 50}
		require.NoError(t, p.Change(c))
		require.Zero(t, p.st.slots[0].graphs.Stats().Graphs, "the new state's slot has no graph of the old arguments")
		l0, g0, _ := counts.read()
		process(t, p, s, in, out)
		l1, g1, _ := counts.read()
		require.Equal(t, [2]int64{2, 0}, [2]int64{l1 - l0, g1 - g0}, "seen afresh: direct")
	})
}
