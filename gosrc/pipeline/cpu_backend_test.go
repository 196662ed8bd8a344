package pipeline

import (
	"encoding/binary"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/cpu"
	"github.com/vortexgo/vortexgo/gosrc/internal/invariants"
)

// These tests run the toolkit on the real CPU backend with kernels by name
// through ops.LaunchByName (their CPU twins), as CI does.

func cpuFloats(t *testing.T, dev backend.Device, vals ...float32) backend.Buffer {
	t.Helper()
	b, err := dev.AllocPinned(4 * len(vals))
	require.NoError(t, err)
	t.Cleanup(func() { _ = b.Free() })
	raw := cpu.HostBytes(b.Ptr(), b.Size())
	for i, v := range vals {
		binary.LittleEndian.PutUint32(raw[4*i:], math.Float32bits(v))
	}
	return b
}

func readFloats(b backend.Buffer) []float32 {
	raw := cpu.HostBytes(b.Ptr(), b.Size())
	out := make([]float32, len(raw)/4)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
	}
	return out
}

func TestCPUCoordinatorKernelByName(t *testing.T) {
	dev := cpu.Default()
	c, err := NewAsyncCoordinator(dev, CoordinatorOptions{})
	require.NoError(t, err)
	defer c.Close()
	in := cpuFloats(t, dev, 1, 2, 3, 4)
	out := cpuFloats(t, dev, 0, 0, 0, 0)
	buf, err := dev.Alloc(16)
	require.NoError(t, err)
	defer buf.Free()

	up, err := c.QueueUpload(HostOf(in), buf, 16)
	require.NoError(t, err)
	k, err := c.QueueCompute(ComputeOp{Kernel: "scale_offset_float32", Grid: [3]uint32{1, 1, 1}, Block: [3]uint32{256, 1, 1},
		Args: []any{buf.Ptr(), buf.Ptr(), uint64(4), 2.0, 1.0}}, up)
	require.NoError(t, err)
	down, err := c.QueueDownload(buf, HostOf(out), 16, k)
	require.NoError(t, err)
	require.NoError(t, c.Wait(down, time.Second))
	require.Equal(t, []float32{3, 5, 7, 9}, readFloats(out))
	res := c.Poll()
	require.Len(t, res, 3)
	for _, r := range res {
		require.NoError(t, r.Err)
		require.GreaterOrEqual(t, r.GPUMs, float32(0))
	}
}

// TestCPUPipelineCaptureReplay: eager iterations and graph replays of a
// kernel stage agree on the CPU backend.
func TestCPUPipelineCaptureReplay(t *testing.T) {
	dev := cpu.Default()
	x, err := NewManagedGpuContext(dev, true)
	require.NoError(t, err)
	defer x.Close()
	m, err := x.CreatePipelineManager()
	require.NoError(t, err)
	in := cpuFloats(t, dev, 1, 2, 3, 4)
	out := cpuFloats(t, dev, 0, 0, 0, 0)
	a, err := m.NewBuffer(16, 3)
	require.NoError(t, err)
	b, err := m.NewBuffer(16, 3)
	require.NoError(t, err)
	for _, st := range []GpuPipelineStage{
		{Name: "upload", OutputBuffers: []int{a}, Stream: OpUpload, Op: StageOp{Func: func(sc StageContext) error {
			return sc.Stream.Copy(sc.Outputs[0].Ptr(), in.Ptr(), 16)
		}}},
		{Name: "scale", InputBuffers: []int{a}, OutputBuffers: []int{b}, Op: StageOp{Kernel: "scale_offset_float32",
			Grid: [3]uint32{1, 1, 1}, Block: [3]uint32{256, 1, 1}, Args: []any{Out(0), In(0), uint64(4), 10.0, 0.5}}},
		{Name: "download", InputBuffers: []int{b}, Stream: OpDownload, Op: StageOp{Func: func(sc StageContext) error {
			return sc.Stream.Copy(out.Ptr(), sc.Inputs[0].Ptr(), 16)
		}}},
	} {
		_, err := m.AddStage(st)
		require.NoError(t, err)
	}
	for range 4 {
		require.NoError(t, m.ExecuteIteration())
	}
	require.Equal(t, []float32{10.5, 20.5, 30.5, 40.5}, readFloats(out))

	g, err := m.Capture()
	require.NoError(t, err)
	copy(cpu.HostBytes(out.Ptr(), 16), make([]byte, 16))
	copy(cpu.HostBytes(in.Ptr(), 16), cpu.HostBytes(cpuFloats(t, dev, 5, 6, 7, 8).Ptr(), 16))
	require.Equal(t, []float32{0, 0, 0, 0}, readFloats(out), "capture runs nothing")
	for range 5 {
		require.NoError(t, g.Replay())
	}
	require.Equal(t, []float32{50.5, 60.5, 70.5, 80.5}, readFloats(out))
	require.NoError(t, x.AsyncCoordinator().SynchronizeAll())
	st := m.GetStats()
	require.Equal(t, 4+5*3, st.Iterations)
	require.Equal(t, 15, st.GraphIterations)
	require.Equal(t, 4, st.Stages[1].Runs)
	require.NoError(t, g.Close())
}

