package process

import (
	"fmt"

	"github.com/vortexgo/vortexgo/gosrc/cuda"
	"github.com/vortexgo/vortexgo/gosrc/internal/dl"
)

// fusedGeometry is the geometry of one fused processing kernel
// (kernels/fused.cuh): steps 1-5 of the chain for records of m output
// samples, a power of two, one record a block of m / 4 threads (a
// Stockham radix-4 inverse FFT in shared memory, a thread for each 4
// values).
type fusedGeometry struct {
	m int
}

// fusedKernels holds the lengths with a fused kernel, each in a module of
// its own (kernels/fused<m>.cu: a processor JIT-compiles only its own);
// keep it in step with their FUSED_ENTRY lines.
var fusedKernels = map[int]fusedGeometry{
	1024: {m: 1024},
	2048: {m: 2048},
}

// module is the name of the kernel's module (kernels/<module>.cu).
func (f fusedGeometry) module() string { return fmt.Sprintf("fused%d", f.m) }

// entry is the kernel's name.
func (f fusedGeometry) entry() string { return fmt.Sprintf("oct_fused_%d", f.m) }

// threads is the launch block's size: a thread for each 4 values.
func (f fusedGeometry) threads() int { return f.m / 4 }

// grid is the launch grid for records records: one a block.
func (f fusedGeometry) grid(records int) cuda.Dim3 { return cuda.Dim3{X: uint32(records), Y: 1, Z: 1} }

// block is the launch block.
func (f fusedGeometry) block() cuda.Dim3 { return cuda.Dim3{X: uint32(f.threads()), Y: 1, Z: 1} }

// fusedKernel is a fused kernel loaded on a device, with the device
// address of its roots of unity (rootsOfUnity(m)), which the caller uploads
// and sets.
type fusedKernel struct {
	fusedGeometry
	fn *cuda.Function
	tw uintptr
}

// FusedEnv is the environment variable that turns the fused processing
// kernels off ("0": the three kernels of the chain) or on ("1", or unset:
// the default since session 53, when they measured 10% faster a block at
// 256 x 1024 with one slot, docs/bench.md). Read when a processor prepares
// a configuration (Prepare, Change).
const FusedEnv = "VORTEXGO_FUSED_KERNELS"

// fusedEnabled reads FusedEnv; any other value than 0, 1 or none is an
// error naming the variable.
func fusedEnabled() (bool, error) {
	v, _ := dl.Getenv(FusedEnv)
	switch v {
	case "0":
		return false, nil
	case "", "1":
		return true, nil
	}
	return false, fmt.Errorf("%s=%q in the environment, expected 1 (one fused kernel where the length has one, the default) or 0 (the spectrum, FFT and output kernels)", FusedEnv, v)
}

// maxFusedBlockSamples is the largest block (records x output samples)
// the fused kernel processes; larger ones run the three kernels. The
// fused kernel is latency-bound (a record's passes wait on each other
// through shared memory and its barriers), the three kernels bandwidth-
// bound, so the fused one wins where a block is too small to fill the
// device and loses where it is large: on an H200 (session 53,
// BenchmarkCUDAProcessorSmallBlocks and BenchmarkCUDAProcessor) 23% less
// device time a 256 x 1024 block and 20% less at 256 x 2048, level at
// 512 x 2048, 4% more at 8192 x 1024 and 32% more at 8192 x 2048 (its L1
// and shared memory's throughput the bound). Large blocks are bound by
// the bus with either, but the device time is the user's to share.
const maxFusedBlockSamples = 1 << 20

// fusable reports whether cfg's chain can run as one fused kernel of
// length m: with the inverse FFT and without a k-clock (whose phase needs
// a transform of its own before the spectrum), at a length with a kernel,
// in blocks of at most maxFusedBlockSamples.
func fusable(cfg *Config, m int) bool {
	_, ok := fusedKernels[m]
	return ok && cfg.EnableIFFT && cfg.ClockChannel == nil && cfg.AscansPerBlock*m <= maxFusedBlockSamples
}

// loadFused returns the fused kernel for length m on dev, without its
// roots table, or nil when m has none.
func loadFused(dev *cuda.Device, m int) (*fusedKernel, error) {
	f, ok := fusedKernels[m]
	if !ok {
		return nil, nil
	}
	fn, err := moduleFunction(dev, f.module(), f.entry())
	if err != nil {
		return nil, err
	}
	return &fusedKernel{fusedGeometry: f, fn: fn}, nil
}

// exec enqueues steps 1-5 of k's block on cs: the arguments are
// oct_spectrum's and oct_post's (enqueue).
func (f *fusedKernel) exec(st *cudaState, cs *cuda.Stream, k graphKey, ch, channel, signed int32) error {
	flags, kp := st.post.flags(), st.post.kernel()
	if err := cs.Launch(f.fn, f.grid(k.records), f.block(), 0,
		k.in, k.avg, st.before, st.after, st.wBefore, st.wAfter, st.filt, f.tw, k.out, k.outInt8,
		int32(st.cfg.SamplesPerRecord), ch, channel, signed, int32(k.records), flags,
		kp.outMul, kp.outAdd, kp.lvlMul, kp.lvlAdd); err != nil {
		return fmt.Errorf("%s: %w", f.entry(), err)
	}
	return nil
}
