package motion

import "math"

// Tolerances of the planner. vortex's plans come from Reflexxes Type II and
// the sample counts it derives from them are discrete (ceil of the
// synchronisation time over dt), so the decisions below use the same
// tolerances Reflexxes documents for its Type II planner: with other values
// a plan near a decision boundary would pick a different profile (or a
// different sample count) than vortex's.
const (
	validEps     = 1e-10 // a profile whose radicand is only this far negative is still possible
	denomEps     = 1e-6  // below this a hold-velocity denominator is treated as zero
	psAbsEps     = 1e-6  // phase synchronisation: absolute tolerance
	psRelEps     = 1e-3  // phase synchronisation: relative tolerance of limits and times
	psCollinear  = 1e-2  // phase synchronisation: relative collinearity tolerance
	positiveZero = 1e-50 // the square root of a non-positive radicand
	infinity     = 1e100 // "never" for inoperative intervals and the last polynomial
	maxExecTime  = 1e10  // longest motion, in seconds
	equalityRel  = 1e-7  // nudge of a start state equal to a moving target state
	equalityAbs  = 1e-7  // the same, for a start position of zero
	maxPolys     = 7     // pieces of one axis' motion: prelude (2) + ramp, hold, ramp (2) + tail
	sqrt2        = math.Sqrt2

	// limitRounding is the relative rounding Plan tolerates where Reflexxes
	// tolerates more (see Options.VortexQuirks).
	limitRounding = 1e-9
)

// sqrtPos is a square root that treats a non-positive radicand (rounding
// near a profile boundary) as a zero-length ramp instead of NaN.
func sqrtPos(x float64) float64 {
	if x <= 0 {
		return positiveZero
	}
	return math.Sqrt(x)
}

// shape is the kind of an axis' time-optimal motion, after its state is
// normalised to a non-negative start velocity (and, when reversed, after it
// has braked to rest and turned round): the phase-synchronisation test needs
// every axis to fit the slowest axis' shape.
type shape uint8

const (
	shapeNone     shape = iota
	shapeCruise         // accelerate, cruise at the velocity limit, decelerate to a target velocity >= 0
	shapeTriangle       // accelerate, decelerate to a target velocity >= 0, never reaching the limit
	shapeTrapNeg        // accelerate, cruise at the limit, decelerate through rest to a target velocity <= 0
	shapeTriNeg         // accelerate, decelerate through rest to a target velocity <= 0
)

// poly is one piece of an axis' motion: position a2*d*d + a1*d + a0 and
// velocity va1*d + va0 with d = t - t0, valid up to time end.
type poly struct {
	a2, a1, a0 float64
	va1, va0   float64
	t0, end    float64
}

func (p *poly) pos(t float64) float64 {
	d := t - p.t0
	return p.a2*d*d + p.a1*d + p.a0
}

func (p *poly) vel(t float64) float64 { return p.va1*(t-p.t0) + p.va0 }

// profile is an axis' whole motion, a fixed array so that planning does not
// allocate.
type profile struct {
	p [maxPolys]poly
	n int
}

// ramp appends a piece of constant acceleration acc (in the normalised
// frame; sign flips it back) starting at velocity v and position x at time
// t, lasting dur.
func (pr *profile) ramp(acc, v, x, t, dur, sign float64) {
	if pr.n == maxPolys {
		return // cannot happen: the longest motion has maxPolys pieces
	}
	pr.p[pr.n] = poly{a2: 0.5 * (sign * acc), a1: sign * v, a0: sign * x, va1: sign * acc, va0: sign * v, t0: t, end: t + dur}
	pr.n++
}

// hold appends a piece of constant velocity.
func (pr *profile) hold(v, x, t, dur, sign float64) {
	if pr.n == maxPolys {
		return
	}
	pr.p[pr.n] = poly{a1: sign * v, a0: sign * x, va0: sign * v, t0: t, end: t + dur}
	pr.n++
}

// next is the position at time t for times in increasing order: *j is the
// piece found for the previous time, the search resumes there (the same
// piece as piece(t), since pieces are ordered by time).
func (pr *profile) next(t float64, j *int) float64 {
	for *j < pr.n-1 && t > pr.p[*j].end {
		*j++
	}
	return pr.p[*j].pos(t)
}

// piece is the index of the piece in force at time t: the first whose end
// is not before t.
func (pr *profile) piece(t float64) int {
	j := 0
	for j < pr.n-1 && t > pr.p[j].end {
		j++
	}
	return j
}

// state1 is one axis' boundary problem while step 1 (the duration
// computations) rewrites it: braking, turning round, normalising.
type state1 struct {
	p0, v0, p1, v1 float64
}

