package motion

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vortexgo/vortexgo/gosrc/backend"
)

func lims(n int, v, a float64) []Limits {
	out := make([]Limits, n)
	for i := range out {
		out[i] = Limits{Position: Range{Min: -100, Max: 100}, Velocity: v, Acceleration: a}
	}
	return out
}

func st(p []float64, v ...float64) State { return State{Position: p, Velocity: v} }

// TestPlanShapes: table of motions with a known outcome, each checked for
// limits, arrival at the target and the sample counts of the options.
func TestPlanShapes(t *testing.T) {
	const dt = 1e-4
	one := lims(1, 100, 1e4) // V²/A = 1: a rest-to-rest move of 1 just reaches V
	two := []Limits{{Position: Range{Min: -10, Max: 10}, Velocity: 100, Acceleration: 1e4}, {Position: Range{Min: -10, Max: 10}, Velocity: 60, Acceleration: 2e4}}
	tests := []struct {
		name       string
		start, end State
		limits     []Limits
		duration   float64 // the shortest duration, when known in closed form
	}{
		{"1d triangle", st([]float64{0}, 0), st([]float64{0.25}, 0), one, 2 * math.Sqrt(0.25/1e4)},
		{"1d cruise", st([]float64{0}, 0), st([]float64{3}, 0), one, 3.0/100 + 100/1e4},
		{"1d band (vortex overshoots here)", st([]float64{0}, 0), st([]float64{1.3}, 0), one, 1.3/100 + 100/1e4},
		{"1d backwards", st([]float64{1}, 0), st([]float64{-2}, 0), one, 3.0/100 + 100/1e4},
		{"1d reverse: moving away", st([]float64{0}, 80), st([]float64{-0.5}, 0), one, 0},
		{"1d brake from above the limit", st([]float64{0}, 150), st([]float64{5}, 0), one, 0},
		{"1d overshoot to enter moving back", st([]float64{0}, 90), st([]float64{0.05}, -20), one, 0},
		{"1d entering at speed", st([]float64{0}, 0), st([]float64{0.5}, 50), one, 0},
		{"2d time sync", st([]float64{0, 0}, 10, -20), st([]float64{0.5, 0.1}, -30, 40), two, 0},
		{"2d phase sync", st([]float64{0, 0}, 0, 0), st([]float64{1, 0.5}, 0, 0), two, 0},
		{"2d raster flyback", st([]float64{1, 0}, 40, 0), st([]float64{-1, 0.02}, 40, 0), two, 0},
		{"2d one axis idle", st([]float64{0, 0.3}, 0, 0), st([]float64{1, 0.3}, 0, 0), two, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Plan(dt, tc.start, tc.end, tc.limits, Options{IncludeInitial: true, IncludeFinal: true})
			require.NoError(t, err)
			require.GreaterOrEqual(t, p.Len(), 2)
			for d := range tc.limits {
				assert.Equal(t, tc.start.Position[d], p.At(0)[d], "axis %d starts at the start", d)
				assert.InDelta(t, tc.end.Position[d], p.At(p.Len() - 1)[d], 1e-12, "axis %d ends at the target", d)
			}
			assertWithinLimits(t, tc.limits, dt, tc.start, p)
			// Entering and leaving at the required velocities: the first and
			// last difference quotients are the velocity at the ends, off by
			// at most one sample of full acceleration and by the time scale
			// (sample spacing T/n instead of dt, 1 - T/(n·dt) < 1/n).
			n := p.Len() - 1
			for d, l := range tc.limits {
				first := (p.At(1)[d] - p.At(0)[d]) / dt
				last := (p.At(n)[d] - p.At(n - 1)[d]) / dt
				v0, v1 := tc.start.Velocity[d], tc.end.Velocity[d]
				assert.InDelta(t, v0, first, l.Acceleration*dt+math.Abs(v0)/float64(n)+1e-9, "axis %d leaves at its start velocity", d)
				assert.InDelta(t, v1, last, l.Acceleration*dt+math.Abs(v1)/float64(n)+1e-9, "axis %d arrives at its target velocity", d)
			}
			if tc.duration > 0 {
				// ceil(T/dt) intervals, plus the sample at each end.
				assert.Equal(t, int(math.Ceil(tc.duration/dt))+1, p.Len(), "samples of a %g s motion", tc.duration)
			}
			// The options only add or drop the end samples.
			for _, o := range []Options{{}, {IncludeInitial: true}, {IncludeFinal: true}} {
				q, err := Plan(dt, tc.start, tc.end, tc.limits, o)
				require.NoError(t, err)
				want := p.Len() - 2
				if o.IncludeInitial {
					want++
				}
				if o.IncludeFinal {
					want++
				}
				require.Equal(t, want, q.Len(), "%+v", o)
				off := 1
				if o.IncludeInitial {
					off = 0
				}
				assert.Equal(t, p.Data[off*p.Dims:(off+q.Len())*p.Dims], q.Data, "%+v: same samples", o)
			}
		})
	}
}

