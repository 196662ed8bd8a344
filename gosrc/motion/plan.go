package motion

import (
	"fmt"
	"math"

	"github.com/vortexgo/vortexgo/gosrc/backend"
)

// axis is one axis' planning state. Plan keeps the axes of small motions
// (up to stackAxes) in an array on its stack, so that the Path is its only
// allocation.
type axis struct {
	in         state1 // the boundary problem (start nudged or snapped, see solve)
	vmax, amax float64
	minT       float64 // shortest duration
	shape      shape   // shape of the shortest motion
	reversed   bool    // the shortest motion first brakes to rest and turns round
	selected   bool    // false: the motion is shorter than one sample and ends at rest
	begin, end float64 // inoperative durations (begin, end)

	// Phase synchronisation: unit vectors of displacement, start and
	// target velocity, the reference direction, and this axis' share of
	// the slowest axis' limits.
	dir, cv, tv, check float64
	ref                float64
	psA, psV, psT      float64

	prof   profile
	cursor int // the piece of the last sample (sampling goes forward in time)
}

const stackAxes = 4

// Plan samples, every dt seconds, the time-optimal motion from start to end
// under limits (one per axis), vortex's motion::plan.
//
// Each axis moves in ramps of full acceleration and holds, never above its
// velocity limit (it brakes first if it starts above it), and arrives at
// its target position with its target velocity. All axes arrive together:
// when the displacement and both velocities lie on one line, the axes move
// in proportion along it (phase synchronisation); otherwise each axis is
// re-planned to take as long as the slowest (time synchronisation), which
// can be longer still when an axis cannot arrive at that time without
// turning round. With opt.FixedSamples the duration is fixed instead. The
// samples are spaced evenly over the motion so that the last one falls on
// the target: sample k of n is at time k·T/n for a motion of duration T
// and n = ceil(T/dt) (or the fixed count), which makes the spacing at most
// dt. Without opt.IncludeInitial / IncludeFinal the samples at the start
// and the target state are left out. The motion beyond the target keeps
// the target velocity.
//
// The plans match vortex's (Reflexxes Type II) to rounding (see the golden
// tests) except where vortex's plans break the limits or miss the target,
// which Plan corrects (Options.VortexQuirks lists them and restores
// vortex's plans).
//
// Errors (backend.ErrInvalid) name the argument: dimension mismatches,
// dt <= 0, non-finite values, limits <= 0, a target velocity above its
// limit, a fixed duration that cannot be met, a sample outside the position
// limits (unless opt.BypassLimitsCheck); a motion that needs more samples
// than can be allocated fails with backend.ErrTooLarge.
func Plan(dt float64, start, end State, limits []Limits, opt Options) (Path, error) {
	dims := len(limits)
	if err := validate(dt, start, end, limits, opt); err != nil {
		return Path{}, err
	}
	var small [stackAxes]axis
	var ax []axis
	if dims <= stackAxes {
		ax = small[:dims]
	} else {
		ax = make([]axis, dims)
	}
	for i := range ax {
		ax[i] = axis{
			in:   state1{p0: start.Position[i], v0: start.Velocity[i], p1: end.Position[i], v1: end.Velocity[i]},
			vmax: limits[i].Velocity, amax: limits[i].Acceleration,
		}
	}

	// vortex asks for one sample more than the fixed count as the minimum
	// duration: the sample at the target is the (n+1)th.
	target := 0
	minSync := 0.0
	if opt.FixedSamples > 0 {
		target = opt.FixedSamples + 1
		minSync = float64(target) * dt
	}
	sync, err := solve(ax, dt, minSync, opt.VortexQuirks)
	if err != nil {
		return Path{}, err
	}

	maxSamples := backend.MaxBytes / 8 / dims
	c := math.Ceil(sync / dt)
	if !(c <= float64(maxSamples)) {
		return Path{}, fmt.Errorf("motion.Plan: the motion lasts %g s, %g samples at dt = %g, over the %d samples of %d axes that can be allocated: %w",
			sync, c, dt, maxSamples, dims, backend.ErrTooLarge)
	}
	count := int(c)
	if target > 0 {
		// vortex tolerates one sample more than asked for ("rounding"), but
		// that sample can be almost whole: squeezing it in speeds the
		// motion up by up to 1/n, breaking the limits. Plan tolerates
		// rounding only, unless asked for vortex's quirks.
		over := count == target+1 && (opt.VortexQuirks || sync <= float64(target)*dt*(1+limitRounding))
		if count != target && !over {
			return Path{}, backend.Invalidf("motion.Plan: opt.FixedSamples = %d cannot be met: the motion needs %d samples (%g s at dt = %g)",
				opt.FixedSamples, count-1, sync, dt)
		}
		count = target
	}
	// The time scale maps sample count onto the end of the motion; a
	// motion of no duration (start = end at rest) has all its samples at 0.
	scale := 0.0
	if count > 0 {
		scale = sync / (dt * float64(count))
	}
	if opt.IncludeFinal {
		count++
	}
	first := 1
	if opt.IncludeInitial {
		first = 0
	}
	n := count - first
	if n <= 0 {
		return Path{Dims: dims}, nil
	}
	path := Path{Data: make([]float64, n*dims), Dims: dims}
	for k := first; k < count; k++ {
		t := (float64(k) * dt) * scale
		row := path.Data[(k-first)*dims : (k-first+1)*dims]
		for i := range ax {
			a := &ax[i]
			if a.selected {
				// Reflexxes reports positions relative to the target; the
				// subtraction is kept so that the samples round alike.
				row[i] = a.in.p1 - (a.in.p1 - a.prof.next(t, &a.cursor))
			} else {
				row[i] = a.in.p1
			}
		}
	}
	if !opt.BypassLimitsCheck {
		if err := checkPositions(path, limits); err != nil {
			return Path{}, err
		}
	}
	return path, nil
}

