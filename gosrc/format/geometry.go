package format

import (
	"fmt"
	"math"

	"github.com/vortexgo/vortexgo/gosrc/backend"
)

// Range is vortex's Range: an interval [Min, Max].
type Range struct {
	// Min is the lower end.
	Min float64
	// Max is the upper end.
	Max float64
}

// Length is Max - Min.
func (r Range) Length() float64 { return r.Max - r.Min }

func (r Range) check(name string) error {
	if math.IsNaN(r.Min) || math.IsNaN(r.Max) || math.IsInf(r.Min, 0) || math.IsInf(r.Max, 0) {
		// vortex's default Range is (-inf, inf): an extent left unset.
		return backend.Invalidf("%s: Range(%v, %v), expected finite ends (vortex's default is unbounded: set %s)", name, r.Min, r.Max, name)
	}
	// The kernels take pitches as float32 (vortex's): a longer range makes
	// an infinite pitch and every pixel NaN.
	if l := math.Abs(r.Length()); math.IsInf(l, 0) || l > math.MaxFloat32 {
		return backend.Invalidf("%s: Range(%v, %v), expected a length within float32 (at most %g)", name, r.Min, r.Max, math.MaxFloat32)
	}
	return nil
}

// RadialFormatExecutorConfig is vortex's RadialFormatExecutorConfig: a
// radial scan's segments (lines through the origin at angles across
// AngularExtent, records across RadialExtent) rectified onto an (x, y)
// grid spanning VolumeXYExtent.
type RadialFormatExecutorConfig struct {
	StackFormatExecutorConfig
	// VolumeXYExtent is (x_extent, y_extent) of the Cartesian volume.
	VolumeXYExtent [2]Range
	// SegmentRTExtent is (radial_extent, angular_extent) of the scan.
	SegmentRTExtent [2]Range
	// RadialShape is (radial_segments_per_volume, radial_records_per_segment).
	RadialShape [2]int
}

// Validate checks the config, naming vortex's fields.
func (c RadialFormatExecutorConfig) Validate() error {
	if err := c.StackFormatExecutorConfig.Validate(); err != nil {
		return err
	}
	for i, n := range [...]string{"x_extent", "y_extent"} {
		if err := c.VolumeXYExtent[i].check(n); err != nil {
			return err
		}
	}
	for i, n := range [...]string{"radial_extent", "angular_extent"} {
		if err := c.SegmentRTExtent[i].check(n); err != nil {
			return err
		}
	}
	// A zero-length extent makes a zero pitch the kernels divide by.
	for i, n := range [...]string{"radial_extent", "angular_extent"} {
		if c.SegmentRTExtent[i].Length() == 0 {
			return backend.Invalidf("%s: Range(%v, %v), expected a nonzero length", n, c.SegmentRTExtent[i].Min, c.SegmentRTExtent[i].Max)
		}
	}
	if c.RadialShape[0] <= 0 || c.RadialShape[0] > maxShape {
		return backend.Invalidf("radial_segments_per_volume: %d, expected 1..%d", c.RadialShape[0], maxShape)
	}
	if c.RadialShape[1] <= 0 || c.RadialShape[1] > maxShape {
		return backend.Invalidf("radial_records_per_segment: %d, expected 1..%d", c.RadialShape[1], maxShape)
	}
	return nil
}

// RadialFormatExecutor is vortex's RadialFormatExecutor. Each pixel of the
// (x, y) grid takes the A-scan of the segment whose angle is within half an
// angular pitch of the pixel's (either end of the line), interpolated
// between the two nearest records. As in vortex, the weight of the nearer
// record below is the fractional distance to it (vortex's
// ratio*before + (1-ratio)*after), and a pixel is written by each segment
// that covers it, the last one winning.
type RadialFormatExecutor struct {
	cfg RadialFormatExecutorConfig
}

// NewRadialFormatExecutor validates cfg and returns an executor.
func NewRadialFormatExecutor(cfg RadialFormatExecutorConfig) (*RadialFormatExecutor, error) {
	e := &RadialFormatExecutor{}
	if err := e.Initialize(cfg); err != nil {
		return nil, err
	}
	return e, nil
}

