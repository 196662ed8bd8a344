package scan

import (
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/marker"
	"github.com/vortexgo/vortexgo/gosrc/motion"
)

// smallRaster is a raster within the default limits with the linear
// policy (which needs no planner).
func smallRaster() RasterScanConfig {
	c := NewRasterScanConfig()
	c.SegmentExtent = motion.Range{Min: -0.4, Max: 0.4}
	c.SamplesPerSegment, c.SegmentsPerVolume = 12, 4
	c.InactivePolicy = FixedLinear(5, 7)
	return c
}

func TestWarpsForwardInverse(t *testing.T) {
	in := []float64{-2, -0.5, 0, 0.25, 1, 3}
	cases := []struct {
		name string
		w    Warp
		// forward of 1
		one float64
	}{
		{"none", NoWarp(), 1},
		{"angular default", DefaultAngular(), 2},
		{"angular 0.5", Angular(0.5), 0.5},
		{"telecentric default", DefaultTelecentric(), 100 * math.Tan(2*math.Pi/180)},
		{"telecentric 50", Telecentric(50, 0.01), 50 * math.Tan(0.01)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			require.NoError(t, c.w.Validate("warp"))
			fw, back := make([]float64, len(in)), make([]float64, len(in))
			c.w.Forward(in, fw)
			c.w.Inverse(fw, back)
			assert.InDeltaSlice(t, in, back, 1e-12, "inverse(forward(x)) = x")
			c.w.Inverse(in, back)
			c.w.Forward(back, fw)
			assert.InDeltaSlice(t, in, fw, 1e-12, "forward(inverse(x)) = x")
			one := []float64{1}
			c.w.Forward(one, one) // in place
			assert.InDelta(t, c.one, one[0], 1e-15)
		})
	}
	assert.ErrorIs(t, Angular(0).Validate("RasterScanConfig.warp"), backend.ErrInvalid)
	assert.ErrorContains(t, Telecentric(-1, 1).Validate("RasterScanConfig.warp"), "RasterScanConfig.warp.galvo_lens_spacing")
	assert.ErrorContains(t, Warp{Kind: 9}.Validate("RasterScanConfig.warp"), "unknown warp kind 9")
	assert.Equal(t, "Telecentric(galvo_lens_spacing=100, scale=0.03490658503988659)", DefaultTelecentric().String())
}

func TestDefaultsAreVortexs(t *testing.T) {
	r := NewRasterScanConfig()
	assert.Equal(t, [2]int{10, 500}, r.Shape())
	assert.Equal(t, [2]motion.Range{{Min: -1, Max: 1}, {Min: -2, Max: 2}}, r.Extents())
	assert.Equal(t, 500, r.AscansPerBscan())
	assert.Equal(t, 10, r.BscansPerVolume())
	assert.Equal(t, motion.Range{Min: -2, Max: 2}, r.BscanExtent())
	assert.Equal(t, marker.AllFlags, r.Flags)
	assert.Equal(t, 2, r.ChannelsPerSample)
	assert.Equal(t, 100_000, r.SamplesPerSecond)
	assert.Equal(t, 1e-5, r.SamplingInterval())
	assert.True(t, r.Loop)
	assert.Equal(t, []motion.Limits{ThorLabsGVS5mm, ThorLabsGVS5mm}, r.Limits)
	assert.Equal(t, MinimumDynamicLimited(), r.InactivePolicy)
	assert.Equal(t, NoWarp(), r.Warp)

	rr := NewRepeatedRasterScanConfig()
	assert.Equal(t, 2, rr.RepeatPeriod)
	assert.Equal(t, 3, rr.RepeatCount)
	assert.Equal(t, RepeatPack(marker.AllFlags), rr.RepeatStrategy)

	rad := NewRadialScanConfig()
	assert.Equal(t, [2]int{10, 500}, rad.Shape())
	assert.InDelta(t, 2.827433388230814, rad.VolumeExtent.Max, 1e-15)

	sp := NewSpiralScanConfig()
	assert.Equal(t, [2]int{1, 314}, sp.Shape())
	assert.Equal(t, 20000.0, sp.LinearVelocity)
	assert.Equal(t, 0.0, sp.AngularVelocity)
	assert.Equal(t, 10, sp.RingsPerSpiral)
	assert.InDelta(t, 0.2, sp.RadialPitch(), 1e-15)

	p := FixedLinear(100, 100)
	p.SetSamples(3)
	assert.Equal(t, FixedLinear(3, 3), p)
}

