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

func smallConfig(n, ascans int) Config {
	c := DefaultConfig()
	c.SamplesPerRecord, c.AscansPerBlock = n, ascans
	return c
}

func TestDefaultConfigIsVortexs(t *testing.T) {
	c := DefaultConfig()
	require.Equal(t, Config{
		SamplesPerRecord: 1000, AscansPerBlock: 1000, ChannelsPerSample: 1,
		EnableIFFT: true, EnableMagnitude: true, EnableSquare: true, EnableLog10: true, Slots: 2,
	}, c)
	require.False(t, c.HasLevels(), "levels unset by default")
	require.NoError(t, c.Validate())
	c.ChannelsPerSample = 0
	require.Equal(t, 1, c.Channels(), "0 channels reads as 1 (callers that predate the field)")
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		mod  func(*Config)
		want string
	}{
		{"samples", func(c *Config) { c.SamplesPerRecord = 0 }, "Config.SamplesPerRecord=0, expected >= 1"},
		{"ascans", func(c *Config) { c.AscansPerBlock = 0 }, "Config.AscansPerBlock=0, expected >= 1"},
		{"channels", func(c *Config) { c.ChannelsPerSample = -1 }, "Config.ChannelsPerSample=-1"},
		{"channel", func(c *Config) { c.ChannelsPerSample, c.Channel = 2, 2 }, "Config.Channel=2, expected in [0, ChannelsPerSample=2)"},
		{"window", func(c *Config) { c.AverageWindow = -1 }, "Config.AverageWindow=-1, expected in [0, 1048576]"},
		{"slots", func(c *Config) { c.Slots = 0 }, "Config.Slots=0, expected >= 1"},
		{"levels-equal", func(c *Config) { c.Levels = [2]float32{5, 5} }, "Config.Levels=[5 5], expected finite [lo, hi] with lo != hi, or [0 0] for unset"},
		{"levels-nan", func(c *Config) { c.Levels[1] = float32(math.NaN()) }, "expected finite [lo, hi]"},
		{"one-position", func(c *Config) { c.ResamplingSamples = []float32{3} }, "len(Config.ResamplingSamples)=1"},
		{"position", func(c *Config) { c.ResamplingSamples = []float32{0, 63.5} }, "Config.ResamplingSamples[1]=63.5, expected in [0, SamplesPerRecord-1 = 63]"},
		{"position-negative", func(c *Config) { c.ResamplingSamples = []float32{-0.1, 1} }, "ResamplingSamples[0]=-0.1"},
		{"filter-length", func(c *Config) { c.SpectralFilter = make([]complex64, 3) }, "len(Config.SpectralFilter)=3, expected 0 or OutputSamples()=64"},
		{"filter-nan", func(c *Config) {
			c.SpectralFilter = make([]complex64, 64)
			c.SpectralFilter[7] = complex(0, float32(math.Inf(1)))
		}, "Config.SpectralFilter[7]=(0+Infi), expected a finite complex number"},
		{"too-big", func(c *Config) { c.AscansPerBlock = 1 << 30 }, "AscansPerBlock*max(SamplesPerRecord*ChannelsPerSample, OutputSamples()) <= 2147483647"},
		{"history-too-big", func(c *Config) { c.SamplesPerRecord, c.AverageWindow = 1<<12, 1<<20 }, "AverageWindow*SamplesPerRecord <= 2147483647"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := smallConfig(64, 37)
			tc.mod(&c)
			require.ErrorContains(t, c.Validate(), tc.want)
			_, err := NewCPUProcessor(c)
			require.ErrorContains(t, err, tc.want)
		})
	}
	for _, n := range []int{1376, 2500, 2048, 1000, 7, 1} {
		c := smallConfig(n, 4)
		require.NoError(t, c.Validate(), "any FFT length: %d", n)
	}
	c := smallConfig(64, 4)
	c.Levels = [2]float32{60, 0}
	require.NoError(t, c.Validate(), "inverted levels, as vortex")
	c.ResamplingSamples = make([]float32, 7)
	require.Equal(t, 7, c.OutputSamples())
	c.ResamplingSamples = nil
	c.ChannelsPerSample = 3
	p, err := NewCPUProcessor(c)
	require.NoError(t, err)
	require.Equal(t, 64*3, p.InputValues(), "raw records hold every channel")
	require.Equal(t, 64, p.OutputSamples())
}

