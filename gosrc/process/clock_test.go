package process

import (
	"math"
	"math/cmplx"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"

	"github.com/stretchr/testify/require"
)

// refClockTables is an independent float64 reading of vortex's dynamic
// resampling (src/vortex/process/cuda.hpp and cuda.cu: demean, Hilbert
// window, phase differences, inclusive scan, max, resample_phase): the
// analytic signal by a DFT by definition, the phase by cmplx.Phase, and
// the lower bound by sort.Search, so it assumes an ascending phase (the
// test clocks are monotone sweeps; lowerBound's search on other phases is
// TestLowerBound's). It returns, per output sample, vortex's before and
// after samples and its weight r (before weighs 1-r).
func refClockTables(clock []float64) (before, after []int, ratio []float64) {
	n := len(clock)
	mean := 0.0
	for _, v := range clock {
		mean += v
	}
	mean /= float64(n)
	spec := make([]complex128, n)
	for k := range spec {
		for i, v := range clock {
			spec[k] += complex(v-mean, 0) * cmplx.Exp(complex(0, -2*math.Pi*float64(i*k%n)/float64(n)))
		}
		switch {
		case k > n/2:
			spec[k] = 0
		case k != 0 && k != n/2:
			spec[k] *= 2
		}
	}
	phase := make([]float64, n)
	prev := 0.0
	for i := range n {
		var z complex128
		for k, s := range spec {
			z += s * cmplx.Exp(complex(0, 2*math.Pi*float64(i*k%n)/float64(n)))
		}
		a := cmplx.Phase(z / complex(float64(n), 0))
		if i > 0 {
			d := a - prev
			if d > math.Pi {
				d -= 2 * math.Pi
			}
			if d < -math.Pi {
				d += 2 * math.Pi
			}
			phase[i] = phase[i-1] + d
		}
		prev = a
	}
	top := slices.Max(phase)
	before, after, ratio = make([]int, n), make([]int, n), make([]float64, n)
	for j := range n {
		q := top * float64(j) / float64(n)
		b := min(sort.Search(n, func(i int) bool { return phase[i] >= q }), n-1)
		before[j], after[j], ratio[j] = b, min(b+1, n-1), q-phase[b]
	}
	return before, after, ratio
}

// sweep is a record's k-clock phase at sample i of n: about step radians
// a sample, bent by bend into a nonlinear sweep (monotone for |bend| < 1).
func sweep(i, n int, step, bend float64) float64 {
	t := float64(i) / float64(n-1)
	return step * float64(n-1) * (t + bend*(t*t-t))
}

// clockRaw makes records x n x ch raw values: channel clock a k-clock
// cos(sweep), channel signal a reflector at depth cycles per record at the
// same wavenumbers, the other channels noise; records differ in their
// sweep. Signed input holds int16 values around 0.
func clockRaw(rng *rand.Rand, records, n, ch, signal, clock int, signed bool, step, bend, depth float64) []uint16 {
	raw := make([]uint16, records*n*ch)
	for r := range records {
		st, bd := step*(1+0.05*rng.Float64()), bend*(1+0.2*rng.Float64())
		end := sweep(n-1, n, st, bd)
		for i := range n {
			phi := sweep(i, n, st, bd)
			for c := range ch {
				v := float64(rng.IntN(200))
				switch c {
				case clock:
					v = 2000*math.Cos(phi) + v/20
				case signal:
					v = 1500*math.Cos(2*math.Pi*depth*phi/end) + 300*math.Cos(2*math.Pi*depth/3*phi/end) + v/20
				}
				if !signed {
					v += 30000
				}
				raw[(r*n+i)*ch+c] = uint16(int16(math.Round(v)))
				if !signed {
					raw[(r*n+i)*ch+c] = uint16(math.Round(v))
				}
			}
		}
	}
	return raw
}

func TestLowerBound(t *testing.T) {
	tests := []struct {
		name  string
		phase []float64
		q     float64
		want  int
	}{
		{"below", []float64{0, 1, 2, 3}, -1, 0},
		{"first", []float64{0, 1, 2, 3}, 0, 0},
		{"between", []float64{0, 1, 2, 3}, 0.5, 1},
		{"equal", []float64{0, 1, 2, 3}, 2, 2},
		{"last", []float64{0, 1, 2, 3}, 3, 3},
		{"above", []float64{0, 1, 2, 3}, 3.5, 4},
		{"run", []float64{0, 1, 1, 1, 2}, 1, 1},
		{"flat", []float64{0, 0, 0, 0, 0}, 0, 0},
		// Not ascending: the search's own path. [0 5 1 1] at 3.75 looks at
		// index 2 (1 < 3.75), then 3 (1 < 3.75): the end, past the 5.
		{"not-ascending-end", []float64{0, 5, 1, 1}, 3.75, 4},
		// [0 -1 -2 -3] at -1.5: index 2 (-2 < -1.5), then 3: the end.
		{"descending", []float64{0, -1, -2, -3}, -1.5, 4},
		// [0 3 1 4 2] at 2.5: index 2 (1 < 2.5), then 4 (2 < 2.5): the end;
		// a linear scan would stop at 1.
		{"not-ascending-skips", []float64{0, 3, 1, 4, 2}, 2.5, 5},
		// [0 3 1 4 2] at 0.5: index 2 (1 >= 0.5), then 1 (3 >= 0.5), then 0.
		{"not-ascending-front", []float64{0, 3, 1, 4, 2}, 0.5, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, lowerBound(tc.phase, tc.q))
			if slices.IsSorted(tc.phase) {
				require.Equal(t, sort.SearchFloat64s(tc.phase, tc.q), lowerBound(tc.phase, tc.q), "ascending: the usual lower bound")
			}
		})
	}
}

