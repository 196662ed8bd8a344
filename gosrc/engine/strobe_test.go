package engine

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vortexgo/vortexgo/gosrc/marker"
)

// strobeReference is vortex's strobe semantics written per sample over
// the whole stream: start from the idle word, then apply each strobe in
// list order (a later strobe on the same line wins).
func strobeReference(strobes []Strobe, markers []marker.Marker, n int) []uint32 {
	out := make([]uint32, n)
	idle := strobeIdle(strobes)
	for s := range out {
		out[s] = idle
		for _, st := range strobes {
			active := false
			if st.Kind == SampleStrobe {
				active = (s+st.Phase)%st.Divisor < st.Duration
			} else {
				for _, m := range markers {
					start := int(m.Sample) + st.Delay
					if m.Kind == strobeMarkerKind[st.Kind] && m.Flags.Matches(st.Flags) && s >= start && s < start+st.Duration {
						active = true
					}
				}
			}
			if active {
				setStrobe(&out[s], 1<<st.Line, st.Polarity)
			}
		}
	}
	return out
}

// TestStrobesAsVortex: hand-checked words for vortex's strobe kinds, then
// every case generated block by block (markers split by block, strobes
// outlasting their block carried on) equals the whole-stream reference for
// several block lengths.
func TestStrobesAsVortex(t *testing.T) {
	seg := func(sample, idx int64) marker.Marker { return marker.NewSegmentBoundary(sample, idx, idx, false, 4) }
	lead := marker.NewScanBoundary(0, 0, 0)
	lead.Flags = marker.NoFlags
	flagged := marker.NewSegmentBoundary(9, 9, 9, false, 4)
	flagged.Flags = marker.Flags(0).Set(3)
	stream := []marker.Marker{lead, marker.NewScanBoundary(2, 1, 1), seg(2, 0), marker.NewVolumeBoundary(2, 0, 0, false, 3),
		seg(7, 1), flagged, marker.NewEvent(11, 42), seg(12, 2)}
	tests := []struct {
		name    string
		strobes []Strobe
		want    []uint32 // the first samples, checked by hand (nil: reference only)
	}{
		{"sample clock: divisor 2, duration 1", []Strobe{NewSampleStrobe(0, 2, PolarityHigh, 1, 0)},
			[]uint32{1, 0, 1, 0, 1, 0}},
		{"sample strobe with phase on line 5", []Strobe{NewSampleStrobe(5, 4, PolarityHigh, 2, 1)},
			[]uint32{32, 0, 0, 32, 32, 0, 0, 32}},
		{"active low idles high", []Strobe{NewSampleStrobe(2, 3, PolarityLow, 1, 0)},
			[]uint32{0, 4, 4, 0, 4, 4}},
		{"segment strobe, delay 1, duration 3", []Strobe{NewMarkerStrobe(SegmentStrobe, 3, PolarityHigh, 3, 1, marker.AllFlags)},
			[]uint32{0, 0, 0, 8, 8, 8, 0, 0, 8, 8, 8, 8, 8, 8, 8, 8, 0}}, // segments at 2, 7, 9 (flag 3), 12
		{"segment strobe of flag 5: the segment of flag 3 only fires none", []Strobe{NewMarkerStrobe(SegmentStrobe, 1, PolarityHigh, 2, 0, marker.Flags(0).Set(5))},
			[]uint32{0, 0, 2, 2, 0, 0, 0, 2, 2, 0, 0, 0, 2, 2, 0}},
		{"the lead marker (no flags) fires no scan strobe", []Strobe{NewMarkerStrobe(ScanStrobe, 0, PolarityHigh, 2, 0, marker.AllFlags)},
			[]uint32{0, 0, 1, 1, 0}},
		{"event strobe, active low", []Strobe{NewMarkerStrobe(EventStrobe, 4, PolarityLow, 2, 0, marker.AllFlags)},
			[]uint32{16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 0, 0, 16}},
		{"volume strobe longer than a block", []Strobe{NewMarkerStrobe(VolumeStrobe, 31, PolarityHigh, 9, 2, marker.AllFlags)}, nil},
		{"vortex's default strobes", DefaultStrobes(), nil},
		{"none", nil, []uint32{0, 0, 0}},
	}
	const n = 40
	for _, tc := range tests {
		ref := strobeReference(tc.strobes, stream, n)
		if tc.want != nil {
			require.Equal(t, tc.want, ref[:len(tc.want)], "%s: the reference", tc.name)
		}
		for _, block := range []int{1, 3, 5, 16, n} {
			t.Run(fmt.Sprintf("%s/block %d", tc.name, block), func(t *testing.T) {
				require.NoError(t, validateStrobes(tc.strobes))
				g := newStrobeGen(tc.strobes, 4)
				got := make([]uint32, n)
				for start := 0; start < n; start += block {
					end := min(start+block, n)
					var ms []marker.Marker
					for _, m := range stream {
						if m.Sample >= int64(start) && m.Sample < int64(end) {
							ms = append(ms, m)
						}
					}
					g.generate(got[start:end], int64(start), ms)
				}
				require.Equal(t, ref, got)
			})
		}
	}
}

// TestStrobeErrors: each bad field is named.
func TestStrobeErrors(t *testing.T) {
	tests := []struct {
		name   string
		strobe Strobe
		want   string
	}{
		{"line", NewSampleStrobe(32, 2, PolarityHigh, 1, 0), "line"},
		{"negative line", NewMarkerStrobe(SegmentStrobe, -1, PolarityHigh, 10, 0, marker.AllFlags), "line"},
		{"divisor", NewSampleStrobe(0, 0, PolarityHigh, 1, 0), "divisor"},
		{"phase", NewSampleStrobe(0, 2, PolarityHigh, 1, -1), "phase"},
		{"duration", NewMarkerStrobe(VolumeStrobe, 0, PolarityHigh, -1, 0, marker.AllFlags), "duration"},
		{"delay", NewMarkerStrobe(EventStrobe, 0, PolarityHigh, 1, -2, marker.AllFlags), "delay"},
		{"polarity", Strobe{Kind: ScanStrobe, Polarity: 2, Duration: 1}, "polarity"},
		{"kind", Strobe{Kind: 9}, "kind 9"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := validateStrobes([]Strobe{DefaultStrobes()[0], tc.strobe})
			require.ErrorContains(t, err, "Config.Strobes[1]")
			require.ErrorContains(t, err, tc.want)
		})
	}
}