func TestLevelAndRoundClip(t *testing.T) {
	c := smallConfig(64, 4)
	c.Levels = [2]float32{0, 255}
	p := newPostParams(&c)
	tests := []struct {
		v    float64
		want int8
	}{
		{0, -128}, {255, 127}, {-10, -128}, {1e9, 127}, {128, 0},
		{127.5, -1}, // -0.5 rounds away from zero
		{128.5, 1},  // 0.5 rounds away from zero
		{129.5, 2},  // 1.5 rounds away from zero
		{126.5, -2}, // -1.5 rounds away from zero
		{math.NaN(), 0}, {math.Inf(-1), -128}, {math.Inf(1), 127},
	}
	for _, tc := range tests {
		require.Equal(t, tc.want, p.level(tc.v), "v=%v", tc.v)
	}
	c.Levels = [2]float32{}
	p = newPostParams(&c)
	require.Equal(t, int8(42), p.level(41.5), "no levels: a direct cast, rounded")
	require.Equal(t, int8(-43), p.level(-42.5))
	require.Equal(t, int8(127), p.level(300))
	require.Equal(t, int8(0), p.level(math.NaN()))
}

func TestPostValueIsVortexs(t *testing.T) {
	y := complex(3.0, -4.0) // |y| = 5
	tests := []struct {
		name                    string
		ifft, log, square, magn bool
		want                    float64
	}{
		{"20log10|y/M|", true, true, true, true, 20 * math.Log10(5.0/8)},
		{"10log10|y/M|", true, true, false, true, 10 * math.Log10(5.0/8)},
		{"10log10 Re(y)/M", true, true, false, false, 10 * math.Log10(3.0/8)},
		{"(|y|/M)^2", true, false, true, false, 25.0 / 64},
		{"|y|/M", true, false, false, true, 5.0 / 8},
		{"Re(y)/M", true, false, false, false, 3.0 / 8},
		{"no FFT: |y|", false, false, false, true, 5},
		{"no FFT: 20log10|y|", false, true, true, true, 20 * math.Log10(5)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := smallConfig(8, 1)
			c.EnableIFFT, c.EnableLog10, c.EnableSquare, c.EnableMagnitude = tc.ifft, tc.log, tc.square, tc.magn
			p := newPostParams(&c)
			require.InDelta(t, tc.want, p.value(real(y), imag(y)), 1e-12)
			k := p.kernel()
			// The kernel's constants give the same value in float32.
			a := 5.0
			if !tc.magn && !(tc.square && !tc.log) {
				a = 3
			}
			f := a
			switch {
			case tc.log:
				f = math.Log10(a)
			case tc.square:
				f = a * a
			}
			require.InDelta(t, tc.want, float64(k.outMul)*f+float64(k.outAdd), 1e-6)
		})
	}
	p := newPostParams(&Config{EnableLog10: true, EnableMagnitude: true})
	require.True(t, math.IsInf(p.value(0, 0), -1), "log10 of zero is -Inf, as vortex")
	p = newPostParams(&Config{EnableLog10: true})
	require.True(t, math.IsNaN(p.value(-1, 0)), "log10 of a negative real part is NaN, as vortex")
}

func randomRaw(rng *rand.Rand, k int, signed bool) []uint16 {
	raw := make([]uint16, k)
	for i := range raw {
		v := 2000 + rng.IntN(3000)
		if signed {
			v = -v
		}
		raw[i] = uint16(v)
	}
	return raw
}

func sortedPositions(rng *rand.Rand, m, n int) []float32 {
	p := make([]float32, m)
	for j := range p {
		p[j] = float32(rng.Float64() * float64(n-1))
	}
	slices.Sort(p)
	p[0], p[m-1] = 0, float32(n-1) // both ends, including the clamped last sample
	return p
}

