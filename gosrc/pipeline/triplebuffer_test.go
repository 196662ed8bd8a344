package pipeline

import (
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/vortexgo/vortexgo/gosrc/backend"
)

func TestNewTripleBufferArgs(t *testing.T) {
	dev := newFakeDevice(backend.CPU)
	tests := []struct {
		name  string
		dev   backend.Device
		size  int
		dtype backend.DType
		err   string
	}{
		{"ok", dev, 16, backend.Float32, ""},
		{"nil device", nil, 16, backend.Float32, "device is nil"},
		{"zero size", dev, 0, backend.Float32, "size=0, expected > 0"},
		{"bad dtype", dev, 4, backend.DType(42), "dtype=DType(42)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tb, err := NewTripleBuffer(tc.dev, tc.size, tc.dtype)
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.size, tb.Size())
			require.Equal(t, tc.size*4, tb.Bytes())
			require.Equal(t, tc.size*4, tb.Buffer(0).Size())
			require.NoError(t, tb.Close())
			require.ErrorIs(t, tb.Close(), backend.ErrClosed)
		})
	}
}

func TestTripleBufferSequence(t *testing.T) {
	tb, err := NewTripleBuffer(newFakeDevice(backend.CPU), 8, backend.Uint8)
	require.NoError(t, err)
	F, U, P := Free, Uploading, Processing
	// Each step takes every stage it can, then advances; want* are the
	// slots each stage got (-1: not ready) and the states after Advance.
	steps := []struct {
		up, proc, down int
		after          [3]BufferState
	}{
		{0, -1, -1, [3]BufferState{U, F, F}},
		{1, 0, -1, [3]BufferState{P, U, F}},
		{2, 1, 0, [3]BufferState{F, P, U}}, // slot 0 downloaded and freed
		{0, 2, 1, [3]BufferState{U, F, P}},
		{1, 0, 2, [3]BufferState{P, U, F}},
	}
	slot := func(b backend.Buffer, ok bool) int {
		if !ok {
			require.Nil(t, b)
			return -1
		}
		return tb.slotIndex(b)
	}
	for i, st := range steps {
		require.Equal(t, st.up, slot(tb.GetUploadBuffer()), "step %d upload", i)
		require.Equal(t, st.proc, slot(tb.GetProcessBuffer()), "step %d process", i)
		require.Equal(t, st.down, slot(tb.GetDownloadBuffer()), "step %d download", i)
		require.Equal(t, uint64(i+1), tb.Advance())
		require.Equal(t, st.after, tb.States(), "step %d", i)
	}
	// Taking a stage twice in one round fails the second time.
	_, ok := tb.GetUploadBuffer()
	require.True(t, ok)
	_, ok = tb.GetUploadBuffer()
	require.False(t, ok)
	tb.Reset()
	require.Equal(t, [3]BufferState{F, F, F}, tb.States())
	require.Equal(t, "downloading", Downloading.String())
	require.NoError(t, tb.Close())
}

// TestTripleBufferConcurrent hammers one TripleBuffer from many goroutines
// and checks what the single-word CAS design promises: every slot moves only
// along its cycle. Per slot, the claims of consecutive stages differ by at
// most one, in the way the slot's final state says.
func TestTripleBufferConcurrent(t *testing.T) {
	tb, err := NewTripleBuffer(newFakeDevice(backend.CPU), 4, backend.Uint8)
	require.NoError(t, err)
	var claims [3][3]atomic.Int64 // [stage][slot]
	var wg sync.WaitGroup
	const workers, rounds = 16, 3000
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			get := [...]func() (backend.Buffer, bool){tb.GetUploadBuffer, tb.GetProcessBuffer, tb.GetDownloadBuffer}
			for r := range rounds {
				stage := (w + r) % 4
				if stage == 3 {
					tb.Advance()
					continue
				}
				if b, ok := get[stage](); ok {
					claims[stage][tb.slotIndex(b)].Add(1)
				}
			}
		}()
	}
	wg.Wait()
	total := int64(0)
	for i, st := range tb.States() {
		u, p, d := claims[0][i].Load(), claims[1][i].Load(), claims[2][i].Load()
		total += d
		switch st {
		case Free, Downloading:
			require.True(t, u == p && p == d, "slot %d %v: u=%d p=%d d=%d", i, st, u, p, d)
		case Uploading:
			require.True(t, u == p+1 && p == d, "slot %d %v: u=%d p=%d d=%d", i, st, u, p, d)
		case Processing:
			require.True(t, u == p && p == d+1, "slot %d %v: u=%d p=%d d=%d", i, st, u, p, d)
		}
	}
	require.Positive(t, total, "no slot completed a cycle")
	require.Equal(t, uint64(workers*rounds/4), tb.Round())
	require.NoError(t, tb.Close())
}
