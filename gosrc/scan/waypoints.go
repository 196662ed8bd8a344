package scan

import (
	"math"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/motion"
)

// maxScanElements bounds every waveform this package allocates (2^27
// float64 = 1 GiB): sizes come from user configs and are checked before
// allocating, so an absurd config is an error rather than an OOM kill.
const maxScanElements = 1 << 27

// Waypoints is vortex's (segments, samples, channels) waypoint array,
// row-major: segment i, sample j, channel c is Data[(i*Samples+j)*Channels+c].
type Waypoints struct {
	Data                        []float64
	Segments, Samples, Channels int
}

// Segment is segment i's samples (Samples x Channels, row-major), aliasing Data.
func (w Waypoints) Segment(i int) []float64 {
	n := w.Samples * w.Channels
	return w.Data[i*n : (i+1)*n]
}

// List is the segments as a list, the form a pattern takes.
func (w Waypoints) List() [][]float64 {
	out := make([][]float64, w.Segments)
	for i := range out {
		out[i] = w.Segment(i)
	}
	return out
}

// XYWaypoints is vortex's XYWaypoints: a 2D grid of waypoints given by its
// origin (Offset), rotation about it (Angle, radians, counter-clockwise),
// extents and shape, and a Warp. vortex's aliases (extents, shape,
// bscan_extent, segment_extent, ascans_per_bscan, bscans_per_volume) are
// methods.
type XYWaypoints struct {
	// Offset is the scan origin (x, y).
	Offset [2]float64
	// Angle rotates the scan about Offset, in radians.
	Angle float64
	// VolumeExtent is extents[0]: the range crossed from segment to segment.
	VolumeExtent motion.Range
	// SegmentExtent is extents[1] (bscan_extent): the range each segment crosses.
	SegmentExtent motion.Range
	// SegmentsPerVolume is shape[0] (bscans_per_volume).
	SegmentsPerVolume int
	// SamplesPerSegment is shape[1] (ascans_per_bscan).
	SamplesPerSegment int
	// Warp maps the waypoints into galvo coordinates (inverse warp).
	Warp Warp
}

// BscanExtent is vortex's alias of SegmentExtent.
func (w *XYWaypoints) BscanExtent() motion.Range { return w.SegmentExtent }

// SetBscanExtent sets SegmentExtent.
func (w *XYWaypoints) SetBscanExtent(r motion.Range) { w.SegmentExtent = r }

// AscansPerBscan is vortex's alias of SamplesPerSegment.
func (w *XYWaypoints) AscansPerBscan() int { return w.SamplesPerSegment }

// SetAscansPerBscan sets SamplesPerSegment.
func (w *XYWaypoints) SetAscansPerBscan(n int) { w.SamplesPerSegment = n }

// BscansPerVolume is vortex's alias of SegmentsPerVolume.
func (w *XYWaypoints) BscansPerVolume() int { return w.SegmentsPerVolume }

// SetBscansPerVolume sets SegmentsPerVolume.
func (w *XYWaypoints) SetBscansPerVolume(n int) { w.SegmentsPerVolume = n }

// Extents is vortex's extents: [volume_extent, segment_extent].
func (w *XYWaypoints) Extents() [2]motion.Range {
	return [2]motion.Range{w.VolumeExtent, w.SegmentExtent}
}

// SetExtents sets both extents.
func (w *XYWaypoints) SetExtents(e [2]motion.Range) { w.VolumeExtent, w.SegmentExtent = e[0], e[1] }

// Shape is vortex's shape: [segments_per_volume, samples_per_segment].
func (w *XYWaypoints) Shape() [2]int { return [2]int{w.SegmentsPerVolume, w.SamplesPerSegment} }

// SetShape sets both counts.
func (w *XYWaypoints) SetShape(s [2]int) { w.SegmentsPerVolume, w.SamplesPerSegment = s[0], s[1] }

// xyNames names a config's fields in its errors: a raster calls its counts
// ascans_per_bscan and bscans_per_volume, a spiral samples_per_segment.
type xyNames struct {
	cls, samples, segments, segmentExtent string
}

func (w *XYWaypoints) validate(n xyNames) error {
	if w.SamplesPerSegment < 2 {
		return backend.Invalidf("%s.%s: %d, expected >= 2 (waypoints need two samples per segment)", n.cls, n.samples, w.SamplesPerSegment)
	}
	if w.SegmentsPerVolume < 1 {
		return backend.Invalidf("%s.%s: %d, expected > 0", n.cls, n.segments, w.SegmentsPerVolume)
	}
	if w.SamplesPerSegment > maxScanElements || w.SegmentsPerVolume > maxScanElements || int64(w.SamplesPerSegment)*int64(w.SegmentsPerVolume)*2 > maxScanElements { // each first: the product of two huge ones overflows
		return backend.Invalidf("%s.shape: [%d, %d], expected at most %d samples in all", n.cls, w.SegmentsPerVolume, w.SamplesPerSegment, maxScanElements/2)
	}
	if !finite(w.Offset[0]) || !finite(w.Offset[1]) {
		return backend.Invalidf("%s.offset: %v, expected finite numbers", n.cls, w.Offset)
	}
	if !finite(w.Angle) {
		return backend.Invalidf("%s.angle: %v, expected a finite number", n.cls, w.Angle)
	}
	if !finite(w.VolumeExtent.Min) || !finite(w.VolumeExtent.Max) {
		return backend.Invalidf("%s.volume_extent: %v, expected finite bounds", n.cls, w.VolumeExtent)
	}
	if !finite(w.SegmentExtent.Min) || !finite(w.SegmentExtent.Max) {
		return backend.Invalidf("%s.%s: %v, expected finite bounds", n.cls, n.segmentExtent, w.SegmentExtent)
	}
	return w.Warp.Validate(n.cls + ".warp")
}