func TestCopyIsDeep(t *testing.T) {
	c := NewRepeatedRasterScanConfig()
	c.RepeatStrategy = RepeatFlags([]marker.Flags{1, 2, 4})
	d := c.Copy()
	d.Limits[0].Velocity = 1
	d.RepeatStrategy.FlagList[0] = 99
	assert.Equal(t, ThorLabsGVS5mm, c.Limits[0])
	assert.Equal(t, marker.Flags(1), c.RepeatStrategy.FlagList[0])

	f := NewFreeformScanConfig()
	segs, err := NewSequentialPattern().ToPattern([][]float64{{0, 0, 0.01, 0}}, 2)
	require.NoError(t, err)
	f.Pattern = segs
	g := f.Copy()
	g.Pattern[0].Position[0] = 5
	assert.Equal(t, 0.0, f.Pattern[0].Position[0])

	var s RasterScan
	require.NoError(t, s.Initialize(smallRaster()))
	got := s.Config()
	got.Limits[0].Velocity = 1
	assert.Equal(t, ThorLabsGVS5mm, s.Config().Limits[0], "Config() is a copy")
}

// waypointList is a volume of n segments of m samples each, distinct
// values so that order and direction are visible.
func waypointList(n, m int) [][]float64 {
	out := make([][]float64, n)
	for i := range out {
		for j := range m {
			out[i] = append(out[i], float64(i), float64(j))
		}
	}
	return out
}

func TestSequentialPattern(t *testing.T) {
	const n, m = 4, 5
	for _, bs := range []bool{false, true} {
		for _, bv := range []bool{false, true} {
			t.Run(fmt.Sprintf("segments=%t volumes=%t", bs, bv), func(t *testing.T) {
				p := SequentialPattern{BidirectionalSegments: bs, BidirectionalVolumes: bv, Flags: 0x6}
				segs, err := p.ToPattern(waypointList(n, m), 2)
				require.NoError(t, err)
				want := n
				if bv {
					want = 2 * n
				}
				require.Len(t, segs, want)
				seen := map[int64]int{}
				for dst, s := range segs {
					require.Equal(t, m, s.Len())
					var sb marker.Marker
					for _, mk := range s.Markers {
						assert.Equal(t, marker.Flags(0x6), mk.Flags)
						assert.Equal(t, int64(0), mk.Sample)
						if mk.Kind == marker.SegmentBoundary {
							sb = mk
						}
					}
					require.Equal(t, marker.SegmentBoundary, sb.Kind)
					assert.Equal(t, int64(dst%n), sb.Sequence)
					assert.Equal(t, bs && dst%2 == 1, sb.Reversed, "segment %d direction", dst)
					// the segment holds source row Index, in the marked direction
					src := float64(sb.Index)
					first, _ := s.EntryPosition()
					assert.Equal(t, src, first[0])
					if sb.Reversed {
						assert.Equal(t, float64(m-1), first[1])
					} else {
						assert.Equal(t, 0.0, first[1])
					}
					seen[sb.Index]++
					vb := 0
					for _, mk := range s.Markers {
						if mk.Kind == marker.VolumeBoundary {
							vb++
							assert.Equal(t, n, mk.CountHint)
							assert.Equal(t, dst == n, mk.Reversed)
						}
					}
					assert.Equal(t, dst == 0 || (bv && dst == n), vb == 1, "volume boundary on segment %d", dst)
				}
				for i := range n {
					assert.Equal(t, want/n, seen[int64(i)], "segment %d visited once per volume", i)
				}
			})
		}
	}
}

