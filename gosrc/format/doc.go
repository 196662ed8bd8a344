// Package format is vortex's format module (src/vortex/format: plan.hpp,
// stack.hpp, radial, spiral, position): the format planner, which reads the
// markers of each block and says which records go where, and the
// executors, which carry out its copies into a volume (stacked, radial,
// spiral, or placed by position), on the CPU and as CUDA kernels.
//
// # Planner
//
// FormatPlanner is the engine's Formatter: for each block it turns the
// markers (segment and volume boundaries, scan starts, events) into a
// FormatPlan of Actions (Copy, Resize, FinishSegment, FinishVolume) that
// every endpoint wired to it executes. The engine imports this package for
// the plan's types.
//
// # Executors
//
// StackFormatExecutor, RadialFormatExecutor, SpiralFormatExecutor and
// PositionFormatExecutor place the plan's copies into an endpoint's volume:
// on the CPU through Execute{Stack,Radial,Spiral,Position}, on a GPU as one
// kernel of kernels/format.cu per copy (Prepare loads it, Launch runs it).
//
// # Initialize in place
//
// Initialize on an object that already exists (vortex's
// x.initialize(config) on the planner or executor an engine configuration
// or endpoint was built with) updates it in place, so that what was built
// with it uses the new configuration; it is refused with backend.ErrInUse
// while an engine that is not closed holds the object (EngineHolds).
//
// The Python bindings (gosrc/pyapi/format.go) build these objects from
// their config records.
package format
