package pyapi

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vortexgo/vortexgo/gosrc/engine"
)

// TestSimIO: the state and the recording cross as named records.
func TestSimIO(t *testing.T) {
	_, err := NewSimIO(-1, false, 0)
	require.ErrorContains(t, err, "ValueError: ")
	require.ErrorContains(t, err, "record_samples")
	require.NoError(t, NewNullIO().Close())

	s, err := NewSimIO(4, true, 1)
	require.NoError(t, err)
	state := make([]int64, 3)
	size, err := s.State(addr(state), 8*len(state))
	require.NoError(t, err)
	require.Equal(t, 24, size)
	require.Equal(t, []int64{0, 0, 0}, state)

	require.NoError(t, s.s.Prepare(engine.IOInfo{RecordsPerBlock: 3, OutputChannels: 2, InputChannels: 2}))
	require.NoError(t, s.s.Start())
	target := []float64{1, 2, 3, 4, 5, 6}
	require.NoError(t, s.s.Next(&engine.IOBlock{Sample: 10, Records: 3, GalvoTarget: target, GalvoActual: make([]float64, 6),
		Strobes: []uint32{7, 8, 9}}))
	_, err = s.State(addr(state), 8*len(state))
	require.NoError(t, err)
	require.Equal(t, []int64{3, 1, 0}, state, "samples, started, stopped")

	win := make([]int64, 3)
	rows := make([]float64, 8)
	size, err = s.Recorded(addr(rows), len(rows), addr(win), 8*len(win))
	require.NoError(t, err)
	require.Equal(t, 24, size)
	require.Equal(t, []int64{10, 3, 2}, win, "first, rows, channels")
	require.Equal(t, target, rows[:6])
	strobes := make([]uint32, 8)
	_, err = s.RecordedStrobes(addr(strobes), len(strobes), addr(win), 8*len(win))
	require.NoError(t, err)
	require.Equal(t, []int64{10, 3, 1}, win)
	require.Equal(t, []uint32{7, 8, 9}, strobes[:3])
	require.NoError(t, s.Close())
}