func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

func validate(dt float64, start, end State, limits []Limits, opt Options) error {
	dims := len(limits)
	if dims == 0 {
		return backend.Invalidf("motion.Plan: limits is empty, expected one Limits per axis")
	}
	for _, v := range []struct {
		name string
		n    int
	}{
		{"start.Position", len(start.Position)}, {"start.Velocity", len(start.Velocity)},
		{"end.Position", len(end.Position)}, {"end.Velocity", len(end.Velocity)},
	} {
		if v.n != dims {
			return backend.Invalidf("motion.Plan: %s has %d axes, expected %d (one per limit)", v.name, v.n, dims)
		}
	}
	if !finite(dt) || dt <= 0 {
		return backend.Invalidf("motion.Plan: dt = %g, expected a finite sampling interval > 0", dt)
	}
	if opt.FixedSamples < 0 {
		return backend.Invalidf("motion.Plan: opt.FixedSamples = %d, expected >= 0 (0: the shortest motion)", opt.FixedSamples)
	}
	for i, l := range limits {
		if !finite(l.Velocity) || l.Velocity <= 0 {
			return backend.Invalidf("motion.Plan: limits[%d].Velocity = %g, expected a finite value > 0", i, l.Velocity)
		}
		if !finite(l.Acceleration) || l.Acceleration <= 0 {
			return backend.Invalidf("motion.Plan: limits[%d].Acceleration = %g, expected a finite value > 0", i, l.Acceleration)
		}
		if math.IsNaN(l.Position.Min) || math.IsNaN(l.Position.Max) || l.Position.Min > l.Position.Max {
			return backend.Invalidf("motion.Plan: limits[%d].Position = [%g, %g], expected Min <= Max", i, l.Position.Min, l.Position.Max)
		}
		for _, v := range []struct {
			name string
			x    float64
		}{
			{"start.Position", start.Position[i]}, {"start.Velocity", start.Velocity[i]},
			{"end.Position", end.Position[i]}, {"end.Velocity", end.Velocity[i]},
		} {
			if !finite(v.x) {
				return backend.Invalidf("motion.Plan: %s[%d] = %g, expected a finite value", v.name, i, v.x)
			}
		}
		// The target velocity must be held after arrival; a start
		// velocity above the limit is allowed (the axis brakes first).
		if math.Abs(end.Velocity[i]) > l.Velocity {
			return backend.Invalidf("motion.Plan: end.Velocity[%d] = %g, expected |v| <= limits[%d].Velocity = %g", i, end.Velocity[i], i, l.Velocity)
		}
	}
	return nil
}

