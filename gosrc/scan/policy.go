package scan

import (
	"fmt"
	"math"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/motion"
)

// PolicyKind says which of vortex's inactive policies an InactivePolicy is.
type PolicyKind uint8

// The policies of vortex.scan.inactive_policy.
const (
	// MinimumDynamicLimitedKind plans the shortest inactive path within the
	// limits, entering each segment at its velocity (vortex's default).
	MinimumDynamicLimitedKind PolicyKind = iota
	// FixedDynamicLimitedKind plans inactive paths of a fixed number of
	// samples within the limits.
	FixedDynamicLimitedKind
	// FixedLinearKind joins segments by straight lines of a fixed number
	// of samples, ignoring velocity and the limits.
	FixedLinearKind
)

// InactivePolicy is how a segmented scan fills the gaps between active
// segments: vortex's inactive_policy alternatives as one value.
type InactivePolicy struct {
	// Kind picks the policy.
	Kind PolicyKind
	// InterSegmentSamples is the length of the paths between segments
	// (the fixed policies; vortex's default 100).
	InterSegmentSamples int
	// InterVolumeSamples is the length of the path into the scan from a
	// restart or change (the fixed policies; default 100).
	InterVolumeSamples int
}

// MinimumDynamicLimited is vortex's inactive_policy.MinimumDynamicLimited().
func MinimumDynamicLimited() InactivePolicy {
	return InactivePolicy{Kind: MinimumDynamicLimitedKind}
}

// FixedDynamicLimited is vortex's inactive_policy.FixedDynamicLimited(inter_segment_samples, inter_volume_samples).
func FixedDynamicLimited(interSegmentSamples, interVolumeSamples int) InactivePolicy {
	return InactivePolicy{Kind: FixedDynamicLimitedKind, InterSegmentSamples: interSegmentSamples, InterVolumeSamples: interVolumeSamples}
}

// FixedLinear is vortex's inactive_policy.FixedLinear(inter_segment_samples, inter_volume_samples).
func FixedLinear(interSegmentSamples, interVolumeSamples int) InactivePolicy {
	return InactivePolicy{Kind: FixedLinearKind, InterSegmentSamples: interSegmentSamples, InterVolumeSamples: interVolumeSamples}
}

// SetSamples sets both lengths (vortex's set_samples).
func (p *InactivePolicy) SetSamples(n int) { p.InterSegmentSamples, p.InterVolumeSamples = n, n }

// String is vortex's repr.
func (p InactivePolicy) String() string {
	switch p.Kind {
	case MinimumDynamicLimitedKind:
		return "MinimumDynamicLimited()"
	case FixedDynamicLimitedKind:
		return fmt.Sprintf("FixedDynamicLimited(inter_segment_samples=%d, inter_volume_samples=%d)", p.InterSegmentSamples, p.InterVolumeSamples)
	case FixedLinearKind:
		return fmt.Sprintf("FixedLinear(inter_segment_samples=%d, inter_volume_samples=%d)", p.InterSegmentSamples, p.InterVolumeSamples)
	}
	return fmt.Sprintf("InactivePolicy(kind=%d)", p.Kind)
}

// maxInactiveSamples bounds a fixed policy's path length (10 s at 100 kHz).
const maxInactiveSamples = 1 << 20

func (p InactivePolicy) validate(field string) error {
	switch p.Kind {
	case MinimumDynamicLimitedKind:
		return nil
	case FixedDynamicLimitedKind, FixedLinearKind:
		lo := 0
		if p.Kind == FixedDynamicLimitedKind {
			// motion.Options reads FixedSamples 0 as "shortest": a fixed
			// zero-length plan cannot be asked for.
			lo = 1
		}
		if p.InterSegmentSamples < lo || p.InterSegmentSamples > maxInactiveSamples {
			return backend.Invalidf("%s.inter_segment_samples: %d, expected in [%d, %d]", field, p.InterSegmentSamples, lo, maxInactiveSamples)
		}
		if p.InterVolumeSamples < lo || p.InterVolumeSamples > maxInactiveSamples {
			return backend.Invalidf("%s.inter_volume_samples: %d, expected in [%d, %d]", field, p.InterVolumeSamples, lo, maxInactiveSamples)
		}
		return nil
	}
	return backend.Invalidf("%s: unknown policy kind %d, expected MinimumDynamicLimited, FixedDynamicLimited or FixedLinear", field, p.Kind)
}

// plan is the motion planner the dynamic policies call; a variable so that
// tests can check what the policies ask of it.
var plan = motion.Plan

// compatible reports whether a scan at state a can enter a segment
// starting at state b without an inactive path: the linear policy needs
// the positions to match, the dynamic ones position and velocity (both
// numpy's allclose, as vortex's xt::allclose).
func (p InactivePolicy) compatible(aPos, aVel, bPos, bVel []float64) bool {
	if !allClose(aPos, bPos) {
		return false
	}
	return p.Kind == FixedLinearKind || allClose(aVel, bVel)
}

func allClose(a, b []float64) bool {
	for i := range a {
		if !(math.Abs(a[i]-b[i]) <= 1e-8+1e-5*math.Abs(b[i])) {
			return false
		}
	}
	return true
}

// generate is the inactive path from start to end, without the end
// sample and with the start sample only when includeInitial: rows of
// len(start.Position) values.
func (p InactivePolicy) generate(interSegment bool, dt float64, start, end motion.State, limits []motion.Limits, opt motion.Options) ([]float64, error) {
	fixed := p.InterVolumeSamples
	if interSegment {
		fixed = p.InterSegmentSamples
	}
	switch p.Kind {
	case FixedLinearKind:
		return linearPath(fixed, start.Position, end.Position, opt), nil
	case FixedDynamicLimitedKind:
		opt.FixedSamples = fixed
	}
	path, err := plan(dt, start, end, limits, opt)
	if err != nil {
		return nil, err
	}
	if path.Len() > 0 && path.Dims != len(start.Position) {
		return nil, fmt.Errorf("scan: the planner returned %d axes, expected %d: %w", path.Dims, len(start.Position), backend.ErrInvalid)
	}
	return path.Data, nil
}

// linearPath is vortex's fixed_linear_t::generate: n interior samples on
// the line from a to b, plus the end points the options ask for.
func linearPath(n int, a, b []float64, opt motion.Options) []float64 {
	samples := n + 2
	r := linspace(0, 1, samples, true)
	lo, hi := 0, samples
	if !opt.IncludeInitial {
		lo++
	}
	if !opt.IncludeFinal {
		hi--
	}
	out := make([]float64, 0, (hi-lo)*len(a))
	for _, ri := range r[lo:hi] {
		for d := range a {
			out = append(out, (1-ri)*a[d]+ri*b[d])
		}
	}
	return out
}
