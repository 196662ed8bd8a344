package scan

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vortexgo/vortexgo/gosrc/backend"
)

// TestTypedAPIsCheckTheirArguments: the bounds a binding used to check
// before calling are the core's, with the messages Python users see.
func TestTypedAPIsCheckTheirArguments(t *testing.T) {
	_, err := NewScanQueueAt(3, []float64{0, 0}, []float64{0})
	require.ErrorIs(t, err, backend.ErrInvalid)
	require.EqualError(t, err, "ScanQueue: position of 2 values and velocity of 1, expected one per channel each")
	q, err := NewScanQueueAt(3, []float64{0.5, 0}, []float64{0, 0})
	require.NoError(t, err)
	s, pos, _ := q.State()
	require.EqualValues(t, 3, s)
	require.Equal(t, []float64{0.5, 0}, pos)

	err = q.ResetAt(0, make([]float64, 65), make([]float64, 65))
	require.EqualError(t, err, "ScanQueue.reset: position of 65 values and velocity of 65, expected one per channel each")
	_, _, err = q.Generate(nil, nil, 65, 0, true)
	require.EqualError(t, err, "ScanQueue.generate: 65 channels, expected in [1, 64]")

	_, err = NewSequentialPattern().ToPattern([][]float64{{0, 0, 1, 1}}, 0)
	require.EqualError(t, err, "to_pattern: 0 channels, expected in [1, 64]")
	_, err = NewRepeatedPattern().ToPattern([][]float64{{0, 0, 1, 1}}, 65)
	require.ErrorIs(t, err, backend.ErrInvalid)

	_, err = NewSegment("pattern[1]", []float64{1, 2, 3}, 2, nil, nil, nil)
	require.EqualError(t, err, "pattern[1]: 3 positions of 2 channels, expected a (samples, channels) array with 1..64 channels")
	empty, err := NewSegment("pattern[2]", nil, 2, nil, nil, nil)
	require.NoError(t, err, "a segment may hold no samples (vortex's default Segment); a scan refuses it")
	require.Zero(t, empty.Len())
	_, err = empty.EntryPosition()
	require.EqualError(t, err, "Segment.position: no samples, cannot take the entry position")
	_, err = NewSegment("pattern[0]", []float64{1, 2, 3, 4}, 2, []float64{1}, nil, nil)
	require.EqualError(t, err, "pattern[0]: entry/exit delta of 1 values, expected 2 (channels)")
	seg, err := NewSegment("pattern[0]", []float64{1, 2, 3, 4}, 2, nil, []float64{1, 1}, nil)
	require.NoError(t, err)
	require.Equal(t, 2, seg.Len())
}
