//go:build gpu

package endpoint

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/cuda"
	"github.com/vortexgo/vortexgo/gosrc/engine"
	"github.com/vortexgo/vortexgo/gosrc/format/stage"
)

// TestDeviceTensorFormatsInBlockOrderAcrossStreams: a device tensor
// endpoint formats each block on the stream it was processed on
// (BlockData.Stream). Two blocks writing the same cells from two streams
// still land in block order, the second block's values winning while the
// first block's stream is busy, and work queued on the endpoint's own
// stream afterwards (a user's readback) sees both.
func TestDeviceTensorFormatsInBlockOrderAcrossStreams(t *testing.T) {
	dev, err := cuda.GetDevice(0)
	require.NoError(t, err)
	const samples, records = 1024, 64
	const n = samples * records
	e, err := NewSpectraStackDeviceTensorEndpoint()
	require.NoError(t, err)
	require.NoError(t, e.Prepare(engine.EndpointInfo{Device: dev, Owner: 1, RecordsPerBlock: records, RawSamples: samples,
		OutputSamples: samples, SegmentsPerVolume: 1, RecordsPerSegment: records}))
	defer func() { require.NoError(t, e.Close()) }()

	host, err := dev.AllocPinned(2 * n)
	require.NoError(t, err)
	defer func() { require.NoError(t, host.Free()) }()
	var streams [2]backend.Stream
	var raws [2]backend.Buffer
	var ready [2]backend.Event
	for i := range 2 {
		streams[i], err = dev.NewStream(0)
		require.NoError(t, err)
		defer func() { require.NoError(t, streams[i].Close()) }()
		raws[i], err = dev.Alloc(2 * n)
		require.NoError(t, err)
		defer func() { require.NoError(t, raws[i].Free()) }()
		ready[i], err = dev.NewEvent(false)
		require.NoError(t, err)
		defer func() { require.NoError(t, ready[i].Close()) }()
		v := hostView[uint16](host.Ptr(), n)
		for j := range v {
			v[j] = uint16(i + 1)
		}
		require.NoError(t, streams[i].Copy(raws[i].Ptr(), host.Ptr(), 2*n))
		require.NoError(t, streams[i].Synchronize())
	}
	// Milliseconds of work ahead of the first block on its stream: without
	// the order between the endpoint's blocks, the second block (on an idle
	// stream) would be formatted first and then overwritten.
	busy, err := dev.Alloc(1 << 30)
	require.NoError(t, err)
	defer func() { require.NoError(t, busy.Free()) }()
	for range 16 {
		require.NoError(t, streams[0].Memset(busy.Ptr(), 0, 1<<30))
	}
	plan := &engine.FormatPlan{Actions: []stage.Action{copyAction(0, records, 0, 0, false)}}
	for i := range 2 {
		require.NoError(t, streams[i].Record(ready[i]))
		b := &engine.BlockData{Block: &engine.Block{ID: int64(i)}, Records: records, Raw: raws[i].Ptr(), RawSamples: samples,
			OutputSamples: samples, Ready: ready[i], Stream: streams[i]}
		require.NoError(t, e.Format(b, plan))
	}
	// The second block's formatting runs on its own processing stream,
	// after the first block's: that stream is still busy (the first block's
	// stream has milliseconds of memsets ahead of its formatting).
	done, err := streams[1].Query()
	require.NoError(t, err)
	require.False(t, done, "the second block is formatted on its stream, after the first block's formatting")
	// Only the endpoint's stream is synchronized: it must follow both.
	s := e.Stream()
	require.NoError(t, s.Copy(host.Ptr(), e.Tensor().Ptr(), 2*n))
	require.NoError(t, s.Synchronize())
	got := hostView[uint16](host.Ptr(), n)
	for j, v := range got {
		if v != 2 {
			t.Fatalf("cell %d = %d, expected 2 (the second block's value)", j, v)
		}
	}
}

// TestDeviceTensorFormatFollowsChainedWork: work a user chained on the
// endpoint's stream (a volume_callback's reduction of the volume, delayed
// here behind milliseconds of memsets) reads the tensor before the next
// block, formatted on its own processing stream, overwrites it.
func TestDeviceTensorFormatFollowsChainedWork(t *testing.T) {
	dev, err := cuda.GetDevice(0)
	require.NoError(t, err)
	const samples, records = 1024, 64
	const n = samples * records
	e, err := NewSpectraStackDeviceTensorEndpoint()
	require.NoError(t, err)
	require.NoError(t, e.Prepare(engine.EndpointInfo{Device: dev, Owner: 1, RecordsPerBlock: records, RawSamples: samples,
		OutputSamples: samples, SegmentsPerVolume: 1, RecordsPerSegment: records}))
	defer func() { require.NoError(t, e.Close()) }()
	host, err := dev.AllocPinned(2 * n)
	require.NoError(t, err)
	defer func() { require.NoError(t, host.Free()) }()
	snap, err := dev.Alloc(2 * n)
	require.NoError(t, err)
	defer func() { require.NoError(t, snap.Free()) }()
	busy, err := dev.Alloc(1 << 30)
	require.NoError(t, err)
	defer func() { require.NoError(t, busy.Free()) }()
	plan := &engine.FormatPlan{Actions: []stage.Action{copyAction(0, records, 0, 0, false)}}
	for i := range 2 {
		s, err := dev.NewStream(0)
		require.NoError(t, err)
		defer func() { require.NoError(t, s.Close()) }()
		raw, err := dev.Alloc(2 * n)
		require.NoError(t, err)
		defer func() { require.NoError(t, raw.Free()) }()
		ready, err := dev.NewEvent(false)
		require.NoError(t, err)
		defer func() { require.NoError(t, ready.Close()) }()
		for j, v := 0, hostView[uint16](host.Ptr(), n); j < n; j++ {
			v[j] = uint16(i + 1)
		}
		require.NoError(t, s.Copy(raw.Ptr(), host.Ptr(), 2*n))
		require.NoError(t, s.Synchronize())
		require.NoError(t, s.Record(ready))
		b := &engine.BlockData{Block: &engine.Block{ID: int64(i)}, Records: records, Raw: raw.Ptr(), RawSamples: samples,
			OutputSamples: samples, Ready: ready, Stream: s}
		require.NoError(t, e.Format(b, plan))
		if i == 0 {
			// The user's handler: a slow reduction of the first volume,
			// chained on the endpoint's stream.
			us := e.Stream()
			for range 16 {
				require.NoError(t, us.Memset(busy.Ptr(), 0, 1<<30))
			}
			require.NoError(t, us.Copy(snap.Ptr(), e.Tensor().Ptr(), 2*n))
		}
	}
	us := e.Stream()
	require.NoError(t, us.Copy(host.Ptr(), snap.Ptr(), 2*n))
	require.NoError(t, us.Synchronize())
	for j, v := range hostView[uint16](host.Ptr(), n) {
		if v != 1 {
			t.Fatalf("the chained read saw cell %d = %d, expected 1 (the first block's)", j, v)
		}
	}
	require.NoError(t, us.Copy(host.Ptr(), e.Tensor().Ptr(), 2*n))
	require.NoError(t, us.Synchronize())
	for j, v := range hostView[uint16](host.Ptr(), n) {
		if v != 2 {
			t.Fatalf("cell %d = %d after both blocks, expected 2", j, v)
		}
	}
}