// Initialize adopts cfg; on error the executor keeps its config. It is
// refused (backend.ErrInUse) while an engine that is not closed holds the
// executor (see the package doc, "Initialize in place").
func (e *RadialFormatExecutor) Initialize(cfg RadialFormatExecutorConfig) error {
	if err := notHeld("RadialFormatExecutor", e); err != nil {
		return err
	}
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("RadialFormatExecutorConfig.%w", err)
	}
	e.cfg = cfg
	return nil
}

// Config is the executor's config.
func (e *RadialFormatExecutor) Config() RadialFormatExecutorConfig { return e.cfg }

// rectParams is what the radial and spiral kernels share: the segment's
// records (count of them, samples each, reading record j at
// srcBase + j*srcRecStride, negative when reversed) and the grid.
type rectParams struct {
	count, samples                 int
	srcBase, srcRecStride, srcStep int
	x, y                           int // grid size; the volume is (x, y, samples)
	scale, offset                  float32
	pitchX, pitchY, offX, offY     float32
}

// radialParams adds the radial geometry.
type radialParams struct {
	rectParams
	pitchR, pitchT, offR, offT float32
}

// spiralParams adds the spiral geometry.
type spiralParams struct {
	rectParams
	segPitch, segOffset, radialPitch, velocity float32
}

// rectPlan checks a segment of records records (samples, 1 channel) for a
// volume of shape and fills the shared parameters, as vortex's
// _rectify_by_kernel does: reversed segments are read last record first.
func rectPlan(what string, cfg *StackFormatExecutorConfig, xy [2]Range, shape [4]int, records, samples, channels int, reverse bool) (rectParams, error) {
	if channels != 1 || shape[3] != 1 {
		return rectParams{}, backend.Invalidf("%s: %d channels in the block and %d in the volume, expected 1", what, channels, shape[3])
	}
	start, step, count, err := cfg.SampleSlice.resolve(samples)
	if err != nil {
		return rectParams{}, fmt.Errorf("%s: %w", what, err)
	}
	if count != shape[2] {
		return rectParams{}, backend.Invalidf("%s: volume has %d samples per A-scan, expected %d (the block's after sample_slice)", what, shape[2], count)
	}
	scale, offset, err := cfg.SampleTransform.factors()
	if err != nil {
		return rectParams{}, fmt.Errorf("%s: %w", what, err)
	}
	p := rectParams{
		count: records, samples: count, srcBase: start, srcRecStride: samples, srcStep: step,
		x: shape[0], y: shape[1], scale: scale, offset: offset,
		pitchX: float32(xy[0].Length() / float64(shape[0])),
		pitchY: float32(xy[1].Length() / float64(shape[1])),
		offX:   float32(xy[0].Min), offY: float32(xy[1].Min),
	}
	if reverse && records > 0 {
		p.srcBase += (records - 1) * samples
		p.srcRecStride = -samples
	}
	return p, nil
}

func (e *RadialFormatExecutor) params(shape [4]int, records, samples, channels, segmentIndex, recordIndex int, reverse bool) (radialParams, error) {
	const what = "RadialFormatExecutor"
	if segmentIndex < 0 || recordIndex < 0 {
		return radialParams{}, backend.Invalidf("%s: segment_index=%d record_index=%d, expected >= 0", what, segmentIndex, recordIndex)
	}
	rp, err := rectPlan(what, &e.cfg.StackFormatExecutorConfig, e.cfg.VolumeXYExtent, shape, records, samples, channels, reverse)
	if err != nil {
		return radialParams{}, err
	}
	c := &e.cfg
	p := radialParams{rectParams: rp}
	// The float32 roundings are vortex's: pitches are computed in double and
	// passed as float, and pitch*index is float arithmetic.
	p.pitchR = float32(c.SegmentRTExtent[0].Length() / float64(c.RadialShape[1]))
	p.pitchT = float32(c.SegmentRTExtent[1].Length() / float64(c.RadialShape[0]))
	p.offR = float32(c.SegmentRTExtent[0].Min + float64(p.pitchR*float32(recordIndex)))
	p.offT = float32(c.SegmentRTExtent[1].Min + float64(p.pitchT*float32(segmentIndex)))
	return p, nil
}

