package pyapi

import (
	"encoding/json"
	"unsafe"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/cpu"
	"github.com/vortexgo/vortexgo/gosrc/format"
)

// The bindings of python/vortexgo/format.py: vortex's format module
// (package format), each object built from its config as one JSON record
// (keys the Go field names; absent keys, or an empty record, keep vortex's
// defaults). Initialize updates an object in place (format's package doc,
// "Initialize in place").

// decodeConfig decodes record into c (what names it); "" keeps c.
func decodeConfig(what, record string, c any) error {
	if record == "" {
		return nil
	}
	return decodeRecord(what, record, c)
}

// FormatPlanner is vortex's FormatPlanner (format.FormatPlanner), the
// engine's Formatter.
type FormatPlanner struct {
	Object
	p *format.FormatPlanner
}

// plannerConfig is config over vortex's defaults.
func plannerConfig(config string) (format.FormatPlannerConfig, error) {
	c := format.DefaultFormatPlannerConfig(format.Unbounded, format.Unbounded)
	if err := decodeConfig("FormatPlannerConfig", config, &c); err != nil {
		return c, err
	}
	for i, d := range c.Shape {
		if d == -1 { // vortex's unset size (2**64-1)
			c.Shape[i] = format.Unbounded
		}
	}
	return c, nil
}

// NewFormatPlanner builds a planner from its format.FormatPlannerConfig
// record.
func NewFormatPlanner(config string) (*FormatPlanner, error) {
	c, err := plannerConfig(config)
	if err != nil {
		return nil, tag(err)
	}
	p, err := format.NewFormatPlanner(c)
	if err != nil {
		return nil, tag(err)
	}
	return &FormatPlanner{Object: Object{obj: p}, p: p}, nil
}

// Initialize adopts config in place (format.FormatPlanner.Initialize).
func (p *FormatPlanner) Initialize(config string) error {
	c, err := plannerConfig(config)
	if err != nil {
		return tag(err)
	}
	return tag(p.p.Initialize(c))
}

// Reset forgets the segment, volume and scan in progress
// (format.FormatPlanner.Reset).
func (p *FormatPlanner) Reset() { p.p.Reset() }

// FormatExecutor is one of vortex's format executors (stack, radial,
// spiral, position), which endpoints execute the planner's plans with.
type FormatExecutor struct {
	Object
	initialize func(config string) error
}

// newExecutor builds an executor of kind from config over the defaults
// c, and remembers how to initialize it in place.
func newExecutor[C any, X any](kind, config string, c C, newX func(C) (X, error), init func(X, C) error) (*FormatExecutor, error) {
	defaults := c
	if err := decodeConfig(kind+"Config", config, &c); err != nil {
		return nil, tag(err)
	}
	x, err := newX(c)
	if err != nil {
		return nil, tag(err)
	}
	return &FormatExecutor{Object: Object{obj: x}, initialize: func(config string) error {
		c := defaults
		if err := decodeConfig(kind+"Config", config, &c); err != nil {
			return err
		}
		return init(x, c)
	}}, nil
}

// NewStackFormatExecutor builds a format.StackFormatExecutor from its
// config record.
func NewStackFormatExecutor(config string) (*FormatExecutor, error) {
	return newExecutor("StackFormatExecutor", config, format.StackFormatExecutorConfig{},
		format.NewStackFormatExecutor, (*format.StackFormatExecutor).Initialize)
}

// NewRadialFormatExecutor builds a format.RadialFormatExecutor from its
// config record.
func NewRadialFormatExecutor(config string) (*FormatExecutor, error) {
	return newExecutor("RadialFormatExecutor", config, format.RadialFormatExecutorConfig{},
		format.NewRadialFormatExecutor, (*format.RadialFormatExecutor).Initialize)
}

// NewSpiralFormatExecutor builds a format.SpiralFormatExecutor from its
// config record.
func NewSpiralFormatExecutor(config string) (*FormatExecutor, error) {
	return newExecutor("SpiralFormatExecutor", config, format.SpiralFormatExecutorConfig{},
		format.NewSpiralFormatExecutor, (*format.SpiralFormatExecutor).Initialize)
}

// NewPositionFormatExecutor builds a format.PositionFormatExecutor from its
// config record (over vortex's defaults).
func NewPositionFormatExecutor(config string) (*FormatExecutor, error) {
	return newExecutor("PositionFormatExecutor", config, format.DefaultPositionFormatExecutorConfig(),
		format.NewPositionFormatExecutor, (*format.PositionFormatExecutor).Initialize)
}

// Initialize adopts config in place (the executor's Initialize).
func (x *FormatExecutor) Initialize(config string) error { return tag(x.initialize(config)) }

// hostSlice views n elements of type T at the host address ptr (memory
// the caller's arrays own and keep alive for the call).
func hostSlice[T any](ptr uintptr, n int) []T {
	var z T
	b := cpu.HostBytes(ptr, n*int(unsafe.Sizeof(z)))
	if len(b) == 0 {
		return nil
	}
	return unsafe.Slice((*T)(unsafe.Pointer(&b[0])), n)
}

