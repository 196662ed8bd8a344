//go:build gpu

package pipeline

import (
	"encoding/binary"
	"fmt"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/cpu"
	"github.com/vortexgo/vortexgo/gosrc/cuda"
	"github.com/vortexgo/vortexgo/gosrc/ops"
)

// GPU tests: real overlap on the device. Run with
//   go test -c -tags gpu -o gpu.test ./gosrc/pipeline && ./gpu.test -test.v
// Each benchmark-like test logs a markdown row for docs (make bench).

func gpuDevice(t *testing.T) backend.Device {
	t.Helper()
	d, err := cuda.GetDevice(0)
	if err != nil {
		t.Skipf("no CUDA device: %v", err)
	}
	return d
}

// hostView returns pinned memory as bytes. Pinned buffers are host
// addresses outside the Go heap (see cpu.HostBytes).
func hostView(b backend.Buffer) []byte { return cpu.HostBytes(b.Ptr(), b.Size()) }

func spinStage(d time.Duration) StageOp {
	return StageOp{Func: func(sc StageContext) error { return ops.Spin(sc.Stream, d) }}
}

// runSynthetic times the 2/5/2 ms pipeline: upload, compute and download
// stages are spin kernels on their streams.
func runSynthetic(t *testing.T, dev backend.Device, versions int, streams bool, iters int) PipelineStats {
	t.Helper()
	x, err := NewManagedGpuContext(dev, streams)
	require.NoError(t, err)
	defer x.Close()
	m, err := x.CreatePipelineManager()
	require.NoError(t, err)
	a, err := m.NewBuffer(256, versions)
	require.NoError(t, err)
	b, err := m.NewBuffer(256, versions)
	require.NoError(t, err)
	for _, st := range []GpuPipelineStage{
		{Name: "upload", OutputBuffers: []int{a}, Stream: OpUpload, Op: spinStage(2 * time.Millisecond)},
		{Name: "compute", InputBuffers: []int{a}, OutputBuffers: []int{b}, Op: spinStage(5 * time.Millisecond)},
		{Name: "download", InputBuffers: []int{b}, Stream: OpDownload, Op: spinStage(2 * time.Millisecond)},
	} {
		_, err := m.AddStage(st)
		require.NoError(t, err)
	}
	for range 3 { // warm-up: module load, first launches
		require.NoError(t, m.ExecuteIteration())
	}
	require.NoError(t, x.AsyncCoordinator().SynchronizeAll())
	m.ResetStats()
	for range iters {
		require.NoError(t, m.ExecuteIteration())
	}
	require.NoError(t, x.AsyncCoordinator().SynchronizeAll())
	return m.GetStats()
}

func TestGPUTripleBufferedSpeedup(t *testing.T) {
	dev := gpuDevice(t)
	seq := runSynthetic(t, dev, 1, false, 60)
	tri := runSynthetic(t, dev, 3, true, 60)
	speedup := seq.AvgIterationMs / tri.AvgIterationMs
	t.Logf("\n| mode | ms/iter | iter/s | GPU util | upload ms | compute ms | download ms |\n|---|---|---|---|---|---|---|\n"+
		"| sequential | %.2f | %.0f | %.2f | %.2f | %.2f | %.2f |\n| triple-buffered | %.2f | %.0f | %.2f | %.2f | %.2f | %.2f |\n"+
		"speedup %.3fx (ideal 9/5 = 1.8x, %.3f of ideal)",
		seq.AvgIterationMs, seq.Throughput, seq.GPUUtilization, seq.Stages[0].AvgMs, seq.Stages[1].AvgMs, seq.Stages[2].AvgMs,
		tri.AvgIterationMs, tri.Throughput, tri.GPUUtilization, tri.Stages[0].AvgMs, tri.Stages[1].AvgMs, tri.Stages[2].AvgMs,
		speedup, speedup/1.8)
	require.InDelta(t, 9.0, seq.AvgIterationMs, 0.5)
	// Behaviour: the stages overlap. The 0.97-of-ideal target is measured by
	// `make bench` (bench/bench_toolkit.py), not asserted in a timed test.
	require.Greater(t, speedup, 1.4, "triple buffering overlaps the stages")
}