func (s *state1) negate() { s.p0, s.v0, s.p1, s.v1 = -s.p0, -s.v0, -s.p1, -s.v1 }

// toLimit brakes from above the velocity limit down to it.
func (s *state1) toLimit(t *float64, vmax, amax float64) {
	dur := (s.v0 - vmax) / amax
	*t += dur
	s.p0 += 0.5 * (s.v0 + vmax) * dur
	s.v0 = vmax
}

// toRest brakes to a stop.
func (s *state1) toRest(t *float64, amax float64) {
	dur := s.v0 / amax
	*t += dur
	s.p0 += 0.5 * s.v0 * dur
	s.v0 = 0
}

// Durations of the shapes (normalised state, 0 <= v0 <= vmax).
func cruiseTime(s state1, vmax, amax float64) float64 {
	return (2*amax*(s.p1-s.p0) + s.v0*s.v0 + s.v1*s.v1 + 2*vmax*(vmax-s.v0-s.v1)) / (2 * amax * vmax)
}

func triangleTime(s state1, amax float64) float64 {
	return (sqrt2*sqrtPos(amax*amax*(2*amax*(s.p1-s.p0)+s.v0*s.v0+s.v1*s.v1)) - amax*(s.v0+s.v1)) / (amax * amax)
}

func triNegTime(s state1, amax float64) float64 {
	return (sqrt2*sqrtPos(amax*amax*(s.v0*s.v0+s.v1*s.v1+2*amax*(s.p1-s.p0))) - amax*(s.v0+s.v1)) / (amax * amax)
}

func trapNegTime(s state1, vmax, amax float64) float64 {
	return (s.p1-s.p0)/vmax + (0.5*(s.v0*s.v0+s.v1*s.v1)+vmax*(vmax-s.v0-s.v1))/(amax*vmax)
}

// minTime is an axis' shortest motion (Reflexxes' step 1A): its duration,
// its shape and whether it first brakes to rest and turns round.
//
// vortexBand reproduces vortex's choice between the cruise and the triangle
// shapes: Reflexxes Type II tests the displacement against
// (3V² - v0² - v0(V-v1) - V·v1 - v1²)/2A instead of the distance
// (2V² - v0² - v1²)/2A that the triangle needs to reach V, so for
// displacements between the two it plans a triangle whose peak exceeds the
// velocity limit (by up to sqrt(3/2) for a move from rest to rest). Plan
// uses the correct threshold unless Options.VortexQuirks asks for vortex's
// plans.
func minTime(s state1, vmax, amax float64, vortexBand bool) (float64, shape, bool) {
	t := 0.0
	if !(s.v0 >= 0) {
		s.negate()
	}
	if !(s.v0 <= vmax) {
		s.toLimit(&t, vmax, amax)
	}
	reversed := false
	turn := func() {
		s.toRest(&t, amax)
		s.negate()
		reversed = true
	}
	// toCruise: the motion starts by accelerating towards the target and
	// ends with a target velocity >= 0; otherwise it ends through rest.
	toCruise := false
	switch {
	case s.v0 <= s.v1:
		// Reaching v1 straight away must not pass the target, or the axis
		// has to overshoot and come back.
		if s.p0+0.5*(s.v1*s.v1-s.v0*s.v0)/amax <= s.p1 {
			toCruise = true
		} else {
			turn()
		}
	case s.v1 >= 0:
		if s.p0+0.5*(s.v0*s.v0-s.v1*s.v1)/amax >= s.p1 {
			turn()
		} else {
			toCruise = true
		}
	default:
		// The target velocity points back: if braking to it already passes
		// the target, stop, turn round and approach from the other side.
		if s.p0+(s.v0*s.v0-s.v1*s.v1)/(2*amax) >= s.p1 {
			turn()
			toCruise = true
		}
	}
	if toCruise {
		var reach float64
		if vortexBand {
			reach = (3*vmax*vmax - s.v0*s.v0 - s.v0*(vmax-s.v1) - vmax*s.v1 - s.v1*s.v1) / (2 * amax)
		} else {
			reach = (2*vmax*vmax - s.v0*s.v0 - s.v1*s.v1) / (2 * amax)
		}
		if s.p0+reach <= s.p1 {
			return t + cruiseTime(s, vmax, amax), shapeCruise, reversed
		}
		return t + triangleTime(s, amax), shapeTriangle, reversed
	}
	if s.p0+(2*vmax*vmax-s.v1*s.v1-s.v0*s.v0)/(2*amax) >= s.p1 {
		return t + triNegTime(s, amax), shapeTriNeg, reversed
	}
	return t + trapNegTime(s, vmax, amax), shapeTrapNeg, reversed
}