func TestClockTablesMatchReference(t *testing.T) {
	tests := []struct {
		name              string
		n                 int
		step, bend, depth float64
		signed            bool
	}{
		{"even-linear", 64, 1.0, 0, 5, false},
		{"odd-bent", 77, 1.3, 0.3, 7, false},
		{"slow-clock", 120, 0.7, -0.25, 9, false},
		{"fast-clock", 250, 2.2, 0.2, 20, false},
		{"signed", 96, 1.1, 0.35, 8, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(tc.n), 5))
			raw := clockRaw(rng, 3, tc.n, 2, 0, 1, tc.signed, tc.step, tc.bend, tc.depth)
			cs := newClockScratch(tc.n)
			for r := range 3 {
				val := func(i int) int32 {
					v := raw[(r*tc.n+i)*2+1]
					if tc.signed {
						return int32(int16(v))
					}
					return int32(v)
				}
				clock := make([]float64, tc.n)
				for i := range clock {
					clock[i] = float64(val(i))
				}
				wb, wa, wr := refClockTables(clock)
				samples := make([]int32, tc.n)
				for i := range samples {
					samples[i] = val(i)
				}
				got := cs.tables(samples)
				require.True(t, slices.IsSorted(cs.phase), "the test clock's phase ascends")
				for j := range tc.n {
					require.Equal(t, int32(wb[j]), got.before[j], "record %d sample %d: before", r, j)
					require.Equal(t, int32(wa[j]), got.after[j], "record %d sample %d: after", r, j)
					require.InDelta(t, wr[j], float64(got.wAfter[j]), 1e-6, "record %d sample %d: weight", r, j)
					require.InDelta(t, 1-wr[j], float64(got.wBefore[j]), 1e-6, "record %d sample %d: weight", r, j)
					require.LessOrEqual(t, wr[j], 1e-9, "vortex's weight: the query minus the phase at or above it")
				}
			}
		})
	}
}

func TestClockTablesFlatClock(t *testing.T) {
	// No clock signal (a constant channel): the phase is 0 throughout, so
	// every output sample is the record's first, as vortex computes it.
	cs := newClockScratch(33)
	flat := make([]int32, 33)
	for i := range flat {
		flat[i] = 1234
	}
	got := cs.tables(flat)
	for j := range 33 {
		require.Equal(t, int32(0), got.before[j])
		require.Equal(t, int32(1), got.after[j])
		require.Equal(t, float32(1), got.wBefore[j])
		require.Equal(t, float32(0), got.wAfter[j])
	}
}

func TestCPUClockMatchesReference(t *testing.T) {
	const n = 96
	tests := []struct {
		name   string
		blocks []int
		ch     int
		signal int
		clock  int
		signed bool
		mod    func(*Config)
	}{
		{"two-channels-db", []int{4}, 2, 0, 1, false, func(*Config) {}},
		{"clock-first-of-three", []int{3, 3}, 3, 2, 0, false, func(c *Config) { c.EnableLog10, c.EnableSquare = false, false }},
		{"signed", []int{4}, 2, 1, 0, true, func(c *Config) { c.EnableLog10 = false }},
		{"average-across-blocks", []int{4, 4, 2}, 2, 0, 1, false, func(c *Config) { c.AverageWindow = 3 }},
		{"filter-levels", []int{5}, 2, 0, 1, false, func(c *Config) {
			c.SpectralFilter = randomFilter(rand.New(rand.NewPCG(1, 2)), n)
			c.Levels = [2]float32{20, 90}
		}},
		{"no-fft", []int{3}, 2, 0, 1, false, func(c *Config) {
			c.EnableIFFT, c.EnableMagnitude, c.EnableLog10, c.EnableSquare = false, false, false, false
		}},
		{"clock-is-the-channel", []int{3}, 2, 1, 1, false, func(c *Config) { c.EnableLog10, c.EnableSquare = false, false }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := smallConfig(n, slices.Max(tc.blocks))
			c.ChannelsPerSample, c.Channel, c.InterpretAsSigned = tc.ch, tc.signal, tc.signed
			k := tc.clock
			c.ClockChannel = &k
			tc.mod(&c)
			total := 0
			for _, b := range tc.blocks {
				total += b
			}
			raw := clockRaw(rand.New(rand.NewPCG(9, uint64(n))), total, n, tc.ch, tc.signal, tc.clock, tc.signed, 1.2, 0.3, 9)
			out, out8 := cpuBlocks(t, c, raw, tc.blocks)
			want := reference(c, raw, tc.blocks)
			for r := range total {
				scale := 0.0
				for _, v := range want[r*n : (r+1)*n] {
					scale = max(scale, math.Abs(v))
				}
				for k := r * n; k < (r+1)*n; k++ {
					w, g := want[k], float64(out[k])
					tol := 1e-6*math.Abs(w) + 2e-6*scale
					if c.EnableLog10 {
						tol = 1e-3
						if w < scale-60 {
							tol = 0.05
						}
					}
					require.InDelta(t, w, g, tol, "record %d sample %d", r, k%n)
					require.LessOrEqual(t, math.Abs(float64(out8[k])-refLevel(&c, w)), 1.0, "int8 record %d sample %d", r, k%n)
				}
			}
		})
	}
}