func TestRepeatedPattern(t *testing.T) {
	const n, m = 6, 4
	cases := []struct {
		name   string
		p      RepeatedPattern
		logErr string
	}{
		{"pack", RepeatedPattern{RepeatPeriod: 2, RepeatCount: 3, RepeatStrategy: RepeatPack(marker.AllFlags)}, ""},
		{"order", RepeatedPattern{RepeatPeriod: 3, RepeatCount: 2, RepeatStrategy: RepeatOrder(0x2)}, ""},
		{"flags", RepeatedPattern{RepeatPeriod: 1, RepeatCount: 3, RepeatStrategy: RepeatFlags([]marker.Flags{1, 2, 4})}, ""},
		{"pack bidirectional even", RepeatedPattern{RepeatPeriod: 2, RepeatCount: 2, RepeatStrategy: RepeatPack(marker.AllFlags), BidirectionalSegments: true}, ""},
		{"order bidirectional odd", RepeatedPattern{RepeatPeriod: 3, RepeatCount: 2, RepeatStrategy: RepeatOrder(marker.AllFlags), BidirectionalSegments: true}, ""},
		{"period not dividing", RepeatedPattern{RepeatPeriod: 4, RepeatCount: 2, RepeatStrategy: RepeatPack(marker.AllFlags)}, "repeat_period: 4, expected to divide"},
		{"flags count", RepeatedPattern{RepeatPeriod: 2, RepeatCount: 2, RepeatStrategy: RepeatFlags([]marker.Flags{1})}, "repeat_strategy.flags: 1 flags, expected repeat_count (2)"},
		{"zero period", RepeatedPattern{RepeatPeriod: 0, RepeatCount: 2}, "repeat_period: 0, expected > 0"},
		{"zero count", RepeatedPattern{RepeatPeriod: 1, RepeatCount: 0}, "repeat_count: 0, expected > 0"},
		{"unknown strategy", RepeatedPattern{RepeatPeriod: 1, RepeatCount: 1, RepeatStrategy: RepeatStrategy{Kind: 7}}, "unknown kind 7"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			segs, err := c.p.ToPattern(waypointList(n, m), 2)
			if c.logErr != "" {
				require.ErrorIs(t, err, backend.ErrInvalid)
				assert.ErrorContains(t, err, c.logErr)
				return
			}
			require.NoError(t, err)
			require.Len(t, segs, n*c.p.RepeatCount)
			logical := map[int64]int{}
			executed := map[float64]int{}
			for dst, s := range segs {
				require.Equal(t, m, s.Len())
				sb := s.Markers[len(s.Markers)-1]
				require.Equal(t, marker.SegmentBoundary, sb.Kind)
				assert.Equal(t, int64(dst), sb.Sequence)
				assert.Equal(t, c.p.BidirectionalSegments && dst%2 == 1, sb.Reversed)
				first, _ := s.EntryPosition()
				executed[first[0]]++
				// execution order: groups of period, repeated count times
				set, rest := dst/(c.p.RepeatPeriod*c.p.RepeatCount), dst%(c.p.RepeatPeriod*c.p.RepeatCount)
				rep, off := rest/c.p.RepeatPeriod, rest%c.p.RepeatPeriod
				src := set*c.p.RepeatPeriod + off
				assert.Equal(t, float64(src), first[0], "segment %d executes source %d", dst, src)
				switch c.p.RepeatStrategy.Kind {
				case RepeatOrderKind:
					assert.Equal(t, int64(dst), sb.Index)
				case RepeatPackKind:
					assert.Equal(t, int64(src*c.p.RepeatCount+rep), sb.Index)
				case RepeatFlagsKind:
					assert.Equal(t, int64(src), sb.Index)
					assert.Equal(t, c.p.RepeatStrategy.FlagList[rep], sb.Flags)
				}
				logical[sb.Index]++
			}
			for i := range n {
				assert.Equal(t, c.p.RepeatCount, executed[float64(i)], "source %d executed repeat_count times", i)
			}
			if c.p.RepeatStrategy.Kind != RepeatFlagsKind {
				assert.Len(t, logical, n*c.p.RepeatCount, "every output slot filled once")
			}
		})
	}
}