// inoperative is the open interval of durations (begin, end) that an axis
// cannot meet (Reflexxes' steps 1B and 1C): an axis moving towards its
// target with a target velocity of the same sign can arrive early by a
// direct profile, or late by stopping, turning round and coming back, but
// not in between. begin = infinity when every duration above the minimum is
// possible.
func inoperative(s state1, vmax, amax float64) (begin, end float64) {
	if !(s.v0 >= 0) {
		s.negate()
	}
	t := 0.0
	if !(s.v0 <= vmax) {
		s.toLimit(&t, vmax, amax)
	}
	e := s
	te := t
	switch {
	case s.v1 < 0:
		return infinity, infinity
	case s.v0 <= s.v1:
		if !(s.p0+0.5*(s.v1*s.v1-s.v0*s.v0)/amax <= s.p1) {
			return infinity, infinity
		}
	default:
		if s.p0+0.5*(s.v0*s.v0-s.v1*s.v1)/amax >= s.p1 {
			return infinity, infinity
		}
	}
	if s.p0+(s.v0*s.v0+s.v1*s.v1)/(2*amax) <= s.p1 {
		return infinity, infinity
	}
	// The slowest direct profile: slow down to the lowest velocity that
	// still arrives, then speed up to v1.
	begin = t + (s.v0+s.v1-sqrt2*sqrtPos(2*amax*(s.p0-s.p1)+s.v0*s.v0+s.v1*s.v1))/amax
	// The fastest indirect profile: stop, turn round, come back.
	e.toRest(&te, amax)
	e.negate()
	if e.p0+(2*vmax*vmax-e.v1*e.v1-e.v0*e.v0)/(2*amax) >= e.p1 {
		return begin, te + triNegTime(e, amax)
	}
	return begin, te + trapNegTime(e, vmax, amax)
}

// syncProfile plans an axis to arrive at its target state exactly at time
// T (Reflexxes' step 2, decision tree 2): after braking to the velocity
// limit if it starts above it, the motion is a ramp at full acceleration to
// a hold velocity, a hold, and a ramp at full acceleration to the target
// velocity; the hold velocity is the one that makes the distance come out
// right, and which of the ramp directions applies follows from where the
// target lies relative to the extreme profiles.
func syncProfile(pr *profile, s state1, vmax, amax, T float64, stable bool) {
	pr.n = 0
	sign := 1.0
	t := 0.0
	negate := func() {
		s.negate()
		sign = -sign
	}
	brakeTo := func(v float64) { // full deceleration from s.v0 down to v
		dur := (s.v0 - v) / amax
		pr.ramp(-amax, s.v0, s.p0, t, dur, sign)
		t += dur
		s.p0 += 0.5 * (s.v0 + v) * dur
		s.v0 = v
	}
	if !(s.v0 >= 0) {
		negate()
	}
	if !(s.v0 <= vmax) {
		brakeTo(vmax)
	}
	// Positions reached at T by a profile whose hold velocity is v1 (resp.
	// v0), ramping at the start (resp. end): they bracket the target
	// between the ramp-direction cases.
	dvv := func() float64 { return (s.v0 - s.v1) * (s.v0 - s.v1) / (2 * amax) }
	holdAtTarget := func(plus bool) bool {
		if plus {
			return s.p0+(T-t)*s.v1+dvv() <= s.p1
		}
		return s.p0+(T-t)*s.v1-dvv() <= s.p1
	}
	holdAtStart := func(plus bool) bool {
		if plus {
			return s.p0+(T-t)*s.v0+dvv() <= s.p1
		}
		return s.p0+(T-t)*s.v0-dvv() <= s.p1
	}
	slowest := func() {
		// Below both velocities: decelerate, hold, accelerate, unless the
		// axis has to come to rest and approach from the far side.
		if s.p0+(s.v0*s.v0+s.v1*s.v1)/(2*amax) <= s.p1 || (s.v0+s.v1)/amax > T-t {
			downHoldUp(pr, s, amax, t, T, sign, stable)
			return
		}
		brakeTo(0)
		negate()
		upHoldDownThrough(pr, s, amax, t, T, sign, stable)
	}
	switch {
	case s.v0 <= s.v1:
		switch {
		case holdAtTarget(false):
			upHoldDown(pr, s, amax, t, T, sign, stable)
		case holdAtStart(true):
			upHoldUp(pr, s, amax, t, T, sign, stable)
		default:
			slowest()
		}
	case s.v1 >= 0:
		switch {
		case holdAtStart(false):
			upHoldDown(pr, s, amax, t, T, sign, stable)
		case holdAtTarget(true):
			downHoldDown(pr, s, amax, t, T, sign, stable)
		default:
			slowest()
		}
	default:
		if s.p0+(s.v0*s.v0-s.v1*s.v1)/(2*amax) >= s.p1 {
			brakeTo(0)
			negate()
			if holdAtTarget(false) {
				upHoldDown(pr, s, amax, t, T, sign, stable)
			} else {
				upHoldUp(pr, s, amax, t, T, sign, stable)
			}
		} else if holdAtStart(false) {
			upHoldDownThrough(pr, s, amax, t, T, sign, stable)
		} else {
			downHoldDownThrough(pr, s, amax, t, T, sign, stable)
		}
	}
}

