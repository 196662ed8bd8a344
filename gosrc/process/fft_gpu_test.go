//go:build gpu

package process

import (
	"math"
	"math/cmplx"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/dsp/fourier"
)

// TestOnePassFFTMatchesDFT runs each one-pass kernel on random complex64
// records and compares it with gonum's float64 inverse FFT: within 2e-6 of
// each record's largest value (float32 arithmetic; cuFFT's own error on the
// same inputs is of the same order). Record counts that do not fill the
// last thread block check the kernel's bounds, and guard records after the
// block check that it writes nothing past them.
func TestOnePassFFTMatchesDFT(t *testing.T) {
	dev := gpuDevice(t)
	s, err := dev.CreateStream(0)
	require.NoError(t, err)
	defer s.Close()
	rng := rand.New(rand.NewPCG(3, 4))
	for n := range onePassFFTs {
		k, err := loadOnePassFFT(dev, n)
		require.NoError(t, err)
		require.NotNil(t, k)
		ref := fourier.NewCmplxFFT(n)
		tw := k.twiddles()
		dTw := gpuBuffer(t, dev, len(tw)*4, false)
		hTw := gpuBuffer(t, dev, len(tw)*4, true)
		copy(hostSlice[float32](hTw.Ptr(), len(tw)), tw)
		require.NoError(t, s.CopyHtoD(dTw.Ptr(), hTw.Ptr(), len(tw)*4))
		k.tw = dTw.Ptr()
		for _, records := range []int{1, 2, 3, 5, 64, 1001} {
			t.Run(strconv.Itoa(n)+"/records="+strconv.Itoa(records), func(t *testing.T) {
				const guard = 8
				total := (records + guard) * n
				h := gpuBuffer(t, dev, total*8, true)
				d := gpuBuffer(t, dev, total*8, false)
				x := hostSlice[complex64](h.Ptr(), total)
				for i := range x {
					x[i] = complex(float32(rng.NormFloat64()), float32(rng.NormFloat64()))
				}
				in := append([]complex64(nil), x...)
				require.NoError(t, s.CopyHtoD(d.Ptr(), h.Ptr(), total*8))
				require.NoError(t, k.exec(s, d.Ptr(), records))
				require.NoError(t, s.CopyDtoH(h.Ptr(), d.Ptr(), total*8))
				require.NoError(t, s.Synchronize())
				seq := make([]complex128, n)
				for r := range records {
					for i := range seq {
						seq[i] = complex128(in[r*n+i])
					}
					want := ref.Sequence(nil, seq)
					peak := 0.0
					for _, v := range want {
						peak = max(peak, cmplx.Abs(v))
					}
					worst := 0.0
					for k, v := range want {
						worst = max(worst, cmplx.Abs(complex128(x[r*n+k])-v))
					}
					require.LessOrEqual(t, worst/peak, 2e-6, "record %d: worst error %.3g of the peak %.3g", r, worst, peak)
				}
				require.Equal(t, in[records*n:], x[records*n:], "the records after the block are untouched")
			})
		}
	}
}

// TestOnePassFFTProcessorMatchesCuFFT runs the whole chain at each
// one-pass length with the kernel and with cuFFT (cuFFTOnly), the blocks
// on alternating slots and streams with short ones among them, and checks
// both against the CPU processor as TestCUDAMatchesCPU does.
func TestOnePassFFTProcessorMatchesCuFFT(t *testing.T) {
	dev := gpuDevice(t)
	rng := rand.New(rand.NewPCG(5, 6))
	for n := range onePassFFTs {
		t.Run(strconv.Itoa(n), func(t *testing.T) {
			blocks := []int{40, 7, 40, 1, 33}
			c := smallConfig(n, 40)
			c.AverageWindow = 3
			c.ResamplingSamples = sortedPositions(rng, n, n)
			c.SpectralFilter = randomFilter(rng, n)
			c.Levels = [2]float32{0, 80}
			raw := randomRaw(rng, 121*n, false)
			want, want8 := cpuBlocks(t, c, raw, blocks)
			got, got8 := gpuBlocksWith(t, dev, c, raw, blocks, false)
			cu, cu8 := gpuBlocksWith(t, dev, c, raw, blocks, true)
			compareOutputs(t, &c, want, got, want8, got8)
			compareOutputs(t, &c, want, cu, want8, cu8)
			diff := 0.0
			for i := range got {
				if !math.IsNaN(float64(got[i])) {
					diff = max(diff, math.Abs(float64(got[i]-cu[i])))
				}
			}
			t.Logf("n=%d: largest |one-pass - cuFFT| %.3g dB", n, diff)
		})
	}
}

// TestOnePassFFTNeedsNoPlan: a processor whose inverse FFT has a one-pass
// kernel holds no cuFFT plan (its workspace is device memory for nothing),
// unless the clock's transforms need one; with cuFFTOnly it plans as before.
func TestOnePassFFTNeedsNoPlan(t *testing.T) {
	dev := gpuDevice(t)
	for _, tc := range []struct {
		name      string
		cuFFTOnly bool
		clock     bool
		plan      bool
	}{
		{"kernel", false, false, false},
		{"cufft-only", true, false, true},
		{"kernel+clock", false, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := smallConfig(1376, 16)
			if tc.clock {
				ch := 1
				c.ChannelsPerSample, c.ClockChannel = 2, &ch
			}
			p, err := NewCUDAProcessor(dev, c)
			require.NoError(t, err)
			p.cuFFTOnly = tc.cuFFTOnly
			require.NoError(t, p.Prepare())
			defer func() { require.NoError(t, p.Close()) }()
			st := p.state()
			require.Equal(t, !tc.cuFFTOnly, st.fft != nil)
			for _, sl := range st.slots {
				require.Equal(t, tc.plan, sl.plan != nil)
			}
		})
	}
}
