//go:build gpu

package process

import (
	"math"
	"math/cmplx"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/vortexgo/vortexgo/gosrc/cuda"
)

// gpuClockBlock processes one block of records (raw: records x N x
// channels) on slot 0 and returns the float output and the slot's clock
// phase and maximum phase per record, as the kernels left them.
func gpuClockBlock(t *testing.T, dev *cuda.Device, c Config, raw []uint16, records int) (out, phase, pmax []float32) {
	t.Helper()
	p, err := NewCUDAProcessor(dev, c)
	require.NoError(t, err)
	require.NoError(t, p.Prepare())
	defer func() { require.NoError(t, p.Close()) }()
	s, err := dev.CreateStream(0)
	require.NoError(t, err)
	defer s.Close()
	n, nraw := c.SamplesPerRecord, c.SamplesPerRecord*c.Channels()
	hIn, dIn := gpuBuffer(t, dev, records*nraw*2, true), gpuBuffer(t, dev, records*nraw*2, false)
	hOut, dOut := gpuBuffer(t, dev, records*n*4, true), gpuBuffer(t, dev, records*n*4, false)
	hPhase, hMax := gpuBuffer(t, dev, records*n*4, true), gpuBuffer(t, dev, records*4, true)
	copy(hostSlice[uint16](hIn.Ptr(), records*nraw), raw[:records*nraw])
	require.NoError(t, s.CopyHtoD(dIn.Ptr(), hIn.Ptr(), records*nraw*2))
	require.NoError(t, p.Process(0, s, dIn.Ptr(), records, dOut.Ptr(), 0))
	sl := p.st.slots[0]
	require.NoError(t, s.CopyDtoH(hOut.Ptr(), dOut.Ptr(), records*n*4))
	require.NoError(t, s.CopyDtoH(hPhase.Ptr(), sl.phase, records*n*4))
	require.NoError(t, s.CopyDtoH(hMax.Ptr(), sl.phaseMax, records*4))
	require.NoError(t, s.Synchronize())
	return slices.Clone(hostSlice[float32](hOut.Ptr(), records*n)),
		slices.Clone(hostSlice[float32](hPhase.Ptr(), records*n)),
		slices.Clone(hostSlice[float32](hMax.Ptr(), records))
}

// TestCUDAClockPhaseAndResampling checks the clock kernels in two parts:
// the phase (oct_clock_load, the FFTs, oct_clock_window, oct_clock_phase)
// against the CPU's float64 phase within float32 summation error, and
// oct_spectrum's resampling from that phase bit for bit against the same
// float32 operations done here (without the FFT the output is the
// resampled spectrum).
func TestCUDAClockPhaseAndResampling(t *testing.T) {
	dev := gpuDevice(t)
	for _, tc := range []struct {
		name       string
		n, R       int
		signed     bool
		step, bend float64
	}{
		{"n250", 250, 37, false, 1.2, 0.3},
		{"n1376-signed", 1376, 20, true, 1.6, -0.25},
		{"n77-odd", 77, 9, false, 0.9, 0.2},
		{"n2048-fast", 2048, 5, false, 2.4, 0.1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := tc.n
			c := smallConfig(n, tc.R)
			c.ChannelsPerSample, c.Channel, c.InterpretAsSigned = 2, 0, tc.signed
			k := 1
			c.ClockChannel = &k
			c.EnableIFFT, c.EnableMagnitude, c.EnableLog10, c.EnableSquare = false, false, false, false
			raw := clockRaw(rand.New(rand.NewPCG(uint64(n), 21)), tc.R, n, 2, 0, 1, tc.signed, tc.step, tc.bend, 9)
			records := tc.R - 2 // a short block: the plan's other rows are not this block's
			out, phase, pmax := gpuClockBlock(t, dev, c, raw, records)
			cs := newClockScratch(n)
			val := func(r, i, ch int) int32 {
				v := raw[(r*n+i)*2+ch]
				if tc.signed {
					return int32(int16(v))
				}
				return int32(v)
			}
			for r := range records {
				samples := make([]int32, n)
				for i := range samples {
					samples[i] = val(r, i, 1)
				}
				cs.tables(samples)
				top := slices.Max(cs.phase)
				// float32 sums of float32 angles (an emulation in NumPy stays
				// within a tenth of this at every size here).
				tol := 2e-6*top + 5e-4
				require.InDelta(t, top, float64(pmax[r]), tol, "record %d: maximum phase", r)
				for i := range n {
					require.InDelta(t, cs.phase[i], float64(phase[r*n+i]), tol, "record %d sample %d: phase", r, i)
				}
				p := phase[r*n : (r+1)*n]
				for j := range n {
					q := float32(pmax[r]*float32(j)) / float32(n)
					b := min(lowerBound(p, q), n-1)
					a := min(b+1, n-1)
					ratio := q - p[b]
					want := float32(float32(1-ratio)*float32(val(r, b, 0))) + float32(ratio*float32(val(r, a, 0)))
					require.Equal(t, want, out[r*n+j], "record %d sample %d", r, j)
				}
			}
		})
	}
}

