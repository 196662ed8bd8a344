package io_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vortexgo/vortexgo/gosrc/engine"
	gio "github.com/vortexgo/vortexgo/gosrc/io"
)

// TestSimIOFeedback: the measured position is the output delayed.
func TestSimIOFeedback(t *testing.T) {
	io, err := gio.NewSimIO(gio.SimConfig{RecordSamples: 4, Feedback: true, FeedbackDelay: 3})
	require.NoError(t, err)
	require.NoError(t, io.Prepare(engine.IOInfo{RecordsPerBlock: 5, OutputChannels: 2, InputChannels: 3}))
	var out []float64
	for b := range 3 {
		target := make([]float64, 10)
		for i := range target {
			target[i] = float64(b*10 + i + 1)
		}
		actual := make([]float64, 15)
		require.NoError(t, io.Next(&engine.IOBlock{ID: int64(b), Sample: int64(b * 5), Records: 5, GalvoTarget: target, GalvoActual: actual}))
		for r := range 5 {
			k := b*5 + r - 3 // the sample measured now
			for c := range 3 {
				want := 0.0
				if k >= 0 && c < 2 {
					want = float64(k*2 + c + 1)
				}
				require.Equal(t, want, actual[r*3+c], "block %d row %d channel %d", b, r, c)
			}
		}
		out = append(out, target...)
	}
	got := make([]float64, 100)
	first, rows := io.Recorded(got)
	require.Equal(t, int64(11), first, "the ring keeps the last 4 of 15 samples")
	require.Equal(t, 4, rows)
	require.Equal(t, 2, io.OutputChannels())
	require.Equal(t, out[22:], got[:8])
	require.NoError(t, io.Stop())
	require.ErrorIs(t, io.Next(&engine.IOBlock{}), engine.ErrStopped)

	_, err = gio.NewSimIO(gio.SimConfig{RecordSamples: -1})
	require.ErrorContains(t, err, "record_samples")
	_, err = gio.NewSimIO(gio.SimConfig{FeedbackDelay: -1})
	require.ErrorContains(t, err, "feedback_delay")
}

// TestNullIO accepts and counts.
func TestNullIO(t *testing.T) {
	n := gio.NewNullIO()
	require.NoError(t, n.Prepare(engine.IOInfo{}))
	require.NoError(t, n.Start())
	require.NoError(t, n.Next(&engine.IOBlock{}))
	require.NoError(t, n.Stop())
	require.Equal(t, int64(1), n.Blocks())
}
