package scan

import (
	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/marker"
)

// Segment is one active segment of a segmented scan, vortex's
// scan.Segment: the positions of its samples and the markers that start it
// (sample numbers relative to the segment's first sample).
type Segment struct {
	// Position holds Len() samples of Channels values each, row-major.
	Position []float64
	// Channels is the number of values per sample.
	Channels int
	// EntryDelta and ExitDelta, when not nil, are the per-sample position
	// change at entry and exit (velocity = delta * samples_per_second);
	// nil means "from the first or last two samples", as vortex's unset
	// optional does.
	EntryDelta, ExitDelta []float64
	// Markers start the segment (volume and segment boundaries, events).
	Markers []marker.Marker
}

// NewSegment is a Segment of the given (samples, channels) positions,
// checked: a row-major array of 1..64 channels, and deltas of one value per
// channel when set. name is the segment's place in a config
// (FreeformScanConfig.pattern[3]), for messages. It may hold no samples,
// as vortex's default Segment does: a scan refuses such a segment where it
// plays it (Initialize, Change), naming it.
func NewSegment(name string, position []float64, channels int, entryDelta, exitDelta []float64, markers []marker.Marker) (Segment, error) {
	if channels < 1 || channels > maxChannels || len(position)%channels != 0 {
		return Segment{}, backend.Invalidf("%s: %d positions of %d channels, expected a (samples, channels) array with 1..%d channels", name, len(position), channels, maxChannels)
	}
	for _, d := range [][]float64{entryDelta, exitDelta} {
		if d != nil && len(d) != channels {
			return Segment{}, backend.Invalidf("%s: entry/exit delta of %d values, expected %d (channels)", name, len(d), channels)
		}
	}
	return Segment{Position: position, Channels: channels, EntryDelta: entryDelta, ExitDelta: exitDelta, Markers: markers}, nil
}

// Len is the number of samples.
func (s *Segment) Len() int {
	if s.Channels <= 0 {
		return 0
	}
	return len(s.Position) / s.Channels
}

// Row is sample i's values, aliasing Position.
func (s *Segment) Row(i int) []float64 { return s.Position[i*s.Channels : (i+1)*s.Channels] }

// EntryPosition is the first sample's position (vortex's entry_position).
func (s *Segment) EntryPosition() ([]float64, error) {
	if s.Len() < 1 {
		return nil, backend.Invalidf("Segment.position: no samples, cannot take the entry position")
	}
	return append([]float64(nil), s.Row(0)...), nil
}

// ExitPosition is the last sample's position (vortex's exit_position).
func (s *Segment) ExitPosition() ([]float64, error) {
	if s.Len() < 1 {
		return nil, backend.Invalidf("Segment.position: no samples, cannot take the exit position")
	}
	return append([]float64(nil), s.Row(s.Len()-1)...), nil
}

// EntryVelocity is EntryDelta, or the first finite difference, times
// samplesPerSecond (vortex's entry_velocity).
func (s *Segment) EntryVelocity(samplesPerSecond float64) ([]float64, error) {
	if s.EntryDelta != nil {
		return scaled(s.EntryDelta, samplesPerSecond), nil
	}
	if s.Len() < 2 {
		return nil, backend.Invalidf("Segment: no entry_delta and fewer than two samples, cannot take the entry velocity")
	}
	return diffScaled(s.Row(1), s.Row(0), samplesPerSecond), nil
}

// ExitVelocity is ExitDelta, or the last finite difference, times
// samplesPerSecond (vortex's exit_velocity).
func (s *Segment) ExitVelocity(samplesPerSecond float64) ([]float64, error) {
	if s.ExitDelta != nil {
		return scaled(s.ExitDelta, samplesPerSecond), nil
	}
	n := s.Len()
	if n < 2 {
		return nil, backend.Invalidf("Segment: no exit_delta and fewer than two samples, cannot take the exit velocity")
	}
	return diffScaled(s.Row(n-1), s.Row(n-2), samplesPerSecond), nil
}

// Copy is a deep copy (vortex's copy()).
func (s Segment) Copy() Segment {
	c := Segment{Channels: s.Channels, Position: append([]float64(nil), s.Position...)}
	if s.EntryDelta != nil {
		c.EntryDelta = append([]float64(nil), s.EntryDelta...)
	}
	if s.ExitDelta != nil {
		c.ExitDelta = append([]float64(nil), s.ExitDelta...)
	}
	c.Markers = append([]marker.Marker(nil), s.Markers...)
	return c
}

func copySegments(in []Segment) []Segment {
	if in == nil {
		return nil
	}
	out := make([]Segment, len(in))
	for i := range in {
		out[i] = in[i].Copy()
	}
	return out
}

func scaled(v []float64, k float64) []float64 {
	out := make([]float64, len(v))
	for i := range v {
		out[i] = v[i] * k
	}
	return out
}

func diffScaled(a, b []float64, k float64) []float64 {
	out := make([]float64, len(a))
	for i := range a {
		out[i] = (a[i] - b[i]) * k
	}
	return out
}