// formatHost runs the executor's format on host buffers of element types D
// (the volume) and S (the segment).
func formatHost[D, S format.Element](x any, vol uintptr, volShape [4]int, seg uintptr, records, samples, channels int, pos [2]uintptr, posRecords, posChannels, segmentIndex, recordIndex int, reverse bool) error {
	for _, d := range volShape {
		if d < 0 || d > 1<<30 {
			return backend.Invalidf("format: volume shape %v, expected sizes in [0, 2**30]", volShape)
		}
	}
	if records < 0 || samples < 0 || channels < 0 || records > 1<<30 || samples > 1<<30 || channels > 1<<30 ||
		posRecords < 0 || posChannels < 0 || posRecords > 1<<30 || posChannels > 1<<30 {
		return backend.Invalidf("format: segment (%d, %d, %d), positions (%d, %d), expected sizes in [0, 2**30]", records, samples, channels, posRecords, posChannels)
	}
	n := volShape[0] * volShape[1] * volShape[2] * volShape[3]
	v := format.Volume[D]{Data: hostSlice[D](vol, n), Shape: volShape}
	b := format.Block[S]{Data: hostSlice[S](seg, records*samples*channels), Records: records, Samples: samples, Channels: channels}
	switch e := x.(type) {
	case *format.RadialFormatExecutor:
		return format.FormatRadial(e, v, b, segmentIndex, recordIndex, reverse)
	case *format.SpiralFormatExecutor:
		return format.FormatSpiral(e, v, b, segmentIndex, recordIndex, reverse)
	case *format.PositionFormatExecutor:
		m := posRecords * posChannels
		t := format.Positions{Data: hostSlice[float64](pos[0], m), Records: posRecords, Channels: posChannels}
		a := format.Positions{Data: hostSlice[float64](pos[1], m), Records: posRecords, Channels: posChannels}
		return format.FormatPosition(e, v, t, a, b)
	}
	return backend.Invalidf("format: %T has no format on host buffers", x)
}

// FormatHost is the radial, spiral and position executors' format (vortex's
// format(volume_buffer, segment_buffer, segment_index, record_index,
// reverse); the position executor's also takes the target and actual
// positions) on host buffers: the volume at vol, shape (x, y, samples, 1),
// of dtype dst; the segment at seg, (records, samples, channels), of dtype
// src. The positions (float64, posRecords x posChannels) are read by the
// position executor only. The caller keeps the buffers alive and
// C-contiguous for the call.
func (x *FormatExecutor) FormatHost(dst, src string, vol uintptr, v0, v1, v2, v3 int, seg uintptr, records, samples, channels int, target, actual uintptr, posRecords, posChannels, segmentIndex, recordIndex int, reverse bool) error {
	shape := [4]int{v0, v1, v2, v3}
	pos := [2]uintptr{target, actual}
	var err error
	switch dst + "/" + src {
	case "int8/int8":
		err = formatHost[int8, int8](x.obj, vol, shape, seg, records, samples, channels, pos, posRecords, posChannels, segmentIndex, recordIndex, reverse)
	case "int8/float32":
		err = formatHost[int8, float32](x.obj, vol, shape, seg, records, samples, channels, pos, posRecords, posChannels, segmentIndex, recordIndex, reverse)
	case "uint16/uint16":
		err = formatHost[uint16, uint16](x.obj, vol, shape, seg, records, samples, channels, pos, posRecords, posChannels, segmentIndex, recordIndex, reverse)
	case "float32/float32":
		err = formatHost[float32, float32](x.obj, vol, shape, seg, records, samples, channels, pos, posRecords, posChannels, segmentIndex, recordIndex, reverse)
	default:
		return tag(backend.Invalidf("format: segment %s to volume %s, expected int8>int8, float32>int8, uint16>uint16 or float32>float32", src, dst))
	}
	return tag(err)
}

// planJSON is a plan's actions as JSON (format.Action's fields by name).
func planJSON(plan *format.FormatPlan) (string, error) {
	b, err := json.Marshal(plan.Actions)
	if err != nil {
		return "", tag(err)
	}
	return string(b), nil
}

// Next plans one block (format.FormatPlanner.Next): the block's first sample
// and length, and its markers as JSON rows of marker.py's _to_records.
// It returns the plan's actions as JSON.
func (p *FormatPlanner) Next(blockSample int64, blockLength int, markers string) (string, error) {
	var rows []markerRow
	if err := json.Unmarshal([]byte(markers), &rows); err != nil {
		return "", tag(badArg("FormatPlanner.next: markers %.60q, expected JSON rows of 8 integers", markers))
	}
	ms, err := fromRows("markers", rows)
	if err != nil {
		return "", tag(err)
	}
	var plan format.FormatPlan
	if err := p.p.Next(&plan, blockSample, blockLength, ms); err != nil {
		return "", tag(err)
	}
	return planJSON(&plan)
}

// Finish is the end-of-stream plan (format.FormatPlanner.Finish) as JSON.
func (p *FormatPlanner) Finish() (string, error) {
	var plan format.FormatPlan
	if err := p.p.Finish(&plan); err != nil {
		return "", tag(err)
	}
	return planJSON(&plan)
}