func randomFilter(rng *rand.Rand, m int) []complex64 {
	h := make([]complex64, m)
	for j := range h {
		h[j] = complex64(cmplx.Rect(0.5+rng.Float64(), 2*math.Pi*rng.Float64()))
	}
	return h
}

// referenceCases are option combinations beyond the goldens' (signed
// input, odd lengths, windows longer than a block), compared with the
// float64 reference.
func referenceCases(rng *rand.Rand) []struct {
	name   string
	blocks []int
	mod    func(*Config)
} {
	return []struct {
		name   string
		blocks []int
		mod    func(*Config)
	}{
		{"passthrough-real", []int{5}, func(c *Config) {
			c.EnableIFFT, c.EnableMagnitude, c.EnableLog10, c.EnableSquare = false, false, false, false
		}},
		{"average-across-blocks", []int{5, 3, 5, 5}, func(c *Config) {
			c.AverageWindow = 7
			c.EnableIFFT, c.EnableMagnitude, c.EnableLog10, c.EnableSquare = false, false, false, false
		}},
		{"signed-average", []int{4, 4}, func(c *Config) {
			c.InterpretAsSigned, c.AverageWindow = true, 3
			c.EnableLog10, c.EnableSquare = false, false
		}},
		{"signed-channels", []int{3, 3}, func(c *Config) {
			c.InterpretAsSigned, c.ChannelsPerSample, c.Channel = true, 3, 2
		}},
		{"odd-length-resample", []int{4, 4}, func(c *Config) {
			c.ResamplingSamples = sortedPositions(rng, 45, c.SamplesPerRecord)
			c.AverageWindow = 2
		}},
		{"filter-square", []int{4}, func(c *Config) {
			c.SpectralFilter = randomFilter(rng, c.SamplesPerRecord)
			c.EnableLog10, c.EnableMagnitude = false, false
			c.Levels = [2]float32{0, 50}
		}},
		{"full-chain-levels", []int{6, 6, 6}, func(c *Config) {
			c.AverageWindow = 10
			c.ResamplingSamples = sortedPositions(rng, c.SamplesPerRecord, c.SamplesPerRecord)
			c.SpectralFilter = randomFilter(rng, c.SamplesPerRecord)
			c.Levels = [2]float32{20, 90}
		}},
	}
}

func TestCPUProcessorMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const n = 77
	for _, tc := range referenceCases(rng) {
		t.Run(tc.name, func(t *testing.T) {
			c := smallConfig(n, slices.Max(tc.blocks))
			tc.mod(&c)
			total := 0
			for _, b := range tc.blocks {
				total += b
			}
			raw := randomRaw(rng, total*n*c.Channels(), c.InterpretAsSigned)
			out, out8 := cpuBlocks(t, c, raw, tc.blocks)
			want := reference(c, raw, tc.blocks)
			scale := 0.0
			for _, v := range want {
				scale = max(scale, math.Abs(v))
			}
			for k, w := range want {
				g := float64(out[k])
				// float32 storage of a float64 chain: 1e-6 relative, plus
				// the float32 spectra's rounding relative to the largest
				// value; in dB an absolute 1e-4 where the value is not tiny.
				tol := 1e-6*math.Abs(w) + 1e-6*scale
				if c.EnableLog10 {
					tol = 1e-4
					if w < scale-60 {
						tol = 0.05
					}
				}
				require.InDelta(t, w, g, tol, "value %d (record %d, sample %d)", k, k/c.OutputSamples(), k%c.OutputSamples())
				d := math.Abs(float64(out8[k]) - refLevel(&c, w))
				require.LessOrEqual(t, d, 1.0, "int8 value %d", k)
			}
		})
	}
}

