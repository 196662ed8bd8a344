package pipeline

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/vortexgo/vortexgo/gosrc/backend"
)

// copyPipeline builds upload -> compute (+k per byte) -> download stages
// over two logical buffers of the given version count, with one pinned
// input and output per iteration slot (iteration k uses slot k % slots).
type copyPipeline struct {
	dev      *fakeDevice
	m        *PipelineStageManager
	in, out  []backend.Buffer
	n, slots int
}

func newCopyPipeline(t *testing.T, dev *fakeDevice, c *AsyncCoordinator, versions, slots, n int) *copyPipeline {
	t.Helper()
	m, err := NewPipelineStageManager(c)
	require.NoError(t, err)
	t.Cleanup(func() { _ = m.Close() })
	p := &copyPipeline{dev: dev, m: m, n: n, slots: slots}
	for range slots {
		p.in = append(p.in, pinned(t, dev, make([]byte, n)))
		p.out = append(p.out, pinned(t, dev, make([]byte, n)))
	}
	a, err := m.NewBuffer(n, versions)
	require.NoError(t, err)
	b, err := m.NewBuffer(n, versions)
	require.NoError(t, err)
	_, err = m.AddStage(GpuPipelineStage{Name: "upload", OutputBuffers: []int{a}, Stream: OpUpload, Op: StageOp{
		Func: func(sc StageContext) error {
			return sc.Stream.Copy(sc.Outputs[0].Ptr(), p.in[sc.Iteration%slots].Ptr(), n)
		}}})
	require.NoError(t, err)
	_, err = m.AddStage(GpuPipelineStage{Name: "compute", InputBuffers: []int{a}, OutputBuffers: []int{b}, Op: StageOp{
		Func: func(sc StageContext) error {
			src, dst, k := sc.Inputs[0].Ptr(), sc.Outputs[0].Ptr(), sc.Iteration
			return sc.Stream.(backend.HostStream).Enqueue(func() {
				time.Sleep(time.Duration(k%3) * time.Millisecond) // uneven, to shake out ordering bugs
				v := dev.read(src, n)
				for i := range v {
					v[i] += byte(k % slots)
				}
				dev.write(dst, v)
			})
		}}})
	require.NoError(t, err)
	_, err = m.AddStage(GpuPipelineStage{Name: "download", InputBuffers: []int{b}, Stream: OpDownload, Op: StageOp{
		Func: func(sc StageContext) error {
			return sc.Stream.Copy(p.out[sc.Iteration%slots].Ptr(), sc.Inputs[0].Ptr(), n)
		}}})
	require.NoError(t, err)
	return p
}

func (p *copyPipeline) fill(k, base int) {
	b := make([]byte, p.n)
	for i := range b {
		b[i] = byte(base + i)
	}
	p.dev.write(p.in[k%p.slots].Ptr(), b)
}

func (p *copyPipeline) check(t *testing.T, k, base int) {
	t.Helper()
	got := p.dev.read(p.out[k%p.slots].Ptr(), p.n)
	for i, v := range got {
		require.Equal(t, byte(base+i+k%p.slots), v, "iteration %d byte %d", k, i)
	}
}

// TestPipelineCorrect runs iterations one at a time through every buffer
// depth and stream layout and checks each result.
func TestPipelineCorrect(t *testing.T) {
	for _, tc := range []struct {
		versions   int
		sequential bool
	}{{1, false}, {2, false}, {3, false}, {3, true}} {
		t.Run(fmt.Sprintf("versions=%d sequential=%v", tc.versions, tc.sequential), func(t *testing.T) {
			dev := newFakeDevice(backend.CUDA)
			dev.copyDelay = time.Millisecond
			c := newCoord(t, dev, CoordinatorOptions{Sequential: tc.sequential})
			p := newCopyPipeline(t, dev, c, tc.versions, 1, 64)
			for k := range 6 {
				p.fill(k, 10*k)
				require.NoError(t, p.m.ExecuteIteration())
				require.NoError(t, c.SynchronizeAll()) // host reuses its single slot
				p.check(t, k, 10*k)
			}
			st := p.m.GetStats()
			require.Equal(t, 6, st.Iterations)
			require.Zero(t, st.InFlight)
			require.Len(t, st.Stages, 3)
			for _, s := range st.Stages {
				require.Equal(t, 6, s.Runs, s.Name)
			}
		})
	}
}

