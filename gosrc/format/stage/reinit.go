package stage

import (
	"fmt"

	"github.com/vortexgo/vortexgo/gosrc/backend"
)

// EngineHolds reports whether an engine that is not closed holds x: a
// planner of its configuration, or the executor of one of its endpoints.
// Package engine sets it (it imports this package, so the question goes
// this way round); nil means none does.
var EngineHolds func(x any) bool

// reinitialize runs a binding's "initialize" op on an object that already
// exists (vortex's x.initialize(config) on the object an endpoint or an
// engine configuration was built with): the object is updated in place, so
// what was built with it uses the new configuration when an engine
// prepares it. Python's initialize used to build a new object, which
// what was built with the old one never saw. While an engine holds x the
// change is refused: the volume it formats into was sized, and the
// geometry tables built, for the old configuration at its Prepare.
func reinitialize(what string, x any, op string, apply func() error) ([]byte, error) {
	if op != "initialize" {
		return nil, backend.Invalidf("%s: operation %q, expected initialize", what, op)
	}
	if EngineHolds != nil && EngineHolds(x) {
		return nil, fmt.Errorf("%s.initialize: an engine that is not closed uses this %s (prepared with its "+
			"old configuration, which sized its volumes); close that engine first, then initialize and prepare "+
			"a new engine, which uses the new configuration: %w", what, what, backend.ErrInUse)
	}
	return nil, apply()
}

// Do runs the binding's "initialize" op (args: the config record).
func (e *StackFormatExecutor) Do(op string, args []byte, _ any, _, _ int) ([]byte, error) {
	return reinitialize("StackFormatExecutor", e, op, func() error {
		var c StackFormatExecutorConfig
		if err := backend.DecodeRecord("StackFormatExecutorConfig", string(args), &c); err != nil {
			return err
		}
		return e.Initialize(c)
	})
}

// Do runs the binding's "initialize" op (args: the config record).
func (e *RadialFormatExecutor) Do(op string, args []byte, _ any, _, _ int) ([]byte, error) {
	return reinitialize("RadialFormatExecutor", e, op, func() error {
		var c RadialFormatExecutorConfig
		if err := backend.DecodeRecord("RadialFormatExecutorConfig", string(args), &c); err != nil {
			return err
		}
		return e.Initialize(c)
	})
}

// Do runs the binding's "initialize" op (args: the config record).
func (e *SpiralFormatExecutor) Do(op string, args []byte, _ any, _, _ int) ([]byte, error) {
	return reinitialize("SpiralFormatExecutor", e, op, func() error {
		var c SpiralFormatExecutorConfig
		if err := backend.DecodeRecord("SpiralFormatExecutorConfig", string(args), &c); err != nil {
			return err
		}
		return e.Initialize(c)
	})
}

// Do runs the binding's "initialize" op (args: the config record).
func (e *PositionFormatExecutor) Do(op string, args []byte, _ any, _, _ int) ([]byte, error) {
	return reinitialize("PositionFormatExecutor", e, op, func() error {
		c := DefaultPositionFormatExecutorConfig()
		if err := backend.DecodeRecord("PositionFormatExecutorConfig", string(args), &c); err != nil {
			return err
		}
		return e.Initialize(c)
	})
}
