package scan

import (
	"fmt"
	"math"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/marker"
	"github.com/vortexgo/vortexgo/gosrc/motion"
)

// TestChangeContinuousEverywhere changes a raster at every sample of its
// first two passes (prepared and lazily buffered, with and without
// restart), including exactly at a pass's end where vortex fails: the
// stream never jumps, the change event appears once, and the stream ends
// in the new pattern's pass.
func TestChangeContinuousEverywhere(t *testing.T) {
	a := smallRaster()
	b := smallRaster()
	b.Offset = [2]float64{0.3, -0.2}
	b.SegmentsPerVolume = 3
	b.BidirectionalSegments = true
	var probe RasterScan
	require.NoError(t, probe.Initialize(b))
	passB, err := probe.ScanBuffer()
	require.NoError(t, err)
	rowsB := len(passB) / 2
	var probeA RasterScan
	require.NoError(t, probeA.Initialize(a))
	passA, _ := probeA.ScanBuffer()
	for _, prepared := range []bool{true, false} {
		for _, restart := range []bool{false, true} {
			t.Run(fmt.Sprintf("prepared=%t restart=%t", prepared, restart), func(t *testing.T) {
				for at := 0; at < 2*len(passA)/2+10; at++ {
					var s RasterScan
					require.NoError(t, s.Initialize(a))
					if prepared {
						require.NoError(t, s.Prepare())
					}
					out, ms := stream(t, &s.SegmentedScan, at, 5)
					require.NoError(t, s.Change(b, restart, 42), "change at sample %d", at)
					out2, ms2 := stream(t, &s.SegmentedScan, 3*rowsB, 11)
					out, ms = append(out, out2...), append(ms, ms2...)
					bound := math.Max(maxStep(t, &s.SegmentedScan, 0), maxStep(t, &s.SegmentedScan, 1))
					for i := 1; i < len(out)/2; i++ {
						for d := range 2 {
							step := math.Abs(out[i*2+d] - out[(i-1)*2+d])
							require.LessOrEqual(t, step, bound+0.1, "change at %d: jump at sample %d axis %d", at, i, d)
						}
					}
					events := 0
					for _, m := range ms {
						if m.Kind == marker.Event {
							events++
							assert.Equal(t, uint64(42), m.ID)
							assert.GreaterOrEqual(t, m.Sample, int64(at), "the event marks where the change takes effect")
						}
					}
					require.Equal(t, 1, events, "change at %d: one change event", at)
					// the last pass of the stream is the new pattern's
					tail := out[len(out)-len(passB):]
					found := false
					for k := range rowsB {
						match := true
						for i := 0; i < rowsB && match; i++ {
							j := (k + i) % rowsB
							match = math.Abs(tail[i*2]-passB[j*2]) < 1e-12 && math.Abs(tail[i*2+1]-passB[j*2+1]) < 1e-12
						}
						if match {
							found = true
							break
						}
					}
					require.True(t, found, "change at %d: the stream ends looping the new pass", at)
				}
			})
		}
	}
}

func TestChangeRefused(t *testing.T) {
	a := smallRaster()
	var s RasterScan
	require.ErrorIs(t, s.Change(a, false, 0), ErrNotInitialized)
	require.NoError(t, s.Initialize(a))
	before, _ := s.ScanBuffer()

	c := a.Copy()
	c.ChannelsPerSample = 3
	c.Limits = append(c.Limits, ThorLabsGVS5mm)
	err := s.Change(c, false, 0)
	require.ErrorIs(t, err, backend.ErrInvalid)
	assert.ErrorContains(t, err, "segment 0: 2 channels, expected channels_per_sample (3)")

	c = a.Copy()
	c.SamplesPerSegment = 0
	err = s.Change(c, false, 0)
	require.ErrorIs(t, err, backend.ErrInvalid)
	assert.ErrorContains(t, err, "RasterScanConfig.ascans_per_bscan: 0")
	after, _ := s.ScanBuffer()
	assert.Equal(t, before, after, "a refused change leaves the scan as it was")
	assert.Equal(t, a, s.Config())

	// a scan without loop that has finished is still "in" its last
	// segment, as vortex has it: a change continues from its end
	c = a.Copy()
	c.Loop = false
	var once RasterScan
	require.NoError(t, once.Initialize(c))
	out, _ := stream(t, &once.SegmentedScan, 1000, 64)
	assert.Less(t, len(out)/2, 1000, "a scan without loop ends")
	n, err := once.Next(nil, make([]float64, 20), 10)
	require.NoError(t, err)
	assert.Equal(t, 0, n, "nothing left after the end")
	require.NoError(t, once.Change(a, false, 0))
	more, _ := stream(t, &once.SegmentedScan, 10, 10)
	require.Len(t, more, 20)
	last := out[len(out)-2:]
	assert.InDelta(t, last[0], more[0], 0.3, "the change continues from where the scan ended")
	assert.InDelta(t, last[1], more[1], 0.3, "the change continues from where the scan ended")
}