// FormatRadial is vortex's RadialFormatExecutor.format: it rectifies
// segment (records of one radial line, starting at record recordIndex of
// segment segmentIndex) into vol, shape (x, y, samples, 1).
func FormatRadial[D, S Element](e *RadialFormatExecutor, vol Volume[D], segment Block[S], segmentIndex, recordIndex int, reverse bool) error {
	if err := vol.check("RadialFormatExecutor"); err != nil {
		return err
	}
	if err := segment.check("RadialFormatExecutor"); err != nil {
		return err
	}
	p, err := e.params(vol.Shape, segment.Records, segment.Samples, segment.Channels, segmentIndex, recordIndex, reverse)
	if err != nil {
		return err
	}
	runRadial(vol.Data, segment.Data, &p)
	return nil
}

// ExecuteRadial carries out a Copy action: the action's records of blk
// rectified as segment BufferSegment from record BufferRecord.
func ExecuteRadial[D, S Element](e *RadialFormatExecutor, vol Volume[D], blk Block[S], a Action) error {
	if err := blk.check("RadialFormatExecutor"); err != nil {
		return err
	}
	if err := checkCopy("RadialFormatExecutor", &a, blk.Records); err != nil {
		return err
	}
	return FormatRadial(e, vol, subBlock(blk, a.BlockOffset, a.Count), a.BufferSegment, a.BufferRecord, a.Reverse)
}

func subBlock[S Element](b Block[S], offset, count int) Block[S] {
	n := b.Samples * b.Channels
	return Block[S]{Data: b.Data[offset*n : (offset+count)*n], Records: count, Samples: b.Samples, Channels: b.Channels}
}

// radialPixel finds the records pixel (ix, iy) takes and the interpolation
// ratio, following vortex's _radial_rectify step by step (float32 with its
// double-precision angle wrap).
func radialPixel(p *radialParams, ix, iy int) (before, after int, ratio float32, ok bool) {
	x := fma32(p.pitchX, float32(ix), p.offX)
	y := fma32(p.pitchY, float32(iy), p.offY)
	r := float32(math.Hypot(float64(x), float64(y)))
	theta := float32(math.Atan2(float64(x), float64(y)))
	for i := range 2 {
		if i > 0 {
			// The far end of the line: the opposite angle at negative radius.
			r = -r
			theta = float32(float64(theta) + math.Pi)
		}
		diff := theta - p.offT
		diff = float32(math.FMA(-math.Round(float64(diff)/(2*math.Pi)), 2*math.Pi, float64(diff)))
		if float32(math.Abs(float64(diff))) > p.pitchT/2 {
			continue
		}
		ridx := (r - p.offR) / p.pitchR
		b := int64(math.Floor(float64(ridx)))
		a := int64(math.Ceil(float64(ridx)))
		// vortex compares the signed index with the unsigned record count,
		// so a negative "before" index fails the bound too: a pixel less
		// than one pitch before the first record is not written.
		if a < 0 || b < 0 || b >= int64(p.count) {
			continue
		}
		b = max(b, 0)
		a = min(a, int64(p.count)-1)
		return int(b), int(a), ridx - float32(b), true
	}
	return 0, 0, 0, false
}

func runRadial[D, S Element](dst []D, src []S, p *radialParams) {
	cvt := converter[D]()
	for ix := 0; ix < p.x; ix++ {
		for iy := 0; iy < p.y; iy++ {
			b, a, ratio, ok := radialPixel(p, ix, iy)
			if !ok {
				continue
			}
			o := (ix*p.y + iy) * p.samples
			for z := 0; z < p.samples; z++ {
				vb := float32(src[p.srcBase+b*p.srcRecStride+z*p.srcStep])
				va := float32(src[p.srcBase+a*p.srcRecStride+z*p.srcStep])
				v := fma32(ratio, vb, (1-ratio)*va)
				dst[o+z] = cvt(float64(fma32(p.scale, v, p.offset)))
			}
		}
	}
}

// SpiralFormatExecutorConfig is vortex's SpiralFormatExecutorConfig: an
// Archimedean spiral of RingsPerSpiral rings across RadialExtent, sampled
// SamplesPerSpiral times at angular velocity SpiralVelocity, rectified onto
// an (x, y) grid spanning VolumeXYExtent.
type SpiralFormatExecutorConfig struct {
	StackFormatExecutorConfig
	// VolumeXYExtent is (x_extent, y_extent) of the Cartesian volume.
	VolumeXYExtent [2]Range
	// SegmentExtent is the spiral's radial_extent.
	SegmentExtent Range
	// SpiralShape is (rings_per_spiral, samples_per_spiral).
	SpiralShape [2]int
	// SpiralVelocity is the angular velocity (radians per unit time).
	SpiralVelocity float64
}

