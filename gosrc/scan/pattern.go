package scan

import (
	"fmt"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/marker"
)

// loadWaypoints is vortex's load_waypoints: segment src of the list, copied
// (reversed when asked) into a new Segment.
func loadWaypoints(list [][]float64, channels, src int, reversed bool) (Segment, error) {
	if src >= len(list) {
		return Segment{}, backend.Invalidf("waypoints: index %d, expected < %d segments", src, len(list))
	}
	wp := list[src]
	if channels < 1 || len(wp)%channels != 0 {
		return Segment{}, backend.Invalidf("waypoints[%d]: %d values, expected a multiple of %d channels", src, len(wp), channels)
	}
	n := len(wp) / channels
	if n < 2 {
		return Segment{}, backend.Invalidf("waypoints[%d]: %d samples, expected at least two samples per segment", src, n)
	}
	seg := Segment{Channels: channels, Position: make([]float64, len(wp))}
	if reversed {
		for i := range n {
			copy(seg.Position[i*channels:(i+1)*channels], wp[(n-1-i)*channels:(n-i)*channels])
		}
	} else {
		copy(seg.Position, wp)
	}
	return seg, nil
}

// SequentialPattern is vortex's SequentialPattern: segments in order,
// optionally alternating direction (BidirectionalSegments) and followed by
// the same volume backwards (BidirectionalVolumes). Flags go on every
// boundary marker. Default: both false, all flags.
type SequentialPattern struct {
	// BidirectionalSegments reverses every other segment.
	BidirectionalSegments bool
	// BidirectionalVolumes appends a second volume visiting the segments
	// in reverse order.
	BidirectionalVolumes bool
	// Flags mark the pattern's boundary markers.
	Flags marker.Flags
}

// NewSequentialPattern is vortex's SequentialPattern() with its defaults.
func NewSequentialPattern() SequentialPattern { return SequentialPattern{Flags: marker.AllFlags} }

// ToPattern is vortex's to_pattern: the segments of one scan from the
// waypoints of one volume (each Samples x channels, row-major).
func (p SequentialPattern) ToPattern(waypoints [][]float64, channels int) ([]Segment, error) {
	if err := checkPatternChannels(channels); err != nil {
		return nil, err
	}
	spv := len(waypoints)
	if spv == 0 {
		return nil, backend.Invalidf("waypoints: no segments, expected at least one")
	}
	n := spv
	if p.BidirectionalVolumes {
		n *= 2
	}
	if err := boundPattern(waypoints, int64(n/spv), "SequentialPattern.bidirectional_volumes"); err != nil {
		return nil, err
	}
	segments := make([]Segment, n)
	reversed := false
	for dst := range segments {
		src := dst
		if dst >= spv {
			src = 2*spv - dst - 1
		}
		seg, err := loadWaypoints(waypoints, channels, src, reversed)
		if err != nil {
			return nil, err
		}
		samples := seg.Len()
		switch dst {
		case 0:
			seg.Markers = append(seg.Markers, flagged(marker.NewVolumeBoundary(0, 0, 0, false, spv), p.Flags))
		case spv:
			seg.Markers = append(seg.Markers, flagged(marker.NewVolumeBoundary(0, 1, 1, true, spv), p.Flags))
		}
		seg.Markers = append(seg.Markers, flagged(marker.NewSegmentBoundary(0, int64(dst%spv), int64(src), reversed, samples), p.Flags))
		segments[dst] = seg
		if p.BidirectionalSegments {
			reversed = !reversed
		}
	}
	return segments, nil
}

func flagged(m marker.Marker, f marker.Flags) marker.Marker {
	m.Flags = f
	return m
}

// RepeatKind says how a RepeatedPattern stores its repeats.
type RepeatKind uint8

// The repeat strategies of vortex's RepeatedPattern.
const (
	// RepeatOrderKind stores repeats in acquisition order: ABCABCABC.
	RepeatOrderKind RepeatKind = iota
	// RepeatPackKind stores a segment's repeats together: AAABBBCCC.
	RepeatPackKind
	// RepeatFlagsKind marks each repeat with its own flags and stores them
	// in the same place, for routing to different processing.
	RepeatFlagsKind
)

// RepeatStrategy is vortex's repeat_strategy (RepeatOrder, RepeatPack,
// RepeatFlags) as one value.
type RepeatStrategy struct {
	// Kind picks the strategy.
	Kind RepeatKind
	// Flags mark every repeat (RepeatOrder, RepeatPack).
	Flags marker.Flags
	// FlagList gives repeat i the flags FlagList[i] (RepeatFlags; its
	// length must equal repeat_count).
	FlagList []marker.Flags
}

// RepeatOrder is vortex's RepeatOrder(flags).
func RepeatOrder(flags marker.Flags) RepeatStrategy {
	return RepeatStrategy{Kind: RepeatOrderKind, Flags: flags}
}

// RepeatPack is vortex's RepeatPack(flags).
func RepeatPack(flags marker.Flags) RepeatStrategy {
	return RepeatStrategy{Kind: RepeatPackKind, Flags: flags}
}