// TestPlanFixedSamples: a fixed duration gives exactly that many samples
// and still arrives at the target within the limits.
func TestPlanFixedSamples(t *testing.T) {
	const dt = 1e-4
	l := lims(2, 100, 1e4)
	start, end := st([]float64{0, 0}, 10, 0), st([]float64{0.5, -0.3}, 0, 20)
	for _, n := range []int{200, 201, 500, 1000} {
		for _, fin := range []bool{false, true} {
			p, err := Plan(dt, start, end, l, Options{FixedSamples: n, IncludeFinal: fin})
			require.NoError(t, err)
			want := n
			if fin {
				want++
				assert.InDelta(t, 0.5, p.At(p.Len() - 1)[0], 1e-12)
				assert.InDelta(t, -0.3, p.At(p.Len() - 1)[1], 1e-12)
			}
			assert.Equal(t, want, p.Len(), "FixedSamples=%d include_final=%v", n, fin)
			assertWithinLimits(t, l, dt, start, p)
		}
	}
	_, err := Plan(dt, start, end, l, Options{FixedSamples: 10})
	require.ErrorIs(t, err, backend.ErrInvalid)
	assert.Contains(t, err.Error(), "opt.FixedSamples = 10 cannot be met")
}

// TestPlanRandomWithinLimits plans random motions in 1 to 5 axes (time and
// phase synchronised, starts above the limit, reversals) and checks the
// limits and the arrival.
func TestPlanRandomWithinLimits(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	for k := 0; k < 2000; k++ {
		dims := 1 + k%5
		l := make([]Limits, dims)
		start, end := State{make([]float64, dims), make([]float64, dims)}, State{make([]float64, dims), make([]float64, dims)}
		collinear := k%7 == 0
		u := make([]float64, dims)
		for d := range u {
			u[d] = rng.Float64()*2 - 1
		}
		for d := range l {
			l[d] = Limits{Position: Range{Min: -1e3, Max: 1e3}, Velocity: 10 + 200*rng.Float64(), Acceleration: 1e4 + 1e5*rng.Float64()}
			start.Position[d] = rng.Float64()*4 - 2
			if collinear {
				end.Position[d] = start.Position[d] + u[d]
				start.Velocity[d] = 5 * u[d]
				end.Velocity[d] = -3 * u[d]
				continue
			}
			end.Position[d] = rng.Float64()*4 - 2
			start.Velocity[d] = (rng.Float64()*2.4 - 1.2) * l[d].Velocity
			end.Velocity[d] = (rng.Float64()*2 - 1) * l[d].Velocity
		}
		dt := 5e-4
		p, err := Plan(dt, start, end, l, Options{IncludeInitial: true, IncludeFinal: true})
		require.NoError(t, err, "case %d", k)
		for d := range l {
			require.InDelta(t, end.Position[d], p.At(p.Len() - 1)[d], 1e-9*(1+math.Abs(end.Position[d])), "case %d axis %d arrives", k, d)
		}
		assertWithinLimits(t, l, dt, start, p)
	}
}