// Validate checks the config, naming vortex's fields.
func (c SpiralFormatExecutorConfig) Validate() error {
	if err := c.StackFormatExecutorConfig.Validate(); err != nil {
		return err
	}
	for i, n := range [...]string{"x_extent", "y_extent"} {
		if err := c.VolumeXYExtent[i].check(n); err != nil {
			return err
		}
	}
	if err := c.SegmentExtent.check("radial_extent"); err != nil {
		return err
	}
	if c.SpiralShape[0] <= 0 || c.SpiralShape[0] > maxShape {
		return backend.Invalidf("rings_per_spiral: %d, expected 1..%d", c.SpiralShape[0], maxShape)
	}
	if c.SpiralShape[1] <= 0 || c.SpiralShape[1] > maxShape {
		return backend.Invalidf("samples_per_spiral: %d, expected 1..%d", c.SpiralShape[1], maxShape)
	}
	if !(c.SpiralVelocity > 0) || math.IsInf(c.SpiralVelocity, 0) || c.SpiralVelocity > math.MaxFloat32 {
		return backend.Invalidf("spiral_velocity: %v, expected a finite float32 > 0", c.SpiralVelocity)
	}
	if c.SegmentExtent.Length() == 0 {
		return backend.Invalidf("radial_extent: Range(%v, %v), expected a nonzero length", c.SegmentExtent.Min, c.SegmentExtent.Max)
	}
	return nil
}

// SpiralFormatExecutor is vortex's SpiralFormatExecutor. Each pixel takes
// the spiral sample nearest its place on the ring at or inside it: the
// pixel's radius gives the ideal time, its angle the ring, and the ring
// the time along the spiral, interpolated between the two nearest records
// (with vortex's weighting, as RadialFormatExecutor).
type SpiralFormatExecutor struct {
	cfg SpiralFormatExecutorConfig
}

// NewSpiralFormatExecutor validates cfg and returns an executor.
func NewSpiralFormatExecutor(cfg SpiralFormatExecutorConfig) (*SpiralFormatExecutor, error) {
	e := &SpiralFormatExecutor{}
	if err := e.Initialize(cfg); err != nil {
		return nil, err
	}
	return e, nil
}

// Initialize adopts cfg; on error the executor keeps its config. It is
// refused (backend.ErrInUse) while an engine that is not closed holds the
// executor (see the package doc, "Initialize in place").
func (e *SpiralFormatExecutor) Initialize(cfg SpiralFormatExecutorConfig) error {
	if err := notHeld("SpiralFormatExecutor", e); err != nil {
		return err
	}
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("SpiralFormatExecutorConfig.%w", err)
	}
	e.cfg = cfg
	return nil
}

// Config is the executor's config.
func (e *SpiralFormatExecutor) Config() SpiralFormatExecutorConfig { return e.cfg }

func (e *SpiralFormatExecutor) params(shape [4]int, records, samples, channels, recordIndex int, reverse bool) (spiralParams, error) {
	const what = "SpiralFormatExecutor"
	if recordIndex < 0 {
		return spiralParams{}, backend.Invalidf("%s: record_index=%d, expected >= 0", what, recordIndex)
	}
	rp, err := rectPlan(what, &e.cfg.StackFormatExecutorConfig, e.cfg.VolumeXYExtent, shape, records, samples, channels, reverse)
	if err != nil {
		return spiralParams{}, err
	}
	c := &e.cfg
	radialPitch := c.SegmentExtent.Length() / float64(c.SpiralShape[0])
	tMin := (2 * math.Pi * c.SegmentExtent.Min) / (radialPitch * c.SpiralVelocity)
	tMax := (2 * math.Pi * c.SegmentExtent.Max) / (radialPitch * c.SpiralVelocity)
	p := spiralParams{rectParams: rp}
	p.segPitch = float32((tMax - tMin) / float64(c.SpiralShape[1]))
	p.segOffset = float32(tMin + float64(float32(recordIndex)*p.segPitch))
	p.radialPitch = float32(radialPitch)
	p.velocity = float32(c.SpiralVelocity)
	return p, nil
}

