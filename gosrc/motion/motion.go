// Package motion plans the inactive parts of a scan: multi-axis point-to-
// point motions limited in position, velocity and acceleration, sampled at
// the output rate. vortex uses the Reflexxes Type II library for this
// (vortex::motion::plan); this is our own planner with the same contract:
// time-optimal under the limits, every axis arriving together (phase-
// synchronised when the motion is a straight line, time-synchronised
// otherwise), entering the next segment at its required velocity.
package motion

import "math"

// Range is a closed interval [Min, Max], vortex's Range.
type Range struct {
	Min, Max float64
}

// Symmetric is the range [-r, r] (vortex's Range.symmetric).
func Symmetric(r float64) Range { return Range{Min: -math.Abs(r), Max: math.Abs(r)} }

// Length is Max - Min.
func (r Range) Length() float64 { return r.Max - r.Min }

// Contains reports whether v lies in [Min, Max].
func (r Range) Contains(v float64) bool { return v >= r.Min && v <= r.Max }

// Limits bound one axis, vortex's Limits (motion::limits_t): the defaults are
// position [-10, 10], velocity 100 and acceleration 10,000 (units per second
// and per second squared).
type Limits struct {
	Position     Range
	Velocity     float64
	Acceleration float64
}

// DefaultLimits is vortex's default limits_t.
func DefaultLimits() Limits {
	return Limits{Position: Range{Min: -10, Max: 10}, Velocity: 100, Acceleration: 10_000}
}

// State is the position and velocity of every axis at one instant.
type State struct {
	Position []float64
	Velocity []float64
}

// Options are vortex's motion::options_t.
type Options struct {
	// IncludeInitial keeps the sample at t = 0 (the start state).
	IncludeInitial bool
	// IncludeFinal keeps the sample at the end state.
	IncludeFinal bool
	// BypassLimitsCheck skips the position-limit check of the samples.
	BypassLimitsCheck bool
	// FixedSamples, when > 0, fixes the motion's duration to that many
	// samples instead of the shortest feasible one (an error if it cannot
	// be met). vortex's optional<size_t>; 0 means unset here.
	FixedSamples int
	// VortexQuirks reproduces choices of vortex's planner (Reflexxes Type
	// II, and vortex's sampling of it) that break the limits or miss the
	// target, for comparing with vortex sample by sample. Plan otherwise
	// corrects them:
	//
	//   - For a displacement just above the distance a triangular profile
	//     needs to reach the velocity limit (up to (V-v0)(V-v1)/2A more),
	//     Reflexxes still plans the triangle, whose peak exceeds the limit
	//     (by up to a factor sqrt(3/2) from rest to rest). Plan cruises at
	//     the limit, which takes slightly longer.
	//   - Reflexxes phase-synchronises motions that are collinear within 1 %
	//     and its limits within 0.1 %, then patches the start, end and
	//     position errors of the proportional motion with corrections that
	//     leave steps in the path (acceleration spikes tens of times the
	//     limit) and miss the target by up to about 1 % of the move. Plan
	//     phase-synchronises only when the proportional motion meets both
	//     states to rounding and keeps every axis' limits, and otherwise
	//     time-synchronises.
	//   - With a fixed duration, Reflexxes plans a phase-synchronised
	//     motion at that duration even where its leading axis cannot arrive
	//     then (it misses the target); Plan time-synchronises, which finds
	//     the durations the axes can meet.
	//   - vortex accepts a motion one sample longer than the fixed count
	//     and squeezes it into the count, speeding it up by up to 1/n
	//     (limits exceeded by up to (1+1/n)²); Plan accepts only rounding
	//     and otherwise fails with "cannot be met".
	//   - A motion that ends within the first sample is sampled at the
	//     leading axis' shortest duration (Reflexxes' report of a finished
	//     motion) even when the axes are synchronised to a later time, so
	//     the sample misses the target; Plan samples the synchronised time.
	//   - The hold velocity of a ramp-hold-ramp profile is computed as
	//     Reflexxes does, losing digits on long motions (A·T large against
	//     the velocities); Plan uses an equivalent stable form.
	VortexQuirks bool
}

// Path is a planned motion sampled at the output rate: Len() samples of Dims
// axes each, row-major (sample i's axis d is Data[i*Dims+d]), the layout of
// a scan buffer.
type Path struct {
	Data []float64
	Dims int
}

// Len is the number of samples.
func (p Path) Len() int {
	if p.Dims == 0 {
		return 0
	}
	return len(p.Data) / p.Dims
}

// At is sample i (all axes), aliasing Data.
func (p Path) At(i int) []float64 { return p.Data[i*p.Dims : (i+1)*p.Dims] }
