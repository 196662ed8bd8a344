package format

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vortexgo/vortexgo/gosrc/backend"
)

func TestConverter(t *testing.T) {
	i8, u16, f32 := converter[int8](), converter[uint16](), converter[float32]()
	cases := []struct {
		in       float64
		i8       int8
		u16      uint16
		f32Equal bool
	}{
		{0.5, 1, 1, true}, {-0.5, -1, 0, true}, {1.5, 2, 2, true}, {2.5, 3, 3, true}, {-2.5, -3, 0, true},
		{127.4, 127, 127, true}, {127.6, 127, 128, true}, {-200, -128, 0, true}, {70000, 127, 65535, true},
		{math.NaN(), 0, 0, false}, {math.Inf(1), 127, 65535, true}, {math.Inf(-1), -128, 0, true},
	}
	for _, c := range cases {
		require.Equal(t, c.i8, i8(c.in), "int8(%v)", c.in)
		require.Equal(t, c.u16, u16(c.in), "uint16(%v)", c.in)
		if c.f32Equal {
			require.Equal(t, float32(c.in), f32(c.in))
		} else {
			require.True(t, math.IsNaN(float64(f32(c.in))))
		}
	}
}

// TestStackMatchesReference checks ExecuteStack against the definition,
// written out plainly: volume[seg][rec][k][c] = cast(scale*block[r][start+k*step][c] + offset).
func TestStackMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	for trial := range 100 {
		records, samples, channels := 1+rng.IntN(12), 2+rng.IntN(10), 1+rng.IntN(3)
		cfg := StackFormatExecutorConfig{}
		depth := samples
		if rng.IntN(2) == 0 {
			start := rng.IntN(samples - 1)
			step := 1 + rng.IntN(3)
			stop := min(samples, start+step+rng.IntN(samples))
			if sl := SimpleSlice(start, stop, step); sl.Count() > 0 {
				cfg.SampleSlice = sl
				depth = sl.Count()
			}
		}
		if rng.IntN(2) == 0 {
			cfg.SampleTransform = LinearTransform(rng.Float64()*4-2, rng.Float64()*50-25)
		}
		e, err := NewStackFormatExecutor(cfg)
		require.NoError(t, err)
		blk := randBlock[float32](rng, records, samples, channels)
		shape := [4]int{1 + rng.IntN(3), records + rng.IntN(4), depth, channels}
		vol := Volume[int8]{Shape: shape, Data: make([]int8, shape[0]*shape[1]*shape[2]*shape[3])}
		count := rng.IntN(records + 1)
		a := copyAct(count, rng.IntN(records-count+1), rng.IntN(shape[0]), 0, rng.IntN(2) == 0)
		a.BufferRecord = rng.IntN(shape[1] - count + 1)
		require.NoError(t, ExecuteStack(e, vol, blk, a), "trial %d", trial)

		start, step := 0, 1
		if cfg.SampleSlice.Simple {
			start, step = cfg.SampleSlice.Start, cfg.SampleSlice.Step
		}
		scale, offset := float32(1), float32(0)
		if cfg.SampleTransform.Linear {
			scale, offset = float32(cfg.SampleTransform.Scale), float32(cfg.SampleTransform.Offset)
		}
		want := make([]int8, len(vol.Data))
		for i := range count {
			rec := a.BufferRecord + i
			if a.Reverse {
				rec = a.BufferRecord + count - 1 - i
			}
			for k := range depth {
				for c := range channels {
					v := float64(scale)*float64(blk.Data[((a.BlockOffset+i)*samples+start+k*step)*channels+c]) + float64(offset)
					want[((a.BufferSegment*shape[1]+rec)*depth+k)*channels+c] = int8(max(-128, min(127, math.Round(float64(float32(v))))))
				}
			}
		}
		require.Equal(t, want, vol.Data, "trial %d: %+v %s", trial, cfg, a)
	}
}

