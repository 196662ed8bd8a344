package process

import (
	"math"
	"math/cmplx"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/cpu"
)

func TestFFTMatchesDFT(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{1, 2, 4, 8, 16, 64, 256} {
		x := make([]complex64, n)
		for i := range x {
			x[i] = complex(float32(rng.NormFloat64()), float32(rng.NormFloat64()))
		}
		want := make([]complex128, n)
		for k := range n {
			for j, v := range x {
				want[k] += complex128(v) * cmplx.Exp(complex(0, 2*math.Pi*float64(j*k%n)/float64(n)))
			}
		}
		newFFTPlan(n).inverse(x)
		for k := range n {
			require.InDelta(t, 0, cmplx.Abs(complex128(x[k])-want[k]), 1e-5*float64(n), "n=%d k=%d", n, k)
		}
	}
}

func validConfig() Config {
	c := DefaultConfig(64, 37)
	return c
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		mod  func(*Config)
		want string
	}{
		{"samples", func(c *Config) { c.SamplesPerRecord = 1 }, "Config.SamplesPerRecord=1, expected >= 2"},
		{"ascans", func(c *Config) { c.AscansPerBlock = 0 }, "Config.AscansPerBlock=0, expected >= 1"},
		{"window", func(c *Config) { c.AverageWindow = -1 }, "Config.AverageWindow=-1, expected in [0, 65536]"},
		{"slots", func(c *Config) { c.Slots = 0 }, "Config.Slots=0, expected >= 1"},
		{"levels", func(c *Config) { c.Levels = [2]float32{5, 5} }, "Config.Levels=[5 5], expected finite [lo, hi] with hi > lo"},
		{"levels-nan", func(c *Config) { c.Levels[1] = float32(math.NaN()) }, "expected finite [lo, hi]"},
		{"position", func(c *Config) { c.ResamplingSamples = []float32{0, 63.5} }, "Config.ResamplingSamples[1]=63.5, expected in [0, SamplesPerRecord-1 = 63]"},
		{"position-negative", func(c *Config) { c.ResamplingSamples = []float32{-0.1, 1} }, "ResamplingSamples[0]=-0.1"},
		{"filter-length", func(c *Config) { c.SpectralFilter = make([]complex64, 3) }, "len(Config.SpectralFilter)=3, expected 0 or OutputSamples()=64"},
		{"filter-nan", func(c *Config) {
			c.SpectralFilter = make([]complex64, 64)
			c.SpectralFilter[7] = complex(0, float32(math.Inf(1)))
		}, "Config.SpectralFilter[7]=(0+Infi), expected a finite complex number"},
		{"ifft-pow2", func(c *Config) { c.SamplesPerRecord = 100 }, "Config.OutputSamples()=100 with EnableIFFT, expected a power of two >= 2"},
		{"too-big", func(c *Config) { c.AscansPerBlock = 1 << 30 }, "AscansPerBlock*max(SamplesPerRecord, OutputSamples()) <= 2147483647"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := validConfig()
			tc.mod(&c)
			require.ErrorContains(t, c.Validate(), tc.want)
			_, err := NewCPUProcessor(c)
			require.ErrorContains(t, err, tc.want)
		})
	}
	c := validConfig()
	require.NoError(t, c.Validate())
	c.EnableIFFT = false
	c.SamplesPerRecord = 100
	require.NoError(t, c.Validate(), "any length without the FFT")
	require.Equal(t, 100, c.OutputSamples())
	c.ResamplingSamples = make([]float32, 7)
	require.Equal(t, 7, c.OutputSamples())
}

