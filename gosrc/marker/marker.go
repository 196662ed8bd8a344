// Package marker holds vortex's scan markers: the timestamps the Generate
// stage attaches to the samples it emits (scan, volume and segment
// boundaries, active and inactive lines, user events) and that the format
// planner reads to decide where each record goes.
//
// A marker is one flat struct with a Kind rather than an interface per kind:
// markers travel with every block on the hot path, and a slice of values
// keeps them free of per-marker allocation (a block's list is preallocated
// and reused).
package marker

import "fmt"

// Kind says which of vortex's marker types a Marker is.
type Kind uint8

// The kinds, as vortex's vortex.marker module names them.
const (
	// ScanBoundary starts a scan (one pass of a pattern, all its volumes).
	ScanBoundary Kind = iota + 1
	// VolumeBoundary starts a volume.
	VolumeBoundary
	// SegmentBoundary starts a segment (a B-scan of a raster scan).
	SegmentBoundary
	// ActiveLines starts samples whose records belong in the output.
	ActiveLines
	// InactiveLines starts samples of flyback or transition: records the
	// planner drops unless told to keep them.
	InactiveLines
	// Event is a user marker with an id, reported by endpoints' event
	// callbacks.
	Event
)

var kindNames = [...]string{"", "ScanBoundary", "VolumeBoundary", "SegmentBoundary", "ActiveLines", "InactiveLines", "Event"}

// String is the vortex class name of the kind.
func (k Kind) String() string {
	if int(k) < len(kindNames) && k != 0 {
		return kindNames[k]
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// Flags is vortex's 64-bit flag set (marker::flags_t): a marker passes a
// filter when the two share at least one bit.
type Flags uint64

// AllFlags is every bit set, the default flags of boundaries and events.
const AllFlags = ^Flags(0)

// NoFlags is no bit set: a marker with it matches no filter.
const NoFlags Flags = 0

// MaxUniqueFlags is the number of distinct flag bits.
const MaxUniqueFlags = 64

// Matches reports whether f and o share at least one bit.
func (f Flags) Matches(o Flags) bool { return f&o != 0 }

// Set returns f with bit idx set; idx must be below MaxUniqueFlags.
func (f Flags) Set(idx uint) Flags { return f | 1<<idx }

// Clear returns f with bit idx cleared.
func (f Flags) Clear(idx uint) Flags { return f &^ (1 << idx) }

// Marker is one marker. Which fields mean something depends on Kind:
//
//	ScanBoundary:    Sample, Sequence, CountHint (volumes), Flags
//	VolumeBoundary:  Sample, Sequence, Index (index in scan), Reversed, CountHint (segments), Flags
//	SegmentBoundary: Sample, Sequence, Index (index in volume), Reversed, CountHint (records), Flags
//	ActiveLines, InactiveLines: Sample
//	Event:           Sample, ID, Flags
type Marker struct {
	// Sample is the sample (record) count, since the stream started, at
	// which the marker takes effect.
	Sample int64
	// Sequence counts markers of this kind (vortex's sequence).
	Sequence int64
	// Index is index_in_scan for a volume boundary and index_in_volume for
	// a segment boundary.
	Index int64
	// CountHint is volume_count_hint, segment_count_hint or
	// record_count_hint; 0 means unknown.
	CountHint int
	// ID is an Event's id.
	ID uint64
	// Flags filter the marker in the format planner.
	Flags Flags
	// Kind is the marker's type.
	Kind Kind
	// Reversed marks a volume or segment traversed backwards
	// (bidirectional scans).
	Reversed bool
}

// NewScanBoundary is vortex's ScanBoundary(sample, sequence, volume_count_hint) with all flags.
func NewScanBoundary(sample, sequence int64, volumeCountHint int) Marker {
	return Marker{Kind: ScanBoundary, Sample: sample, Sequence: sequence, CountHint: volumeCountHint, Flags: AllFlags}
}

// NewVolumeBoundary is vortex's VolumeBoundary(sample, sequence, index_in_scan, reversed, segment_count_hint) with all flags.
func NewVolumeBoundary(sample, sequence, indexInScan int64, reversed bool, segmentCountHint int) Marker {
	return Marker{Kind: VolumeBoundary, Sample: sample, Sequence: sequence, Index: indexInScan, Reversed: reversed, CountHint: segmentCountHint, Flags: AllFlags}
}

// NewSegmentBoundary is vortex's SegmentBoundary(sample, sequence, index_in_volume, reversed, record_count_hint) with all flags.
func NewSegmentBoundary(sample, sequence, indexInVolume int64, reversed bool, recordCountHint int) Marker {
	return Marker{Kind: SegmentBoundary, Sample: sample, Sequence: sequence, Index: indexInVolume, Reversed: reversed, CountHint: recordCountHint, Flags: AllFlags}
}

// NewActiveLines is vortex's ActiveLines(sample).
func NewActiveLines(sample int64) Marker { return Marker{Kind: ActiveLines, Sample: sample} }

// NewInactiveLines is vortex's InactiveLines(sample).
func NewInactiveLines(sample int64) Marker { return Marker{Kind: InactiveLines, Sample: sample} }

// NewEvent is vortex's Event(sample, id) with all flags.
func NewEvent(sample int64, id uint64) Marker {
	return Marker{Kind: Event, Sample: sample, ID: id, Flags: AllFlags}
}

// String prints the marker as vortex's repr does, for test failures and logs.
func (m Marker) String() string {
	switch m.Kind {
	case ScanBoundary:
		return fmt.Sprintf("ScanBoundary(sample=%d, sequence=%d, volume_count_hint=%d, flags=%#x)", m.Sample, m.Sequence, m.CountHint, uint64(m.Flags))
	case VolumeBoundary:
		return fmt.Sprintf("VolumeBoundary(sample=%d, sequence=%d, index_in_scan=%d, reversed=%t, segment_count_hint=%d, flags=%#x)", m.Sample, m.Sequence, m.Index, m.Reversed, m.CountHint, uint64(m.Flags))
	case SegmentBoundary:
		return fmt.Sprintf("SegmentBoundary(sample=%d, sequence=%d, index_in_volume=%d, reversed=%t, record_count_hint=%d, flags=%#x)", m.Sample, m.Sequence, m.Index, m.Reversed, m.CountHint, uint64(m.Flags))
	case ActiveLines, InactiveLines:
		return fmt.Sprintf("%s(sample=%d)", m.Kind, m.Sample)
	case Event:
		return fmt.Sprintf("Event(sample=%d, id=%d, flags=%#x)", m.Sample, m.ID, uint64(m.Flags))
	}
	return fmt.Sprintf("Marker(kind=%s, sample=%d)", m.Kind, m.Sample)
}