func TestExecutorBadInput(t *testing.T) {
	_, err := NewStackFormatExecutor(StackFormatExecutorConfig{SampleSlice: SimpleSlice(0, 4, 0)})
	require.ErrorIs(t, err, backend.ErrInvalid)
	require.ErrorContains(t, err, "StackFormatExecutorConfig.sample_slice.step: 0")
	_, err = NewStackFormatExecutor(StackFormatExecutorConfig{SampleSlice: SimpleSlice(3, 3, 1)})
	require.ErrorContains(t, err, "StackFormatExecutorConfig.sample_slice.stop: 3, expected > start (3)")
	_, err = NewStackFormatExecutor(StackFormatExecutorConfig{SampleSlice: SimpleSlice(3, 4, 2)})
	require.ErrorContains(t, err, "StackFormatExecutorConfig.sample_slice: SimpleSlice(start=3, stop=4, step=2) keeps no sample")
	_, err = NewStackFormatExecutor(StackFormatExecutorConfig{SampleTransform: LinearTransform(math.NaN(), 0)})
	require.ErrorContains(t, err, "StackFormatExecutorConfig.sample_transform.scale: NaN")
	_, err = NewRadialFormatExecutor(RadialFormatExecutorConfig{RadialShape: [2]int{0, 3}, SegmentRTExtent: [2]Range{{0, 1}, {0, 1}}})
	require.ErrorContains(t, err, "RadialFormatExecutorConfig.radial_segments_per_volume: 0")
	_, err = NewRadialFormatExecutor(RadialFormatExecutorConfig{RadialShape: [2]int{2, 3}, SegmentRTExtent: [2]Range{{0, math.Inf(1)}, {0, 1}}})
	require.ErrorContains(t, err, "RadialFormatExecutorConfig.radial_extent: Range(0, +Inf)")
	_, err = NewRadialFormatExecutor(RadialFormatExecutorConfig{RadialShape: [2]int{2, 3}, SegmentRTExtent: [2]Range{{0, 1}, {1, 1}}})
	require.ErrorContains(t, err, "RadialFormatExecutorConfig.angular_extent: Range(1, 1), expected a nonzero length")
	_, err = NewSpiralFormatExecutor(SpiralFormatExecutorConfig{SegmentExtent: Range{0, 1}, SpiralShape: [2]int{2, 10}})
	require.ErrorContains(t, err, "SpiralFormatExecutorConfig.spiral_velocity: 0")
	_, err = NewSpiralFormatExecutor(SpiralFormatExecutorConfig{SegmentExtent: Range{0, 1}, SpiralShape: [2]int{0, 10}, SpiralVelocity: 1})
	require.ErrorContains(t, err, "SpiralFormatExecutorConfig.rings_per_spiral: 0")
	pc := DefaultPositionFormatExecutorConfig()
	pc.Transform[1][2] = math.NaN()
	_, err = NewPositionFormatExecutor(pc)
	require.ErrorContains(t, err, "PositionFormatExecutorConfig.transform[1][2]: NaN")

	e, err := NewStackFormatExecutor(StackFormatExecutorConfig{SampleSlice: SimpleSlice(0, 8, 2)})
	require.NoError(t, err)
	blk := Block[uint16]{Data: make([]uint16, 4*6), Records: 4, Samples: 6, Channels: 1}
	vol := Volume[uint16]{Data: make([]uint16, 2*4*3), Shape: [4]int{2, 4, 3, 1}}
	for i := range vol.Data {
		vol.Data[i] = 9
	}
	cases := []struct {
		name string
		vol  Volume[uint16]
		blk  Block[uint16]
		a    Action
		msg  string
	}{
		{"slice past the record", vol, blk, copyAct(1, 0, 0, 0, false), "sample_slice.stop: 8, expected <= the block's 6 samples per record"},
		{"block data short", vol, Block[uint16]{Data: make([]uint16, 3), Records: 4, Samples: 8, Channels: 1}, copyAct(1, 0, 0, 0, false), "block: 3 elements for shape (4, 8, 1), expected 32"},
		{"volume data short", Volume[uint16]{Data: make([]uint16, 3), Shape: vol.Shape}, blk, copyAct(1, 0, 0, 0, false), "volume: 3 elements"},
		{"zero shape", Volume[uint16]{Shape: [4]int{0, 4, 3, 1}}, blk, copyAct(1, 0, 0, 0, false), "volume shape[0]: 0"},
		{"negative count", vol, blk, copyAct(-1, 0, 0, 0, false), "count=-1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := ExecuteStack(e, c.vol, c.blk, c.a)
			require.ErrorIs(t, err, backend.ErrInvalid)
			require.ErrorContains(t, err, c.msg)
			for _, v := range vol.Data {
				require.Equal(t, uint16(9), v, "a rejected copy writes nothing")
			}
		})
	}

	p, err := NewPositionFormatExecutor(func() PositionFormatExecutorConfig {
		c := DefaultPositionFormatExecutorConfig()
		c.Channels = [2]int{0, 5}
		return c
	}())
	require.NoError(t, err)
	pv := Volume[uint16]{Data: make([]uint16, 4*4*6), Shape: [4]int{4, 4, 6, 1}}
	pos := Positions{Data: make([]float64, 8), Records: 4, Channels: 2}
	err = FormatPosition(p, pv, pos, pos, blk)
	require.ErrorContains(t, err, "PositionFormatExecutorConfig.channels[1]=5, expected < the positions' 2 channels")
	short := Positions{Data: make([]float64, 6), Records: 3, Channels: 2}
	p2, err := NewPositionFormatExecutor(DefaultPositionFormatExecutorConfig())
	require.NoError(t, err)
	require.ErrorContains(t, FormatPosition(p2, pv, short, short, blk), "3 positions, expected one per A-scan (4)")
}