// defaultXY is vortex's XYWaypoints defaults (shape [10, 500], extents ±1).
func defaultXY() XYWaypoints {
	return XYWaypoints{
		VolumeExtent:      motion.Range{Min: -1, Max: 1},
		SegmentExtent:     motion.Range{Min: -1, Max: 1},
		SegmentsPerVolume: 10,
		SamplesPerSegment: 500,
		Warp:              NoWarp(),
	}
}

// linspace is xtensor's linspace: start + i*step, num samples, the last
// equal to stop when endpoint (step = span/(num-1), or span/num without
// endpoint).
func linspace(start, stop float64, num int, endpoint bool) []float64 {
	out := make([]float64, num)
	div := float64(num)
	if endpoint {
		div = float64(num - 1)
	}
	step := (stop - start) / math.Max(1, div)
	for i := range out {
		out[i] = start + step*float64(i)
	}
	return out
}

// grid fills a Waypoints from the meshgrid of the two extents through f,
// which maps (u along the volume, v along the segment) to (x, y); the warp
// is applied inversely afterwards.
func (w *XYWaypoints) grid(f func(u, v float64) (x, y float64)) Waypoints {
	us := linspace(w.VolumeExtent.Min, w.VolumeExtent.Max, w.SegmentsPerVolume, true)
	vs := linspace(w.SegmentExtent.Min, w.SegmentExtent.Max, w.SamplesPerSegment, true)
	wp := Waypoints{Segments: w.SegmentsPerVolume, Samples: w.SamplesPerSegment, Channels: 2}
	wp.Data = make([]float64, 0, wp.Segments*wp.Samples*2)
	for _, u := range us {
		for _, v := range vs {
			x, y := f(u, v)
			wp.Data = append(wp.Data, x, y)
		}
	}
	w.Warp.Inverse(wp.Data, wp.Data)
	return wp
}

// RasterWaypoints is vortex's RasterWaypoints: segments along y, stepping
// along x, rotated by Angle about Offset. Defaults: volume_extent [-1, 1],
// bscan_extent [-2, 2], shape [10, 500].
type RasterWaypoints struct {
	XYWaypoints
}

// NewRasterWaypoints is vortex's RasterWaypoints() with its defaults.
func NewRasterWaypoints() RasterWaypoints {
	w := RasterWaypoints{defaultXY()}
	w.SegmentExtent = motion.Range{Min: -2, Max: 2}
	return w
}

// ToWaypoints is vortex's to_waypoints; call Validate first (the config's)
// for a clear error on a bad shape.
func (w *RasterWaypoints) ToWaypoints() Waypoints {
	c, s := math.Cos(w.Angle), math.Sin(w.Angle)
	return w.grid(func(u, v float64) (float64, float64) {
		return u*c - v*s + w.Offset[0], u*s + v*c + w.Offset[1]
	})
}

// RadialWaypoints is vortex's RadialWaypoints: segments along the radius
// (segment_extent, may cross the origin), stepping in angle
// (volume_extent, radians). Defaults: bscan_extent [-2, 2], shape [10,
// 500], set_half_evenly_spaced(10).
type RadialWaypoints struct {
	XYWaypoints
}

// NewRadialWaypoints is vortex's RadialWaypoints() with its defaults.
func NewRadialWaypoints() RadialWaypoints {
	w := RadialWaypoints{defaultXY()}
	w.VolumeExtent = motion.Range{Min: 0, Max: math.Pi}
	w.SegmentExtent = motion.Range{Min: -2, Max: 2}
	w.SetHalfEvenlySpaced(10)
	return w
}

// SetHalfEvenlySpaced spaces n segments evenly over half a turn, omitting
// the last (segments crossing the origin then cover the disc once).
func (w *RadialWaypoints) SetHalfEvenlySpaced(n int) {
	w.SegmentsPerVolume = n
	w.VolumeExtent = motion.Range{Min: 0, Max: math.Pi * float64(n-1) / float64(n)}
}

// SetEvenlySpaced spaces n segments evenly over a full turn, omitting the last.
func (w *RadialWaypoints) SetEvenlySpaced(n int) {
	w.SegmentsPerVolume = n
	w.VolumeExtent = motion.Range{Min: 0, Max: 2 * math.Pi * float64(n-1) / float64(n)}
}

// SetAiming is SetHalfEvenlySpaced(2): two orthogonal segments.
func (w *RadialWaypoints) SetAiming() { w.SetHalfEvenlySpaced(2) }

// ToWaypoints is vortex's to_waypoints.
func (w *RadialWaypoints) ToWaypoints() Waypoints {
	return w.grid(func(t, r float64) (float64, float64) {
		return r*math.Cos(t+w.Angle) + w.Offset[0], r*math.Sin(t+w.Angle) + w.Offset[1]
	})
}