func TestCPUProcessorNoFFTIsExact(t *testing.T) {
	// Without the FFT the chain is a few float32 operations whose results
	// are exactly representable here: the mean of the last 4 records, which
	// reaches into the previous block.
	c := smallConfig(16, 3)
	c.EnableIFFT, c.EnableMagnitude, c.EnableLog10, c.EnableSquare = false, false, false, false
	c.AverageWindow = 4
	raw := make([]uint16, 9*16)
	for i := range raw {
		raw[i] = uint16(4 * (i%16 + 1) * (i/16 + 1))
	}
	out, _ := cpuBlocks(t, c, raw, []int{3, 3, 3})
	for r := range 9 {
		last := r/3*3 + 2 // the block's last record
		lo := max(0, last-3)
		for i := range 16 {
			mean := float32(4*(i+1)) * float32((lo+1+last+1)*(last-lo+1)/2) / float32(last-lo+1)
			require.Equal(t, float32(raw[r*16+i])-mean, out[r*16+i], "record %d sample %d", r, i)
		}
	}
}

func TestCPUProcessorAverageFollowsCallOrderAcrossSlots(t *testing.T) {
	// The history is shared by the slots: a block processed on slot 1
	// after a block on slot 0 averages over both, as one long sequence
	// of blocks does in vortex.
	c := smallConfig(128, 20)
	c.AverageWindow, c.Slots = 30, 3
	rng := rand.New(rand.NewPCG(5, 6))
	raw := randomRaw(rng, 6*20*128, false)
	blocks := []int{20, 20, 20, 20, 20, 20}
	want, want8 := cpuBlocks(t, c, raw, blocks) // slots 0, 1, 2, 0, 1, 2
	c1 := c
	c1.Slots = 1
	one, one8 := cpuBlocks(t, c1, raw, blocks)
	require.Equal(t, want, one, "the slot does not change the result")
	require.Equal(t, want8, one8)
}

func TestCPUProcessorSlotsConcurrent(t *testing.T) {
	// Without averaging, slots are independent: the same work from three
	// goroutines at once gives the serial outputs, and the race detector
	// watches the scratch. (With averaging, concurrent calls are ordered
	// by the history mutex in whatever order they reach it.)
	c := smallConfig(128, 200)
	c.Slots = 3
	p, err := NewCPUProcessor(c)
	require.NoError(t, err)
	require.NoError(t, p.Prepare())
	defer p.Close()
	rng := rand.New(rand.NewPCG(5, 6))
	bufs := make([]*hostBuffers, c.Slots)
	for i := range bufs {
		bufs[i] = newHostBuffers(t, 128, 128, 200)
		copy(bufs[i].raw, randomRaw(rng, len(bufs[i].raw), false))
	}
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
	c := smallConfig(16, 8)
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
		{"out", func() error { return p.Process(0, h.s, h.in.Ptr(), 8, 0, 0) }, "out=0 and outInt8=0 with records=8"},
		{"not-host", func() error { return p.Process(0, notHost{h.s}, h.in.Ptr(), 8, h.out.Ptr(), 0) }, "expected a CPU stream (backend.HostStream)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { require.ErrorContains(t, tc.call(), tc.want) })
	}
	require.NoError(t, p.Process(0, h.s, 0, 0, 0, 0), "zero records is a no-op")
	require.NoError(t, p.Close())
	require.ErrorIs(t, p.Close(), backend.ErrClosed)
	require.ErrorIs(t, p.Process(0, h.s, h.in.Ptr(), 8, h.out.Ptr(), 0), backend.ErrClosed)
}

func TestNewAndCloseWhileClaimed(t *testing.T) {
	p, err := NewCPUProcessorOn(cpu.Default(), smallConfig(64, 8))
	require.NoError(t, err)
	require.NoError(t, p.Prepare())
	claims := p.Claims()
	require.NoError(t, claims[0].Take())
	err = p.Close()
	require.ErrorIs(t, err, backend.ErrInUse)
	require.ErrorContains(t, err, "CPUProcessor")
	claims[0].Drop()
	require.NoError(t, p.Close())
	require.ErrorIs(t, p.Close(), backend.ErrClosed, "a second Close reports the closed processor")
}