func TestCPUTripleBufferedStepAndReadback(t *testing.T) {
	dev := cpu.Default()
	x, err := NewManagedGpuContext(dev, true)
	require.NoError(t, err)
	defer x.Close()
	tb, err := x.CreateTripleBuffer(2, backend.Float32)
	require.NoError(t, err)
	double := StageOp{Kernel: "scale_offset_float32", Grid: [3]uint32{1, 1, 1}, Block: [3]uint32{256, 1, 1},
		Args: []any{Out(0), In(0), uint64(2), 2.0, 0.0}}
	var outs []backend.Buffer
	for f := range 5 {
		outs = append(outs, cpuFloats(t, dev, -1, -1))
		io := StepIO{Dst: HostOf(outs[f]), Op: double}
		if f < 3 {
			io.Src = HostOf(cpuFloats(t, dev, float32(f), float32(f)+0.5))
		}
		_, err := x.TripleBufferedStep(tb, io)
		require.NoError(t, err)
	}
	for f := range 3 {
		require.Equal(t, []float32{float32(2 * f), float32(2*f) + 1}, readFloats(outs[f+2]))
	}

	rb, err := NewReadback(dev, 8, ReadbackOptions{})
	require.NoError(t, err)
	defer rb.Close()
	h, err := rb.ReadbackAsync(tb.Buffer(0).Ptr(), 8, x.AsyncCoordinator().ComputeStream())
	require.NoError(t, err)
	require.NoError(t, h.Wait(time.Second))
	require.Len(t, readFloats(h.Buffer()), 2)
	require.NoError(t, h.Release())
}

// BenchmarkCPUCoordinatorQueuePoll is the coordinator's bookkeeping per op
// (queue with two event records and a reap, a Poll every 64 ops) on the
// CPU backend, where the backend calls themselves cost next to nothing.
func BenchmarkCPUCoordinatorQueuePoll(b *testing.B) {
	c, err := NewAsyncCoordinator(cpu.Default(), CoordinatorOptions{})
	require.NoError(b, err)
	defer c.Close()
	noop := ComputeOp{Func: func(backend.Stream) error { return nil }}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if _, err := c.QueueCompute(noop); err != nil {
			b.Fatal(err)
		}
		if i%64 == 63 {
			c.Poll()
		}
	}
}

// TestReadbackHandleReleasedAfterCloseClosesItsEvent: a handle still held
// when the pool closes keeps its completion event; releasing it afterwards
// closes the event (the closed pool takes none back), so nothing leaks.
func TestReadbackHandleReleasedAfterCloseClosesItsEvent(t *testing.T) {
	dev := cpu.Default()
	src, err := dev.Alloc(64)
	require.NoError(t, err)
	defer func() { require.NoError(t, src.Free()) }()
	prod, err := dev.NewStream(0)
	require.NoError(t, err)
	defer func() { require.NoError(t, prod.Close()) }()
	before := len(invariants.Live())
	rb, err := NewReadback(dev, 64, ReadbackOptions{})
	require.NoError(t, err)
	h, err := rb.ReadbackAsync(src.Ptr(), 64, prod)
	require.NoError(t, err)
	require.NoError(t, h.Wait(time.Second))
	require.NoError(t, rb.Close())
	require.NoError(t, h.Release())
	if invariants.Enabled {
		require.Len(t, invariants.Live(), before, "the handle's event, buffer and the pool's stream are closed")
	}
}
