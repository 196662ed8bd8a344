package format

import (
	"fmt"

	"github.com/vortexgo/vortexgo/gosrc/backend"
)

// EngineHolds reports whether an engine that is not closed holds x: a
// planner of its configuration, or the executor of one of its endpoints.
// Package engine sets it (it imports this package, so the question goes
// this way round); nil means none does.
var EngineHolds func(x any) bool

// notHeld refuses Initialize on x (what: its class) while an engine holds
// it: vortex's x.initialize(config) on the object an endpoint or an engine
// configuration was built with updates it in place, so that what was built
// with it uses the new configuration when an engine prepares it (Python's
// initialize used to build a new object, which what was built with the old
// one never saw); while an engine holds x the volume it formats into was
// sized, and the geometry tables built, for the old configuration at its
// Prepare.
func notHeld(what string, x any) error {
	if EngineHolds != nil && EngineHolds(x) {
		return fmt.Errorf("%s.initialize: an engine that is not closed uses this %s (prepared with its "+
			"old configuration, which sized its volumes); close that engine first, then initialize and prepare "+
			"a new engine, which uses the new configuration: %w", what, what, backend.ErrInUse)
	}
	return nil
}
