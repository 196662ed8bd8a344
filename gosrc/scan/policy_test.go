package scan

import (
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/marker"
	"github.com/vortexgo/vortexgo/gosrc/motion"
)

type planCall struct {
	dt         float64
	start, end motion.State
	limits     []motion.Limits
	opt        motion.Options
}

// fakePlanner stands in for motion.Plan: it records each call and returns
// a straight path of opt.FixedSamples interior samples (10 when unset), with
// the end points the options ask for.
func fakePlanner(t *testing.T, calls *[]planCall, fail error) {
	t.Helper()
	saved := plan
	t.Cleanup(func() { plan = saved })
	plan = func(dt float64, start, end motion.State, limits []motion.Limits, opt motion.Options) (motion.Path, error) {
		*calls = append(*calls, planCall{dt, start, end, append([]motion.Limits(nil), limits...), opt})
		if fail != nil {
			return motion.Path{}, fail
		}
		n := opt.FixedSamples
		if n == 0 {
			n = 10
		}
		return motion.Path{Data: linearPath(n, start.Position, end.Position, opt), Dims: len(start.Position)}, nil
	}
}

// TestDynamicPoliciesAskThePlanner checks the plumbing of the planner-based
// policies: what they ask motion.Plan for (time step, states with
// velocities, limits, options, fixed durations) and that its path lands in
// the stream. The waveforms themselves are compared with vortex's by
// TestGoldenScans once motion.Plan is implemented.
func TestDynamicPoliciesAskThePlanner(t *testing.T) {
	cases := []struct {
		name          string
		policy        InactivePolicy
		into, between int // FixedSamples asked for
	}{
		{"minimum", MinimumDynamicLimited(), 0, 0},
		{"fixed", FixedDynamicLimited(40, 60), 60, 40},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var calls []planCall
			fakePlanner(t, &calls, nil)
			cfg := smallRaster()
			cfg.InactivePolicy = c.policy
			cfg.BypassLimitsCheck = false
			cfg.Limits[1].Velocity = 7500
			var s RasterScan
			require.NoError(t, s.Initialize(cfg))
			pass, err := s.ScanBuffer()
			require.NoError(t, err)
			// the path in, then one path after each segment (looping)
			require.Len(t, calls, 1+4)
			vy := 0.8 / 11 * 1e5
			in := calls[0]
			assert.Equal(t, 1e-5, in.dt)
			assert.Equal(t, []float64{0, 0}, in.start.Position)
			assert.Equal(t, []float64{0, 0}, in.start.Velocity)
			assert.Equal(t, []float64{-1, -0.4}, in.end.Position)
			assert.InDeltaSlice(t, []float64{0, vy}, in.end.Velocity, 1e-9)
			assert.Equal(t, motion.Options{IncludeInitial: true, FixedSamples: c.into}, in.opt)
			assert.Equal(t, cfg.Limits, in.limits)
			for i, call := range calls[1:] {
				assert.Equal(t, motion.Options{FixedSamples: c.between}, call.opt, "path after segment %d", i)
				assert.InDelta(t, 0.4, call.start.Position[1], 1e-12, "leaves segment %d at its exit", i)
				assert.InDeltaSlice(t, []float64{0, vy}, call.start.Velocity, 1e-9, "at its exit velocity")
				assert.InDelta(t, -0.4, call.end.Position[1], 1e-12, "enters the next segment")
				assert.InDeltaSlice(t, []float64{0, vy}, call.end.Velocity, 1e-9, "at its entry velocity")
			}
			assert.Equal(t, []float64{-1, -0.4}, calls[4].end.Position, "the last path loops to segment 0")
			between := c.between
			if between == 0 {
				between = 10
			}
			assert.Equal(t, 4*(12+between), len(pass)/2, "planned paths fill the gaps")

			// bypass_limits_check reaches the planner
			calls = nil
			cfg.BypassLimitsCheck = true
			require.NoError(t, s.Initialize(cfg))
			require.NoError(t, s.Prepare())
			require.NotEmpty(t, calls)
			assert.True(t, calls[0].opt.BypassLimitsCheck)
		})
	}
}