// TestBadConfigs: every bad field is refused with its vortex name, and
// nothing is half-configured afterwards.
func TestBadConfigs(t *testing.T) {
	cases := []struct {
		name string
		edit func(c *RasterScanConfig)
		want string
	}{
		{"zero ascans", func(c *RasterScanConfig) { c.SamplesPerSegment = 0 }, "RasterScanConfig.ascans_per_bscan: 0, expected >= 2"},
		{"one ascan", func(c *RasterScanConfig) { c.SetAscansPerBscan(1) }, "RasterScanConfig.ascans_per_bscan: 1"},
		{"negative bscans", func(c *RasterScanConfig) { c.SegmentsPerVolume = -3 }, "RasterScanConfig.bscans_per_volume: -3, expected > 0"},
		{"huge shape", func(c *RasterScanConfig) { c.SetShape([2]int{1 << 20, 1 << 20}) }, "RasterScanConfig.shape"},
		{"nan extent", func(c *RasterScanConfig) { c.VolumeExtent.Max = math.NaN() }, "RasterScanConfig.volume_extent"},
		{"inf bscan extent", func(c *RasterScanConfig) { c.SetBscanExtent(motion.Range{Min: 0, Max: math.Inf(1)}) }, "RasterScanConfig.bscan_extent"},
		{"nan offset", func(c *RasterScanConfig) { c.Offset[1] = math.NaN() }, "RasterScanConfig.offset"},
		{"nan angle", func(c *RasterScanConfig) { c.Angle = math.Inf(-1) }, "RasterScanConfig.angle"},
		{"zero channels", func(c *RasterScanConfig) { c.ChannelsPerSample = 0 }, "RasterScanConfig.channels_per_sample: 0"},
		{"zero rate", func(c *RasterScanConfig) { c.SamplesPerSecond = 0 }, "RasterScanConfig.samples_per_second: 0, expected > 0"},
		{"limits count", func(c *RasterScanConfig) { c.Limits = c.Limits[:1] }, "RasterScanConfig.limits: 1 limits, expected one per channel"},
		{"zero velocity limit", func(c *RasterScanConfig) { c.Limits[1].Velocity = 0 }, "RasterScanConfig.limits[1].velocity: 0"},
		{"inverted position limit", func(c *RasterScanConfig) { c.Limits[0].Position = motion.Range{Min: 1, Max: -1} }, "RasterScanConfig.limits[0].position"},
		{"unknown policy", func(c *RasterScanConfig) { c.InactivePolicy.Kind = 5 }, "RasterScanConfig.inactive_policy: unknown policy kind 5"},
		{"negative inactive samples", func(c *RasterScanConfig) { c.InactivePolicy = FixedLinear(-1, 3) }, "RasterScanConfig.inactive_policy.inter_segment_samples: -1"},
		{"zero fixed dynamic", func(c *RasterScanConfig) { c.InactivePolicy = FixedDynamicLimited(10, 0) }, "RasterScanConfig.inactive_policy.inter_volume_samples: 0"},
		{"unknown warp", func(c *RasterScanConfig) { c.Warp.Kind = 7 }, "RasterScanConfig.warp: unknown warp kind 7"},
		{"infeasible velocity", func(c *RasterScanConfig) { c.SetBscanExtent(motion.Range{Min: -2, Max: 2}) }, "axis 1 violated velocity limit during segment 0 at sample 0"},
		{"infeasible reversed velocity", func(c *RasterScanConfig) { c.SetBscanExtent(motion.Range{Min: 2, Max: -2}) }, "axis 1 violated velocity limit during segment 0"},
		{"infeasible position", func(c *RasterScanConfig) { c.Offset = [2]float64{12.4, 0} }, "axis 0 violated upper position limit during segment 2"},
		{"infeasible low position", func(c *RasterScanConfig) { c.Offset = [2]float64{0, -12.4} }, "axis 1 violated lower position limit during segment 0"},
		{"infeasible acceleration", func(c *RasterScanConfig) { c.Warp = Telecentric(1, 1); c.Limits[1].Acceleration = 1 }, "violated acceleration limit"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := smallRaster()
			c.edit(&cfg)
			err := cfg.Validate()
			if err == nil {
				_, err = cfg.ToSegments()
			}
			var s RasterScan
			err = s.Initialize(cfg)
			require.ErrorIs(t, err, backend.ErrInvalid)
			assert.ErrorContains(t, err, c.want)
			_, err = s.ScanBuffer()
			assert.ErrorIs(t, err, ErrNotInitialized, "a refused config leaves nothing half-configured")
		})
	}
	// a pass too long to allocate is refused before allocating
	big := NewRepeatedRasterScanConfig()
	big.SetShape([2]int{1000, 10})
	big.SetBscanExtent(motion.Range{Min: -0.01, Max: 0.01})
	big.RepeatPeriod, big.RepeatCount = 1, 10
	big.InactivePolicy = FixedLinear(maxInactiveSamples, 0)
	var r RepeatedRasterScan
	assert.ErrorIs(t, r.Initialize(big), backend.ErrTooLarge)
	big.InactivePolicy = FixedLinear(5, 5)
	big.SetShape([2]int{100_000, 100})
	big.RepeatCount = 20
	assert.ErrorIs(t, r.Initialize(big), backend.ErrTooLarge, "repeats beyond the bound")
	// the limit check can be bypassed
	cfg := smallRaster()
	cfg.SetBscanExtent(motion.Range{Min: -2, Max: 2})
	cfg.BypassLimitsCheck = true
	var s RasterScan
	assert.NoError(t, s.Initialize(cfg))
}