// FormatSpiral is vortex's SpiralFormatExecutor.format: it rectifies
// segment (spiral samples from record recordIndex) into vol, shape (x, y,
// samples, 1). vortex ignores the segment index: a spiral is one segment.
func FormatSpiral[D, S Element](e *SpiralFormatExecutor, vol Volume[D], segment Block[S], segmentIndex, recordIndex int, reverse bool) error {
	if err := vol.check("SpiralFormatExecutor"); err != nil {
		return err
	}
	if err := segment.check("SpiralFormatExecutor"); err != nil {
		return err
	}
	p, err := e.params(vol.Shape, segment.Records, segment.Samples, segment.Channels, recordIndex, reverse)
	if err != nil {
		return err
	}
	runSpiral(vol.Data, segment.Data, &p)
	return nil
}

// ExecuteSpiral carries out a Copy action.
func ExecuteSpiral[D, S Element](e *SpiralFormatExecutor, vol Volume[D], blk Block[S], a Action) error {
	if err := blk.check("SpiralFormatExecutor"); err != nil {
		return err
	}
	if err := checkCopy("SpiralFormatExecutor", &a, blk.Records); err != nil {
		return err
	}
	return FormatSpiral(e, vol, subBlock(blk, a.BlockOffset, a.Count), a.BufferSegment, a.BufferRecord, a.Reverse)
}

// spiralPixel follows vortex's _spiral_rectify: float32 position, double
// precision from the ideal time on (its M_PI constants promote).
func spiralPixel(p *spiralParams, ix, iy int) (before, after int, ratio float64, ok bool) {
	x := fma32(p.pitchX, float32(ix), p.offX)
	y := fma32(p.pitchY, float32(iy), p.offY)
	r := float32(math.Hypot(float64(x), float64(y)))
	theta := float32(math.Atan2(float64(x), float64(y)))
	omega := float64(p.velocity)
	idealT := (float64(r*2) * math.Pi) / float64(float32(p.radialPitch*p.velocity))
	// nvcc contracts vortex's omega*ideal_t - theta and ring*2*pi + theta.
	ring := math.FMA(omega, idealT, -float64(theta)) / (2 * math.Pi)
	if theta >= 0 {
		ring = math.Floor(ring) // the ring at or inside the pixel
	} else {
		ring = math.Ceil(ring)
	}
	ring = max(ring, 0)
	spiralT := math.FMA(ring*2, math.Pi, float64(theta)) / omega
	sidx := (spiralT - float64(p.segOffset)) / float64(p.segPitch)
	b := int64(math.Floor(sidx))
	a := int64(math.Ceil(sidx))
	// As in radialPixel, vortex's signed/unsigned bound rejects b < 0.
	if a < 0 || b < 0 || b >= int64(p.count) {
		return 0, 0, 0, false
	}
	b = max(b, 0)
	a = min(a, int64(p.count)-1)
	return int(b), int(a), sidx - float64(b), true
}

func runSpiral[D, S Element](dst []D, src []S, p *spiralParams) {
	cvt := converter[D]()
	for ix := 0; ix < p.x; ix++ {
		for iy := 0; iy < p.y; iy++ {
			b, a, ratio, ok := spiralPixel(p, ix, iy)
			if !ok {
				continue
			}
			o := (ix*p.y + iy) * p.samples
			for z := 0; z < p.samples; z++ {
				vb := float64(src[p.srcBase+b*p.srcRecStride+z*p.srcStep])
				va := float64(src[p.srcBase+a*p.srcRecStride+z*p.srcStep])
				v := math.FMA(ratio, vb, (1-ratio)*va)
				dst[o+z] = cvt(math.FMA(float64(p.scale), v, float64(p.offset)))
			}
		}
	}
}

// PositionFormatExecutorConfig is vortex's PositionFormatExecutorConfig:
// each A-scan lands at the volume pixel its galvo position maps to through
// Transform (a 2x3 affine matrix from position to (x, y) index).
type PositionFormatExecutorConfig struct {
	StackFormatExecutorConfig
	// Transform maps (x, y, 1) positions to fractional volume indices.
	Transform [2][3]float64
	// UseTargetPosition picks the commanded (target) position over the
	// measured (actual) one.
	UseTargetPosition bool
	// Channels are the position array's channels holding x and y.
	Channels [2]int
}

// DefaultPositionFormatExecutorConfig is vortex's default: identity
// transform (set()), target position, channels (0, 1).
func DefaultPositionFormatExecutorConfig() PositionFormatExecutorConfig {
	c := PositionFormatExecutorConfig{UseTargetPosition: true, Channels: [2]int{0, 1}}
	c.Set([2]float64{1, 1}, [2]float64{0, 0}, 0)
	return c
}