// TestCompatibleEntrySkipsThePath: no path in when the scan is already at
// the first segment's state; the linear policy looks at position only,
// the dynamic ones at velocity too.
func TestCompatibleEntrySkipsThePath(t *testing.T) {
	segAtRest := Segment{Position: []float64{0, 0, 0.001, 0, 0.002, 0}, Channels: 2, EntryDelta: []float64{0, 0}}
	segMoving := Segment{Position: []float64{0, 0, 0.001, 0, 0.002, 0}, Channels: 2}
	cases := []struct {
		name   string
		policy InactivePolicy
		seg    Segment
		pathIn bool
	}{
		{"linear, same position", FixedLinear(3, 3), segMoving, false},
		{"dynamic, same state", MinimumDynamicLimited(), segAtRest, false},
		{"dynamic, moving", MinimumDynamicLimited(), segMoving, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var calls []planCall
			fakePlanner(t, &calls, nil)
			cfg := NewFreeformScanConfig()
			cfg.InactivePolicy = c.policy
			cfg.Pattern = []Segment{c.seg}
			var s FreeformScan
			require.NoError(t, s.Initialize(cfg))
			_, ms := stream(t, &s.SegmentedScan, 5, 5)
			require.NotEmpty(t, ms)
			assert.Equal(t, c.pathIn, ms[0].Kind == marker.InactiveLines, "first marker %v", ms[0])
		})
	}
}

func TestPlannerErrorsPropagate(t *testing.T) {
	infeasible := fmt.Errorf("motion.Plan: cannot reach the target within limits: %w", backend.ErrInvalid)
	var calls []planCall
	fakePlanner(t, &calls, infeasible)
	cfg := smallRaster()
	cfg.InactivePolicy = MinimumDynamicLimited()
	var s RasterScan
	require.NoError(t, s.Initialize(cfg), "planning happens on demand")
	_, err := s.ScanBuffer()
	require.ErrorIs(t, err, infeasible)
	assert.ErrorContains(t, err, "planning the path into segment 0")
	_, err = s.Next(nil, make([]float64, 20), 10)
	assert.ErrorIs(t, err, infeasible, "Next reports it too and does not stream half a scan")

	// a planner answering with the wrong axis count is caught
	saved := plan
	defer func() { plan = saved }()
	plan = func(dt float64, start, end motion.State, limits []motion.Limits, opt motion.Options) (motion.Path, error) {
		return motion.Path{Data: []float64{1, 2, 3}, Dims: 3}, nil
	}
	require.NoError(t, s.Initialize(cfg))
	_, err = s.ScanBuffer()
	assert.True(t, errors.Is(err, backend.ErrInvalid))
	assert.ErrorContains(t, err, "the planner returned 3 axes, expected 2")
}

// TestPlannedScansWithinLimits is the limit property of the dynamic
// policies over whole streams (paths in, between segments, across
// changes); it runs once motion.Plan is implemented.
func TestPlannedScansWithinLimits(t *testing.T) {
	fast := []motion.Limits{{Position: motion.Range{Min: -12.5, Max: 12.5}, Velocity: 8e3, Acceleration: 5e7}, {Position: motion.Range{Min: -12.5, Max: 12.5}, Velocity: 8e3, Acceleration: 5e7}}
	for _, policy := range []InactivePolicy{MinimumDynamicLimited(), FixedDynamicLimited(150, 200)} {
		for _, bidir := range []bool{false, true} {
			t.Run(fmt.Sprintf("%v bidir=%t", policy, bidir), func(t *testing.T) {
				cfg := smallRaster()
				cfg.InactivePolicy, cfg.Limits, cfg.BidirectionalSegments = policy, fast, bidir
				var s RasterScan
				require.NoError(t, s.Initialize(cfg))
				_, err := s.ScanBuffer()
				skipIfNoPlanner(t, err)
				require.NoError(t, err)
				require.NoError(t, s.Initialize(cfg))
				out, _ := stream(t, &s.SegmentedScan, 700, 29)
				other := cfg.Copy()
				other.Angle = 0.5
				require.NoError(t, s.Change(other, false, 1))
				more, _ := stream(t, &s.SegmentedScan, 700, 31)
				out = append(out, more...)
				sps := float64(cfg.SamplesPerSecond)
				for i := range len(out) / 2 {
					for d := range 2 {
						l := fast[d]
						p := out[i*2+d]
						require.True(t, l.Position.Contains(p), "sample %d axis %d position", i, d)
						if i >= 1 {
							v := (p - out[(i-1)*2+d]) * sps
							require.LessOrEqual(t, math.Abs(v), l.Velocity*(1+1e-6), "sample %d axis %d velocity", i, d)
						}
						if i >= 2 {
							a := (p - 2*out[(i-1)*2+d] + out[(i-2)*2+d]) * sps * sps
							require.LessOrEqual(t, math.Abs(a), l.Acceleration*(1+1e-6), "sample %d axis %d acceleration", i, d)
						}
					}
				}
			})
		}
	}
}