func TestPlanErrors(t *testing.T) {
	ok := st([]float64{0, 0}, 0, 0)
	to := st([]float64{1, 1}, 0, 0)
	l := lims(2, 100, 1e4)
	bad := func(f func(l []Limits)) []Limits {
		c := lims(2, 100, 1e4)
		f(c)
		return c
	}
	tests := []struct {
		name       string
		dt         float64
		start, end State
		limits     []Limits
		opt        Options
		want       string
	}{
		{"no axes", 1e-4, st(nil), st(nil), nil, Options{}, "limits is empty"},
		{"start position", 1e-4, st([]float64{0}, 0, 0), to, l, Options{}, "start.Position has 1 axes, expected 2"},
		{"start velocity", 1e-4, st([]float64{0, 0}, 0), to, l, Options{}, "start.Velocity has 1 axes"},
		{"end position", 1e-4, ok, st([]float64{1, 1, 1}, 0, 0), l, Options{}, "end.Position has 3 axes"},
		{"end velocity", 1e-4, ok, st([]float64{1, 1}), l, Options{}, "end.Velocity has 0 axes"},
		{"dt zero", 0, ok, to, l, Options{}, "dt = 0"},
		{"dt negative", -1, ok, to, l, Options{}, "dt = -1"},
		{"dt NaN", math.NaN(), ok, to, l, Options{}, "dt = NaN"},
		{"velocity limit", 1e-4, ok, to, bad(func(l []Limits) { l[1].Velocity = 0 }), Options{}, "limits[1].Velocity = 0"},
		{"acceleration limit", 1e-4, ok, to, bad(func(l []Limits) { l[0].Acceleration = -5 }), Options{}, "limits[0].Acceleration = -5"},
		{"acceleration inf", 1e-4, ok, to, bad(func(l []Limits) { l[0].Acceleration = math.Inf(1) }), Options{}, "limits[0].Acceleration = +Inf"},
		{"position range", 1e-4, ok, to, bad(func(l []Limits) { l[0].Position = Range{Min: 1, Max: -1} }), Options{}, "limits[0].Position = [1, -1]"},
		{"start NaN", 1e-4, st([]float64{0, math.NaN()}, 0, 0), to, l, Options{}, "start.Position[1] = NaN"},
		{"end velocity inf", 1e-4, ok, st([]float64{1, 1}, math.Inf(-1), 0), l, Options{}, "end.Velocity[0] = -Inf"},
		{"target velocity above limit", 1e-4, ok, st([]float64{1, 1}, 0, 101), l, Options{}, "end.Velocity[1] = 101, expected |v| <= limits[1].Velocity = 100"},
		{"fixed negative", 1e-4, ok, to, l, Options{FixedSamples: -1}, "opt.FixedSamples = -1"},
		{"fixed too short", 1e-4, ok, to, l, Options{FixedSamples: 3}, "opt.FixedSamples = 3 cannot be met"},
		{"upper position limit", 1e-4, st([]float64{0.9, 0}, 90, 0), st([]float64{0.95, 0}, 0, 0),
			[]Limits{{Position: Range{Min: -1, Max: 1}, Velocity: 100, Acceleration: 1e4}, l[1]}, Options{}, "axis 0 violates its upper position limit"},
		{"lower position limit", 1e-4, ok, st([]float64{0, -2}, 0, 0),
			[]Limits{l[0], {Position: Range{Min: -1, Max: 1}, Velocity: 100, Acceleration: 1e4}}, Options{}, "axis 1 violates its lower position limit: -1.99994999"},
		{"too long", 1e-4, ok, st([]float64{1e12, 0}, 0, 0), l, Options{BypassLimitsCheck: true}, "over the 1e+10 s a plan may last"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Plan(tc.dt, tc.start, tc.end, tc.limits, tc.opt)
			require.ErrorIs(t, err, backend.ErrInvalid)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
	t.Run("bypass limits check", func(t *testing.T) {
		_, err := Plan(1e-4, ok, st([]float64{0, -2}, 0, 0), []Limits{l[0], {Position: Range{Min: -1, Max: 1}, Velocity: 100, Acceleration: 1e4}}, Options{BypassLimitsCheck: true})
		assert.NoError(t, err)
	})
	t.Run("too many samples", func(t *testing.T) {
		_, err := Plan(1e-300, ok, to, l, Options{})
		require.ErrorIs(t, err, backend.ErrTooLarge)
	})
}

// TestPlanDegenerate: motions of no or almost no duration.
func TestPlanDegenerate(t *testing.T) {
	l := lims(2, 100, 1e4)
	// Start = target at rest: nothing to do, and at most the two end samples.
	p, err := Plan(1e-4, st([]float64{0.5, 0.5}, 0, 0), st([]float64{0.5, 0.5}, 0, 0), l, Options{})
	require.NoError(t, err)
	assert.Equal(t, 0, p.Len())
	// With both ends included there are two samples, as in vortex: its
	// shortest duration of a null move is not 0 but a rounding residue
	// (1e-50-ish), one sample long.
	p, err = Plan(1e-4, st([]float64{0.5, 0.5}, 0, 0), st([]float64{0.5, 0.5}, 0, 0), l, Options{IncludeInitial: true, IncludeFinal: true})
	require.NoError(t, err)
	require.Equal(t, 2, p.Len())
	assert.Equal(t, []float64{0.5, 0.5, 0.5, 0.5}, p.Data)
	// A move shorter than one sample that ends at rest jumps to its
	// target (vortex's behaviour): no inactive samples in between.
	p, err = Plan(1e-4, st([]float64{0, 0}, 0, 0), st([]float64{1e-6, 0}, 0, 0), l, Options{})
	require.NoError(t, err)
	assert.Equal(t, 0, p.Len())
	// Start = target, moving: the axis must leave and come back (the
	// planner does not take "already there" while moving).
	p, err = Plan(1e-4, st([]float64{0.5}, 10), st([]float64{0.5}, 10), lims(1, 100, 1e4), Options{IncludeFinal: true})
	require.NoError(t, err)
	assert.Greater(t, p.Len(), 1)
	assert.InDelta(t, 0.5, p.At(p.Len() - 1)[0], 1e-9)
}

// TestPlanAllocations: the Path is Plan's only allocation up to stackAxes
// axes.
func TestPlanAllocations(t *testing.T) {
	l := lims(3, 100, 1e4)
	start, end := st([]float64{0, 0, 0}, 10, -20, 5), st([]float64{0.5, 0.1, -0.2}, -30, 40, 0)
	allocs := testing.AllocsPerRun(20, func() {
		if _, err := Plan(1e-4, start, end, l, Options{}); err != nil {
			panic(err)
		}
	})
	assert.Equal(t, 1.0, allocs)
}

func BenchmarkPlan2D(b *testing.B) {
	l := lims(2, 100, 1e4)
	start, end := st([]float64{1, 0}, 40, 0), st([]float64{-1, 0.02}, 40, 0)
	for b.Loop() {
		if _, err := Plan(1e-5, start, end, l, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

// TestPlanRandomNearCollinear: motions collinear within Reflexxes' 1 %
// tolerance, where vortex's phase-synchronisation corrections step the
// path and miss the target (Options.VortexQuirks); Plan's keep the limits
// and arrive.
func TestPlanRandomNearCollinear(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	l := lims(2, 100, 1e4)
	const dt = 1e-4
	for k := 0; k < 1000; k++ {
		u := []float64{rng.Float64()*2 - 1, rng.Float64()*2 - 1}
		e := func() float64 { return 1 + 0.008*(rng.Float64()*2-1) }
		d := 0.1 + rng.Float64()*2
		a0, a1 := rng.Float64()*60-30, rng.Float64()*60-30
		start := st([]float64{0, 0}, a0*u[0]*e(), a0*u[1]*e())
		end := st([]float64{d * u[0] * e(), d * u[1] * e()}, a1*u[0]*e(), a1*u[1]*e())
		p, err := Plan(dt, start, end, l, Options{IncludeInitial: true, IncludeFinal: true})
		require.NoError(t, err, "case %d", k)
		for i := range l {
			require.InDelta(t, end.Position[i], p.At(p.Len() - 1)[i], 1e-12, "case %d axis %d arrives", k, i)
		}
		assertWithinLimits(t, l, dt, start, p)
	}
}

// TestPlanRandomFixed: fixed durations of random moving states either
// fail as "cannot be met" or keep the limits and arrive, exactly n samples
// later (vortex's plans may instead squeeze in a missing sample or, in one
// axis, miss the target).
func TestPlanRandomFixed(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const dt = 1e-3
	met := 0
	for k := 0; k < 3000; k++ {
		dims := 1 + k%3
		l := lims(dims, 100, 1e4)
		start, end := State{make([]float64, dims), make([]float64, dims)}, State{make([]float64, dims), make([]float64, dims)}
		for d := 0; d < dims; d++ {
			start.Position[d] = rng.Float64()*2 - 1
			end.Position[d] = rng.Float64()*2 - 1
			start.Velocity[d] = rng.Float64()*200 - 100
			end.Velocity[d] = rng.Float64()*200 - 100
			if k%2 == 0 { // same direction: inoperative intervals
				end.Velocity[d] = math.Copysign(end.Velocity[d], start.Velocity[d])
			}
		}
		n := 5 + rng.IntN(80)
		p, err := Plan(dt, start, end, l, Options{FixedSamples: n, IncludeFinal: true})
		if err != nil {
			require.ErrorIs(t, err, backend.ErrInvalid)
			require.Contains(t, err.Error(), "cannot be met", "case %d", k)
			continue
		}
		met++
		require.Equal(t, n+1, p.Len(), "case %d", k)
		for i := range l {
			require.InDelta(t, end.Position[i], p.At(p.Len() - 1)[i], 1e-12, "case %d axis %d arrives", k, i)
		}
		assertWithinLimits(t, l, dt, start, p)
	}
	assert.Greater(t, met, 1000, "most fixed durations can be met")
}

// FuzzPlan: any finite input either fails with a typed error or gives
// finite samples that arrive at the target (2 axes, include_final) within
// the limits.
func FuzzPlan(f *testing.F) {
	f.Add(1e-4, 0.0, 0.0, 1.0, 0.0, 0.0, 10.0, 0.5, -5.0, 100.0, 1e4, 0)
	f.Add(1e-3, 1.0, 90.0, -1.0, 40.0, 0.0, 0.0, 0.02, 0.0, 100.0, 1e4, 50)
	f.Add(1e-5, 0.3, -250.0, 0.3, 0.0, 0.1, 1e-9, 0.1, 0.0, 50.0, 1e6, 0)
	f.Fuzz(func(t *testing.T, dt, p0, v0, p1, v1, q0, w0, q1, w1, vmax, amax float64, fixed int) {
		if fixed > 10000 {
			fixed = 10000
		}
		l := []Limits{{Position: Range{Min: math.Inf(-1), Max: math.Inf(1)}, Velocity: vmax, Acceleration: amax}, {Position: Range{Min: math.Inf(-1), Max: math.Inf(1)}, Velocity: vmax * 0.7, Acceleration: amax * 1.3}}
		start, end := st([]float64{p0, q0}, v0, w0), st([]float64{p1, q1}, v1, w1)
		// Keep the motion short enough to sample in a test.
		if !(dt >= 1e-6) || !(vmax >= 1e-3) || !(amax >= 1e-3) || math.Abs(p1-p0)+math.Abs(q1-q0) > 1e3*vmax*dt ||
			(math.Abs(v0)+math.Abs(w0)+vmax)/amax > 1e3*dt {
			_, _ = Plan(dt, start, end, l, Options{FixedSamples: fixed})
			return
		}
		p, err := Plan(dt, start, end, l, Options{FixedSamples: fixed, IncludeFinal: true})
		if err != nil {
			require.True(t, errors.Is(err, backend.ErrInvalid) || errors.Is(err, backend.ErrTooLarge), err)
			return
		}
		require.Positive(t, p.Len())
		for _, x := range p.Data {
			require.False(t, math.IsNaN(x) || math.IsInf(x, 0))
		}
		for i := range l {
			want := end.Position[i]
			require.InDelta(t, want, p.At(p.Len() - 1)[i], 1e-6*(1+math.Abs(want)+math.Abs(start.Position[i])), "axis %d arrives", i)
		}
		if fixed == 0 {
			// From the start state: prepend it as sample 0.
			q, err := Plan(dt, start, end, l, Options{IncludeInitial: true})
			require.NoError(t, err)
			assertWithinLimits(t, l, dt, start, q)
		}
	})
}