// TestGPURealBlocks: 64 MiB uploads and downloads with a 5 ms compute in
// between; each copy direction must reach 0.9 of its ceiling measured
// alone while compute (and the other direction) runs.
func TestGPURealBlocks(t *testing.T) {
	dev := gpuDevice(t)
	const n = 64 << 20
	x, err := NewManagedGpuContext(dev, true)
	require.NoError(t, err)
	defer x.Close()
	c := x.AsyncCoordinator()
	in, err := dev.AllocPinned(n)
	require.NoError(t, err)
	defer in.Free()
	out, err := dev.AllocPinned(n)
	require.NoError(t, err)
	defer out.Free()
	scratch, err := dev.Alloc(n)
	require.NoError(t, err)
	defer scratch.Free()

	ceiling := func(up bool) float64 {
		var ms float64
		const reps = 10
		for range reps + 1 {
			var id OpID
			if up {
				id, err = c.QueueUpload(HostOf(in), scratch, n)
			} else {
				id, err = c.QueueDownload(scratch, HostOf(out), n)
			}
			require.NoError(t, err)
			require.NoError(t, c.Wait(id, 10*time.Second))
		}
		res := c.Poll()
		for _, r := range res[1:] { // skip the first (warm-up)
			ms += float64(r.GPUMs)
		}
		return float64(n) / (ms / reps / 1e3) / 1e9
	}
	upCeil, downCeil := ceiling(true), ceiling(false)

	m, err := x.CreatePipelineManager()
	require.NoError(t, err)
	a, err := m.NewBuffer(n, 3)
	require.NoError(t, err)
	b, err := m.NewBuffer(n, 3)
	require.NoError(t, err)
	for _, st := range []GpuPipelineStage{
		{Name: "upload", OutputBuffers: []int{a}, Stream: OpUpload, Op: StageOp{Func: func(sc StageContext) error {
			return sc.Stream.Copy(sc.Outputs[0].Ptr(), in.Ptr(), n)
		}}},
		{Name: "compute", InputBuffers: []int{a}, OutputBuffers: []int{b}, Op: spinStage(5 * time.Millisecond)},
		{Name: "download", InputBuffers: []int{b}, Stream: OpDownload, Op: StageOp{Func: func(sc StageContext) error {
			return sc.Stream.Copy(out.Ptr(), sc.Inputs[0].Ptr(), n)
		}}},
	} {
		_, err := m.AddStage(st)
		require.NoError(t, err)
	}
	for range 3 {
		require.NoError(t, m.ExecuteIteration())
	}
	require.NoError(t, c.SynchronizeAll())
	m.ResetStats()
	for range 30 {
		require.NoError(t, m.ExecuteIteration())
	}
	require.NoError(t, c.SynchronizeAll())
	st := m.GetStats()
	upBW := float64(n) / (st.Stages[0].AvgMs / 1e3) / 1e9
	downBW := float64(n) / (st.Stages[2].AvgMs / 1e3) / 1e9
	t.Logf("\n| 64 MiB blocks | ceiling GB/s | while overlapped GB/s | ratio |\n|---|---|---|---|\n"+
		"| upload (H2D) | %.1f | %.1f | %.3f |\n| download (D2H) | %.1f | %.1f | %.3f |\n"+
		"iteration %.2f ms, GPU util %.2f", upCeil, upBW, upBW/upCeil, downCeil, downBW, downBW/downCeil,
		st.AvgIterationMs, st.GPUUtilization)
	// Behaviour: copies overlap the compute (the iteration is shorter than
	// its stages in sequence). The 0.9-of-ceiling target is `make bench`'s.
	require.Less(t, st.AvgIterationMs, st.Stages[0].AvgMs+st.Stages[1].AvgMs+st.Stages[2].AvgMs)
}

