package scan

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/marker"
)

// TestQueuePlay: while a queue is played, another player cannot play it
// and another played queue cannot take its scans; outside a play nothing
// is held.
func TestQueuePlay(t *testing.T) {
	newScan := func() *RasterScan {
		var s RasterScan
		require.NoError(t, s.Initialize(smallRaster()))
		return &s
	}
	tests := []struct {
		name    string
		run     func(t *testing.T, a, b *ScanQueue, s *RasterScan) error
		wantErr error
		words   string
	}{
		{"another player", func(t *testing.T, a, b *ScanQueue, s *RasterScan) error {
			return a.Play("engine 2")
		}, backend.ErrInUse, "another running engine plays this ScanQueue"},
		{"same player again", func(t *testing.T, a, b *ScanQueue, s *RasterScan) error {
			return a.Play("engine 1")
		}, nil, ""},
		{"append a played scan to another played queue", func(t *testing.T, a, b *ScanQueue, s *RasterScan) error {
			require.NoError(t, b.Play("engine 2"))
			return b.Append(s, nil, ScanBoundary())
		}, backend.ErrInUse, "another running engine"},
		{"interrupt with a played scan leaves the queue as it was", func(t *testing.T, a, b *ScanQueue, s *RasterScan) error {
			other := newScan()
			require.NoError(t, b.Append(other, nil, ScanBoundary()))
			require.NoError(t, b.Play("engine 2"))
			err := b.Interrupt(s, nil, ScanBoundary())
			require.Len(t, b.queue, 1, "the refused interrupt dropped nothing")
			return err
		}, backend.ErrInUse, "another running engine"},
		{"play a queue holding a played scan", func(t *testing.T, a, b *ScanQueue, s *RasterScan) error {
			require.NoError(t, b.Append(s, nil, ScanBoundary()), "not played: nothing is held")
			return b.Play("engine 2")
		}, backend.ErrInUse, "another running engine"},
		{"after the play ends", func(t *testing.T, a, b *ScanQueue, s *RasterScan) error {
			a.StopPlaying("engine 1")
			require.NoError(t, b.Play("engine 2"))
			return b.Append(s, nil, ScanBoundary())
		}, nil, ""},
		{"after the scan left the played queue", func(t *testing.T, a, b *ScanQueue, s *RasterScan) error {
			a.Clear()
			require.NoError(t, b.Play("engine 2"))
			return b.Append(s, nil, ScanBoundary())
		}, nil, ""},
		{"the same scan twice in one queue", func(t *testing.T, a, b *ScanQueue, s *RasterScan) error {
			return a.Append(s, nil, ScanBoundary())
		}, nil, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a, b := NewScanQueue(), NewScanQueue()
			s := newScan()
			require.NoError(t, a.Append(s, nil, ScanBoundary()))
			require.NoError(t, a.Play("engine 1"))
			t.Cleanup(func() { a.StopPlaying("engine 1"); b.StopPlaying("engine 2") })
			err := tc.run(t, a, b, s)
			if tc.wantErr == nil {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, tc.wantErr)
			require.ErrorContains(t, err, tc.words)
		})
	}
}

// TestQueueResetWhilePlayed: reset() drops the scans and keeps the
// stream's sample count (a planner would see markers from the past
// otherwise); reset(sample, ...) is refused; both work as vortex's after
// the play.
func TestQueueResetWhilePlayed(t *testing.T) {
	var s RasterScan
	require.NoError(t, s.Initialize(smallRaster()))
	q := NewScanQueue()
	require.NoError(t, q.Append(&s, nil, ScanBoundary()))
	require.NoError(t, q.Play("engine"))
	var ms []marker.Marker
	_, _, err := q.Generate(&ms, make([]float64, 20), 2, 10, true)
	require.NoError(t, err)
	q.Reset()
	sample, pos, _ := q.State()
	require.Equal(t, int64(10), sample, "the stream's count goes on")
	require.Empty(t, pos, "the position is forgotten")
	err = q.ResetAt(0, []float64{0, 0}, []float64{0, 0})
	require.ErrorIs(t, err, backend.ErrInUse)
	require.ErrorContains(t, err, "scan_queue.reset()")
	q.StopPlaying("engine")
	require.NoError(t, q.ResetAt(0, []float64{0, 0}, []float64{0, 0}))
	q.Reset()
	sample, _, _ = q.State()
	require.Equal(t, int64(0), sample)
}

// TestQueuePlayConcurrent: queues sharing one scan played and appended to
// from many goroutines at once: -race sees the holds guarded, and each
// scan ends up held by at most one queue.
func TestQueuePlayConcurrent(t *testing.T) {
	var s RasterScan
	require.NoError(t, s.Initialize(smallRaster()))
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			q := NewScanQueue()
			for range 50 {
				if q.Play(i) == nil {
					_ = q.Append(&s, nil, ScanBoundary())
					q.Clear()
					q.StopPlaying(i)
				}
			}
		})
	}
	wg.Wait()
	scanPlayers.mu.Lock()
	defer scanPlayers.mu.Unlock()
	require.Empty(t, scanPlayers.by, "every play ended and released its scans")
}
