package scan

import (
	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/motion"
)

// ThorLabsGVS5mm is vortex's scan.limits.ThorLabs_GVS_5mm (a square wave at
// 100 Hz): position ±12.5, velocity 8e3, acceleration 5e6. It is the default
// limit of every channel of a segmented scan.
var ThorLabsGVS5mm = motion.Limits{Position: motion.Range{Min: -12.5, Max: 12.5}, Velocity: 8e3, Acceleration: 5e6}

// ScannerMaxSaturn5B is vortex's scan.limits.ScannerMax_Saturn_5B: position
// ±27.5, velocity 80e3, acceleration 25e6.
var ScannerMaxSaturn5B = motion.Limits{Position: motion.Range{Min: -27.5, Max: 27.5}, Velocity: 80e3, Acceleration: 25e6}

// maxChannels bounds channels_per_sample.
const maxChannels = 64

// SegmentedConfig is vortex's SegmentedScanConfig: what every segmented
// scan's config shares (scan_config_t and segmented_config_t).
type SegmentedConfig struct {
	// ChannelsPerSample is the number of values per sample (2: x, y).
	ChannelsPerSample int
	// SamplesPerSecond is the output rate, used for velocities and limits.
	SamplesPerSecond int
	// Loop restarts the scan when it completes (an endless stream).
	Loop bool
	// Consolidate is vortex's buffer consolidation; this scan keeps one
	// contiguous buffer always, so it changes nothing (kept for the API).
	Consolidate bool
	// Limits bound each channel; the active segments are checked against
	// them and the dynamic policies plan within them.
	Limits []motion.Limits
	// BypassLimitsCheck skips the active segments' limit check.
	BypassLimitsCheck bool
	// InactivePolicy fills the gaps between segments.
	InactivePolicy InactivePolicy
}

// NewSegmentedConfig is vortex's defaults: 2 channels at 100 kHz, looping,
// ThorLabsGVS5mm limits, MinimumDynamicLimited.
func NewSegmentedConfig() SegmentedConfig {
	return SegmentedConfig{
		ChannelsPerSample: 2,
		SamplesPerSecond:  100_000,
		Loop:              true,
		Limits:            []motion.Limits{ThorLabsGVS5mm, ThorLabsGVS5mm},
		InactivePolicy:    MinimumDynamicLimited(),
	}
}

// SamplingInterval is 1 / SamplesPerSecond (vortex's sampling_interval).
func (c *SegmentedConfig) SamplingInterval() float64 { return 1 / float64(c.SamplesPerSecond) }

func (c *SegmentedConfig) copySegmented() SegmentedConfig {
	out := *c
	out.Limits = append([]motion.Limits(nil), c.Limits...)
	return out
}

func (c *SegmentedConfig) validateSegmented(cls string) error {
	if c.ChannelsPerSample < 1 || c.ChannelsPerSample > maxChannels {
		return backend.Invalidf("%s.channels_per_sample: %d, expected in [1, %d]", cls, c.ChannelsPerSample, maxChannels)
	}
	if c.SamplesPerSecond < 1 {
		return backend.Invalidf("%s.samples_per_second: %d, expected > 0", cls, c.SamplesPerSecond)
	}
	if len(c.Limits) != c.ChannelsPerSample {
		return backend.Invalidf("%s.limits: %d limits, expected one per channel (channels_per_sample = %d)", cls, len(c.Limits), c.ChannelsPerSample)
	}
	for i, l := range c.Limits {
		switch {
		case !finite(l.Position.Min) || !finite(l.Position.Max) || l.Position.Min > l.Position.Max:
			return backend.Invalidf("%s.limits[%d].position: %v, expected finite bounds with min <= max", cls, i, l.Position)
		case !(l.Velocity > 0):
			return backend.Invalidf("%s.limits[%d].velocity: %v, expected > 0", cls, i, l.Velocity)
		case !(l.Acceleration > 0):
			return backend.Invalidf("%s.limits[%d].acceleration: %v, expected > 0", cls, i, l.Acceleration)
		}
	}
	return c.InactivePolicy.validate(cls + ".inactive_policy")
}