// Set is vortex's set(pitch, offset, angle): a rotation by angle, scaled by
// pitch per axis, then offset.
func (c *PositionFormatExecutorConfig) Set(pitch, offset [2]float64, angle float64) {
	s, co := math.Sin(angle), math.Cos(angle)
	c.Transform = [2][3]float64{
		{pitch[0] * co, -pitch[0] * s, offset[0]},
		{pitch[1] * s, pitch[1] * co, offset[1]},
	}
}

// Validate checks the config, naming vortex's fields.
func (c PositionFormatExecutorConfig) Validate() error {
	if err := c.StackFormatExecutorConfig.Validate(); err != nil {
		return err
	}
	for i := range c.Transform {
		for j, v := range c.Transform[i] {
			if math.IsNaN(v) || math.IsInf(v, 0) || math.Abs(v) > math.MaxFloat32 {
				return backend.Invalidf("transform[%d][%d]: %v, expected a finite float32", i, j, v)
			}
		}
	}
	for i, ch := range c.Channels {
		if ch < 0 || ch > maxShape {
			return backend.Invalidf("channels[%d]: %d, expected >= 0", i, ch)
		}
	}
	return nil
}

// PositionFormatExecutor is vortex's PositionFormatExecutor: segment and
// record indices and reversal are ignored; every A-scan goes where its
// position says, dropped when that is outside the volume.
type PositionFormatExecutor struct {
	cfg PositionFormatExecutorConfig
}

// NewPositionFormatExecutor validates cfg and returns an executor.
func NewPositionFormatExecutor(cfg PositionFormatExecutorConfig) (*PositionFormatExecutor, error) {
	e := &PositionFormatExecutor{}
	if err := e.Initialize(cfg); err != nil {
		return nil, err
	}
	return e, nil
}

// Initialize adopts cfg; on error the executor keeps its config. It is
// refused (backend.ErrInUse) while an engine that is not closed holds the
// executor (see the package doc, "Initialize in place").
func (e *PositionFormatExecutor) Initialize(cfg PositionFormatExecutorConfig) error {
	if err := notHeld("PositionFormatExecutor", e); err != nil {
		return err
	}
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("PositionFormatExecutorConfig.%w", err)
	}
	e.cfg = cfg
	return nil
}

// Config is the executor's config.
func (e *PositionFormatExecutor) Config() PositionFormatExecutorConfig { return e.cfg }

// Positions is a host (records, channels) float64 array of galvo positions,
// one row per record of the block it goes with.
type Positions struct {
	// Data is the positions, row-major.
	Data []float64
	// Records is the number of rows.
	Records int
	// Channels is the number of columns.
	Channels int
}

// positionParams is the position kernel's arguments.
type positionParams struct {
	count, samples                  int
	srcBase, srcRecStride, srcStep  int
	posBase, posRecStride, chX, chY int
	x, y                            int
	scale, offset                   float32
	m                               [6]float32
}

func (e *PositionFormatExecutor) params(shape [4]int, records, samples, channels, posRecords, posChannels int) (positionParams, error) {
	const what = "PositionFormatExecutor"
	rp, err := rectPlan(what, &e.cfg.StackFormatExecutorConfig, [2]Range{{0, 1}, {0, 1}}, shape, records, samples, channels, false)
	if err != nil {
		return positionParams{}, err
	}
	if posRecords != records {
		return positionParams{}, backend.Invalidf("%s: %d positions, expected one per A-scan (%d)", what, posRecords, records)
	}
	for i, ch := range e.cfg.Channels {
		if ch >= posChannels {
			return positionParams{}, backend.Invalidf("%s: PositionFormatExecutorConfig.channels[%d]=%d, expected < the positions' %d channels", what, i, ch, posChannels)
		}
	}
	p := positionParams{
		count: records, samples: rp.samples, srcBase: rp.srcBase, srcRecStride: rp.srcRecStride, srcStep: rp.srcStep,
		posRecStride: posChannels, chX: e.cfg.Channels[0], chY: e.cfg.Channels[1],
		x: shape[0], y: shape[1], scale: rp.scale, offset: rp.offset,
	}
	for i := range 2 {
		for j := range 3 {
			p.m[i*3+j] = float32(e.cfg.Transform[i][j])
		}
	}
	return p, nil
}

