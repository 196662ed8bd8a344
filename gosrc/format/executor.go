package format

import (
	"fmt"
	"math"

	"github.com/vortexgo/vortexgo/gosrc/backend"
)

// Element is a sample type the executors read and write: the types vortex's
// format kernels are built for (int8, uint16, float32) and their neighbours.
type Element interface {
	~int8 | ~uint8 | ~int16 | ~uint16 | ~float32
}

// DTypeOf is the backend.DType of T, for launching the CUDA kernels.
func DTypeOf[T Element]() backend.DType {
	var z T
	switch any(z).(type) {
	case int8:
		return backend.Int8
	case uint8:
		return backend.Uint8
	case int16:
		return backend.Int16
	case uint16:
		return backend.Uint16
	}
	return backend.Float32
}

// SampleSlice is vortex's sample_slice: NullSlice keeps every sample,
// SimpleSlice(start, stop, step) keeps start, start+step, ... (Count of
// them).
type SampleSlice struct {
	// Simple is false for NullSlice.
	Simple bool
	// Start is the first sample kept.
	Start int
	// Stop bounds the samples kept (exclusive).
	Stop int
	// Step is the stride between kept samples.
	Step int
}

// NullSlice is vortex's NullSlice: all samples.
func NullSlice() SampleSlice { return SampleSlice{} }

// SimpleSlice is vortex's SimpleSlice(start, stop, step).
func SimpleSlice(start, stop, step int) SampleSlice {
	return SampleSlice{Simple: true, Start: start, Stop: stop, Step: step}
}

// Count is vortex's SimpleSlice.count(): (stop-start)/step, rounded down
// (one fewer than Python's len(range(...)) when step does not divide the
// span; vortex sizes the volume by this count).
func (s SampleSlice) Count() int {
	if s.Step <= 0 || s.Stop <= s.Start {
		return 0
	}
	return (s.Stop - s.Start) / s.Step
}

// resolve returns (start, step, count) for records of samples samples.
func (s SampleSlice) resolve(samples int) (start, step, count int, err error) {
	if !s.Simple {
		return 0, 1, samples, nil
	}
	switch {
	case s.Start < 0:
		return 0, 0, 0, backend.Invalidf("sample_slice.start: %d, expected >= 0", s.Start)
	case s.Step <= 0:
		return 0, 0, 0, backend.Invalidf("sample_slice.step: %d, expected >= 1", s.Step)
	case s.Stop <= s.Start:
		return 0, 0, 0, backend.Invalidf("sample_slice.stop: %d, expected > start (%d)", s.Stop, s.Start)
	case s.Count() == 0:
		return 0, 0, 0, backend.Invalidf("sample_slice: %s keeps no sample, expected stop-start >= step", s)
	case samples >= 0 && s.Stop > samples:
		return 0, 0, 0, backend.Invalidf("sample_slice.stop: %d, expected <= the block's %d samples per record", s.Stop, samples)
	}
	return s.Start, s.Step, s.Count(), nil
}

// String prints the slice as vortex's repr does.
func (s SampleSlice) String() string {
	if !s.Simple {
		return "NullSlice"
	}
	return fmt.Sprintf("SimpleSlice(start=%d, stop=%d, step=%d)", s.Start, s.Stop, s.Step)
}

// SampleTransform is vortex's sample_transform: NullTransform or
// LinearTransform(scale, offset), applied as scale*x + offset.
type SampleTransform struct {
	// Linear is false for NullTransform.
	Linear bool
	// Scale multiplies each sample.
	Scale float64
	// Offset is added after scaling.
	Offset float64
}

// NullTransform is vortex's NullTransform: samples pass unchanged (a type
// change still rounds and saturates).
func NullTransform() SampleTransform { return SampleTransform{} }

// LinearTransform is vortex's LinearTransform(scale, offset).
func LinearTransform(scale, offset float64) SampleTransform {
	return SampleTransform{Linear: true, Scale: scale, Offset: offset}
}

// factors returns the transform as vortex's kernels receive it: float32
// scale and offset (NullTransform is 1, 0).
func (t SampleTransform) factors() (scale, offset float32, err error) {
	if !t.Linear {
		return 1, 0, nil
	}
	for _, v := range [...]struct {
		name string
		v    float64
	}{{"scale", t.Scale}, {"offset", t.Offset}} {
		if math.IsNaN(v.v) || math.IsInf(v.v, 0) || math.Abs(v.v) > math.MaxFloat32 {
			return 0, 0, backend.Invalidf("sample_transform.%s: %v, expected a finite float32", v.name, v.v)
		}
	}
	return float32(t.Scale), float32(t.Offset), nil
}

// String prints the transform as vortex's repr does.
func (t SampleTransform) String() string {
	if !t.Linear {
		return "NullTransform"
	}
	return fmt.Sprintf("LinearTransform(scale=%v, offset=%v)", t.Scale, t.Offset)
}

