// Package format builds the objects of vortex's format module for the
// bindings: the FormatPlanner (the engine's Formatter, which turns each
// block's markers into a format plan) and the executors the endpoints run
// that plan with (stack, radial, spiral, position). The objects themselves
// live in package stage.
package format

import (
	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/format/stage"
)

// New builds an object of vortex's format module from its JSON record,
// for bindings (keys are the Go field names; absent keys keep vortex's
// defaults): "FormatPlanner" (a stage.FormatPlannerConfig; the planner is
// the engine's Formatter), or an executor, "StackFormatExecutor",
// "RadialFormatExecutor", "SpiralFormatExecutor" or
// "PositionFormatExecutor" (their configs), which endpoints execute plans
// with.
func New(kind, record string) (any, error) {
	decode := func(v any) error {
		if record == "" {
			return nil
		}
		return backend.DecodeRecord(kind+"Config", record, v)
	}
	switch kind {
	case "FormatPlanner":
		c := stage.DefaultFormatPlannerConfig(0, 0)
		if err := decode(&c); err != nil {
			return nil, err
		}
		return stage.NewFormatPlanner(c)
	case "StackFormatExecutor":
		var c stage.StackFormatExecutorConfig
		if err := decode(&c); err != nil {
			return nil, err
		}
		return stage.NewStackFormatExecutor(c)
	case "RadialFormatExecutor":
		var c stage.RadialFormatExecutorConfig
		if err := decode(&c); err != nil {
			return nil, err
		}
		return stage.NewRadialFormatExecutor(c)
	case "SpiralFormatExecutor":
		var c stage.SpiralFormatExecutorConfig
		if err := decode(&c); err != nil {
			return nil, err
		}
		return stage.NewSpiralFormatExecutor(c)
	case "PositionFormatExecutor":
		c := stage.DefaultPositionFormatExecutorConfig()
		if err := decode(&c); err != nil {
			return nil, err
		}
		return stage.NewPositionFormatExecutor(c)
	}
	return nil, backend.Invalidf("format.New: kind %q, expected FormatPlanner, StackFormatExecutor, RadialFormatExecutor, SpiralFormatExecutor or PositionFormatExecutor", kind)
}