func TestCPUProcessorAppendHistoryFalse(t *testing.T) {
	// vortex's append_history=False: the block is not added to the history
	// and the current mean is subtracted; before any history, none is.
	c := smallConfig(16, 3)
	c.EnableIFFT, c.EnableMagnitude, c.EnableLog10, c.EnableSquare = false, false, false, false
	c.AverageWindow = 4
	rng := rand.New(rand.NewPCG(11, 12))
	raw := randomRaw(rng, 4*3*16, false) // blocks Z, A, B, C
	p, err := NewCPUProcessor(c)
	require.NoError(t, err)
	require.NoError(t, p.Prepare())
	defer p.Close()
	h := newHostBuffers(t, 16, 16, 3)
	block := func(k int, appendHistory bool) []float32 {
		copy(h.raw, raw[k*48:(k+1)*48])
		require.NoError(t, p.ProcessHistory(k%2, h.s, h.in.Ptr(), 3, h.out.Ptr(), 0, appendHistory))
		return slices.Clone(h.result)
	}
	mean := func(records ...int) []float32 {
		m := make([]float32, 16)
		for i := range m {
			s := 0.0
			for _, r := range records {
				s += float64(raw[r*16+i])
			}
			m[i] = float32(s / float64(len(records)))
		}
		return m
	}
	check := func(got []float32, k int, avg []float32) {
		for r := range 3 {
			for i := range 16 {
				want := float32(raw[(k*3+r)*16+i])
				if avg != nil {
					want -= avg[i]
				}
				require.Equal(t, want, got[r*16+i], "block %d record %d sample %d", k, r, i)
			}
		}
	}
	check(block(0, false), 0, nil)               // empty history: nothing subtracted
	check(block(1, true), 1, mean(3, 4, 5))      // A enters
	check(block(2, false), 2, mean(3, 4, 5))     // B does not
	check(block(3, true), 3, mean(5, 9, 10, 11)) // the last 4 appended: A's last, C
}

func TestLog10(t *testing.T) {
	worst := 0.0
	for e := -1074.0; e < 1024; e += 0.0137 {
		x := math.Pow(2, e)
		want := math.Log10(x)
		worst = max(worst, math.Abs(log10(x)-want)/max(1, math.Abs(want)))
	}
	require.Less(t, worst, 1e-12)
	require.True(t, math.IsInf(log10(0), -1))
	require.True(t, math.IsNaN(log10(-1)))
	require.True(t, math.IsInf(log10(math.Inf(1)), 1))
	require.True(t, math.IsNaN(log10(math.NaN())))
}

func TestCPUProcessorChange(t *testing.T) {
	const n, R = 64, 6
	rng := rand.New(rand.NewPCG(15, 16))
	raw := randomRaw(rng, 2*R*n, false) // blocks A, B
	base := smallConfig(n, R)
	base.AverageWindow = 8
	tests := []struct {
		name      string
		mod       func(*Config)
		keepsHist bool
	}{
		{"levels-and-log", func(c *Config) { c.Levels = [2]float32{10, 70}; c.EnableSquare = false }, true},
		{"filter", func(c *Config) { c.SpectralFilter = randomFilter(rng, n) }, true},
		{"resampling-same-length", func(c *Config) { c.ResamplingSamples = sortedPositions(rng, n, n) }, true},
		{"window", func(c *Config) { c.AverageWindow = 3 }, false},
		{"no-average", func(c *Config) { c.AverageWindow = 0 }, false},
		{"output-length", func(c *Config) { c.ResamplingSamples = sortedPositions(rng, 40, n) }, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			next := base
			tc.mod(&next)
			p, err := NewCPUProcessor(base)
			require.NoError(t, err)
			require.NoError(t, p.Prepare())
			defer p.Close()
			h := newHostBuffers(t, n, n, R)
			copy(h.raw, raw[:R*n])
			require.NoError(t, p.Process(0, h.s, h.in.Ptr(), R, h.out.Ptr(), h.out8.Ptr()))
			require.NoError(t, p.Change(next))
			require.Equal(t, next.OutputSamples(), p.OutputSamples())
			require.Equal(t, next.Levels, p.Config().Levels)
			copy(h.raw, raw[R*n:])
			require.NoError(t, p.Process(1, h.s, h.in.Ptr(), R, h.out.Ptr(), h.out8.Ptr()))
			m := next.OutputSamples()
			got, got8 := slices.Clone(h.result[:R*m]), slices.Clone(h.result8[:R*m])

			// The same block from a processor that had next all along: with
			// the history of block A when it carries over, without it else.
			var want []float32
			var want8 []int8
			if tc.keepsHist {
				want, want8 = cpuBlocks(t, next, raw, []int{R, R})
				want, want8 = want[R*m:], want8[R*m:]
			} else {
				want, want8 = cpuBlocks(t, next, raw[R*n:], []int{R})
			}
			require.Equal(t, want, got)
			require.Equal(t, want8, got8)
		})
	}
}