func TestLevel(t *testing.T) {
	c := validConfig()
	c.Levels = [2]float32{0, 255}
	p := newPostParams(&c)
	tests := []struct {
		v    float32
		want int8
	}{
		{0, -128}, {255, 127}, {-10, -128}, {1e9, 127}, {128, 0},
		{127.5, 0}, // -0.5 rounds to even 0
		{128.5, 0}, // 0.5 rounds to even 0
		{129.5, 2}, // 1.5 rounds to even 2
		{float32(math.NaN()), -128}, {float32(math.Inf(-1)), -128}, {float32(math.Inf(1)), 127},
	}
	for _, tc := range tests {
		require.Equal(t, tc.want, p.level(tc.v), "v=%v", tc.v)
	}
}

func sortedPositions(rng *rand.Rand, m, n int) []float32 {
	p := make([]float32, m)
	for j := range p {
		p[j] = float32(rng.Float64() * float64(n-1))
	}
	slices.Sort(p)
	p[0], p[m-1] = 0, float32(n-1) // both ends, including the clamped last pixel
	return p
}

func randomFilter(rng *rand.Rand, m int) []complex64 {
	h := make([]complex64, m)
	for j := range h {
		h[j] = complex64(cmplx.Rect(0.5+rng.Float64(), 2*math.Pi*rng.Float64()))
	}
	return h
}

func TestCPUProcessorMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const n, R = 64, 37
	tests := []struct {
		name string
		mod  func(*Config)
	}{
		{"passthrough", func(c *Config) { c.EnableIFFT, c.EnableMagnitude, c.EnableLog10 = false, false, false }},
		{"background-w1", func(c *Config) {
			c.AverageWindow = 1
			c.EnableIFFT, c.EnableMagnitude, c.EnableLog10 = false, false, false
		}},
		{"background-w4", func(c *Config) {
			c.AverageWindow = 4
			c.EnableIFFT, c.EnableMagnitude, c.EnableLog10 = false, false, false
		}},
		{"background-w7", func(c *Config) {
			c.AverageWindow = 7
			c.EnableIFFT, c.EnableMagnitude, c.EnableLog10 = false, false, false
		}},
		{"background-whole-block", func(c *Config) { c.AverageWindow = 500; c.EnableLog10 = false }},
		{"resample", func(c *Config) {
			c.ResamplingSamples = sortedPositions(rng, n, n)
			c.EnableIFFT, c.EnableMagnitude, c.EnableLog10 = false, false, false
		}},
		{"resample-shorter", func(c *Config) { c.ResamplingSamples = sortedPositions(rng, 32, n) }},
		{"filter-magnitude", func(c *Config) {
			c.SpectralFilter = randomFilter(rng, n)
			c.EnableIFFT, c.EnableLog10 = false, false
		}},
		{"ifft-real-part", func(c *Config) { c.AverageWindow = 9; c.EnableMagnitude, c.EnableLog10 = false, false }},
		{"ifft-square", func(c *Config) {
			c.AverageWindow = 9
			c.EnableMagnitude, c.EnableSquare, c.EnableLog10 = false, true, false
		}},
		{"ifft-power-db", func(c *Config) { c.AverageWindow = 9; c.EnableSquare = true; c.Levels = [2]float32{0, 120} }},
		{"full-chain-db", func(c *Config) {
			c.AverageWindow = 16
			c.ResamplingSamples = sortedPositions(rng, n, n)
			c.SpectralFilter = randomFilter(rng, n)
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultConfig(n, R)
			c.Levels = [2]float32{0, 60}
			tc.mod(&c)
			p, err := NewCPUProcessor(c)
			require.NoError(t, err)
			require.NoError(t, p.Prepare())
			defer p.Close()
			m := p.OutputSamples()
			h := newHostBuffers(t, n, m, R)
			for i := range h.raw {
				h.raw[i] = uint16(1000 + rng.IntN(60000))
			}
			require.NoError(t, p.Process(1, h.s, h.in.Ptr(), R, h.out.Ptr(), h.out8.Ptr()))

			want := reference(c, h.raw, R)
			scale := 0.0
			for _, v := range want {
				scale = max(scale, math.Abs(v))
			}
			// Relative accuracy of a float32 chain against float64.
			absTol := 2e-5 * scale
			if c.EnableLog10 {
				absTol = 1e-3 // dB
			}
			mism := 0
			for k, w := range want {
				g := float64(h.result[k])
				tol := absTol + 2e-5*math.Abs(w)
				if c.EnableLog10 && w < 20 {
					// A low value in dB carries the absolute error of the
					// spectrum divided by itself; the noise-like random
					// input makes a few bins very small.
					tol = 1
				}
				require.InDelta(t, w, g, tol, "value %d (record %d, sample %d)", k, k/m, k%m)
				d := math.Abs(float64(h.result8[k]) - refLevel(&c, w))
				require.LessOrEqual(t, d, 1.0, "int8 value %d", k)
				if d != 0 {
					mism++
				}
			}
			require.LessOrEqual(t, mism, len(want)/200, "int8 differs from the reference only at rounding boundaries")
		})
	}
}