func TestBadScanTypeConfigs(t *testing.T) {
	sp := NewSpiralScanConfig()
	sp.BypassLimitsCheck = true
	sp.InactivePolicy = FixedLinear(3, 3)
	spiral := func(f func(*SpiralScanConfig)) error {
		c := sp.Copy()
		f(&c)
		var s SpiralScan
		return s.Initialize(c)
	}
	require.NoError(t, spiral(func(*SpiralScanConfig) {}))
	cases := []struct {
		name string
		err  error
		want string
	}{
		{"spiral negative radius", spiral(func(c *SpiralScanConfig) { c.SetInnerRadius(-1) }), "SpiralScanConfig.inner_radius: -1, expected >= 0"},
		{"spiral inverted radii", spiral(func(c *SpiralScanConfig) { c.SetOuterRadius(0) }), "SpiralScanConfig.outer_radius: 0"},
		{"spiral zero rings", spiral(func(c *SpiralScanConfig) { c.RingsPerSpiral = 0 }), "SpiralScanConfig.rings_per_spiral: 0"},
		{"spiral no velocity", spiral(func(c *SpiralScanConfig) { c.LinearVelocity = 0 }), "SpiralScanConfig.angular_velocity and linear_velocity: both 0"},
		{"spiral swap radius", spiral(func(c *SpiralScanConfig) { c.AngularVelocity = 1 }), "swap radius 20000"},
		{"spiral samples", spiral(func(c *SpiralScanConfig) { c.SamplesPerSegment = 1 }), "SpiralScanConfig.samples_per_segment: 1"},
		{"repeated period", func() error {
			c := NewRepeatedRasterScanConfig()
			c.RepeatPeriod = 3
			var s RepeatedRasterScan
			return s.Initialize(c)
		}(), "RepeatedRasterScanConfig.repeat_period: 3, expected to divide bscans_per_volume (10)"},
		{"repeated radial flags", func() error {
			c := NewRepeatedRadialScanConfig()
			c.RepeatStrategy = RepeatFlags([]marker.Flags{1})
			var s RepeatedRadialScan
			return s.Initialize(c)
		}(), "RepeatedRadialScanConfig.repeat_strategy.flags: 1 flags, expected repeat_count (3)"},
		{"freeform empty", func() error {
			var s FreeformScan
			return s.Initialize(NewFreeformScanConfig())
		}(), "FreeformScanConfig.pattern: no segments"},
		{"freeform one sample no deltas", func() error {
			c := NewFreeformScanConfig()
			c.Pattern = []Segment{{Position: []float64{0, 0}, Channels: 2}}
			var s FreeformScan
			return s.Initialize(c)
		}(), "segment 0: one sample and no entry_delta/exit_delta"},
		{"freeform segment without samples", func() error {
			c := NewFreeformScanConfig()
			c.BypassLimitsCheck = true
			empty, err := NewSegment("pattern[1]", nil, 2, nil, nil, nil)
			if err != nil {
				return err
			}
			c.Pattern = []Segment{{Position: []float64{0, 0, 1, 1}, Channels: 2}, empty}
			if _, err := c.ToSegments(); err != nil {
				return fmt.Errorf("the config holds it (vortex's does): %w", err)
			}
			var s FreeformScan
			return s.Initialize(c)
		}(), "segment 1: no samples (an empty position), expected at least one"},
		{"freeform change to a segment without samples", func() error {
			c := NewFreeformScanConfig()
			c.BypassLimitsCheck = true
			c.Pattern = []Segment{{Position: []float64{0, 0, 1, 1}, Channels: 2}}
			var s FreeformScan
			if err := s.Initialize(c); err != nil {
				return err
			}
			c.Pattern = append(c.Pattern, Segment{Channels: 2})
			return s.Change(c, false, 0)
		}(), "segment 1: no samples"},
		{"freeform nan", func() error {
			c := NewFreeformScanConfig()
			c.Pattern = []Segment{{Position: []float64{0, 0, math.NaN(), 0}, Channels: 2}}
			var s FreeformScan
			return s.Initialize(c)
		}(), "segment 0: position NaN"},
		{"freeform delta length", func() error {
			c := NewFreeformScanConfig()
			c.Pattern = []Segment{{Position: []float64{0, 0, 0, 0}, Channels: 2, EntryDelta: []float64{1}}}
			var s FreeformScan
			return s.Initialize(c)
		}(), "segment 0: entry_delta has 1 values, expected 2"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			require.ErrorIs(t, c.err, backend.ErrInvalid)
			assert.ErrorContains(t, c.err, c.want)
		})
	}
}

