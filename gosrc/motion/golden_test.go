package motion

import (
	"encoding/json"
	"errors"
	"math"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vortexgo/vortexgo/gosrc/backend"
)

// goldenCase is one motion::plan call of vortex and its output, written by
// scripts/golden/motion_golden.py.
type goldenCase struct {
	Name           string      `json:"name"`
	DT             float64     `json:"dt"`
	Limits         [][]float64 `json:"limits"`
	Start          goldenState `json:"start"`
	End            goldenState `json:"end"`
	IncludeInitial bool        `json:"include_initial"`
	IncludeFinal   bool        `json:"include_final"`
	FixedSamples   int         `json:"fixed_samples"`
	Samples        [][]float64 `json:"samples"`
	Error          string      `json:"error"`
	Skipped        bool        `json:"skipped"`
}

type goldenState struct {
	Position []float64 `json:"position"`
	Velocity []float64 `json:"velocity"`
}

func loadGolden(t *testing.T) []goldenCase {
	t.Helper()
	raw, err := os.ReadFile("testdata/motion_golden.json")
	require.NoError(t, err)
	var doc struct {
		Cases []goldenCase `json:"cases"`
	}
	require.NoError(t, json.Unmarshal(raw, &doc))
	require.NotEmpty(t, doc.Cases)
	return doc.Cases
}

func (c goldenCase) limits() []Limits {
	out := make([]Limits, len(c.Limits))
	for i, l := range c.Limits {
		out[i] = Limits{Position: Range{Min: l[0], Max: l[1]}, Velocity: l[2], Acceleration: l[3]}
	}
	return out
}

func (c goldenCase) plan(quirks bool) (Path, error) {
	return Plan(c.DT, State(c.Start), State(c.End), c.limits(), Options{
		IncludeInitial: c.IncludeInitial, IncludeFinal: c.IncludeFinal,
		FixedSamples: c.FixedSamples, VortexQuirks: quirks,
	})
}

// goldenTol is the agreement required with vortex, relative to the case's
// largest position: both planners evaluate the same closed forms, so the
// plans differ by rounding only (the largest seen is about 1e-15), far
// below 1e-9.
const goldenTol = 1e-9

// goldenErr is the largest difference between a plan and vortex's samples,
// relative to the case's position scale.
func goldenErr(t *testing.T, c goldenCase, p Path) float64 {
	t.Helper()
	require.Equal(t, len(c.Samples), p.Len(), "sample count")
	scale := 1e-300
	for i := range c.Start.Position {
		scale = math.Max(scale, math.Max(math.Abs(c.Start.Position[i]), math.Abs(c.End.Position[i])))
	}
	worst := 0.0
	for k, row := range c.Samples {
		require.Len(t, row, p.Dims)
		for d, want := range row {
			scale = math.Max(scale, math.Abs(want))
			worst = math.Max(worst, math.Abs(p.At(k)[d]-want))
		}
	}
	return worst / scale
}

// inBand reports whether vortex's planner classifies some axis' shortest
// motion differently from Plan's default: the displacement lies in the band
// where Reflexxes picks a triangle whose peak exceeds the velocity limit
// (see Options.VortexQuirks). There vortex's plan either breaks
// the velocity limit or, its phase-synchronisation test failing on that
// peak, time-synchronises a motion that Plan phase-synchronises.
func inBand(c goldenCase) bool {
	for i, l := range c.limits() {
		s := state1{p0: c.Start.Position[i], v0: c.Start.Velocity[i], p1: c.End.Position[i], v1: c.End.Velocity[i]}
		_, a, _ := minTime(s, l.Velocity, l.Acceleration, true)
		_, b, _ := minTime(s, l.Velocity, l.Acceleration, false)
		if a != b {
			return true
		}
	}
	return false
}

// vortexBreaks reports whether vortex's own samples break a velocity or
// acceleration limit (finite differences, 1e-6 relative slack), which is
// what Plan's deliberate differences avoid.
func vortexBreaks(c goldenCase) bool {
	lim := c.limits()
	for d, l := range lim {
		vmax := math.Max(l.Velocity, math.Abs(c.Start.Velocity[d]))
		for k := 1; k < len(c.Samples); k++ {
			if math.Abs(c.Samples[k][d]-c.Samples[k-1][d])/c.DT > vmax*(1+1e-6) {
				return true
			}
			if k >= 2 && math.Abs(c.Samples[k][d]-2*c.Samples[k-1][d]+c.Samples[k-2][d])/(c.DT*c.DT) > l.Acceleration*(1+1e-6) {
				return true
			}
		}
	}
	return false
}