func TestCPUProcessorNoFFTIsExact(t *testing.T) {
	// Without the FFT the chain is a few float32 operations whose results
	// are exactly representable here: background means of small integer
	// windows of multiples of 4.
	c := DefaultConfig(16, 12)
	c.EnableIFFT, c.EnableMagnitude, c.EnableLog10 = false, false, false
	c.AverageWindow = 4
	p, err := NewCPUProcessor(c)
	require.NoError(t, err)
	require.NoError(t, p.Prepare())
	h := newHostBuffers(t, 16, 16, 12)
	for i := range h.raw {
		h.raw[i] = uint16(4 * (i%16 + 1) * (i/16 + 1))
	}
	require.NoError(t, p.Process(0, h.s, h.in.Ptr(), 12, h.out.Ptr(), 0))
	for r := range 12 {
		s := min(max(r-2, 0), 8)
		for i := range 16 {
			mean := float32(4*(i+1)) * float32(s+1+s+4) / 2
			require.Equal(t, float32(h.raw[r*16+i])-mean, h.result[r*16+i], "record %d sample %d", r, i)
		}
	}
}

func TestCPUProcessorSlotsConcurrentAndCapture(t *testing.T) {
	c := DefaultConfig(128, 200)
	c.AverageWindow, c.Slots = 50, 3
	p, err := NewCPUProcessor(c)
	require.NoError(t, err)
	require.NoError(t, p.Prepare())
	defer p.Close()
	rng := rand.New(rand.NewPCG(5, 6))
	bufs := make([]*hostBuffers, c.Slots)
	for i := range bufs {
		bufs[i] = newHostBuffers(t, 128, 128, 200)
		for k := range bufs[i].raw {
			bufs[i].raw[k] = uint16(rng.IntN(65536))
		}
	}
	// Serial results first, then the same work from three goroutines at
	// once: identical outputs, and the race detector watches the scratch.
	want := make([][]float32, c.Slots)
	for i, h := range bufs {
		require.NoError(t, p.Process(i, h.s, h.in.Ptr(), 200, h.out.Ptr(), h.out8.Ptr()))
		want[i] = slices.Clone(h.result)
		clear(h.result)
	}
	var wg sync.WaitGroup
	errs := make(chan error, len(bufs)*3)
	for i, h := range bufs {
		wg.Go(func() {
			for range 3 {
				errs <- p.Process(i, h.s, h.in.Ptr(), 200, h.out.Ptr(), h.out8.Ptr())
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	for i, h := range bufs {
		require.Equal(t, want[i], h.result, "slot %d", i)
	}

	// Captured into a graph and replayed, Process does the same work.
	h := bufs[0]
	require.NoError(t, h.s.BeginCapture())
	require.NoError(t, p.Process(0, h.s, h.in.Ptr(), 200, h.out.Ptr(), 0))
	clear(h.result)
	g, err := h.s.EndCapture()
	require.NoError(t, err)
	require.Equal(t, make([]float32, len(h.result)), h.result, "nothing ran during capture")
	require.NoError(t, g.Launch(h.s))
	require.Equal(t, want[0], h.result)
	require.NoError(t, g.Close())
}

// notHost is a stream that is not a HostStream.
type notHost struct{ backend.Stream }

func TestCPUProcessorErrors(t *testing.T) {
	c := DefaultConfig(16, 8)
	p, err := NewCPUProcessor(c)
	require.NoError(t, err)
	h := newHostBuffers(t, 16, 16, 8)
	require.ErrorContains(t, p.Process(0, h.s, h.in.Ptr(), 8, h.out.Ptr(), 0), "before Prepare")
	require.NoError(t, p.Prepare())
	tests := []struct {
		name string
		call func() error
		want string
	}{
		{"slot", func() error { return p.Process(2, h.s, h.in.Ptr(), 8, h.out.Ptr(), 0) }, "slot=2, expected in [0, Slots=2)"},
		{"stream", func() error { return p.Process(0, nil, h.in.Ptr(), 8, h.out.Ptr(), 0) }, "s=nil, expected a stream"},
		{"records", func() error { return p.Process(0, h.s, h.in.Ptr(), 9, h.out.Ptr(), 0) }, "records=9, expected in [0, AscansPerBlock=8]"},
		{"in", func() error { return p.Process(0, h.s, 0, 8, h.out.Ptr(), 0) }, "in=0 with records=8"},
		{"out", func() error { return p.Process(0, h.s, h.in.Ptr(), 8, 0, 0) }, "out=0 with records=8"},
		{"not-host", func() error { return p.Process(0, notHost{h.s}, h.in.Ptr(), 8, h.out.Ptr(), 0) }, "expected a CPU stream (backend.HostStream)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { require.ErrorContains(t, tc.call(), tc.want) })
	}
	require.NoError(t, p.Process(0, h.s, 0, 0, 0, 0), "zero records is a no-op")
	require.NoError(t, p.Close())
	require.ErrorIs(t, p.Close(), backend.ErrClosed)
	require.ErrorIs(t, p.Process(0, h.s, h.in.Ptr(), 8, h.out.Ptr(), 0), backend.ErrClosed)
	_ = cpu.Default()
}

func TestDecibels(t *testing.T) {
	worst := 0.0
	for e := -126.0; e < 128; e += 0.013 {
		p := float32(math.Pow(2, e))
		want := 10 * math.Log10(float64(p))
		worst = max(worst, math.Abs(float64(decibels(p))-want))
	}
	require.Less(t, worst, 1e-4)
	floor := float32(10 * math.Log10(minNormal))
	require.Equal(t, floor, decibels(0))
	require.Equal(t, floor, decibels(-1))
	require.True(t, math.IsInf(float64(decibels(float32(math.Inf(1)))), 1))
}

func TestNewAndCloseWhileClaimed(t *testing.T) {
	tests := []struct {
		name string
		kind string
		want error
	}{
		{"cpu", "cpu", nil},
		{"cuda on the cpu device", "cuda", backend.ErrInvalid},
		{"unknown kind", "tpu", backend.ErrInvalid},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, name, err := New(cpu.Default(), tc.kind, DefaultConfig(64, 8))
			if tc.want != nil {
				require.ErrorIs(t, err, tc.want)
				return
			}
			require.NoError(t, err)
			require.Equal(t, "CPUProcessor", name)
			cp := p.(*CPUProcessor)
			require.NoError(t, cp.Prepare())
			claims := cp.Claims()
			require.NoError(t, claims[0].Take())
			err = cp.Close()
			require.ErrorIs(t, err, backend.ErrInUse)
			require.ErrorContains(t, err, "CPUProcessor")
			claims[0].Drop()
			require.NoError(t, cp.Close())
			require.ErrorIs(t, cp.Close(), backend.ErrClosed, "a second Close reports the closed processor")
		})
	}
}