// stream is n samples of s in chunks (cycling through sizes).
func stream(t *testing.T, s *SegmentedScan, n int, sizes ...int) ([]float64, []marker.Marker) {
	t.Helper()
	ch := s.Channels()
	out := make([]float64, 0, n*ch)
	var ms []marker.Marker
	for k := 0; len(out) < n*ch; k++ {
		c := min(sizes[k%len(sizes)], n-len(out)/ch)
		buf := make([]float64, c*ch)
		got, err := s.Next(&ms, buf, c)
		require.NoError(t, err)
		out = append(out, buf[:got*ch]...)
		if got < c {
			break
		}
	}
	return out, ms
}

// patterns is a table of FixedLinear scans of every type and option.
func patterns(t *testing.T) map[string]func() (*SegmentedScan, error) {
	t.Helper()
	raster := func(f func(*RasterScanConfig)) func() (*SegmentedScan, error) {
		return func() (*SegmentedScan, error) {
			c := smallRaster()
			f(&c)
			var s RasterScan
			return &s.SegmentedScan, s.Initialize(c)
		}
	}
	repeated := func(f func(*RepeatedRasterScanConfig)) func() (*SegmentedScan, error) {
		return func() (*SegmentedScan, error) {
			c := NewRepeatedRasterScanConfig()
			c.SegmentExtent = motion.Range{Min: -0.4, Max: 0.4}
			c.SamplesPerSegment, c.SegmentsPerVolume = 12, 4
			c.InactivePolicy = FixedLinear(5, 7)
			f(&c)
			var s RepeatedRasterScan
			return &s.SegmentedScan, s.Initialize(c)
		}
	}
	radial := func(f func(*RadialScanConfig)) func() (*SegmentedScan, error) {
		return func() (*SegmentedScan, error) {
			c := NewRadialScanConfig()
			c.SegmentExtent = motion.Range{Min: -0.4, Max: 0.4}
			c.SamplesPerSegment = 12
			c.SetHalfEvenlySpaced(4)
			c.InactivePolicy = FixedLinear(3, 9)
			f(&c)
			var s RadialScan
			return &s.SegmentedScan, s.Initialize(c)
		}
	}
	return map[string]func() (*SegmentedScan, error){
		"raster":               raster(func(*RasterScanConfig) {}),
		"raster bidir":         raster(func(c *RasterScanConfig) { c.BidirectionalSegments = true }),
		"raster bidir volumes": raster(func(c *RasterScanConfig) { c.BidirectionalVolumes, c.BidirectionalSegments = true, true }),
		"raster no loop":       raster(func(c *RasterScanConfig) { c.Loop = false }),
		"raster zero inactive": raster(func(c *RasterScanConfig) { c.InactivePolicy = FixedLinear(0, 0) }),
		"repeated pack":        repeated(func(*RepeatedRasterScanConfig) {}),
		"repeated order bidir": repeated(func(c *RepeatedRasterScanConfig) {
			c.RepeatStrategy, c.BidirectionalSegments = RepeatOrder(marker.AllFlags), true
		}),
		"radial":       radial(func(*RadialScanConfig) {}),
		"radial bidir": radial(func(c *RadialScanConfig) { c.BidirectionalSegments = true }),
		"spiral": func() (*SegmentedScan, error) {
			c := NewSpiralScanConfig()
			c.VolumeExtent = motion.Range{Min: 0, Max: 0.2}
			c.RingsPerSpiral = 3
			c.SetIsotropic(100_000)
			c.SegmentsPerVolume = 2
			c.BypassLimitsCheck = true
			c.InactivePolicy = FixedLinear(4, 4)
			var s SpiralScan
			return &s.SegmentedScan, s.Initialize(c)
		},
	}
}