// wrapPi maps an angle to [-pi, pi).
func wrapPi(a float64) float64 { return a - 2*math.Pi*math.Floor((a+math.Pi)/(2*math.Pi)) }

// TestRadialGeometry checks RadialFormatExecutor against closed-form polar
// geometry: segment k is the line at angle k*pi/K (vortex measures angles
// with atan2(x, y)); a pixel is written exactly when its angle is within
// half a pitch of the line at either end and its signed radius falls on
// the line's records, and it then holds the record nearest its radius.
func TestRadialGeometry(t *testing.T) {
	const K, n, X, Y = 8, 33, 41, 37
	cfg := RadialFormatExecutorConfig{
		VolumeXYExtent:  [2]Range{{-1.1, 1.1}, {-1.05, 1.05}},
		SegmentRTExtent: [2]Range{{-1, 1}, {0, math.Pi}},
		RadialShape:     [2]int{K, n},
	}
	e, err := NewRadialFormatExecutor(cfg)
	require.NoError(t, err)
	seg := Block[float32]{Records: n, Samples: 1, Channels: 1, Data: make([]float32, n)}
	for j := range seg.Data {
		seg.Data[j] = float32(j)
	}
	pitchR, pitchT := 2.0/n, math.Pi/K
	written := 0
	for k := range K {
		vol := Volume[float32]{Shape: [4]int{X, Y, 1, 1}, Data: make([]float32, X*Y)}
		for i := range vol.Data {
			vol.Data[i] = -1
		}
		require.NoError(t, FormatRadial(e, vol, seg, k, 0, false))
		for ix := range X {
			for iy := range Y {
				x, y := -1.1+2.2/X*float64(ix), -1.05+2.1/Y*float64(iy)
				r, th := math.Hypot(x, y), math.Atan2(x, y)
				want, sure := false, true
				var ridx float64
				for end := range 2 {
					rr := r
					d := wrapPi(th - float64(k)*pitchT)
					if end == 1 {
						rr, d = -r, wrapPi(th+math.Pi-float64(k)*pitchT)
					}
					if math.Abs(math.Abs(d)-pitchT/2) < 1e-5 {
						sure = false
					}
					if math.Abs(d) > pitchT/2 {
						continue
					}
					ri := (rr + 1) / pitchR
					if math.Abs(ri-math.Round(ri)) < 1e-4 && (math.Round(ri) == 0 || math.Round(ri) == n) {
						sure = false
					}
					if ri < 0 || ri >= n {
						continue
					}
					want, ridx = true, ri
					break
				}
				if !sure {
					continue
				}
				got := vol.Data[ix*Y+iy]
				require.Equal(t, want, got >= 0, "segment %d pixel (%d, %d): r=%v theta=%v", k, ix, iy, r, th)
				if want {
					written++
					// vortex's weighting leaves the value within one record
					// of the pixel's radius.
					require.InDelta(t, ridx, float64(got), 1.0001, "segment %d pixel (%d, %d)", k, ix, iy)
				}
			}
		}
	}
	require.Greater(t, written, X*Y/4, "the segments cover the disc")
}

