package motion

import "github.com/vortexgo/vortexgo/gosrc/backend"

// Plan samples, every dt seconds, the time-optimal motion from start to end
// under limits (one per axis), vortex's motion::plan. Not yet implemented:
// the planner lands with issue 7's motion work.
func Plan(dt float64, start, end State, limits []Limits, opt Options) (Path, error) {
	return Path{}, backend.Invalidf("motion.Plan: not implemented yet")
}
