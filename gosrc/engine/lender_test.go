package engine_test

import (
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vortexgo/vortexgo/gosrc/acquire"
	"github.com/vortexgo/vortexgo/gosrc/cpu"
	"github.com/vortexgo/vortexgo/gosrc/endpoint"
	"github.com/vortexgo/vortexgo/gosrc/engine"
	"github.com/vortexgo/vortexgo/gosrc/format/stage"
)

// countingLender counts the blocks an engine borrows from the source.
type countingLender struct {
	*acquire.SimulatedAcquisition
	lends atomic.Int64
}

func (c *countingLender) Lend(records int) (uintptr, int, error) {
	c.lends.Add(1)
	return c.SimulatedAcquisition.Lend(records)
}

// fillOnly hides the source's Lend, so the engine copies with Fill.
type fillOnly struct{ engine.Acquisition }

// TestLenderMatchesFill runs the same simulated scan through the engine
// twice, uploading from lent pinned memory (zero-copy) and from Fill's
// copy, and requires identical raw volumes. Blocks of 48 records over a
// ring of 2 x 4 x 40 records make the replay wrap mid-block.
func TestLenderMatchesFill(t *testing.T) {
	const samples = 64
	scan := raster{AscansPerBscan: 40, BscansPerVolume: 4, Volumes: 5}
	run := func(t *testing.T, lend bool) ([]byte, int64) {
		t.Helper()
		cfg := acquire.DefaultSimulatedConfig()
		cfg.SamplesPerRecord, cfg.AscansPerBscan, cfg.BscansPerVolume = samples, 40, 4
		cfg.Volumes, cfg.TotalVolumes = 2, 5
		sim, err := acquire.NewSimulatedAcquisition(cfg)
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, sim.Close()) })
		lender := &countingLender{SimulatedAcquisition: sim}
		var acq engine.Acquisition = lender
		if !lend {
			acq = fillOnly{lender}
		}
		ep, err := endpoint.NewSpectraStackDeviceTensorEndpoint()
		require.NoError(t, err)
		closeEndpoint(t, ep)
		fmtr, err := stage.NewFormatPlanner(stage.DefaultFormatPlannerConfig(scan.BscansPerVolume, scan.AscansPerBscan))
		require.NoError(t, err)
		proc := newFakeProc(samples)
		ec := engine.Config{RecordsPerBlock: 48, BlocksToAllocate: 4, PreloadCount: 2, EventPolicy: engine.QueueDrop, EventQueueSize: 1}
		ec.AddAcquisition(acq, proc)
		ec.AddProcessor(proc, fmtr)
		ec.AddFormatter(fmtr, ep)
		e, err := engine.New(ec, cpu.Default())
		require.NoError(t, err)
		queueRaster(t, e, scan)
		require.NoError(t, e.Prepare())
		// A lending source needs no pinned host buffer in the pool's
		// blocks; a filling one needs one in each.
		if lend {
			require.Zero(t, e.HostBufferBlocks(0), "host buffers with a lender")
		} else {
			require.Equal(t, ec.BlocksToAllocate, e.HostBufferBlocks(0), "host buffers with Fill")
		}
		require.NoError(t, e.Start())
		require.NoError(t, e.Wait())
		require.NoError(t, e.Close())
		st := e.Status()
		require.Equal(t, int64(5), st.Volumes)
		tn := ep.Tensor()
		return append([]byte(nil), cpu.HostBytes(tn.Ptr(), tn.Size())...), lender.lends.Load()
	}
	lent, lends := run(t, true)
	copied, fills := run(t, false)
	require.Positive(t, lends, "the engine borrowed from the pinned ring")
	require.Zero(t, fills, "Fill path: no Lend")
	require.Equal(t, copied, lent, "the last volume is the same either way")
}