func checkPositions(p Path, limits []Limits) error {
	for d, l := range limits {
		lo, hi := math.Inf(1), math.Inf(-1)
		for k := d; k < len(p.Data); k += p.Dims {
			lo = math.Min(lo, p.Data[k])
			hi = math.Max(hi, p.Data[k])
		}
		if lo < l.Position.Min {
			return backend.Invalidf("motion.Plan: axis %d violates its lower position limit: %g < limits[%d].Position.Min = %g", d, lo, d, l.Position.Min)
		}
		if hi > l.Position.Max {
			return backend.Invalidf("motion.Plan: axis %d violates its upper position limit: %g > limits[%d].Position.Max = %g", d, hi, d, l.Position.Max)
		}
	}
	return nil
}

func fsign(x float64) float64 {
	if x < 0 {
		return -1
	}
	return 1
}

func sameSign(a, b float64) bool { return (a < 0) == (b < 0) }

// solve plans every axis and returns the duration by which vortex counts
// the samples. It follows Reflexxes Type II's position algorithm (step 1:
// shortest durations and the synchronisation time; step 2: the profiles)
// including its conventions, because vortex's sample counts and sample
// times derive from them.
func solve(ax []axis, dt, minSync float64, quirks bool) (float64, error) {
	// A start state equal to a moving target state is nudged along the
	// velocity, so that the axis does not take "already there" for an
	// answer while the planner expects a motion.
	equal := true
	for i := range ax {
		s := ax[i].in
		if !(s.p0 == s.p1 && s.v0 == s.v1 && s.v1 != 0) {
			equal = false
			break
		}
	}
	if equal {
		for i := range ax {
			s := &ax[i].in
			if s.p0 != 0 {
				s.p0 *= 1 + fsign(s.v0)*equalityRel
			} else {
				s.p0 += fsign(s.v0) * equalityAbs
			}
		}
	}

	// Step 1: each axis' shortest motion; the slowest axis leads.
	var sortedSmall [2 * stackAxes]float64
	maxMin, lead := 0.0, 0
	for i := range ax {
		a := &ax[i]
		a.minT, a.shape, a.reversed = minTime(a.in, a.vmax, a.amax, quirks)
		if a.minT > maxMin {
			maxMin, lead = a.minT, i
		}
	}
	// An axis that comes to rest within one sample is not planned: it
	// jumps to its target (Reflexxes' convention, which vortex inherits).
	for i := range ax {
		a := &ax[i]
		a.selected = !(a.in.v1 == 0 && a.minT <= dt)
		if !a.selected {
			a.in.p0, a.in.v0 = a.in.p1, 0
		}
	}

	sync := 0.0
	phase := phaseSync(ax, lead, quirks)
	if phase {
		sync = ax[lead].minT
		if sync > maxExecTime {
			return 0, tooLong(sync)
		}
		// Reflexxes searches its (here unset, all zero) inoperative
		// intervals only in time synchronisation.
		sync = math.Max(sync, minSync)
		g := &ax[lead]
		syncProfile(&g.prof, g.in, g.vmax, g.amax, sync, !quirks)
		sync = g.prof.p[g.prof.n-2].end
		// Reflexxes plans the leading axis at a fixed duration without its
		// inoperative intervals, so it can miss its target; Plan then
		// time-synchronises, which respects them.
		phase = quirks || arrives(g, sync)
		for i := range ax {
			if phase && ax[i].selected && i != lead && !scaleProfile(&ax[i], g, sync, dt, quirks) {
				phase = false
			}
		}
	}
	if !phase {
		sorted := timeSync(ax, maxMin, sortedSmall[:0])
		sync = leaveInoperative(ax, sorted, maxMin, maxMin)
		if sync > maxExecTime {
			return 0, tooLong(sync)
		}
		if minSync > sync {
			sync = leaveInoperative(ax, sorted, minSync, minSync)
		}
		for i := range ax {
			a := &ax[i]
			if a.selected {
				syncProfile(&a.prof, a.in, a.vmax, a.amax, sync, !quirks)
			}
		}
	}
	selected := 0
	final := true
	for i := range ax {
		a := &ax[i]
		if a.selected {
			selected++
			if a.prof.piece(dt) < a.prof.n-1 {
				final = false
			}
		}
	}
	if selected == 0 {
		sync = 0
	}
	// A motion over within the first sample reports the leading axis'
	// shortest duration (Reflexxes' convention); vortex counts and places
	// samples by it. When axes move, that can fall short of the
	// synchronised duration (an axis waiting out an inoperative interval),
	// and the sample misses the target: Plan keeps the synchronised one.
	if final && (quirks || selected == 0) {
		return ax[lead].minT, nil
	}
	return sync, nil
}