// holdAbove is the hold velocity of a profile whose hold lies above both
// velocities (ramp up, hold, ramp down): the smaller root of a quadratic,
// 0.5·(B - sqrt(R)) with B = A·dT + v0 + v1. Reflexxes evaluates it so; when
// A·dT dwarfs the velocities (long motions) that subtraction loses digits
// (1e-9 relative for motions of seconds at 1e6 units/s²), so unless
// reproducing vortex Plan uses the equivalent 2nd form (B² - R)/2/(B + sqrt(R)),
// B² - R = 2(v0² + v1²) + 4A(p1 - p0).
func holdAbove(s state1, amax, dT float64, stable bool) float64 {
	b := dT*amax + s.v0 + s.v1
	root := sqrtPos(holdRadicand(s, amax, dT, 1))
	if stable && b > 0 {
		return (s.v0*s.v0 + s.v1*s.v1 + 2*amax*(s.p1-s.p0)) / (b + root)
	}
	return 0.5 * (b - root)
}

// holdBelow is the hold velocity of a profile whose hold lies below both
// velocities (ramp down, hold, ramp up): 0.5·(B + sqrt(R)) with
// B = v0 + v1 - A·dT, stable form (R - B²)/2/(sqrt(R) - B),
// R - B² = 4A(p1 - p0) - 2(v0² + v1²).
func holdBelow(s state1, amax, dT float64, stable bool) float64 {
	b := s.v0 + s.v1 - dT*amax
	root := sqrtPos(holdRadicand(s, amax, dT, -1))
	if stable && b < 0 {
		return (2*amax*(s.p1-s.p0) - s.v0*s.v0 - s.v1*s.v1) / (root - b)
	}
	return 0.5 * (b + root)
}

// radicand of the hold velocity of the profiles whose ramps have opposite
// directions; dir = +1 when the hold is above both velocities, -1 below.
func holdRadicand(s state1, amax, dT, dir float64) float64 {
	return amax*amax*(dT*dT) - (s.v0-s.v1)*(s.v0-s.v1) + dir*(2*amax*(2*(s.p0-s.p1)+dT*(s.v0+s.v1)))
}

// firstRamp appends the ramp from s.v0 to vh, accelerating when up, and
// advances s to its end. The direction is the profile's, not the sign of
// vh - v0: a clamped hold velocity gives a ramp of zero length.
func firstRamp(pr *profile, s *state1, amax float64, t *float64, vh, sign float64, up bool) {
	if up {
		dur := (vh - s.v0) / amax
		pr.ramp(amax, s.v0, s.p0, *t, dur, sign)
		s.p0 += 0.5 * (s.v0 + vh) * dur
		*t += dur
	} else {
		dur := (s.v0 - vh) / amax
		pr.ramp(-amax, s.v0, s.p0, *t, dur, sign)
		s.p0 += 0.5 * (s.v0 + vh) * dur
		*t += dur
	}
	s.v0 = vh
}

// upHoldDown: accelerate to a hold above both velocities, decelerate.
func upHoldDown(pr *profile, s state1, amax, t, T, sign float64, stable bool) {
	dT := T - t
	vh := holdAbove(s, amax, dT, stable)
	if vh < s.v0 {
		vh = s.v0
	}
	firstRamp(pr, &s, amax, &t, vh, sign, true)
	finishDown(pr, s, amax, t, T, vh, sign)
}

// upHoldUp: accelerate to a hold between v0 and v1, accelerate again.
func upHoldUp(pr *profile, s state1, amax, t, T, sign float64, stable bool) {
	dT := T - t
	vh := s.v1
	if den := amax*dT + s.v0 - s.v1; math.Abs(den) > denomEps {
		vh = (0.5 * (2*amax*(s.p1-s.p0) + s.v0*s.v0 - s.v1*s.v1)) / den
	}
	if vh < s.v0 {
		vh = s.v0
	}
	firstRamp(pr, &s, amax, &t, vh, sign, true)
	finishUp(pr, s, amax, t, T, vh, sign)
}