// TestNextChunksEqualWhole: whatever the chunk sizes, Next streams the
// same samples and markers; after the path in, the stream is the scan
// buffer repeated (or played once without loop).
func TestNextChunksEqualWhole(t *testing.T) {
	for name, mk := range patterns(t) {
		t.Run(name, func(t *testing.T) {
			s, err := mk()
			require.NoError(t, err)
			pass, err := s.ScanBuffer()
			require.NoError(t, err)
			passMarkers, err := s.ScanMarkers()
			require.NoError(t, err)
			n := len(pass)/2*3 + 50
			s, _ = mk()
			whole, wholeM := stream(t, s, n, n)
			for _, sizes := range [][]int{{1}, {7}, {64, 3, 1}, {1000}} {
				s, _ = mk()
				got, gotM := stream(t, s, n, sizes...)
				require.Equal(t, whole, got, "chunks %v", sizes)
				require.Equal(t, wholeM, gotM, "chunks %v", sizes)
			}
			// the path in ends where the scan buffer's first pass starts
			require.NotEmpty(t, wholeM)
			in := int64(0)
			if wholeM[0].Kind == marker.InactiveLines && wholeM[0].Sample == 0 {
				for _, m := range wholeM {
					if m.Kind == marker.ActiveLines {
						in = m.Sample
						break
					}
				}
			}
			cfgLoop := s.cfg.Loop
			rows := int64(len(pass) / 2)
			for i := in; i < int64(len(whole)/2); i++ {
				k := (i - in) % rows
				if !cfgLoop && i-in >= rows {
					t.Fatalf("a scan without loop streamed past its pass")
				}
				require.Equal(t, pass[k*2:k*2+2], whole[i*2:i*2+2], "sample %d", i)
			}
			// markers: the pass's markers, shifted by in + k*rows each loop
			var want []marker.Marker
			for k := int64(0); ; k++ {
				done := false
				for _, m := range passMarkers {
					m.Sample += in + k*rows
					if m.Sample >= int64(len(whole)/2) {
						done = true
						break
					}
					want = append(want, m)
				}
				if done || !cfgLoop {
					break
				}
			}
			var got []marker.Marker
			for _, m := range wholeM {
				if m.Sample >= in {
					got = append(got, m)
				}
			}
			assert.Equal(t, want, got)
			if !cfgLoop {
				assert.Equal(t, int64(len(whole)/2), in+rows, "a scan without loop ends after one pass")
			}
		})
	}
}

// TestMarkersAtRightSamples: every SegmentBoundary sits on the sample where
// its segment's positions start, every segment runs record_count_hint
// samples before the next InactiveLines, and the counts match the pattern.
func TestMarkersAtRightSamples(t *testing.T) {
	for name, mk := range patterns(t) {
		t.Run(name, func(t *testing.T) {
			s, err := mk()
			require.NoError(t, err)
			pass, err := s.ScanBuffer()
			require.NoError(t, err)
			ms, err := s.ScanMarkers()
			require.NoError(t, err)
			segs := s.ScanSegments()
			var bounds []marker.Marker
			for _, m := range ms {
				if m.Kind == marker.SegmentBoundary {
					bounds = append(bounds, m)
				}
			}
			require.Len(t, bounds, len(segs), "one SegmentBoundary per segment")
			for i, b := range bounds {
				seg := segs[i]
				require.Equal(t, seg.Len(), b.CountHint)
				for j := range seg.Len() {
					require.Equal(t, seg.Row(j), pass[(int(b.Sample)+j)*2:(int(b.Sample)+j)*2+2], "segment %d sample %d", i, j)
				}
				// the next marker of another kind than the boundaries is
				// the InactiveLines at the segment's end (or none at the end)
				for _, m := range ms {
					if m.Sample > b.Sample && (m.Kind == marker.InactiveLines || m.Kind == marker.SegmentBoundary) {
						if m.Kind == marker.InactiveLines {
							assert.Equal(t, b.Sample+int64(seg.Len()), m.Sample, "segment %d length", i)
						}
						break
					}
				}
			}
			vols := 0
			for _, m := range ms {
				if m.Kind == marker.VolumeBoundary {
					vols++
				}
			}
			assert.GreaterOrEqual(t, vols, 1)
		})
	}
}

