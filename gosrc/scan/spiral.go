package scan

import (
	"math"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/motion"
)

// SpiralWaypoints is vortex's SpiralWaypoints: an Archimedean spiral from
// inner_radius to outer_radius (volume_extent) in rings_per_spiral rings,
// timed at constant angular velocity (AngularVelocity, rad/s, with
// LinearVelocity 0), constant linear velocity (LinearVelocity with
// AngularVelocity 0, optionally acceleration-limited near the centre by
// AccelerationLimit), or the hybrid of the two (both set: CAV inside the
// radius where they meet, CLV outside). Defaults: volume_extent [0, 2],
// 10 rings, set_isotropic(100_000).
type SpiralWaypoints struct {
	XYWaypoints
	// AngularVelocity is the CAV rate in radians per second.
	AngularVelocity float64
	// LinearVelocity is the CLV rate in units per second.
	LinearVelocity float64
	// AccelerationLimit, when > 0, slows a CLV spiral near its centre.
	AccelerationLimit float64
	// RingsPerSpiral is the number of turns.
	RingsPerSpiral int
}

// NewSpiralWaypoints is vortex's SpiralWaypoints() with its defaults.
func NewSpiralWaypoints() SpiralWaypoints {
	w := SpiralWaypoints{XYWaypoints: defaultXY(), AngularVelocity: 10, RingsPerSpiral: 10}
	w.VolumeExtent = motion.Range{Min: 0, Max: 2}
	w.SegmentExtent = motion.Range{Min: 0, Max: 0}
	w.SetIsotropic(100_000)
	return w
}

// InnerRadius is vortex's alias of volume_extent.min.
func (w *SpiralWaypoints) InnerRadius() float64 { return w.VolumeExtent.Min }

// SetInnerRadius sets volume_extent.min.
func (w *SpiralWaypoints) SetInnerRadius(r float64) { w.VolumeExtent.Min = r }

// OuterRadius is vortex's alias of volume_extent.max.
func (w *SpiralWaypoints) OuterRadius() float64 { return w.VolumeExtent.Max }

// SetOuterRadius sets volume_extent.max.
func (w *SpiralWaypoints) SetOuterRadius(r float64) { w.VolumeExtent.Max = r }

// RadialPitch is the radius gained per ring.
func (w *SpiralWaypoints) RadialPitch() float64 {
	return w.VolumeExtent.Length() / float64(w.RingsPerSpiral)
}

// SetIsotropic makes a CLV spiral whose samples are as far apart along the
// path as the rings are apart, one segment long, for samplesPerSecond.
func (w *SpiralWaypoints) SetIsotropic(samplesPerSecond int) {
	w.AngularVelocity = 0
	w.LinearVelocity = w.RadialPitch() * float64(samplesPerSecond)
	tStart, tEnd := w.clvDuration(w.InnerRadius()), w.clvDuration(w.OuterRadius())
	if w.AccelerationLimit != 0 {
		tStart, tEnd = w.clvInverseTimeScale(tStart), w.clvInverseTimeScale(tEnd)
	}
	w.SegmentsPerVolume = 1
	w.SamplesPerSegment = int(math.Round((tEnd - tStart) * float64(samplesPerSecond)))
}

// SetHybrid sizes the single segment of a hybrid spiral for samplesPerSecond.
func (w *SpiralWaypoints) SetHybrid(samplesPerSecond int) {
	rSwap := w.LinearVelocity / w.AngularVelocity
	d := w.cavDuration(rSwap) - w.cavDuration(w.InnerRadius()) + w.clvDuration(w.OuterRadius()) - w.clvDuration(rSwap)
	w.SegmentsPerVolume = 1
	w.SamplesPerSegment = int(math.Round(d * float64(samplesPerSecond)))
}

func (w *SpiralWaypoints) validate(n xyNames) error {
	if err := w.XYWaypoints.validate(n); err != nil {
		return err
	}
	switch {
	case w.RingsPerSpiral < 1:
		return backend.Invalidf("%s.rings_per_spiral: %d, expected > 0", n.cls, w.RingsPerSpiral)
	case w.InnerRadius() < 0:
		return backend.Invalidf("%s.inner_radius: %v, expected >= 0", n.cls, w.InnerRadius())
	case !(w.OuterRadius() > w.InnerRadius()):
		return backend.Invalidf("%s.outer_radius: %v, expected > inner_radius (%v)", n.cls, w.OuterRadius(), w.InnerRadius())
	case !finite(w.AngularVelocity) || w.AngularVelocity < 0:
		return backend.Invalidf("%s.angular_velocity: %v, expected a finite number >= 0", n.cls, w.AngularVelocity)
	case !finite(w.LinearVelocity) || w.LinearVelocity < 0:
		return backend.Invalidf("%s.linear_velocity: %v, expected a finite number >= 0", n.cls, w.LinearVelocity)
	case w.AngularVelocity == 0 && w.LinearVelocity == 0:
		return backend.Invalidf("%s.angular_velocity and linear_velocity: both 0, expected one > 0", n.cls)
	case !finite(w.AccelerationLimit) || w.AccelerationLimit < 0:
		return backend.Invalidf("%s.acceleration_limit: %v, expected a finite number >= 0 (0 = none)", n.cls, w.AccelerationLimit)
	}
	if w.AngularVelocity != 0 && w.LinearVelocity != 0 {
		rSwap := w.LinearVelocity / w.AngularVelocity
		if rSwap < w.InnerRadius() || rSwap > w.OuterRadius() {
			return backend.Invalidf("%s.linear_velocity / angular_velocity: swap radius %v, expected within [inner_radius, outer_radius] = [%v, %v]", n.cls, rSwap, w.InnerRadius(), w.OuterRadius())
		}
		tc := w.cavDuration(rSwap) - w.cavDuration(w.InnerRadius())
		tl := w.clvDuration(w.OuterRadius()) - w.clvDuration(rSwap)
		if k := math.Floor(tc / (tc + tl) * float64(w.SamplesPerSegment)); k < 1 {
			return backend.Invalidf("%s.samples_per_segment: %d, too few for the hybrid spiral's constant angular velocity part "+
				"(angular_velocity %v, linear_velocity %v: swap radius %v): expected more samples or a smaller angular_velocity",
				n.cls, w.SamplesPerSegment, w.AngularVelocity, w.LinearVelocity, rSwap)
		}
	}
	return nil
}