// TestGoldenVortex compares every plan with vortex's. With VortexQuirks
// every case must match. By default a case matches too unless Plan
// deliberately differs (Options.VortexQuirks), and then the case must be
// one where vortex's plan is in the band or breaks the limits itself, and
// Plan's must keep them (or fail as "cannot be met" for a fixed duration
// vortex only meets by speeding the motion up).
func TestGoldenVortex(t *testing.T) {
	worst := 0.0
	differ := map[string]int{}
	for _, c := range loadGolden(t) {
		t.Run(c.Name, func(t *testing.T) {
			if c.Skipped {
				t.Skip("vortex planned no motion (start state compatible with the segment)")
			}
			q, qerr := c.plan(true)
			if c.Error != "" {
				require.Error(t, qerr, "vortex failed: %s", c.Error)
				assert.ErrorIs(t, qerr, backend.ErrInvalid)
			} else {
				require.NoError(t, qerr)
				e := goldenErr(t, c, q)
				worst = math.Max(worst, e)
				assert.LessOrEqual(t, e, goldenTol, "with VortexQuirks")
			}
			p, err := c.plan(false)
			if c.Error != "" {
				require.Error(t, err)
				return
			}
			if err == nil && len(p.Data) == len(q.Data) && goldenErr(t, c, p) <= goldenTol {
				return // the default plan is vortex's
			}
			band, breaks := inBand(c), vortexBreaks(c)
			require.True(t, band || breaks, "Plan differs from vortex where vortex keeps the limits (err %v)", err)
			if err != nil {
				require.ErrorIs(t, err, backend.ErrInvalid)
				require.Contains(t, err.Error(), "cannot be met")
				require.NotZero(t, c.FixedSamples)
				differ["fixed duration only met by breaking the limits: error"]++
				return
			}
			assertWithinLimits(t, c.limits(), c.DT, State(c.Start), p)
			if band {
				differ["velocity band"]++
			} else {
				differ["vortex breaks the limits"]++
			}
		})
	}
	t.Logf("largest difference from vortex (VortexQuirks): %.3g of the position scale; default plans deliberately different: %v", worst, differ)
}

// assertWithinLimits checks velocity and acceleration by finite differences
// of the samples, with the start state in front of them.
//
// The samples lie on the planned motion at times k·T/n with T/n <= dt, so
// a difference quotient over dt is an average velocity times T/(n·dt) <= 1
// and a second difference over dt² an average acceleration times
// (T/(n·dt))² <= 1: neither can exceed the limit in exact arithmetic. The
// tolerance covers rounding: each sample carries an error of a few ulp of
// the largest position x, which a first difference divides by dt and a
// second by dt², hence 8·eps·x/dt and 16·eps·x/dt² on top of 1e-9 relative.
func assertWithinLimits(t *testing.T, lim []Limits, dt float64, start State, p Path) {
	t.Helper()
	const eps = 0x1p-52
	n := p.Len()
	for d, l := range lim {
		x := 1.0
		for k := 0; k < n; k++ {
			x = math.Max(x, math.Abs(p.At(k)[d]))
		}
		// A start above the limit is braked at full deceleration: the
		// bound is the start speed until then.
		vmax := math.Max(l.Velocity, math.Abs(start.Velocity[d]))
		vtol := vmax*1e-9 + 8*eps*x/dt
		atol := l.Acceleration*1e-9 + 16*eps*x/(dt*dt)
		for k := 1; k < n; k++ {
			// Plain comparisons first: testify per sample is slow.
			if v := (p.At(k)[d] - p.At(k - 1)[d]) / dt; math.Abs(v) > vmax+vtol {
				require.LessOrEqual(t, math.Abs(v), vmax+vtol, "axis %d velocity at sample %d", d, k)
			}
			if k >= 2 {
				if a := (p.At(k)[d] - 2*p.At(k - 1)[d] + p.At(k - 2)[d]) / (dt * dt); math.Abs(a) > l.Acceleration+atol {
					require.LessOrEqual(t, math.Abs(a), l.Acceleration+atol, "axis %d acceleration at sample %d", d, k)
				}
			}
		}
	}
}

func TestGoldenErrorsAreInvalid(t *testing.T) {
	for _, c := range loadGolden(t) {
		if c.Error == "" {
			continue
		}
		_, err := c.plan(false)
		require.Error(t, err, c.Name)
		assert.True(t, errors.Is(err, backend.ErrInvalid), c.Name)
	}
}