// TestPipelineOverlap checks that with triple-versioned buffers the
// iterations of a 2/5/2 pipeline overlap: the period approaches the
// slowest stage instead of the sum, while results stay correct.
func TestPipelineOverlap(t *testing.T) {
	const unit = 2 * time.Millisecond
	run := func(t *testing.T, versions int, sequential bool) PipelineStats {
		dev := newFakeDevice(backend.CUDA)
		c := newCoord(t, dev, CoordinatorOptions{Sequential: sequential})
		m, err := NewPipelineStageManager(c)
		require.NoError(t, err)
		a, err := m.NewBuffer(8, versions)
		require.NoError(t, err)
		b, err := m.NewBuffer(8, versions)
		require.NoError(t, err)
		for _, st := range []GpuPipelineStage{
			{Name: "upload", OutputBuffers: []int{a}, Stream: OpUpload, Op: StageOp{Func: sleepStage(2 * unit)}},
			{Name: "compute", InputBuffers: []int{a}, OutputBuffers: []int{b}, Op: StageOp{Func: sleepStage(5 * unit)}},
			{Name: "download", InputBuffers: []int{b}, Stream: OpDownload, Op: StageOp{Func: sleepStage(2 * unit)}},
		} {
			_, err := m.AddStage(st)
			require.NoError(t, err)
		}
		require.NoError(t, m.SetOrder([]int{0, 1, 2}))
		t0 := time.Now()
		for range 12 {
			require.NoError(t, m.ExecuteIteration())
		}
		require.Less(t, time.Since(t0), 15*unit, "ExecuteIteration blocked the host")
		require.Zero(t, dev.hostSync.Load())
		require.NoError(t, c.SynchronizeAll())
		st := m.GetStats()
		require.NoError(t, m.Close())
		return st
	}
	seq := run(t, 1, true)
	tri := run(t, 3, false)
	t.Logf("sequential %.2f ms/iter, triple %.2f ms/iter, utilization %.2f, speedup %.2fx",
		seq.AvgIterationMs, tri.AvgIterationMs, tri.GPUUtilization, seq.AvgIterationMs/tri.AvgIterationMs)
	require.Equal(t, 12, tri.Iterations)
	// Sleeps never end early but overshoot on a loaded machine (CI shares
	// its cores), so only the lower bound is exact; the ratio below is
	// what shows the overlap.
	require.GreaterOrEqual(t, seq.AvgIterationMs, 9*unit.Seconds()*1e3*0.95)
	require.Less(t, tri.AvgIterationMs, 0.8*seq.AvgIterationMs)
	require.GreaterOrEqual(t, tri.Stages[1].AvgMs, 5*unit.Seconds()*1e3*0.9)
	require.InDelta(t, 1e3/tri.AvgIterationMs, tri.Throughput, 1e-9)
	require.Greater(t, tri.GPUUtilization, 0.9) // compute is busy nearly all the time
	require.Positive(t, tri.HostUsPerIteration)
}

func sleepStage(d time.Duration) func(StageContext) error {
	return func(sc StageContext) error {
		return sc.Stream.(backend.HostStream).Enqueue(func() { time.Sleep(d) })
	}
}

// TestPipelineThroughput issues many iterations without waiting, several
// slots ahead, and checks every result: the hazard tracking alone keeps
// iterations from overwriting each other's buffer versions.
func TestPipelineThroughput(t *testing.T) {
	dev := newFakeDevice(backend.CUDA)
	c := newCoord(t, dev, CoordinatorOptions{})
	p := newCopyPipeline(t, dev, c, 3, 8, 32)
	for round := range 3 {
		for k := range 8 {
			p.fill(k, round*7+k)
			require.NoError(t, p.m.ExecuteIteration())
		}
		require.NoError(t, c.SynchronizeAll()) // host slots are reused next round
		for k := range 8 {
			p.check(t, k, round*7+k)
		}
	}
	st := p.m.GetStats()
	require.Equal(t, 24, st.Iterations)
	p.m.ResetStats()
	require.Zero(t, p.m.GetStats().Iterations)
	require.Equal(t, 24, p.m.Iteration())
}

func TestPipelineKernelArgs(t *testing.T) {
	var ptrs [][]any
	launch := func(s backend.Stream, name string, grid, block [3]uint32, args ...any) error {
		ptrs = append(ptrs, args)
		return nil
	}
	dev := newFakeDevice(backend.CPU)
	c := newCoord(t, dev, CoordinatorOptions{Launch: launch})
	m, err := NewPipelineStageManager(c)
	require.NoError(t, err)
	a, err := m.NewBuffer(4, 3)
	require.NoError(t, err)
	b, err := m.NewBuffer(4, 1)
	require.NoError(t, err)
	args := []any{In(0), Out(0), 7}
	_, err = m.AddStage(GpuPipelineStage{Name: "k", InputBuffers: []int{a}, OutputBuffers: []int{b},
		Op: StageOp{Kernel: "scale", Args: args}})
	require.NoError(t, err)
	for range 4 {
		require.NoError(t, m.ExecuteIteration())
	}
	require.Len(t, ptrs, 4)
	for k, got := range ptrs {
		in, err := m.Buffer(a, k%3)
		require.NoError(t, err)
		out, err := m.Buffer(b, 0)
		require.NoError(t, err)
		require.Equal(t, []any{in, out, 7}, got, "references resolve to the iteration's buffer versions")
	}
	require.Equal(t, In(0), args[0], "the stage's Args are not rewritten")
}

