package pyapi

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestFormatObjects: the planner and the executors from their records
// (absent keys keep vortex's defaults), and Initialize in place.
func TestFormatObjects(t *testing.T) {
	for _, tc := range []struct {
		name string
		new  func(string) (*FormatExecutor, error)
		ok   string
		bad  string
		want string
	}{
		{"stack", NewStackFormatExecutor, `{"SampleSlice": {"Simple": true, "Start": 2, "Stop": 6, "Step": 1}}`,
			`{"SampleSlice": {"Simple": true, "Start": 2, "Stop": 6, "Step": 0}}`, "step"},
		{"radial", NewRadialFormatExecutor, `{"SegmentRTExtent": [{"Min": -1, "Max": 1}, {"Min": 0, "Max": 3.14}], "RadialShape": [4, 8]}`,
			`{"RadialShape": [4, 8], "Bogus": 1}`, "Bogus"},
		{"spiral", NewSpiralFormatExecutor, `{"SegmentExtent": {"Min": 0, "Max": 1}, "SpiralShape": [2, 10], "SpiralVelocity": 1}`,
			`{"Nope": 1}`, "Nope"},
		{"position", NewPositionFormatExecutor, ``, `{"Nope": 1}`, "Nope"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			x, err := tc.new(tc.ok)
			require.NoError(t, err)
			_, err = tc.new(tc.bad)
			require.ErrorContains(t, err, "ValueError: ")
			require.ErrorContains(t, err, tc.want)
			require.NoError(t, x.Initialize(tc.ok))
			err = x.Initialize(tc.bad)
			require.ErrorContains(t, err, "ValueError: ")
			require.ErrorContains(t, err, tc.want)
			require.NoError(t, x.Close(), "nothing to release")
		})
	}

	_, err := NewFormatPlanner(`{"Shape": [0, 4]}`)
	require.ErrorContains(t, err, "segments_per_volume")
	_, err = NewFormatPlanner(`{"Bogus": 1}`)
	require.ErrorContains(t, err, "Bogus")
	p, err := NewFormatPlanner(`{"Shape": [3, 4]}`)
	require.NoError(t, err)
	require.Equal(t, [2]int{3, 4}, [2]int{p.p.SegmentsPerVolume(), p.p.RecordsPerSegment()})
	require.True(t, p.p.Config().FlipReversed, "vortex's defaults under the record")
	require.NoError(t, p.Initialize(`{"Shape": [5, 6], "FlipReversed": false}`))
	require.Equal(t, 5, p.p.SegmentsPerVolume())
	require.False(t, p.p.Config().FlipReversed)
	require.ErrorContains(t, p.Initialize(`{"Shape": [0, 6]}`), "ValueError: ")
	require.Equal(t, 5, p.p.SegmentsPerVolume(), "a refused config changes nothing")
	p.Reset()
}
