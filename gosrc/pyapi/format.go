package pyapi

import (
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
	c := format.DefaultFormatPlannerConfig(0, 0)
	return c, decodeConfig("FormatPlannerConfig", config, &c)
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