// TestGPUGraphReplayOverhead compares host time per iteration of eager
// launches and graph replay for three small kernel stages.
func TestGPUGraphReplayOverhead(t *testing.T) {
	dev := gpuDevice(t)
	x, err := NewManagedGpuContext(dev, true)
	require.NoError(t, err)
	defer x.Close()
	m, err := x.CreatePipelineManager()
	require.NoError(t, err)
	const elems = 1024
	a, err := m.NewBuffer(4*elems, 3)
	require.NoError(t, err)
	b, err := m.NewBuffer(4*elems, 3)
	require.NoError(t, err)
	grid, block := [3]uint32{elems / 256, 1, 1}, [3]uint32{256, 1, 1}
	for _, st := range []GpuPipelineStage{
		{Name: "fill", OutputBuffers: []int{a}, Stream: OpUpload, Op: StageOp{Kernel: "fill_float32", Grid: grid, Block: block,
			Args: []any{Out(0), uint64(elems), 1.0}}},
		{Name: "scale", InputBuffers: []int{a}, OutputBuffers: []int{b}, Op: StageOp{Kernel: "scale_offset_float32", Grid: grid, Block: block,
			Args: []any{Out(0), In(0), uint64(elems), 2.0, 1.0}}},
		{Name: "rescale", InputBuffers: []int{b}, Stream: OpDownload, Op: StageOp{Kernel: "scale_offset_float32", Grid: grid, Block: block,
			Args: []any{In(0), In(0), uint64(elems), 1.0, 0.0}}},
	} {
		_, err := m.AddStage(st)
		require.NoError(t, err)
	}
	for range 30 {
		require.NoError(t, m.ExecuteIteration())
	}
	require.NoError(t, x.AsyncCoordinator().SynchronizeAll())
	m.ResetStats()
	for range 600 {
		require.NoError(t, m.ExecuteIteration())
	}
	g, err := m.CaptureIterations(30)
	require.NoError(t, err)
	defer g.Close()
	require.NoError(t, g.Replay()) // warm-up: first launch uploads the graph
	require.NoError(t, x.AsyncCoordinator().SynchronizeAll())
	m.ResetStats()
	for range 20 {
		require.NoError(t, g.Replay())
	}
	require.NoError(t, x.AsyncCoordinator().SynchronizeAll())
	gst := m.GetStats()
	m.ResetStats()
	for range 600 {
		require.NoError(t, m.ExecuteIteration())
	}
	require.NoError(t, x.AsyncCoordinator().SynchronizeAll())
	est := m.GetStats()
	ratio := est.HostUsPerIteration / gst.GraphHostUsPerIteration
	t.Logf("\n| launch | host us/iter | GPU ms/iter |\n|---|---|---|\n| eager (3 kernels) | %.2f | %.4f |\n| graph replay (%d iter/graph) | %.2f | %.4f |\nhost overhead ratio %.1fx",
		est.HostUsPerIteration, est.AvgIterationMs, g.Iterations(), gst.GraphHostUsPerIteration, gst.AvgIterationMs, ratio)
	require.Greater(t, ratio, 1.0, "a replay costs the host less than eager launches") // 3x target: make bench
}

// TestGPUCoordinatorBookkeeping: queue + poll cost per op with no device
// work, i.e. the coordinator's own overhead (two event records, one query,
// the table).
func TestGPUCoordinatorBookkeeping(t *testing.T) {
	dev := gpuDevice(t)
	measure := func(t *testing.T, opts CoordinatorOptions) float64 {
		c, err := NewAsyncCoordinator(dev, opts)
		require.NoError(t, err)
		defer c.Close()
		noop := ComputeOp{Func: func(backend.Stream) error { return nil }}
		const ops = 20000
		for range 1000 {
			_, err := c.QueueCompute(noop)
			require.NoError(t, err)
		}
		require.NoError(t, c.SynchronizeAll())
		c.Poll()
		t0 := time.Now()
		for i := range ops {
			if _, err := c.QueueCompute(noop); err != nil {
				t.Fatal(err)
			}
			if i%64 == 63 {
				c.Poll()
			}
		}
		per := time.Since(t0).Seconds() * 1e6 / ops
		require.NoError(t, c.SynchronizeAll())
		return per
	}
	// Per-op GPU timing costs two timing-event records (1.2 us each on an
	// H200); the bookkeeping itself is what the 2 us target is about.
	timed := measure(t, CoordinatorOptions{})
	plain := measure(t, CoordinatorOptions{NoTiming: true})
	t.Logf("coordinator queue+poll: %.3f us/op without GPU timing, %.3f us/op with per-op timing", plain, timed)
	require.Less(t, plain, timed, "plain completion events cost less than timing pairs") // < 2 us target: make bench
}

func floats(b []byte) []float32 {
	out := make([]float32, len(b)/4)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out
}

func putFloats(b []byte, v []float32) {
	for i, f := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(f))
	}
}

func TestGPUTripleBufferedStep(t *testing.T) {
	dev := gpuDevice(t)
	x, err := NewManagedGpuContext(dev, true)
	require.NoError(t, err)
	defer x.Close()
	const elems = 1 << 16
	tb, err := x.CreateTripleBuffer(elems, backend.Float32)
	require.NoError(t, err)
	op := StageOp{Kernel: "scale_offset_float32", Grid: [3]uint32{elems / 256, 1, 1}, Block: [3]uint32{256, 1, 1},
		Args: []any{Out(0), In(0), uint64(elems), 3.0, 1.0}}
	const frames = 12
	var ins, outs []backend.Buffer
	for f := range frames + 2 {
		inb, err := dev.AllocPinned(4 * elems)
		require.NoError(t, err)
		outb, err := dev.AllocPinned(4 * elems)
		require.NoError(t, err)
		defer inb.Free()
		defer outb.Free()
		v := make([]float32, elems)
		for i := range v {
			v[i] = float32(f*1000 + i%1000)
		}
		putFloats(hostView(inb), v)
		ins, outs = append(ins, inb), append(outs, outb)
	}
	for f := range frames + 2 {
		io := StepIO{Dst: HostOf(outs[f]), Op: op}
		if f < frames {
			io.Src = HostOf(ins[f])
		}
		_, err := x.TripleBufferedStep(tb, io)
		require.NoError(t, err)
	}
	require.NoError(t, x.AsyncCoordinator().SynchronizeAll())
	for f := range frames {
		got := floats(hostView(outs[f+2]))
		for _, i := range []int{0, 1, elems / 2, elems - 1} {
			require.Equal(t, float32(f*1000+i%1000)*3+1, got[i], "frame %d elem %d", f, i)
		}
	}
}

