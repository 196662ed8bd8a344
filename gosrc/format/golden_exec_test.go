package format

import (
	"testing"

	"github.com/stretchr/testify/require"
)

type goldenCall struct {
	Segment      [][]float64 `json:"segment"`
	SegmentIndex int         `json:"segment_index"`
	RecordIndex  int         `json:"record_index"`
	Reverse      bool        `json:"reverse"`
}

type goldenExecutors struct {
	Radial []struct {
		InDtype       string        `json:"in_dtype"`
		OutDtype      string        `json:"out_dtype"`
		Transform     []float64     `json:"transform"`
		XExtent       [2]float64    `json:"x_extent"`
		YExtent       [2]float64    `json:"y_extent"`
		RadialExtent  [2]float64    `json:"radial_extent"`
		AngularExtent [2]float64    `json:"angular_extent"`
		RadialShape   [2]int        `json:"radial_shape"`
		Shape         [3]int        `json:"shape"`
		Calls         []goldenCall  `json:"calls"`
		Volume        [][][]float64 `json:"volume"`
	} `json:"radial"`
	Spiral []struct {
		XExtent        [2]float64    `json:"x_extent"`
		YExtent        [2]float64    `json:"y_extent"`
		RadialExtent   [2]float64    `json:"radial_extent"`
		SpiralShape    [2]int        `json:"spiral_shape"`
		SpiralVelocity float64       `json:"spiral_velocity"`
		Shape          [3]int        `json:"shape"`
		Calls          []goldenCall  `json:"calls"`
		Volume         [][][]float64 `json:"volume"`
	} `json:"spiral"`
	Position []struct {
		UseTarget bool          `json:"use_target_position"`
		Transform [2][3]float64 `json:"transform"`
		Channels  [2]int        `json:"channels"`
		Shape     [3]int        `json:"shape"`
		Target    [][]float64   `json:"target"`
		Actual    [][]float64   `json:"actual"`
		Segment   [][]float64   `json:"segment"`
		Volume    [][][]float64 `json:"volume"`
	} `json:"position"`
}

func blockOf[T Element](rows [][]float64) Block[T] {
	b := Block[T]{Records: len(rows), Channels: 1}
	if len(rows) > 0 {
		b.Samples = len(rows[0])
	}
	for _, r := range rows {
		for _, v := range r {
			b.Data = append(b.Data, T(v))
		}
	}
	return b
}

func positionsOf(rows [][]float64) Positions {
	p := Positions{Records: len(rows), Channels: len(rows[0])}
	for _, r := range rows {
		p.Data = append(p.Data, r...)
	}
	return p
}

func flat3(v [][][]float64) []float64 {
	var out []float64
	for _, a := range v {
		for _, b := range a {
			out = append(out, b...)
		}
	}
	return out
}

func asFloat[T Element](d []T) []float64 {
	out := make([]float64, len(d))
	for i, v := range d {
		out[i] = float64(v)
	}
	return out
}

// requireVolume compares with vortex's volume. Geometry decisions (which
// record a pixel takes) come from float32 arithmetic whose last bit may
// differ between CUDA's libm and Go's, so a handful of pixels on a
// boundary may legitimately differ; everything else must be equal.
func requireVolume(t *testing.T, want, got []float64, shape [3]int, maxPixels int) {
	t.Helper()
	require.Len(t, got, len(want))
	bad := 0
	for p := 0; p < shape[0]*shape[1]; p++ {
		for z := 0; z < shape[2]; z++ {
			if want[p*shape[2]+z] != got[p*shape[2]+z] {
				bad++
				t.Logf("pixel (%d, %d) sample %d: vortex %v, ours %v", p/shape[1], p%shape[1], z, want[p*shape[2]+z], got[p*shape[2]+z])
				break
			}
		}
	}
	require.LessOrEqual(t, bad, maxPixels, "pixels differing from vortex")
}