// downHoldUp: decelerate to a hold below both velocities (negative when
// the axis reverses), accelerate.
func downHoldUp(pr *profile, s state1, amax, t, T, sign float64, stable bool) {
	dT := T - t
	vh := holdBelow(s, amax, dT, stable)
	if vh > s.v0 {
		vh = s.v0
	}
	firstRamp(pr, &s, amax, &t, vh, sign, false)
	finishUp(pr, s, amax, t, T, vh, sign)
}

// downHoldDown: decelerate to a hold between v1 and v0, decelerate again.
func downHoldDown(pr *profile, s state1, amax, t, T, sign float64, stable bool) {
	dT := T - t
	vh := s.v1
	if den := amax*dT - s.v0 + s.v1; math.Abs(den) > denomEps {
		vh = (0.5 * (2*amax*(s.p1-s.p0) - s.v0*s.v0 + s.v1*s.v1)) / den
	}
	if vh > s.v0 {
		vh = s.v0
	}
	firstRamp(pr, &s, amax, &t, vh, sign, false)
	finishDown(pr, s, amax, t, T, vh, sign)
}

// finishUp ends a profile whose last ramp accelerates (or is empty).
func finishUp(pr *profile, s state1, amax, t, T, vh, sign float64) {
	x, v := s.p0, vh
	dur := T - t
	if s.v1 > vh {
		dur = T - t - (s.v1-vh)/amax
	}
	pr.hold(v, x, t, dur, sign)
	x += v * dur
	t += dur
	dur = 0
	if s.v1 > v {
		dur = (s.v1 - v) / amax
	}
	pr.ramp(amax, v, x, t, dur, sign)
	x += 0.5 * (s.v1 + v) * dur
	v += dur * amax
	t += dur
	pr.hold(v, x, t, infinity, sign)
}

// finishDown ends a profile whose last ramp decelerates (or is empty).
func finishDown(pr *profile, s state1, amax, t, T, vh, sign float64) {
	x, v := s.p0, vh
	dur := T - t
	if vh > s.v1 {
		dur = T - t - (vh-s.v1)/amax
	}
	pr.hold(v, x, t, dur, sign)
	x += v * dur
	t += dur
	dur = 0
	if v > s.v1 {
		dur = (v - s.v1) / amax
	}
	pr.ramp(-amax, v, x, t, dur, sign)
	x += 0.5 * (s.v1 + v) * dur
	v -= dur * amax
	t += dur
	pr.hold(v, x, t, infinity, sign)
}

// finishThrough ends a profile whose last ramp decelerates from the hold
// through rest to a target velocity <= 0 (two pieces, split at rest).
func finishThrough(pr *profile, s state1, amax, t, T, vh, sign float64) {
	x, v := s.p0, vh
	dur := T - t - (vh-s.v1)/amax
	pr.hold(v, x, t, dur, sign)
	x += v * dur
	t += dur
	dur = v / amax
	pr.ramp(-amax, v, x, t, dur, sign)
	x += 0.5 * v * dur
	v -= dur * amax
	t += dur
	dur = -s.v1 / amax
	pr.ramp(-amax, v, x, t, dur, sign)
	x += 0.5 * s.v1 * dur
	v -= dur * amax
	t += dur
	pr.hold(v, x, t, infinity, sign)
}

// upHoldDownThrough: accelerate to a hold, decelerate through rest to a
// negative target velocity.
func upHoldDownThrough(pr *profile, s state1, amax, t, T, sign float64, stable bool) {
	dT := T - t
	vh := holdAbove(s, amax, dT, stable)
	if vh < s.v0 {
		vh = s.v0
	}
	firstRamp(pr, &s, amax, &t, vh, sign, true)
	finishThrough(pr, s, amax, t, T, vh, sign)
}

// downHoldDownThrough: decelerate to a hold >= 0, decelerate through rest
// to a negative target velocity.
func downHoldDownThrough(pr *profile, s state1, amax, t, T, sign float64, stable bool) {
	dT := T - t
	vh := s.v1
	if den := amax*dT - s.v0 + s.v1; math.Abs(den) > denomEps {
		vh = (0.5 * (2*amax*(s.p1-s.p0) - s.v0*s.v0 + s.v1*s.v1)) / den
	}
	if vh > s.v0 {
		vh = s.v0
	}
	if vh < 0 {
		vh = 0
	}
	firstRamp(pr, &s, amax, &t, vh, sign, false)
	finishThrough(pr, s, amax, t, T, vh, sign)
}