// TestActiveLimitsAndContinuity: the whole stream stays inside the
// position limits, the active parts inside the velocity and acceleration
// limits, and no step is larger than the longest step of the straight
// inactive paths or of the segments.
func TestActiveLimitsAndContinuity(t *testing.T) {
	for name, mk := range patterns(t) {
		t.Run(name, func(t *testing.T) {
			s, err := mk()
			require.NoError(t, err)
			pass, err := s.ScanBuffer()
			require.NoError(t, err)
			s, _ = mk()
			n := len(pass)/2*2 + 30
			out, ms := stream(t, s, n, 17)
			checkStream(t, s, out, ms)
		})
	}
}

// checkStream checks positions against the limits everywhere, velocity
// and acceleration within the active lines, and bounds every step.
func checkStream(t *testing.T, s *SegmentedScan, out []float64, ms []marker.Marker) {
	t.Helper()
	ch, cfg := s.ch, s.cfg
	n := len(out) / ch
	// run[i]: sample i and the one before it belong to the same active
	// segment (limits hold there; between segments the policy decides)
	run := make([]bool, n)
	on, k := false, 0
	for i := range n {
		start := false
		for k < len(ms) && ms[k].Sample <= int64(i) {
			switch ms[k].Kind {
			case marker.ActiveLines:
				on = true
			case marker.InactiveLines:
				on = false
			case marker.SegmentBoundary:
				start = ms[k].Sample == int64(i)
			}
			k++
		}
		run[i] = on && !start && i > 0 && !cfg.BypassLimitsCheck
	}
	sps := float64(cfg.SamplesPerSecond)
	for i := range n {
		for d := range ch {
			l := cfg.Limits[d]
			p := out[i*ch+d]
			require.True(t, l.Position.Contains(p), "sample %d axis %d: %v outside %v", i, d, p, l.Position)
			if run[i] {
				v := (p - out[(i-1)*ch+d]) * sps
				require.LessOrEqual(t, math.Abs(v), l.Velocity*(1+1e-12), "active velocity at sample %d axis %d", i, d)
			}
			if run[i] && run[i-1] {
				a := (p - 2*out[(i-1)*ch+d] + out[(i-2)*ch+d]) * sps * sps
				require.LessOrEqual(t, math.Abs(a), l.Acceleration*(1+1e-9), "active acceleration at sample %d axis %d", i, d)
			}
			if i >= 1 {
				step := math.Abs(p - out[(i-1)*ch+d])
				require.LessOrEqual(t, step, maxStep(t, s, d)+1e-12, "step at sample %d axis %d: a discontinuity", i, d)
			}
		}
	}
}

// maxStep bounds a continuous FixedLinear stream's step on axis d: the
// largest step inside a segment, or the longest straight path (across the
// whole scan's span) divided into its steps.
func maxStep(t *testing.T, s *SegmentedScan, d int) float64 {
	t.Helper()
	lo, hi, step := math.Inf(1), math.Inf(-1), 0.0
	for _, seg := range s.segments {
		for j := range seg.Len() {
			p := seg.Row(j)[d]
			lo, hi = math.Min(lo, p), math.Max(hi, p)
			if j > 0 {
				step = math.Max(step, math.Abs(p-seg.Row(j - 1)[d]))
			}
		}
	}
	lo, hi = math.Min(lo, 0), math.Max(hi, 0) // the path in starts at the origin
	p := s.cfg.InactivePolicy
	steps := float64(min(p.InterSegmentSamples, p.InterVolumeSamples) + 1)
	return math.Max(step, (hi-lo)/steps)
}

// BenchmarkNext streams a prepared default-size raster (500 x 10, linear
// policy) in blocks of 1,000 samples, the engine's hot path.
func BenchmarkNext(b *testing.B) {
	c := NewRasterScanConfig()
	c.InactivePolicy = FixedLinear(100, 100)
	var s RasterScan
	require.NoError(b, s.Initialize(c))
	require.NoError(b, s.Prepare())
	buf := make([]float64, 2*1000)
	ms := make([]marker.Marker, 0, 256)
	b.ReportAllocs()
	b.SetBytes(int64(len(buf) * 8))
	for b.Loop() {
		ms = ms[:0]
		if _, err := s.Next(&ms, buf, 1000); err != nil {
			b.Fatal(err)
		}
	}
}