// RepeatFlags is vortex's RepeatFlags(flags).
func RepeatFlags(flags []marker.Flags) RepeatStrategy {
	return RepeatStrategy{Kind: RepeatFlagsKind, FlagList: append([]marker.Flags(nil), flags...)}
}

// RepeatedPattern is vortex's RepeatedPattern: groups of RepeatPeriod
// segments, each group executed RepeatCount times before the next.
// Defaults: period 2, count 3, RepeatPack(all flags), unidirectional.
type RepeatedPattern struct {
	// RepeatPeriod is the number of segments executed in order before repeating.
	RepeatPeriod int
	// RepeatCount is the number of times each segment is executed.
	RepeatCount int
	// RepeatStrategy says where repeats are stored and how they are flagged.
	RepeatStrategy RepeatStrategy
	// BidirectionalSegments reverses every other executed segment (an odd
	// period makes a segment's repeats alternate direction).
	BidirectionalSegments bool
}

// NewRepeatedPattern is vortex's RepeatedPattern() with its defaults.
func NewRepeatedPattern() RepeatedPattern {
	return RepeatedPattern{RepeatPeriod: 2, RepeatCount: 3, RepeatStrategy: RepeatPack(marker.AllFlags)}
}

func (p RepeatedPattern) validate(cls string) error {
	switch {
	case p.RepeatPeriod < 1:
		return backend.Invalidf("%s.repeat_period: %d, expected > 0", cls, p.RepeatPeriod)
	case p.RepeatCount < 1:
		return backend.Invalidf("%s.repeat_count: %d, expected > 0", cls, p.RepeatCount)
	}
	switch p.RepeatStrategy.Kind {
	case RepeatOrderKind, RepeatPackKind:
	case RepeatFlagsKind:
		if len(p.RepeatStrategy.FlagList) != p.RepeatCount {
			return backend.Invalidf("%s.repeat_strategy.flags: %d flags, expected repeat_count (%d)", cls, len(p.RepeatStrategy.FlagList), p.RepeatCount)
		}
	default:
		return backend.Invalidf("%s.repeat_strategy: unknown kind %d, expected RepeatOrder, RepeatPack or RepeatFlags", cls, p.RepeatStrategy.Kind)
	}
	return nil
}

// ToPattern is vortex's to_pattern: the segments of one scan from the
// waypoints of one volume.
func (p RepeatedPattern) ToPattern(waypoints [][]float64, channels int) ([]Segment, error) {
	if err := checkPatternChannels(channels); err != nil {
		return nil, err
	}
	if err := p.validate("RepeatedPattern"); err != nil {
		return nil, err
	}
	spv := len(waypoints)
	if spv == 0 {
		return nil, backend.Invalidf("waypoints: no segments, expected at least one")
	}
	if spv%p.RepeatPeriod != 0 {
		return nil, backend.Invalidf("RepeatedPattern.repeat_period: %d, expected to divide segments_per_volume (%d)", p.RepeatPeriod, spv)
	}
	if err := boundPattern(waypoints, int64(p.RepeatCount), "RepeatedPattern.repeat_count"); err != nil {
		return nil, err
	}
	segments := make([]Segment, 0, spv*p.RepeatCount)
	reversed := false
	for set := range spv / p.RepeatPeriod {
		for rep := range p.RepeatCount {
			flags := p.RepeatStrategy.Flags
			if p.RepeatStrategy.Kind == RepeatFlagsKind {
				flags = p.RepeatStrategy.FlagList[rep]
			}
			for off := range p.RepeatPeriod {
				src := set*p.RepeatPeriod + off
				dst := len(segments)
				logical := dst
				switch p.RepeatStrategy.Kind {
				case RepeatPackKind:
					logical = src*p.RepeatCount + rep
				case RepeatFlagsKind:
					logical = src
				}
				seg, err := loadWaypoints(waypoints, channels, src, reversed)
				if err != nil {
					return nil, err
				}
				if logical == 0 {
					seg.Markers = append(seg.Markers, flagged(marker.NewVolumeBoundary(0, 0, 0, false, spv), flags))
				}
				seg.Markers = append(seg.Markers, flagged(marker.NewSegmentBoundary(0, int64(dst), int64(logical), reversed, seg.Len()), flags))
				segments = append(segments, seg)
				if p.BidirectionalSegments {
					reversed = !reversed
				}
			}
		}
	}
	return segments, nil
}

func checkPatternChannels(channels int) error {
	if channels < 1 || channels > maxChannels {
		return backend.Invalidf("to_pattern: %d channels, expected in [1, %d]", channels, maxChannels)
	}
	return nil
}

// boundPattern refuses, before allocating, a pattern of more than
// maxScanElements values: copies times the waypoints' values.
func boundPattern(waypoints [][]float64, copies int64, field string) error {
	total := int64(0)
	for _, w := range waypoints {
		total += int64(len(w))
	}
	if total*copies > maxScanElements {
		return fmt.Errorf("%s: %d copies of %d waypoint values, more than %d: %w", field, copies, total, maxScanElements, backend.ErrTooLarge)
	}
	return nil
}