// StackFormatExecutorConfig is vortex's StackFormatExecutorConfig.
type StackFormatExecutorConfig struct {
	// EraseAfterVolume asks the endpoint to clear the volume once it is
	// finished (see StackFormatExecutor.FinishVolume). vortex 0.5.1 has the
	// field but never reads it.
	EraseAfterVolume bool
	// SampleSlice picks the samples of each record that are kept.
	SampleSlice SampleSlice
	// SampleTransform maps each kept sample.
	SampleTransform SampleTransform
}

// Validate checks the parts that do not depend on the block's shape.
func (c StackFormatExecutorConfig) Validate() error {
	if c.SampleSlice.Simple {
		if _, _, _, err := c.SampleSlice.resolve(-1); err != nil {
			return err
		}
	}
	_, _, err := c.SampleTransform.factors()
	return err
}

// Volume is a host volume: Data holds Shape[0]*Shape[1]*Shape[2]*Shape[3]
// elements in row-major order. For the stack executor the shape is
// (segments, records, samples, channels); for the radial, spiral and
// position executors it is (x, y, samples, 1).
type Volume[T Element] struct {
	// Data is the volume's elements.
	Data []T
	// Shape is the volume's four dimensions.
	Shape [4]int
}

// Block is a host block of records: (Records, Samples, Channels) row-major.
type Block[T Element] struct {
	// Data is the block's elements.
	Data []T
	// Records is the number of records (A-scans) in the block.
	Records int
	// Samples is the number of samples per record.
	Samples int
	// Channels is the number of channels per sample (1 for OCT data).
	Channels int
}

// maxElements bounds shapes so that index arithmetic cannot overflow.
const maxElements = 1 << 40

// volumeElements checks a volume shape and returns its element count.
func volumeElements(what string, shape [4]int) (int, error) {
	n := 1
	for i, d := range shape {
		if d <= 0 || d > maxShape {
			return 0, backend.Invalidf("%s: volume shape[%d]: %d, expected 1..%d", what, i, d, maxShape)
		}
		if n > maxElements/d {
			return 0, backend.Invalidf("%s: volume shape %v: too many elements, expected at most %d", what, shape, maxElements)
		}
		n *= d
	}
	return n, nil
}

func (v Volume[T]) check(what string) error {
	n, err := volumeElements(what, v.Shape)
	if err != nil {
		return err
	}
	if len(v.Data) != n {
		return backend.Invalidf("%s: volume: %d elements for shape %v, expected %d", what, len(v.Data), v.Shape, n)
	}
	return nil
}

func (b Block[T]) check(what string) error {
	if b.Records < 0 || b.Samples <= 0 || b.Channels <= 0 || b.Records > maxShape || b.Samples > maxShape || b.Channels > maxShape {
		return backend.Invalidf("%s: block shape (%d, %d, %d): expected records >= 0, samples and channels >= 1", what, b.Records, b.Samples, b.Channels)
	}
	if n := b.Records * b.Samples * b.Channels; len(b.Data) != n {
		return backend.Invalidf("%s: block: %d elements for shape (%d, %d, %d), expected %d", what, len(b.Data), b.Records, b.Samples, b.Channels, n)
	}
	return nil
}

// checkCopy checks a Copy action against a block of records records.
func checkCopy(what string, a *Action, records int) error {
	if a.Kind != Copy {
		return backend.Invalidf("%s: action %s, expected a Copy", what, a.Kind)
	}
	if a.Count < 0 || a.BlockOffset < 0 || a.BlockOffset > records || a.Count > records-a.BlockOffset {
		return backend.Invalidf("%s: Copy block_offset=%d count=%d, expected within the block's %d records", what, a.BlockOffset, a.Count, records)
	}
	return nil
}

// StackFormatExecutor is vortex's StackFormatExecutor: it places each
// Copy's records into a rectangular volume of (segments, records, samples,
// channels), flipping reversed copies, slicing and transforming samples.
type StackFormatExecutor struct {
	cfg StackFormatExecutorConfig
}

// NewStackFormatExecutor validates cfg and returns an executor.
func NewStackFormatExecutor(cfg StackFormatExecutorConfig) (*StackFormatExecutor, error) {
	e := &StackFormatExecutor{}
	if err := e.Initialize(cfg); err != nil {
		return nil, err
	}
	return e, nil
}

// Initialize adopts cfg; on error the executor keeps its config. It is
// refused (backend.ErrInUse) while an engine that is not closed holds the
// executor (see the package doc, "Initialize in place").
func (e *StackFormatExecutor) Initialize(cfg StackFormatExecutorConfig) error {
	if err := notHeld("StackFormatExecutor", e); err != nil {
		return err
	}
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("StackFormatExecutorConfig.%w", err)
	}
	e.cfg = cfg
	return nil
}

// Config is the executor's config.
func (e *StackFormatExecutor) Config() StackFormatExecutorConfig { return e.cfg }

// stackParams is one copy in element offsets: the same numbers the CUDA
// kernel receives, so the CPU executor, the kernel's CPU twin and the
// launch share one planning step.
type stackParams struct {
	count, samples, channels int
	srcBase, srcRecStride    int
	srcSampleStride          int
	dstBase, dstRecStride    int
	reverse                  bool
	scale, offset            float32
}