func TestUninitializedAndBadNext(t *testing.T) {
	var s RasterScan
	_, err := s.Next(nil, nil, 0)
	assert.ErrorIs(t, err, ErrNotInitialized)
	assert.ErrorIs(t, err, backend.ErrInvalid)
	assert.ErrorIs(t, s.Prepare(), ErrNotInitialized)
	assert.ErrorIs(t, s.Restart(), ErrNotInitialized)
	_, err = s.ScanMarkers()
	assert.ErrorIs(t, err, ErrNotInitialized)

	require.NoError(t, s.Initialize(smallRaster()))
	var ms []marker.Marker
	_, err = s.Next(&ms, make([]float64, 9), 5)
	assert.ErrorContains(t, err, "next: buffer of 9 values for 5 samples, expected at least 10")
	_, err = s.Next(&ms, nil, -1)
	assert.ErrorIs(t, err, backend.ErrInvalid)
	assert.ErrorIs(t, s.PrepareCount(-1), backend.ErrInvalid)
	assert.ErrorContains(t, s.RestartAt(0, []float64{1}, []float64{0, 0}, true), "restart: position and velocity have 1 and 2 values")
}

// TestRestartAt: the stream continues from the given sample and state.
func TestRestartAt(t *testing.T) {
	var s RasterScan
	require.NoError(t, s.Initialize(smallRaster()))
	_, _ = stream(t, &s.SegmentedScan, 100, 33)
	require.NoError(t, s.RestartAt(1000, []float64{0.5, 0.25}, []float64{0, 0}, true))
	out, ms := stream(t, &s.SegmentedScan, 30, 30)
	assert.Equal(t, []float64{0.5, 0.25}, out[:2], "include_start emits the state's own sample")
	require.NotEmpty(t, ms)
	assert.Equal(t, marker.NewInactiveLines(1000), ms[0], "markers count from the restart's sample")
	for _, m := range ms {
		assert.GreaterOrEqual(t, m.Sample, int64(1000))
	}
	require.NoError(t, s.RestartAt(1000, []float64{0.5, 0.25}, []float64{0, 0}, false))
	out2, _ := stream(t, &s.SegmentedScan, 30, 30)
	assert.Equal(t, out[2:4], out2[:2], "without include_start the path starts one sample later")

	require.NoError(t, s.Restart())
	pos, vel, posOK, velOK := s.Last()
	assert.False(t, posOK || velOK, "restart forgets the last samples")
	assert.Nil(t, pos)
	assert.Nil(t, vel)
	out, _ = stream(t, &s.SegmentedScan, 9, 9)
	pos, vel, posOK, velOK = s.Last()
	require.True(t, posOK && velOK)
	assert.Equal(t, out[16:18], pos)
	assert.InDeltaSlice(t, []float64{(out[16] - out[14]) * 1e5, (out[17] - out[15]) * 1e5}, vel, 1e-9)
	_, _ = stream(t, &s.SegmentedScan, 1, 1)
	pos2, vel2, _, _ := s.Last()
	out3, _ := stream(t, &s.SegmentedScan, 0, 1)
	_ = out3
	assert.InDeltaSlice(t, []float64{(pos2[0] - pos[0]) * 1e5, (pos2[1] - pos[1]) * 1e5}, vel2, 1e-9, "one-sample Next keeps the previous sample for the velocity")
}

