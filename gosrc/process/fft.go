package process

import (
	"fmt"
	"math"
	"math/cmplx"

	"github.com/vortexgo/vortexgo/gosrc/cuda"
	"github.com/vortexgo/vortexgo/kernels"
)

// onePassFFT is the geometry of one entry point of kernels/fft.cu: an
// unnormalised inverse FFT of P x R points (P odd, R a power of two) that
// reads and writes each record once, where cuFFT makes several passes.
type onePassFFT struct {
	p, r    int // the factors of the length
	records int // records per thread block (S in fft.cu)
	threads int // threads per block (T in fft.cu)
}

// onePassFFTs holds the lengths with a one-pass kernel, keyed by length;
// keep it in step with FFT_ENTRY in kernels/fft.cu. 1376 = 2^5 x 43 is an
// Axsun 100 kHz source's record, vortex's default source; cuFFT
// took 111 / 218 / 365 us per 8192 records at 688 / 1376 / 2752 points on
// an H100 and the kernels take 51 / 87 / 199 (bench/probe_fft.py). Lengths
// cuFFT transforms in one pass (powers of two and small primes) stay with
// cuFFT.
var onePassFFTs = map[int]onePassFFT{
	688:  {p: 43, r: 16, records: 4, threads: 64},
	1376: {p: 43, r: 32, records: 2, threads: 64},
	2752: {p: 43, r: 64, records: 2, threads: 128},
}

// entry is the kernel's name in kernels/fft.cu.
func (f onePassFFT) entry() string { return fmt.Sprintf("fft_inverse_%dx%d", f.p, f.r) }

// n is the transform's length.
func (f onePassFFT) n() int { return f.p * f.r }

// grid is the launch grid for records records.
func (f onePassFFT) grid(records int) cuda.Dim3 {
	return cuda.Dim3{X: uint32(ceilDiv(records, f.records)), Y: 1, Z: 1}
}

// block is the launch block.
func (f onePassFFT) block() cuda.Dim3 { return cuda.Dim3{X: uint32(f.threads), Y: 1, Z: 1} }

// twiddles returns the kernel's table of the n-th roots of unity
// (rootsOfUnity).
func (f onePassFFT) twiddles() []float32 { return rootsOfUnity(f.n()) }

// rootsOfUnity returns exp(+2 pi i j / n) for j in [0, n), computed in
// float64 and rounded once to complex64 (interleaved float32 pairs, as the
// one-pass and fused kernels read float2).
func rootsOfUnity(n int) []float32 {
	out := make([]float32, 2*n)
	for j := range n {
		w := cmplx.Rect(1, 2*math.Pi*float64(j)/float64(n))
		out[2*j], out[2*j+1] = float32(real(w)), float32(imag(w))
	}
	return out
}

// fftModule is the name the one-pass kernels' module is cached under on a
// device. It is loaded only by a processor whose length has a kernel: the
// driver JIT-compiles it (about 2 s on an H100 with an empty compute
// cache) the first time.
const fftModule = "fft"

// onePassKernel is a one-pass kernel loaded on a device, with the device
// address of its twiddle table (onePassFFT.twiddles), which the caller
// uploads and sets.
type onePassKernel struct {
	onePassFFT
	fn *cuda.Function
	tw uintptr
}

// exec enqueues the in-place inverse FFT of records records of complex64
// at data on s.
func (k *onePassKernel) exec(s *cuda.Stream, data uintptr, records int) error {
	if err := s.Launch(k.fn, k.grid(records), k.block(), 0, data, k.tw, int32(records)); err != nil {
		return fmt.Errorf("%s: %w", k.entry(), err)
	}
	return nil
}

// loadOnePassFFT returns the kernel for length m on dev, without its
// twiddle table, or nil when m has none (cuFFT transforms it).
func loadOnePassFFT(dev *cuda.Device, m int) (*onePassKernel, error) {
	f, ok := onePassFFTs[m]
	if !ok {
		return nil, nil
	}
	fn, err := moduleFunction(dev, fftModule, f.entry())
	if err != nil {
		return nil, err
	}
	return &onePassKernel{onePassFFT: f, fn: fn}, nil
}

// moduleFunction returns entry of the embedded PTX module (kernels/<module>.cu)
// on dev, loading the module once per device (LoadNamedModule caches it).
func moduleFunction(dev *cuda.Device, module, entry string) (*cuda.Function, error) {
	ptx, err := kernels.PTX(module)
	if err != nil {
		return nil, err
	}
	mod, err := dev.LoadNamedModule(module, ptx)
	if err != nil {
		return nil, err
	}
	return mod.Function(entry)
}