func TestPipelineErrors(t *testing.T) {
	dev := newFakeDevice(backend.CPU)
	c := newCoord(t, dev, CoordinatorOptions{})
	m, err := NewPipelineStageManager(c)
	require.NoError(t, err)
	require.ErrorContains(t, m.ExecuteIteration(), "no stages")
	_, err = m.Capture()
	require.ErrorContains(t, err, "no stages")
	a, err := m.NewBuffer(4, 2)
	require.NoError(t, err)
	noop := StageOp{Func: func(StageContext) error { return nil }}
	tests := []struct {
		name string
		st   GpuPipelineStage
		msg  string
	}{
		{"no name", GpuPipelineStage{Op: noop}, "empty Name"},
		{"bad buffer", GpuPipelineStage{Name: "x", InputBuffers: []int{3}, Op: noop}, "buffer 3, expected 0 <= buffer < 1"},
		{"bad stream", GpuPipelineStage{Name: "x", Stream: 9, Op: noop}, "Stream=OpType(9)"},
		{"no op", GpuPipelineStage{Name: "x"}, "neither Func nor Kernel"},
		{"bad ref", GpuPipelineStage{Name: "x", InputBuffers: []int{a}, Op: StageOp{Func: noop.Func, Args: []any{Out(0)}}}, "expected 0 <= Index < 0"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := m.AddStage(tc.st)
			require.ErrorContains(t, err, tc.msg)
		})
	}
	_, err = m.AddStage(GpuPipelineStage{Name: "ok", OutputBuffers: []int{a}, Op: noop})
	require.NoError(t, err)
	require.ErrorContains(t, m.SetOrder(nil), "empty order")
	require.ErrorContains(t, m.SetOrder([]int{1}), "stage 1, expected 0 <= stage < 1")
	require.ErrorContains(t, m.SetOrder([]int{0, 0}), `stage 0 ("ok") appears twice`)
	_, err = m.AddBuffer()
	require.ErrorContains(t, err, "no versions")
	_, err = m.NewBuffer(4, 0)
	require.ErrorContains(t, err, "versions=0")
	require.NoError(t, m.Close())
	require.ErrorIs(t, m.ExecuteIteration(), backend.ErrClosed)
	require.ErrorIs(t, m.Close(), backend.ErrClosed)
}

// TestPipelineCapture captures one buffer cycle into a graph, replays it
// with new host data, and checks results and the graph stats, on the
// multi-stream (CUDA) and single-stream (CPU) capture paths.
func TestPipelineCapture(t *testing.T) {
	for _, kind := range []backend.Kind{backend.CUDA, backend.CPU} {
		t.Run(kind.String(), func(t *testing.T) {
			dev := newFakeDevice(kind)
			c := newCoord(t, dev, CoordinatorOptions{})
			p := newCopyPipeline(t, dev, c, 3, 3, 16)
			// Eager first, so the graph must order itself after it.
			for k := range 3 {
				p.fill(k, k)
				require.NoError(t, p.m.ExecuteIteration())
			}
			g, err := p.m.Capture()
			require.NoError(t, err)
			require.Equal(t, 3, g.Iterations())
			require.Positive(t, g.Nodes())
			for r := 1; r <= 3; r++ {
				require.NoError(t, c.SynchronizeAll())
				for k := range 3 {
					p.check(t, k, (r-1)*50+k)
					p.fill(k, r*50+k)
				}
				require.NoError(t, g.Replay())
			}
			// Eager after replay still follows the graph.
			require.NoError(t, c.SynchronizeAll())
			p.fill(0, 99)
			require.NoError(t, p.m.ExecuteIteration()) // iteration 12 -> slot 0
			require.NoError(t, c.SynchronizeAll())
			p.check(t, 0, 99)
			for k := 1; k < 3; k++ {
				p.check(t, k, 150+k)
			}
			st := p.m.GetStats()
			require.Equal(t, 13, st.Iterations)
			require.Equal(t, 9, st.GraphIterations)
			require.Positive(t, st.GraphHostUsPerIteration)
			require.NoError(t, g.Close())
			require.ErrorIs(t, g.Replay(), backend.ErrClosed)

			for _, n := range []int{-3, 4, 2000} {
				_, err := p.m.CaptureIterations(n)
				require.ErrorContains(t, err, "positive multiple of the buffer cycle 3")
			}
			g6, err := p.m.CaptureIterations(6)
			require.NoError(t, err)
			require.Equal(t, 6, g6.Iterations())
			require.NoError(t, g6.Replay())
			require.NoError(t, c.SynchronizeAll())
			require.Equal(t, 19, p.m.GetStats().Iterations)
			require.NoError(t, g6.Close())
		})
	}
}