func TestCPUProcessorChangeErrorsAndEngineClaim(t *testing.T) {
	c := smallConfig(32, 4)
	p, err := NewCPUProcessor(c)
	require.NoError(t, err)
	require.NoError(t, p.Prepare())
	bad := c
	bad.Slots = 0
	require.ErrorContains(t, p.Change(bad), "Config.Slots=0")
	require.Equal(t, 2, p.Config().Slots, "a refused change keeps the configuration")

	claims := p.Claims()
	require.NoError(t, claims[0].Take())
	bigger := c
	bigger.AscansPerBlock = 8
	err = p.Change(bigger)
	require.ErrorIs(t, err, backend.ErrInUse)
	require.ErrorContains(t, err, "Config.AscansPerBlock changes while an engine runs the processor")
	levels := c
	levels.Levels = [2]float32{0, 40}
	require.NoError(t, p.Change(levels), "a change of values only is fine while an engine runs")
	claims[0].Drop()
	require.NoError(t, p.Change(bigger))
	require.Equal(t, 8, p.Config().AscansPerBlock)
	require.NoError(t, p.Close())
	require.ErrorIs(t, p.Change(c), backend.ErrClosed)
}

func TestCPUProcessorChangeWhileProcessing(t *testing.T) {
	// Change from another goroutine while blocks are processed: each
	// block uses one configuration throughout (the race detector watches).
	c := smallConfig(64, 16)
	c.AverageWindow = 5
	p, err := NewCPUProcessor(c)
	require.NoError(t, err)
	require.NoError(t, p.Prepare())
	defer p.Close()
	h := newHostBuffers(t, 64, 64, 16)
	copy(h.raw, randomRaw(rand.New(rand.NewPCG(17, 18)), len(h.raw), false))
	errs := make(chan error, 50)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for k := range 50 {
			next := c
			if k%2 == 1 {
				next.Levels = [2]float32{0, float32(40 + k)}
				next.EnableSquare = false
			}
			errs <- p.Change(next)
		}
	}()
	for range 100 {
		require.NoError(t, p.Process(0, h.s, h.in.Ptr(), 16, h.out.Ptr(), h.out8.Ptr()))
	}
	<-done
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
}

// TestCPUProcessorInt8Only: with out=0 (the engine's Float32Optional, no
// endpoint reads float32) the int8 output is the one written beside the
// float32 output, for both step-5 paths (complex and real spectra).
func TestCPUProcessorInt8Only(t *testing.T) {
	tests := []struct {
		name string
		ifft bool
	}{{"with the FFT", true}, {"without", false}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := smallConfig(64, 16)
			c.EnableIFFT = tc.ifft
			c.Levels = [2]float32{-10, 60}
			raw := randomRaw(rand.New(rand.NewPCG(21, 22)), 64*16, false)
			run := func(float bool) []int8 {
				p, err := NewCPUProcessor(c)
				require.NoError(t, err)
				require.NoError(t, p.Prepare())
				defer p.Close()
				h := newHostBuffers(t, 64, 64, 16)
				copy(h.raw, raw)
				out := h.out.Ptr()
				if !float {
					out = 0
				}
				require.NoError(t, p.Process(0, h.s, h.in.Ptr(), 16, out, h.out8.Ptr()))
				return append([]int8(nil), h.result8...)
			}
			require.True(t, (&CPUProcessor{}).Float32Optional())
			both, only := run(true), run(false)
			require.Equal(t, both, only)
			require.NotEqual(t, make([]int8, len(both)), both, "the int8 output was written")
		})
	}
}