// arrives reports whether an axis' profile meets its target state at time
// sync, to rounding.
func arrives(a *axis, sync float64) bool {
	j := a.prof.piece(sync)
	x, v := a.prof.p[j].pos(sync), a.prof.p[j].vel(sync)
	vs := a.vmax + math.Abs(a.in.v0) + math.Abs(a.in.v1)
	ps := math.Abs(a.in.p0) + math.Abs(a.in.p1) + math.Abs(a.in.p1-a.in.p0)
	return math.Abs(x-a.in.p1) <= limitRounding*ps && math.Abs(v-a.in.v1) <= limitRounding*vs
}

func tooLong(sync float64) error {
	return backend.Invalidf("motion.Plan: the motion would last %g s, over the %g s a plan may last", sync, maxExecTime)
}

// timeSync computes every axis' inoperative durations and returns their
// ends, sorted, as candidates for the synchronisation time.
func timeSync(ax []axis, maxMin float64, sorted []float64) []float64 {
	for i := range ax {
		a := &ax[i]
		a.begin, a.end = infinity, infinity
		if !a.selected {
			continue
		}
		a.begin, a.end = inoperative(a.in, a.vmax, a.amax)
		// Clip the interval to durations above the shortest; an interval
		// that closes up (rounding) merges into the shortest duration.
		if a.begin < a.minT {
			a.begin = a.minT
		}
		if a.end < a.begin {
			mid := (a.begin + a.end) * 0.5
			a.begin, a.end = mid, mid
			if a.begin < a.minT {
				a.minT = a.end
				a.begin, a.end = infinity, infinity
			}
		}
		if a.end < a.minT {
			a.begin, a.end = infinity, infinity
		}
	}
	n := len(ax)
	if cap(sorted) < 2*n {
		sorted = make([]float64, 2*n)
	}
	sorted = sorted[:2*n]
	for i := range ax {
		sorted[i], sorted[i+n] = ax[i].begin, ax[i].end
	}
	// Insertion sort: a handful of values, and no allocation.
	for i := 1; i < len(sorted); i++ {
		for j := i; j > 0 && sorted[j] < sorted[j-1]; j-- {
			sorted[j], sorted[j-1] = sorted[j-1], sorted[j]
		}
	}
	return sorted
}

// leaveInoperative starts at candidate t and, while some axis cannot meet
// it, moves to the next interval boundary above from (Reflexxes' search).
func leaveInoperative(ax []axis, sorted []float64, from, t float64) float64 {
	k := 0
	for k < len(sorted) && !(sorted[k] > from) {
		k++
	}
	for k < len(sorted) && inoperativeAt(ax, t) {
		t = sorted[k]
		k++
	}
	return t
}

func inoperativeAt(ax []axis, t float64) bool {
	for i := range ax {
		if ax[i].selected && ax[i].begin < t && t < ax[i].end {
			return true
		}
	}
	return false
}