// TestSpiralGeometry checks SpiralFormatExecutor against the closed-form
// Archimedean spiral: sample j is at time t_j = t_min + j*pitch, radius
// dr*omega*t/(2*pi), angle omega*t (atan2(x, y)); a pixel holds a sample
// within one pitch of a spiral point at its angle on an adjacent ring.
func TestSpiralGeometry(t *testing.T) {
	const rings, n, X = 4, 400, 48
	omega := 2 * math.Pi
	cfg := SpiralFormatExecutorConfig{
		VolumeXYExtent: [2]Range{{-1, 1}, {-1, 1}}, SegmentExtent: Range{0, 1},
		SpiralShape: [2]int{rings, n}, SpiralVelocity: omega,
	}
	e, err := NewSpiralFormatExecutor(cfg)
	require.NoError(t, err)
	seg := Block[float32]{Records: n, Samples: 1, Channels: 1, Data: make([]float32, n)}
	for j := range seg.Data {
		seg.Data[j] = float32(j)
	}
	vol := Volume[float32]{Shape: [4]int{X, X, 1, 1}, Data: make([]float32, X*X)}
	for i := range vol.Data {
		vol.Data[i] = -1
	}
	require.NoError(t, FormatSpiral(e, vol, seg, 0, 0, false))
	dr := 1.0 / rings
	tMax := 2 * math.Pi * 1 / (dr * omega)
	pitch := tMax / n
	for ix := range X {
		for iy := range X {
			x, y := -1+2.0/X*float64(ix), -1+2.0/X*float64(iy)
			r, th := math.Hypot(x, y), math.Atan2(x, y)
			v := float64(vol.Data[ix*X+iy])
			if r < 1-dr-0.01 && r > 0.05 {
				require.GreaterOrEqual(t, v, 0.0, "pixel (%d, %d) at r=%v inside the spiral is written", ix, iy, r)
			}
			// At the centre the angle is undefined (float32 rounding picks one).
			if v < 0 || r < 0.05 {
				continue
			}
			ts := v * pitch
			rho, phi := dr*omega*ts/(2*math.Pi), omega*ts
			require.LessOrEqual(t, math.Abs(wrapPi(phi-th)), omega*pitch*1.001+1e-6, "pixel (%d, %d): sample %v at angle %v, pixel at %v", ix, iy, v, phi, th)
			require.LessOrEqual(t, math.Abs(rho-r), dr+dr*omega*pitch/(2*math.Pi)+1e-6, "pixel (%d, %d): sample %v at radius %v, pixel at %v", ix, iy, v, rho, r)
		}
	}
}