func TestGoldenRadial(t *testing.T) {
	var g goldenExecutors
	loadGolden(t, "format_executors.json", &g)
	require.NotEmpty(t, g.Radial)
	for _, c := range g.Radial {
		t.Run(c.InDtype+"_"+c.OutDtype, func(t *testing.T) {
			cfg := RadialFormatExecutorConfig{
				VolumeXYExtent:  [2]Range{{c.XExtent[0], c.XExtent[1]}, {c.YExtent[0], c.YExtent[1]}},
				SegmentRTExtent: [2]Range{{c.RadialExtent[0], c.RadialExtent[1]}, {c.AngularExtent[0], c.AngularExtent[1]}},
				RadialShape:     c.RadialShape,
			}
			if c.Transform != nil {
				cfg.SampleTransform = LinearTransform(c.Transform[0], c.Transform[1])
			}
			e, err := NewRadialFormatExecutor(cfg)
			require.NoError(t, err)
			shape := [4]int{c.Shape[0], c.Shape[1], c.Shape[2], 1}
			n := c.Shape[0] * c.Shape[1] * c.Shape[2]
			var got []float64
			switch c.InDtype + ">" + c.OutDtype {
			case "uint16>uint16":
				vol := Volume[uint16]{Data: make([]uint16, n), Shape: shape}
				for _, call := range c.Calls {
					require.NoError(t, FormatRadial(e, vol, blockOf[uint16](call.Segment), call.SegmentIndex, call.RecordIndex, call.Reverse))
				}
				got = asFloat(vol.Data)
			case "float32>int8":
				vol := Volume[int8]{Data: make([]int8, n), Shape: shape}
				for _, call := range c.Calls {
					require.NoError(t, FormatRadial(e, vol, blockOf[float32](call.Segment), call.SegmentIndex, call.RecordIndex, call.Reverse))
				}
				got = asFloat(vol.Data)
			default:
				t.Fatalf("dtypes %s > %s", c.InDtype, c.OutDtype)
			}
			requireVolume(t, flat3(c.Volume), got, c.Shape, 0)
		})
	}
}

func TestGoldenSpiral(t *testing.T) {
	var g goldenExecutors
	loadGolden(t, "format_executors.json", &g)
	require.NotEmpty(t, g.Spiral)
	for _, c := range g.Spiral {
		cfg := SpiralFormatExecutorConfig{
			VolumeXYExtent: [2]Range{{c.XExtent[0], c.XExtent[1]}, {c.YExtent[0], c.YExtent[1]}},
			SegmentExtent:  Range{c.RadialExtent[0], c.RadialExtent[1]},
			SpiralShape:    c.SpiralShape,
			SpiralVelocity: c.SpiralVelocity,
		}
		e, err := NewSpiralFormatExecutor(cfg)
		require.NoError(t, err)
		shape := [4]int{c.Shape[0], c.Shape[1], c.Shape[2], 1}
		vol := Volume[uint16]{Data: make([]uint16, c.Shape[0]*c.Shape[1]*c.Shape[2]), Shape: shape}
		for _, call := range c.Calls {
			require.NoError(t, FormatSpiral(e, vol, blockOf[uint16](call.Segment), call.SegmentIndex, call.RecordIndex, call.Reverse))
		}
		requireVolume(t, flat3(c.Volume), asFloat(vol.Data), c.Shape, 0)
	}
}

func TestGoldenPosition(t *testing.T) {
	var g goldenExecutors
	loadGolden(t, "format_executors.json", &g)
	require.NotEmpty(t, g.Position)
	for _, c := range g.Position {
		cfg := DefaultPositionFormatExecutorConfig()
		cfg.Transform = c.Transform
		cfg.UseTargetPosition = c.UseTarget
		cfg.Channels = c.Channels
		e, err := NewPositionFormatExecutor(cfg)
		require.NoError(t, err)
		shape := [4]int{c.Shape[0], c.Shape[1], c.Shape[2], 1}
		vol := Volume[uint16]{Data: make([]uint16, c.Shape[0]*c.Shape[1]*c.Shape[2]), Shape: shape}
		target, actual := positionsOf(c.Target), positionsOf(c.Actual)
		seg := blockOf[uint16](c.Segment)
		require.NoError(t, FormatPosition(e, vol, target, actual, seg))
		// Where several A-scans land on one pixel, vortex's threads race
		// (even sample by sample); ours takes the last. Each of vortex's
		// samples must come from one of the A-scans that land there, and
		// every other pixel must be equal.
		pos := actual
		if c.UseTarget {
			pos = target
		}
		p, err := e.params(shape, seg.Records, seg.Samples, 1, pos.Records, pos.Channels)
		require.NoError(t, err)
		hits := map[[2]int64][]int{}
		for j := range seg.Records {
			ix, iy := positionPixel(&p.m, pos.Data[j*pos.Channels+c.Channels[0]], pos.Data[j*pos.Channels+c.Channels[1]])
			hits[[2]int64{ix, iy}] = append(hits[[2]int64{ix, iy}], j)
		}
		want := flat3(c.Volume)
		z := c.Shape[2]
		for i, v := range vol.Data {
			px, py, k := i/z/c.Shape[1], i/z%c.Shape[1], i%z
			recs := hits[[2]int64{int64(px), int64(py)}]
			if len(recs) <= 1 {
				require.Equal(t, want[i], float64(v), "pixel (%d, %d) sample %d", px, py, k)
				continue
			}
			require.Equal(t, float64(seg.Data[recs[len(recs)-1]*z+k]), float64(v), "ours takes the last A-scan")
			var from []float64
			for _, j := range recs {
				from = append(from, float64(seg.Data[j*z+k]))
			}
			require.Contains(t, from, want[i], "vortex's pixel (%d, %d) sample %d", px, py, k)
		}
	}
}