// phaseSync decides whether the axes can move in proportion along one line:
// the displacement, start and target velocity must be collinear (within
// Reflexxes' tolerances), every axis' share of the leading axis' limits
// must be within its own, and every axis must then need the same time.
func phaseSync(ax []axis, lead int, quirks bool) bool {
	if !collinear(ax) || !(math.Abs(ax[lead].ref) > psAbsEps) {
		return false
	}
	g := &ax[lead]
	kA := g.amax / math.Abs(g.ref)
	kV := g.vmax / math.Abs(g.ref)
	// Reflexxes lets an axis' share of the leading axis' limits exceed its
	// own by 0.1 %; Plan allows rounding only.
	rel, abs := psRelEps, psAbsEps
	if !quirks {
		rel, abs = limitRounding, 0
	}
	for i := range ax {
		a := &ax[i]
		if !a.selected {
			continue
		}
		a.psT = 0
		a.psA = math.Abs(kA * a.ref)
		a.psV = math.Abs(kV * a.ref)
		if a.psA > a.amax*(1+rel)+abs || a.psV > a.vmax*(1+rel)+abs {
			return false
		}
	}
	sum, cnt := 0.0, 0
	for i := range ax {
		a := &ax[i]
		if !a.selected {
			continue
		}
		s := a.in
		if !(s.v0 >= 0) {
			s.negate()
		}
		if !(s.v0 <= a.psV) {
			s.toLimit(&a.psT, a.psV, a.psA)
		}
		if g.reversed {
			s.toRest(&a.psT, a.psA)
			s.negate()
		}
		if !shapePossible(g.shape, s, a.psV, a.psA) {
			return false
		}
		switch g.shape {
		case shapeCruise:
			a.psT += cruiseTime(s, a.psV, a.psA)
		case shapeTriangle:
			a.psT += triangleTime(s, a.psA)
		case shapeTrapNeg:
			a.psT += trapNegTime(s, a.psV, a.psA)
		case shapeTriNeg:
			a.psT += triNegTime(s, a.psA)
		}
		sum += a.psT
		cnt++
	}
	if cnt == 0 {
		return true
	}
	avg := sum / float64(cnt)
	for i := range ax {
		a := &ax[i]
		if a.selected && math.Abs(a.psT-avg) > psAbsEps+psRelEps*avg {
			return false
		}
	}
	return true
}

// collinear sets every axis' reference direction (ref) from the longest of
// the displacement, start-velocity and target-velocity vectors and reports
// whether the other two are parallel to it.
func collinear(ax []axis) bool {
	var lDir, lCV, lTV float64
	for i := range ax {
		a := &ax[i]
		a.dir, a.cv, a.tv, a.check, a.ref = 0, 0, 0, 0, 0
		if !a.selected {
			continue
		}
		a.dir = a.in.p1 - a.in.p0
		a.cv = a.in.v0
		a.tv = a.in.v1
		lDir += a.dir * a.dir
		lCV += a.cv * a.cv
		lTV += a.tv * a.tv
	}
	lDir, lCV, lTV = sqrtPos(lDir), sqrtPos(lCV), sqrtPos(lTV)
	lens := [3]float64{lDir, lCV, lTV}
	for k, l := range lens {
		for i := range ax {
			if ax[i].selected {
				if c := ax[i].vec(k); l != positiveZero && l != 0 {
					*c /= l
				} else {
					*c = 0
				}
			}
		}
	}
	// The reference is the longest of the three (the later on a tie).
	lRef, ref := psAbsEps, -1
	for k, l := range lens {
		if l >= lDir && l >= lCV && l >= lTV && l >= psAbsEps {
			lRef, ref = l, k
		}
	}
	if !(lRef > psAbsEps) {
		return false
	}
	for i := range ax {
		ax[i].check = *ax[i].vec(ref)
	}
	// Each vector may point either way along the line: turn it round when
	// none of its significant components agrees in sign with the reference.
	for k := range lens {
		flip := true
		for i := range ax {
			a := &ax[i]
			if c := *a.vec(k); a.selected && sameSign(c, a.check) && math.Abs(c) > psAbsEps {
				flip = false
				break
			}
		}
		if flip {
			for i := range ax {
				if ax[i].selected {
					c := ax[i].vec(k)
					*c = -*c
				}
			}
		}
	}
	for i := range ax {
		a := &ax[i]
		if !a.selected {
			continue
		}
		tol := psCollinear * math.Abs(a.check)
		if (math.Abs(a.check-a.dir) > tol && lDir >= psAbsEps) ||
			(math.Abs(a.check-a.cv) > tol && lCV >= psAbsEps) ||
			(math.Abs(a.check-a.tv) > tol && lTV >= psAbsEps) {
			return false
		}
	}
	for i := range ax {
		ax[i].ref = ax[i].check
	}
	return true
}

