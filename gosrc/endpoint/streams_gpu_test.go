//go:build gpu

package endpoint

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vortexgo/vortexgo/gosrc/cuda"
	"github.com/vortexgo/vortexgo/gosrc/engine"
)

// TestSpectraStackStrategiesOnCUDA: on a CUDA device the copies are
// formatted by the stack kernel into a device buffer and downloaded per
// strategy: the same storage operations as on the CPU.
func TestSpectraStackStrategiesOnCUDA(t *testing.T) {
	dev, err := cuda.GetDevice(0)
	require.NoError(t, err)
	for _, strategy := range []BufferStrategy{BufferBlock, BufferSegment, BufferVolume} {
		t.Run(strategy.String(), func(t *testing.T) {
			f := &fakeStack{shape: [4]int{3, 4, 1, 1}, dtype: "uint16", open: true}
			e, err := NewSpectraStackEndpoint(f)
			require.NoError(t, err)
			require.NoError(t, e.SetBufferStrategy(strategy))
			require.NoError(t, e.Prepare(engine.EndpointInfo{Device: dev, RecordsPerBlock: 6, RawSamples: 1, OutputSamples: 1,
				SegmentsPerVolume: 3, RecordsPerSegment: 4}))
			raw, err := dev.Alloc(12)
			require.NoError(t, err)
			defer func() { require.NoError(t, raw.Free()) }()
			host, err := dev.AllocPinned(12)
			require.NoError(t, err)
			defer func() { require.NoError(t, host.Free()) }()
			s, err := dev.NewStream(0)
			require.NoError(t, err)
			defer func() { require.NoError(t, s.Close()) }()
			ready, err := dev.NewEvent(false)
			require.NoError(t, err)
			defer func() { require.NoError(t, ready.Close()) }()
			for i, p := range streamPlans {
				for r := range p.records {
					hostView[uint16](host.Ptr(), 6)[r] = uint16(p.sample) + uint16(r)
				}
				require.NoError(t, s.Copy(raw.Ptr(), host.Ptr(), 2*p.records))
				require.NoError(t, s.Record(ready))
				b := &engine.BlockData{Block: &engine.Block{ID: int64(i)}, Records: p.records, Sample: p.sample, Raw: raw.Ptr(),
					RawSamples: 1, OutputSamples: 1, Ready: ready}
				require.NoError(t, e.Format(b, &engine.FormatPlan{Actions: p.actions}))
				// the raw buffer is reused: each block is stored before the next upload
				require.NoError(t, e.Flush())
				require.NoError(t, s.Synchronize())
			}
			require.Equal(t, strategyOps[strategy], f.Ops())
			require.NoError(t, e.Close())
		})
	}
}

// TestStreamHostTensorOnCUDA: the counter tensor endpoint formats on the
// host into pinned memory of a CUDA device.
func TestStreamHostTensorOnCUDA(t *testing.T) {
	dev, err := cuda.GetDevice(0)
	require.NoError(t, err)
	e, err := NewStreamHostTensorEndpoint(StreamCounter, nil, []int{3, 4, 1})
	require.NoError(t, err)
	require.NoError(t, e.Prepare(engine.EndpointInfo{Device: dev, Owner: 1, RecordsPerBlock: 6, SegmentsPerVolume: 3, RecordsPerSegment: 4}))
	e.BeginSession(nil)
	for i, p := range streamPlans[:2] {
		require.NoError(t, e.Format(counterBlock(int64(i), p.sample, p.records), &engine.FormatPlan{Actions: p.actions}))
	}
	require.Equal(t, []uint64{0, 1, 2, 3, 4, 5, 6, 7, 11, 10, 9, 8}, hostView[uint64](e.Tensor().Ptr(), 12))
	require.NoError(t, e.Close())
}
