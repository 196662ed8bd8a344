package marker

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestFlagsMatch(t *testing.T) {
	cases := []struct {
		name string
		a, b Flags
		want bool
	}{
		{"all matches one bit", AllFlags, NoFlags.Set(3), true},
		{"none matches nothing", NoFlags, AllFlags, false},
		{"disjoint bits", NoFlags.Set(1), NoFlags.Set(2), false},
		{"shared bit", NoFlags.Set(1).Set(2), NoFlags.Set(2), true},
		{"cleared bit", AllFlags.Clear(5), NoFlags.Set(5), false},
		{"top bit", NoFlags.Set(MaxUniqueFlags - 1), AllFlags, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.want, c.a.Matches(c.b))
			assert.Equal(t, c.want, c.b.Matches(c.a), "matching is symmetric")
		})
	}
}

func TestConstructorsAndString(t *testing.T) {
	cases := []struct {
		m    Marker
		kind Kind
		text string
	}{
		{NewScanBoundary(10, 1, 3), ScanBoundary, "ScanBoundary(sample=10, sequence=1, volume_count_hint=3, flags=0xffffffffffffffff)"},
		{NewVolumeBoundary(11, 2, 0, true, 4), VolumeBoundary, "VolumeBoundary(sample=11, sequence=2, index_in_scan=0, reversed=true, segment_count_hint=4, flags=0xffffffffffffffff)"},
		{NewSegmentBoundary(12, 5, 1, false, 100), SegmentBoundary, "SegmentBoundary(sample=12, sequence=5, index_in_volume=1, reversed=false, record_count_hint=100, flags=0xffffffffffffffff)"},
		{NewActiveLines(13), ActiveLines, "ActiveLines(sample=13)"},
		{NewInactiveLines(14), InactiveLines, "InactiveLines(sample=14)"},
		{NewEvent(15, 7), Event, "Event(sample=15, id=7, flags=0xffffffffffffffff)"},
	}
	for _, c := range cases {
		t.Run(c.kind.String(), func(t *testing.T) {
			assert.Equal(t, c.kind, c.m.Kind)
			assert.Equal(t, c.text, c.m.String())
		})
	}
	assert.Equal(t, "Kind(9)", Kind(9).String())
}