// positionPixel maps a position to its volume index as vortex's
// _position_rectify does: float32 matrix, double positions, floor. A NaN
// position maps to -1 (dropped); vortex's cast would put it at pixel 0.
func positionPixel(m *[6]float32, xg, yg float64) (ix, iy int64) {
	// Each product and sum rounded on its own (explicit conversions stop Go
	// from fusing them), as the kernel's __dmul_rn/__dadd_rn do.
	fx := float64(float64(float64(m[0])*xg)+float64(float64(m[1])*yg)) + float64(m[2])
	fy := float64(float64(float64(m[3])*xg)+float64(float64(m[4])*yg)) + float64(m[5])
	return floorClip(fx), floorClip(fy)
}

// floorClip is vortex's floor_clip_cast<long long>, except that NaN gives
// -1 (outside every volume), as the kernel's range test does.
func floorClip(v float64) int64 {
	f := math.Floor(v)
	switch {
	case f != f:
		return -1
	case f >= math.MaxInt64:
		return math.MaxInt64
	case f <= math.MinInt64:
		return math.MinInt64
	}
	return int64(f)
}

func runPosition[D, S Element](dst []D, src []S, pos []float64, p *positionParams) {
	cvt := converter[D]()
	for j := 0; j < p.count; j++ {
		xg := pos[p.posBase+j*p.posRecStride+p.chX]
		yg := pos[p.posBase+j*p.posRecStride+p.chY]
		ix, iy := positionPixel(&p.m, xg, yg)
		if ix < 0 || ix >= int64(p.x) || iy < 0 || iy >= int64(p.y) {
			continue
		}
		o := (int(ix)*p.y + int(iy)) * p.samples
		for z := 0; z < p.samples; z++ {
			v := float32(src[p.srcBase+j*p.srcRecStride+z*p.srcStep])
			dst[o+z] = cvt(float64(fma32(p.scale, v, p.offset)))
		}
	}
}

// FormatPosition is vortex's PositionFormatExecutor.format: segment's
// A-scans land where positions (the target or actual array, by the config)
// put them in vol, shape (x, y, samples, 1).
func FormatPosition[D, S Element](e *PositionFormatExecutor, vol Volume[D], target, actual Positions, segment Block[S]) error {
	if err := vol.check("PositionFormatExecutor"); err != nil {
		return err
	}
	if err := segment.check("PositionFormatExecutor"); err != nil {
		return err
	}
	pos := actual
	if e.cfg.UseTargetPosition {
		pos = target
	}
	if pos.Records < 0 || pos.Channels <= 0 || len(pos.Data) != pos.Records*pos.Channels {
		return backend.Invalidf("PositionFormatExecutor: positions of %d values for shape (%d, %d), expected records x channels with channels >= 1", len(pos.Data), pos.Records, pos.Channels)
	}
	p, err := e.params(vol.Shape, segment.Records, segment.Samples, segment.Channels, pos.Records, pos.Channels)
	if err != nil {
		return err
	}
	runPosition(vol.Data, segment.Data, pos.Data, &p)
	return nil
}

// ExecutePosition carries out a Copy action: the action's records of blk
// with the same rows of the block's target and actual positions.
func ExecutePosition[D, S Element](e *PositionFormatExecutor, vol Volume[D], blk Block[S], target, actual Positions, a Action) error {
	if err := blk.check("PositionFormatExecutor"); err != nil {
		return err
	}
	if err := checkCopy("PositionFormatExecutor", &a, blk.Records); err != nil {
		return err
	}
	sub := func(p Positions) (Positions, error) {
		if p.Records != blk.Records || p.Channels <= 0 || len(p.Data) != p.Records*p.Channels {
			return Positions{}, backend.Invalidf("PositionFormatExecutor: positions (%d, %d) with %d values, expected one row per block record (%d)", p.Records, p.Channels, len(p.Data), blk.Records)
		}
		return Positions{Data: p.Data[a.BlockOffset*p.Channels : (a.BlockOffset+a.Count)*p.Channels], Records: a.Count, Channels: p.Channels}, nil
	}
	t, err := sub(target)
	if err != nil {
		return err
	}
	ac, err := sub(actual)
	if err != nil {
		return err
	}
	return FormatPosition(e, vol, t, ac, subBlock(blk, a.BlockOffset, a.Count))
}