// TestClockResamplingSharpensThePeak is the point of the clock: a
// reflector recorded at nonlinear wavenumbers is one sharp peak at its
// depth once each record is resampled by its clock, and smeared without.
func TestClockResamplingSharpensThePeak(t *testing.T) {
	const n, depth = 512, 40
	raw := clockRaw(rand.New(rand.NewPCG(3, 3)), 2, n, 2, 0, 1, false, 1.0, 0.35, depth)
	c := smallConfig(n, 2)
	c.ChannelsPerSample = 2
	c.EnableLog10, c.EnableSquare = false, false
	c.AverageWindow = 2 // removes the offset, leaving the fringes
	plain, _ := cpuBlocks(t, c, raw, []int{2})
	k := 1
	c.ClockChannel = &k
	clocked, _ := cpuBlocks(t, c, raw, []int{2})
	for r := range 2 {
		a, b := clocked[r*n:r*n+n/2], plain[r*n:r*n+n/2]
		peak := slices.Index(a, slices.Max(a))
		require.InDelta(t, depth, peak, 1, "record %d: the peak at the reflector's depth", r)
		above := func(x []float32, frac float32) int {
			cnt, top := 0, slices.Max(x)
			for _, v := range x {
				if v > frac*top {
					cnt++
				}
			}
			return cnt
		}
		require.LessOrEqual(t, above(a, 0.5), 2, "record %d: sharp with the clock", r)
		require.GreaterOrEqual(t, above(b, 0.5), 6, "record %d: smeared without it", r)
		require.Greater(t, slices.Max(a), 3*slices.Max(b), "record %d: the energy in one peak", r)
	}
}

func TestClockConfigValidate(t *testing.T) {
	ptr := func(k int) *int { return &k }
	tests := []struct {
		name string
		mod  func(*Config)
		want string
	}{
		{"negative", func(c *Config) { c.ChannelsPerSample, c.ClockChannel = 2, ptr(-1) }, "Config.ClockChannel=-1, expected in [0, ChannelsPerSample=2), or nil for none"},
		{"out-of-range", func(c *Config) { c.ChannelsPerSample, c.ClockChannel = 2, ptr(2) }, "Config.ClockChannel=2, expected in [0, ChannelsPerSample=2)"},
		{"one-channel", func(c *Config) { c.ClockChannel = ptr(1) }, "Config.ClockChannel=1, expected in [0, ChannelsPerSample=1)"},
		{"with-static-resampling", func(c *Config) {
			c.ChannelsPerSample, c.ClockChannel = 2, ptr(1)
			c.ResamplingSamples = []float32{0, 1, 2}
		}, "Config.ClockChannel=1 with 3 ResamplingSamples, expected one of them"},
		{"one-sample", func(c *Config) { c.SamplesPerRecord, c.ChannelsPerSample, c.ClockChannel = 1, 2, ptr(1) }, "Config.SamplesPerRecord=1, expected >= 2 with ClockChannel"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := smallConfig(64, 4)
			tc.mod(&c)
			require.ErrorContains(t, c.Validate(), tc.want)
			_, err := NewCPUProcessor(c)
			require.ErrorContains(t, err, tc.want)
		})
	}
	c := smallConfig(64, 4)
	c.ClockChannel = ptr(0)
	require.NoError(t, c.Validate(), "the clock may be the processed channel, as in vortex")
	c.ChannelsPerSample = 2
	c.ClockChannel = ptr(1)
	p, err := NewCPUProcessor(c)
	require.NoError(t, err)
	*c.ClockChannel = 0
	require.Equal(t, 1, *p.Config().ClockChannel, "the processor keeps its own copy")
}