// TestGPUReadbackOverlap: frame N+1's 5 ms of processing overlaps frame
// N's 64 MiB readback, so the loop costs about frames x 5 ms, not
// frames x (5 ms + readback).
func TestGPUReadbackOverlap(t *testing.T) {
	dev := gpuDevice(t)
	const n = 64 << 20
	prod, err := dev.NewStream(0)
	require.NoError(t, err)
	defer prod.Close()
	src := [2]backend.Buffer{}
	for i := range src {
		src[i], err = dev.Alloc(n)
		require.NoError(t, err)
		defer src[i].Free()
	}
	rb, err := NewReadback(dev, n, ReadbackOptions{})
	require.NoError(t, err)
	defer rb.Close()

	// Readback alone.
	h, err := rb.ReadbackAsync(src[0].Ptr(), n, prod)
	require.NoError(t, err)
	t0 := time.Now()
	require.NoError(t, h.Wait(-1))
	require.NoError(t, h.Release())
	require.NoError(t, prod.Synchronize())
	t0 = time.Now()
	h, err = rb.ReadbackAsync(src[0].Ptr(), n, prod)
	require.NoError(t, err)
	require.NoError(t, h.Wait(-1))
	alone := time.Since(t0)
	require.NoError(t, h.Release())

	const frames = 10
	var prev *ReadbackHandle
	t0 = time.Now()
	for f := range frames {
		require.NoError(t, ops.Spin(prod, 5*time.Millisecond)) // "render" frame f into src[f%2]
		require.NoError(t, prod.Memset(src[f%2].Ptr(), byte(f), 4096))
		h, err := rb.ReadbackAsync(src[f%2].Ptr(), n, prod)
		require.NoError(t, err)
		if prev != nil {
			require.NoError(t, prev.Wait(10*time.Second))
			require.Equal(t, byte(f-1), hostView(prev.Buffer())[0])
			require.NoError(t, prev.Release())
		}
		prev = h
	}
	require.NoError(t, prev.Wait(10*time.Second))
	require.NoError(t, prev.Release())
	total := time.Since(t0)
	seq := frames * (5*time.Millisecond + alone)
	t.Logf("readback alone %v; %d frames overlapped %v vs sequential %v", alone, frames, total, seq)
	require.Less(t, total, frames*5*time.Millisecond+3*alone+5*time.Millisecond)
}

// TestGPUWorkerPool is forge3d's thread-pool pattern: 8 workers, each with
// its own stream, doing upload, compute and readback against one pool.
func TestGPUWorkerPool(t *testing.T) {
	dev := gpuDevice(t)
	rb, err := NewReadback(dev, 1<<20, ReadbackOptions{Buffers: 8, MaxBuffers: 16})
	require.NoError(t, err)
	defer rb.Close()
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- func() error {
				s, err := dev.NewStream(0)
				if err != nil {
					return err
				}
				defer s.Close()
				host, err := dev.AllocPinned(1 << 20)
				if err != nil {
					return err
				}
				defer host.Free()
				d, err := dev.Alloc(1 << 20)
				if err != nil {
					return err
				}
				defer d.Free()
				for i := range 20 {
					v := byte(w*20 + i)
					hb := hostView(host)
					for j := range hb {
						hb[j] = v
					}
					if err := s.Copy(d.Ptr(), host.Ptr(), 1<<20); err != nil {
						return err
					}
					if err := ops.Spin(s, 200*time.Microsecond); err != nil {
						return err
					}
					h, err := rb.ReadbackAsync(d.Ptr(), 1<<20, s)
					if err != nil {
						return err
					}
					if err := h.Wait(10 * time.Second); err != nil {
						return err
					}
					got := hostView(h.Buffer())
					if got[0] != v || got[len(got)-1] != v {
						return fmt.Errorf("worker %d iter %d: got %d, want %d", w, i, got[0], v)
					}
					if err := h.Release(); err != nil {
						return err
					}
				}
				return nil
			}()
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("worker pool deadlocked")
	}
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
}