// TestCUDAClockMatchesCPU runs blocks through both processors with a
// clock. The CPU's phase is float64 and the GPU's float32, and vortex's
// weights jump where the query crosses a phase sample, so an output
// sample may take its neighbour's interval on one of them, a change in
// proportion to the fringes (not the offset): the A-scans agree within 2%
// of each record's strongest depth past the offset's bins (in linear
// amplitude), and that depth is the same.
func TestCUDAClockMatchesCPU(t *testing.T) {
	dev := gpuDevice(t)
	const n, R = 1376, 24
	for _, tc := range []struct {
		name string
		mod  func(*Config)
	}{
		{"db", func(*Config) {}},
		{"magnitude", func(c *Config) { c.EnableLog10, c.EnableSquare = false, false }},
		{"average-two-slots", func(c *Config) { c.AverageWindow = 5; c.EnableLog10 = false }},
		{"filter-levels-signed", func(c *Config) {
			// A window and a smooth dispersion phasor: a peak still stands
			// out (a random filter would scatter it).
			ph := make([]complex64, n)
			for j := range ph {
				x := float64(j)/float64(n) - 0.5
				ph[j] = complex64(cmplx.Rect(1, 3*x*x))
			}
			var err error
			c.SpectralFilter, err = SpectralFilter(HannWindow(n), ph)
			require.NoError(t, err)
			c.Levels = [2]float32{20, 90}
			c.InterpretAsSigned = true
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := smallConfig(n, R)
			c.ChannelsPerSample, c.Channel = 3, 2
			k := 0
			c.ClockChannel = &k
			tc.mod(&c)
			blocks := []int{R, R - 5, R}
			total := 0
			for _, b := range blocks {
				total += b
			}
			raw := clockRaw(rand.New(rand.NewPCG(22, 23)), total, n, 3, 2, 0, c.InterpretAsSigned, 1.3, 0.3, 60)
			want, _ := cpuBlocks(t, c, raw, blocks)
			got, _ := gpuBlocks(t, dev, c, raw, blocks)
			post := newPostParams(&c)
			linear := func(v float32) float64 {
				switch {
				case c.EnableLog10:
					return math.Pow(10, float64(v)/post.db)
				case c.EnableSquare:
					return math.Sqrt(math.Abs(float64(v)))
				}
				return math.Abs(float64(v))
			}
			worst := 0.0
			for r := range total {
				w, g := want[r*n:(r+1)*n], got[r*n:(r+1)*n]
				const skip = 3 // the offset's bins
				peak, at, gAt := 0.0, skip, skip
				for i := skip; i < n/2; i++ {
					if x := linear(w[i]); x > peak {
						peak, at = x, i
					}
					if linear(g[i]) > linear(g[gAt]) {
						gAt = i
					}
				}
				require.Equal(t, at, gAt, "record %d: the peak's depth", r)
				for i := range n {
					d := math.Abs(linear(w[i]) - linear(g[i]))
					require.LessOrEqual(t, d, 0.02*peak+1e-5*linear(w[i]), "record %d sample %d: cpu %v, cuda %v", r, i, w[i], g[i])
					worst = max(worst, d/peak)
				}
			}
			t.Logf("worst |cuda-cpu| %.3g of the record's peak", worst)
		})
	}
}

// BenchmarkCUDAProcessorClock measures the chain with a k-clock channel
// (two channels, 1376 samples, 8192-record blocks on two slots and two
// streams), for comparison with BenchmarkCUDAProcessor: the clock adds a
// load, two FFTs, a window and a phase scan per block.
//
//	gpu-build/bin/process.test -test.run '^$' -test.bench CUDAProcessorClock
func BenchmarkCUDAProcessorClock(b *testing.B) {
	dev := gpuDevice(b)
	const records, n = 8192, 1376
	c := smallConfig(n, records)
	c.ChannelsPerSample, c.Channel = 2, 0
	k := 1
	c.ClockChannel = &k
	c.Levels = [2]float32{0, 80}
	p, err := NewCUDAProcessor(dev, c)
	require.NoError(b, err)
	require.NoError(b, p.Prepare())
	defer p.Close()
	raw := clockRaw(rand.New(rand.NewPCG(1, 2)), records, n, 2, 0, 1, false, 1.2, 0.3, 60)
	hIn := mallocHostB(b, dev, len(raw)*2)
	copy(hostSlice[uint16](hIn.Ptr(), len(raw)), raw)
	in := mallocB(b, dev, len(raw)*2)
	out := mallocB(b, dev, 2*records*n*4)
	out8 := mallocB(b, dev, 2*records*n)
	var streams [2]*cuda.Stream
	for i := range streams {
		streams[i], err = dev.CreateStream(0)
		require.NoError(b, err)
		defer streams[i].Close()
	}
	require.NoError(b, streams[0].CopyHtoD(in.Ptr(), hIn.Ptr(), len(raw)*2))
	require.NoError(b, streams[0].Synchronize())
	run := func(blocks int) {
		for k := range blocks {
			i := k & 1
			if err := p.Process(i, streams[i], in.Ptr(), records,
				out.Ptr()+uintptr(i*records*n*4), out8.Ptr()+uintptr(i*records*n)); err != nil {
				b.Fatal(err)
			}
		}
		if err := dev.Synchronize(); err != nil {
			b.Fatal(err)
		}
	}
	run(4) // plans, modules, caches
	b.ResetTimer()
	t := time.Now()
	blocks := 0
	for b.Loop() {
		run(8)
		blocks += 8
	}
	b.ReportMetric(float64(blocks*records)/time.Since(t).Seconds(), "ascans/s")
}

func mallocHostB(b *testing.B, dev *cuda.Device, n int) *cuda.Buffer {
	buf, err := dev.MallocHost(n)
	require.NoError(b, err)
	b.Cleanup(func() { buf.Free() })
	return buf
}