// ToWaypoints is vortex's to_waypoints: every segment (shape[0] of them)
// holds the same spiral.
func (w *SpiralWaypoints) ToWaypoints() Waypoints {
	m := w.SamplesPerSegment
	var r, theta []float64
	switch {
	case w.LinearVelocity == 0:
		t := linspace(w.cavDuration(w.InnerRadius()), w.cavDuration(w.OuterRadius()), m, true)
		r, theta = w.cavSpiral(t)
	case w.AngularVelocity == 0:
		if w.AccelerationLimit == 0 {
			t := linspace(w.clvDuration(w.InnerRadius()), w.clvDuration(w.OuterRadius()), m, true)
			r, theta = w.clvSpiral(t)
		} else {
			t := linspace(w.clvInverseTimeScale(w.clvDuration(w.InnerRadius())), w.clvInverseTimeScale(w.clvDuration(w.OuterRadius())), m, true)
			for i := range t {
				t[i] = w.clvForwardTimeScale(t[i])
			}
			r, theta = w.clvSpiral(t)
		}
	default:
		rSwap := w.LinearVelocity / w.AngularVelocity
		t0c, t1c := w.cavDuration(w.InnerRadius()), w.cavDuration(rSwap)
		t0l, t1l := w.clvDuration(rSwap), w.clvDuration(w.OuterRadius())
		n := int(math.Floor((t1c - t0c) / (t1c - t0c + t1l - t0l) * float64(m)))
		rc, thc := w.cavSpiral(linspace(t0c, t1c, n-1, false))
		rl, thl := w.clvSpiral(linspace(t0l, t1l, m-n+1, true))
		r, theta = append(rc, rl...), append(thc, thl...)
	}
	wp := Waypoints{Segments: w.SegmentsPerVolume, Samples: m, Channels: 2}
	wp.Data = make([]float64, 0, wp.Segments*m*2)
	for range wp.Segments {
		for j := range m {
			wp.Data = append(wp.Data, r[j]*math.Cos(theta[j]+w.Angle)+w.Offset[0], r[j]*math.Sin(theta[j]+w.Angle)+w.Offset[1])
		}
	}
	w.Warp.Inverse(wp.Data, wp.Data)
	return wp
}

func (w *SpiralWaypoints) cavDuration(radius float64) float64 {
	return 2 * math.Pi * radius / (w.RadialPitch() * w.AngularVelocity)
}

func (w *SpiralWaypoints) cavSpiral(t []float64) (r, theta []float64) {
	r, theta = make([]float64, len(t)), make([]float64, len(t))
	for i, ti := range t {
		r[i] = w.RadialPitch() * w.AngularVelocity * ti / (2 * math.Pi)
		theta[i] = ti * w.AngularVelocity
	}
	return r, theta
}

func (w *SpiralWaypoints) clvDuration(radius float64) float64 {
	return math.Pi * radius * radius / (w.RadialPitch() * w.LinearVelocity)
}

func (w *SpiralWaypoints) clvSpiral(t []float64) (r, theta []float64) {
	r, theta = make([]float64, len(t)), make([]float64, len(t))
	p, v := w.RadialPitch(), w.LinearVelocity
	for i, ti := range t {
		r[i] = math.Sqrt((p * v / math.Pi) * ti)
		theta[i] = math.Sqrt((4 * math.Pi * v / p) * ti)
	}
	return r, theta
}

// clvScale returns the constants of the acceleration-limited time scale:
// the spiral's radial acceleration envelope A*B^2/(4 sqrt(t)) meets the
// limit C at s = sSwitch.
func (w *SpiralWaypoints) clvScale() (a, b, c, sSwitch float64) {
	a = math.Sqrt(w.LinearVelocity * w.RadialPitch() / math.Pi)
	b = math.Sqrt(4 * math.Pi * w.LinearVelocity / w.RadialPitch())
	c = w.AccelerationLimit
	sSwitch = math.Pow(a*b*b/(4*c), 2)
	return a, b, c, sSwitch
}

func (w *SpiralWaypoints) clvForwardTimeScale(t float64) float64 {
	a, b, c, sSwitch := w.clvScale()
	tSwitch := w.clvInverseTimeScale(sSwitch)
	if t < tSwitch {
		return math.Pow(3/(2*b)*math.Sqrt(c/a)*t, 4.0/3)
	}
	return t - tSwitch + sSwitch
}

func (w *SpiralWaypoints) clvInverseTimeScale(s float64) float64 {
	a, b, c, sSwitch := w.clvScale()
	tOf := func(s float64) float64 { return 2.0 / 3 * b * math.Sqrt(a/c) * math.Pow(s, 3.0/4) }
	if s < sSwitch {
		return tOf(s)
	}
	return s - sSwitch + tOf(sSwitch)
}
