package pyapi

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
)

func addr[T any](s []T) int { return int(uintptr(unsafe.Pointer(unsafe.SliceData(s)))) }

// TestClosedCoordinatorIDIsDead: a closed coordinator's fast-path id, and
// its streams, never drive another coordinator (the old table reused ids).
func TestClosedCoordinatorIDIsDead(t *testing.T) {
	dev, err := GetDevice("cpu")
	require.NoError(t, err)
	var stale []int
	var streams []*Stream
	for range 4 {
		c, err := NewAsyncCoordinator(dev, `{"NoTiming": true}`)
		require.NoError(t, err)
		s, err := c.Stream(2)
		require.NoError(t, err)
		stale, streams = append(stale, c.ID()), append(streams, s)
		require.NoError(t, c.Close())
	}
	fresh, err := NewAsyncCoordinator(dev, `{"NoTiming": true}`)
	require.NoError(t, err)
	defer func() { require.NoError(t, fresh.Close()) }()
	for i, id := range stale {
		require.NotEqual(t, fresh.ID(), id)
		require.Equal(t, -1, FastExternal(0, id, 0), "stale id %d", id)
		require.Equal(t, -1, FastExternal(1, id, 1))
		_, err := External(2, id, 0, 0, 0)
		require.ErrorContains(t, err, "ClosedError: ")
		require.Equal(t, -1, FastSyncStream(streams[i].ID()))
		_, err = streams[i].Handle()
		require.ErrorContains(t, err, "ClosedError: ")
	}
	info := make([]int64, 4)
	n, err := fresh.Info(addr(info), 8*len(info))
	require.NoError(t, err)
	require.Equal(t, 32, n)
	require.Equal(t, []int64{0, 0, 0, 0}, info, "nothing was queued on the fresh coordinator")
}

// TestPollRecords: Poll writes fixed-size records, keeps what does not
// fit for the next call, and names ops through the interned table.
func TestPollRecords(t *testing.T) {
	dev, err := GetDevice("cpu")
	require.NoError(t, err)
	c, err := NewAsyncCoordinator(dev, `{}`)
	require.NoError(t, err)
	defer func() { require.NoError(t, c.Close()) }()
	words := []int64{0}
	spin, err := NewStageOp(1, "", addr(words), len(words)) // a spin of 0 ns
	require.NoError(t, err)
	for range 3 {
		_, err := c.QueueCompute(spin, 0, 0)
		require.NoError(t, err)
	}
	require.NoError(t, c.SynchronizeAll())
	buf := make([]float64, 2*PollFields)
	require.Equal(t, 2, FastPoll(c.ID(), addr(buf), len(buf)), "two records fit")
	require.Equal(t, []float64{1, 2}, []float64{buf[0], buf[PollFields]})
	require.Equal(t, "spin_ns", c.Name(int(buf[1])/8), "kind = (name*4 + type)*2 + failed")
	require.Equal(t, 0, int(buf[1])/2%4, "a compute op")
	require.Equal(t, 1, FastPoll(c.ID(), addr(buf), len(buf)), "the third waited")
	require.Equal(t, float64(3), buf[0])
	require.Zero(t, FastPoll(c.ID(), addr(buf), len(buf)))
	require.Equal(t, "", c.Name(99))
}

// TestObjectRecordAndConfigRecords: state crosses as a named record
// (putRecord), configs as one JSON record whose unknown keys are refused.
func TestObjectRecordAndConfigRecords(t *testing.T) {
	dev, err := GetDevice("cpu")
	require.NoError(t, err)
	_, err = NewBufferPool(dev, `{"Size": 8, "Initial": 1, "Bogus": 1}`)
	require.ErrorContains(t, err, "ValueError: ")
	require.ErrorContains(t, err, "Bogus")
	_, err = NewBufferPool(dev, `{"Size": 8, "Initial": 1099511627776}`)
	require.ErrorContains(t, err, "ValueError: ")
	require.ErrorContains(t, err, "pool_size=1099511627776, expected 0 <= pool_size <= 65536")
	p, err := NewBufferPool(dev, `{"Size": 8, "Initial": 2}`)
	require.NoError(t, err)
	rec := make([]int64, 4)
	n, err := p.Stats(addr(rec), 8*len(rec))
	require.NoError(t, err)
	require.Equal(t, 32, n)
	require.Equal(t, []int64{2, 2, 0, 0}, rec, "allocated, free, pending, in use")
	require.NoError(t, p.Close())

	f, err := NewFormatPlanner(`{"Shape": [2, 4]}`)
	require.NoError(t, err)
	require.NoError(t, f.Close(), "nothing to release")
}