// TestNextAllocatesNothingAfterPrepare: the streaming path is free of
// allocation once the scan is buffered and the marker slice has room.
func TestNextAllocatesNothingAfterPrepare(t *testing.T) {
	var s RasterScan
	require.NoError(t, s.Initialize(smallRaster()))
	require.NoError(t, s.Prepare())
	buf := make([]float64, 2*37)
	ms := make([]marker.Marker, 0, 1024)
	allocs := testing.AllocsPerRun(200, func() {
		ms = ms[:0]
		if _, err := s.Next(&ms, buf, 37); err != nil {
			panic(err)
		}
	})
	assert.Zero(t, allocs)
}

// TestChangeWhileStreaming: Change from one goroutine while another
// streams (the engine's shape); -race checks the locking, and the stream
// stays continuous.
func TestChangeWhileStreaming(t *testing.T) {
	a := smallRaster()
	b := smallRaster()
	b.Angle = 0.4
	var s RasterScan
	require.NoError(t, s.Initialize(a))
	require.NoError(t, s.Prepare())
	errs := make(chan error, 1)
	var out []float64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		buf := make([]float64, 2*13)
		var ms []marker.Marker
		for range 400 {
			n, err := s.Next(&ms, buf, 13)
			if err != nil {
				errs <- err
				return
			}
			out = append(out, buf[:n*2]...)
		}
		errs <- nil
	}()
	for i := range 50 {
		cfg := a
		if i%2 == 0 {
			cfg = b
		}
		require.NoError(t, s.Change(cfg, i%3 == 0, uint64(i)))
	}
	wg.Wait()
	require.NoError(t, <-errs)
	bound := math.Max(maxStep(t, &s.SegmentedScan, 0), maxStep(t, &s.SegmentedScan, 1)) + 0.1
	for i := 1; i < len(out)/2; i++ {
		for d := range 2 {
			require.LessOrEqual(t, math.Abs(out[i*2+d]-out[(i-1)*2+d]), bound, "jump at sample %d", i)
		}
	}
}

// TestLastIntoMatchesLast: LastInto fills the caller's buffers with what
// Last returns, flags included, at every stage of a stream (nothing
// released, one sample, many), allocating nothing; buffers of the wrong
// length are left alone and reported unknown.
func TestLastIntoMatchesLast(t *testing.T) {
	var s RasterScan
	require.NoError(t, s.Initialize(smallRaster()))
	pos, vel := make([]float64, 2), make([]float64, 2)
	for _, step := range []int{0, 1, 1, 7, 33} {
		if step > 0 {
			_, _ = stream(t, &s.SegmentedScan, step, step)
		}
		wantPos, wantVel, wantPosOK, wantVelOK := s.Last()
		posOK, velOK := s.LastInto(pos, vel)
		require.Equal(t, wantPosOK, posOK, "after %d samples", step)
		require.Equal(t, wantVelOK, velOK, "after %d samples", step)
		if posOK {
			require.Equal(t, wantPos, pos)
		}
		if velOK {
			require.Equal(t, wantVel, vel)
		}
	}
	require.Zero(t, testing.AllocsPerRun(100, func() { s.LastInto(pos, vel) }))
	posOK, velOK := s.LastInto(make([]float64, 3), make([]float64, 1))
	require.False(t, posOK || velOK, "buffers of the wrong length")
}