// stackPlan checks a copy of a block (records, samples, channels) into a
// volume of shape and returns its parameters.
func stackPlan(cfg *StackFormatExecutorConfig, shape [4]int, records, samples, channels int, a *Action) (stackParams, error) {
	const what = "StackFormatExecutor"
	if err := checkCopy(what, a, records); err != nil {
		return stackParams{}, err
	}
	start, step, count, err := cfg.SampleSlice.resolve(samples)
	if err != nil {
		return stackParams{}, fmt.Errorf("%s: StackFormatExecutorConfig.%w", what, err)
	}
	if count != shape[2] || channels != shape[3] {
		return stackParams{}, backend.Invalidf("%s: volume samples x channels %d x %d, expected %d x %d (the block's after sample_slice)", what, shape[2], shape[3], count, channels)
	}
	if a.BufferSegment < 0 || a.BufferSegment >= shape[0] {
		return stackParams{}, backend.Invalidf("%s: Copy buffer_segment=%d, expected < the volume's %d segments", what, a.BufferSegment, shape[0])
	}
	if a.BufferRecord < 0 || a.BufferRecord > shape[1] || a.Count > shape[1]-a.BufferRecord {
		return stackParams{}, backend.Invalidf("%s: Copy buffer_record=%d count=%d, expected within the volume's %d records per segment", what, a.BufferRecord, a.Count, shape[1])
	}
	scale, offset, err := cfg.SampleTransform.factors()
	if err != nil {
		return stackParams{}, fmt.Errorf("%s: StackFormatExecutorConfig.%w", what, err)
	}
	recStride := shape[2] * shape[3]
	return stackParams{
		count: a.Count, samples: count, channels: channels,
		srcBase: (a.BlockOffset*samples + start) * channels, srcRecStride: samples * channels,
		srcSampleStride: step * channels,
		dstBase:         (a.BufferSegment*shape[1] + a.BufferRecord) * recStride, dstRecStride: recStride,
		reverse: a.Reverse, scale: scale, offset: offset,
	}, nil
}

// runStack performs p on host slices long enough for it (callers check).
func runStack[D, S Element](dst []D, src []S, p *stackParams) {
	cvt := converter[D]()
	for i := 0; i < p.count; i++ {
		d := i
		if p.reverse {
			d = p.count - 1 - i
		}
		so := p.srcBase + i*p.srcRecStride
		do := p.dstBase + d*p.dstRecStride
		for k := 0; k < p.samples; k++ {
			for c := 0; c < p.channels; c++ {
				v := float32(src[so+k*p.srcSampleStride+c])
				dst[do+k*p.channels+c] = cvt(float64(fma32(p.scale, v, p.offset)))
			}
		}
	}
}

// ExecuteStack carries out one Copy action: records
// [BlockOffset, BlockOffset+Count) of blk go to segment BufferSegment,
// records from BufferRecord (back to front when Reverse), sliced and
// transformed as e's config says. Bad shapes or an action outside the
// volume are errors that write nothing.
func ExecuteStack[D, S Element](e *StackFormatExecutor, vol Volume[D], blk Block[S], a Action) error {
	if err := vol.check("StackFormatExecutor"); err != nil {
		return err
	}
	if err := blk.check("StackFormatExecutor"); err != nil {
		return err
	}
	p, err := stackPlan(&e.cfg, vol.Shape, blk.Records, blk.Samples, blk.Channels, &a)
	if err != nil {
		return err
	}
	runStack(vol.Data, blk.Data, &p)
	return nil
}

// EraseVolume clears vol when the config's erase_after_volume is set; an
// endpoint calls it on a FinishVolume action once the volume is consumed.
func EraseVolume[T Element](e *StackFormatExecutor, vol Volume[T]) {
	if e.cfg.EraseAfterVolume {
		clear(vol.Data)
	}
}

// fma32 is a*b+c rounded once, as nvcc contracts the kernels' a*b+c
// (explicit here so the Go compiler neither fuses nor splits it by
// architecture). The product of two float32 is exact in float64, so one
// rounding of the float64 sum to float32 matches fmaf except in rare
// double-rounding ties.
func fma32(a, b, c float32) float32 {
	return float32(math.FMA(float64(a), float64(b), float64(c)))
}

// converter returns vortex's round_clip_cast to D: integers round half
// away from zero (roundf) and saturate, NaN becomes 0; floats pass.
func converter[D Element]() func(float64) D {
	var z D
	var lo, hi float64
	switch any(z).(type) {
	case float32:
		return func(v float64) D { return D(float32(v)) }
	case int8:
		lo, hi = math.MinInt8, math.MaxInt8
	case uint8:
		lo, hi = 0, math.MaxUint8
	case int16:
		lo, hi = math.MinInt16, math.MaxInt16
	case uint16:
		lo, hi = 0, math.MaxUint16
	}
	return func(v float64) D {
		if v != v {
			return 0
		}
		r := math.Round(v)
		if r > hi {
			r = hi
		} else if r < lo {
			r = lo
		}
		return D(r)
	}
}