// vec is component k of the axis' displacement (0), start-velocity (1) or
// target-velocity (2) unit vector.
func (a *axis) vec(k int) *float64 {
	switch k {
	case 0:
		return &a.dir
	case 1:
		return &a.cv
	}
	return &a.tv
}

// shapePossible reports whether an axis (normalised state, its share of the
// limits) can follow the leading axis' shape.
func shapePossible(sh shape, s state1, vmax, amax float64) bool {
	if s.v0 > vmax || s.v0 < 0 {
		return false
	}
	switch sh {
	case shapeCruise, shapeTrapNeg:
		if 2*amax*(s.p1-s.p0)+s.v0*s.v0-2*(vmax*vmax)+s.v1*s.v1 < -validEps {
			return false
		}
		if sh == shapeCruise {
			return !(s.v1 > vmax || s.v1 < 0)
		}
		return !(s.v1 < -vmax || s.v1 > 0)
	case shapeTriangle, shapeTriNeg:
		if sh == shapeTriangle && (s.v1 > vmax || s.v1 < 0) {
			return false
		}
		if sh == shapeTriNeg && (s.v1 < -vmax || s.v1 > 0) {
			return false
		}
		b := amax * amax * (2*amax*(s.p1-s.p0) + s.v0*s.v0 + s.v1*s.v1)
		if b < -validEps {
			return false
		}
		root := sqrtPos(b)
		peak := root / (sqrt2 * amax)
		if peak > vmax || peak < s.v0 || (sh == shapeTriangle && peak < s.v1) {
			return false
		}
		if (sqrt2*root-2*amax*s.v0)/(2*(amax*amax)) < -validEps {
			return false
		}
		return !((sqrt2*root-2*amax*s.v1)/(2*(amax*amax)) < -validEps)
	}
	return false
}

// scaleProfile makes axis a follow the leading axis g in proportion. The
// proportion meets a's start and target states only to the tolerance of
// the collinearity test; Reflexxes then corrects the velocity errors at
// both ends (spread linearly over the motion) and the position error at the
// end, writing both corrections relative to each piece's start, which
// leaves steps between the pieces and misses the target unless the errors
// are rounding. With quirks the corrections are applied as Reflexxes does
// (vortex's plans); otherwise scaleProfile reports false when the errors
// are more than rounding, and the caller time-synchronises instead.
func scaleProfile(a, g *axis, sync, dt float64, quirks bool) bool {
	r := a.ref / g.ref
	a.prof.n = g.prof.n
	for j := 0; j < g.prof.n; j++ {
		q := g.prof.p[j]
		a.prof.p[j] = poly{
			a2: q.a2 * r, a1: q.a1 * r, a0: a.in.p0 + (q.a0-g.in.p0)*r,
			va1: q.va1 * r, va0: q.va0 * r,
			t0: q.t0, end: q.end,
		}
	}
	n := a.prof.n
	errStart := a.in.v0 - a.prof.p[0].vel(0)
	errEnd := a.in.v1 - a.prof.p[n-1].vel(sync)
	if !quirks {
		// Rounding of the proportion: a few ulp of the velocities and
		// positions involved (1e-9 relative leaves ample room and is far
		// below anything a scanner resolves).
		vs := a.vmax + math.Abs(a.in.v0) + math.Abs(a.in.v1)
		ps := math.Abs(a.in.p0) + math.Abs(a.in.p1) + math.Abs(a.in.p1-a.in.p0)
		errPos := a.in.p1 - a.prof.p[n-1].pos(sync)
		if math.Abs(errStart) > limitRounding*vs || math.Abs(errEnd) > limitRounding*vs || math.Abs(errPos) > limitRounding*ps {
			return false
		}
	}
	// Reflexxes corrects only motions longer than one sample.
	if !(sync > dt) {
		return true
	}
	for j := 0; j < n; j++ {
		q := &a.prof.p[j]
		q.va1 += (errEnd - errStart) / sync
		q.va0 += errStart - q.t0*(errEnd-errStart)/sync
		q.a1 = q.va0
	}
	errPos := a.in.p1 - a.prof.p[n-1].pos(sync)
	for j := 0; j < n; j++ {
		q := &a.prof.p[j]
		q.a1 += errPos / sync
		q.a0 -= q.t0 * errPos / sync
	}
	return true
}