// TestPositionGeometry: with set(pitch, offset, angle), a position lands at
// floor(R(angle)*diag(pitch)*p + offset); positions outside are dropped.
func TestPositionGeometry(t *testing.T) {
	const X, Y = 9, 7
	for _, angle := range []float64{0, math.Pi / 2, -0.4} {
		cfg := DefaultPositionFormatExecutorConfig()
		cfg.Set([2]float64{4, 3}, [2]float64{4, 3}, angle)
		e, err := NewPositionFormatExecutor(cfg)
		require.NoError(t, err)
		var pos Positions
		var want [][2]int
		for ix := -1; ix <= X; ix++ {
			for iy := -1; iy <= Y; iy++ {
				// Invert the map at the pixel's center: (u, v) = R^-1 ((i+0.5-o)/pitch).
				u, w := (float64(ix)+0.5-4)/4, (float64(iy)+0.5-3)/3
				c, s := math.Cos(angle), math.Sin(angle)
				xg, yg := c*u+s*w, -s*u+c*w
				// R*(xg, yg) = (c*xg - s*yg, s*xg + c*yg) = (u, w).
				pos.Data = append(pos.Data, xg, yg)
				pos.Records++
				want = append(want, [2]int{ix, iy})
			}
		}
		pos.Channels = 2
		seg := Block[uint16]{Records: pos.Records, Samples: 1, Channels: 1, Data: make([]uint16, pos.Records)}
		for j := range seg.Data {
			seg.Data[j] = uint16(j + 1)
		}
		vol := Volume[uint16]{Shape: [4]int{X, Y, 1, 1}, Data: make([]uint16, X*Y)}
		require.NoError(t, FormatPosition(e, vol, pos, Positions{}, seg))
		for j, p := range want {
			inside := p[0] >= 0 && p[0] < X && p[1] >= 0 && p[1] < Y
			if inside {
				require.Equal(t, uint16(j+1), vol.Data[p[0]*Y+p[1]], "angle %v: record %d at pixel %v", angle, j, p)
			}
		}
	}
}

// TestExtentsRefused: vortex's default extents (Range(-inf, inf), an extent
// left unset) and ranges whose length overflows float32 (an infinite pitch,
// every pixel NaN in vortex) are refused naming the field.
func TestExtentsRefused(t *testing.T) {
	inf := math.Inf(1)
	good := RadialFormatExecutorConfig{
		VolumeXYExtent:  [2]Range{{-1, 1}, {-1, 1}},
		SegmentRTExtent: [2]Range{{-1, 1}, {0, math.Pi}},
		RadialShape:     [2]int{4, 8},
	}
	require.NoError(t, good.Validate())
	for _, tc := range []struct {
		field string
		set   func(c *RadialFormatExecutorConfig)
	}{
		{"x_extent", func(c *RadialFormatExecutorConfig) { c.VolumeXYExtent[0] = Range{-inf, inf} }},
		{"y_extent", func(c *RadialFormatExecutorConfig) { c.VolumeXYExtent[1] = Range{-1e308, 1e308} }},
		{"radial_extent", func(c *RadialFormatExecutorConfig) { c.SegmentRTExtent[0] = Range{0, 1e39} }},
		{"angular_extent", func(c *RadialFormatExecutorConfig) { c.SegmentRTExtent[1] = Range{math.NaN(), 1} }},
	} {
		c := good
		tc.set(&c)
		err := c.Validate()
		require.ErrorIs(t, err, backend.ErrInvalid, tc.field)
		require.Contains(t, err.Error(), tc.field)
	}
	sp := SpiralFormatExecutorConfig{
		VolumeXYExtent: [2]Range{{-1, 1}, {-1, 1}}, SegmentExtent: Range{0, 1},
		SpiralShape: [2]int{2, 100}, SpiralVelocity: 1,
	}
	require.NoError(t, sp.Validate())
	sp.VolumeXYExtent[0] = Range{-1e308, 1e308}
	require.ErrorContains(t, sp.Validate(), "x_extent")
	var zero SpiralFormatExecutorConfig // vortex's defaults: unbounded, no shape, no velocity
	require.ErrorIs(t, zero.Validate(), backend.ErrInvalid)
}
