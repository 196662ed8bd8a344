package engine_test

import (
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vortexgo/vortexgo/gosrc/acquire"
	"github.com/vortexgo/vortexgo/gosrc/backend"
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

// decliningLender is a lender whose PinTo declines (engine.ErrNoLend), as
// a FileAcquisition on the CPU backend does, or fails outright.
type decliningLender struct {
	countingLender
	err error
}

func (d *decliningLender) PinTo(backend.Device, int) error { return d.err }

// TestLenderThatDeclinesFills: a PinTo that declines makes the engine fill
// the source's blocks (host buffers, no Lend), with the same volume; any
// other PinTo error fails Prepare, naming the acquisition.
func TestLenderThatDeclinesFills(t *testing.T) {
	const samples = 64
	scan := raster{AscansPerBscan: 40, BscansPerVolume: 4, Volumes: 2}
	for _, tc := range []struct {
		name string
		err  error
		want string // Prepare's error, or "" when it fills
	}{
		{"declines", fmt.Errorf("reads blocks: %w", engine.ErrNoLend), ""},
		{"fails", errors.New("pinning failed"), "engine.Prepare: acquisition #0: pinning its data: pinning failed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := acquire.DefaultSimulatedConfig()
			cfg.SamplesPerRecord, cfg.AscansPerBscan, cfg.BscansPerVolume = samples, 40, 4
			cfg.Volumes, cfg.TotalVolumes = 2, 2
			sim, err := acquire.NewSimulatedAcquisition(cfg)
			require.NoError(t, err)
			t.Cleanup(func() { require.NoError(t, sim.Close()) })
			src := &decliningLender{countingLender: countingLender{SimulatedAcquisition: sim}, err: tc.err}
			ep, err := endpoint.NewSpectraStackDeviceTensorEndpoint()
			require.NoError(t, err)
			closeEndpoint(t, ep)
			fmtr, err := stage.NewFormatPlanner(stage.DefaultFormatPlannerConfig(scan.BscansPerVolume, scan.AscansPerBscan))
			require.NoError(t, err)
			proc := newFakeProc(samples)
			ec := engine.Config{RecordsPerBlock: 48, BlocksToAllocate: 4, PreloadCount: 2, EventPolicy: engine.QueueDrop, EventQueueSize: 1}
			ec.AddAcquisition(src, proc)
			ec.AddProcessor(proc, fmtr)
			ec.AddFormatter(fmtr, ep)
			e, err := engine.New(ec, cpu.Default())
			require.NoError(t, err)
			t.Cleanup(func() { _ = e.Close() })
			queueRaster(t, e, scan)
			if tc.want != "" {
				require.EqualError(t, e.Prepare(), tc.want)
				return
			}
			require.NoError(t, e.Prepare())
			require.Equal(t, ec.BlocksToAllocate, e.HostBufferBlocks(0), "a declining lender's blocks are filled")
			require.NoError(t, e.Start())
			require.NoError(t, e.Wait())
			require.EqualValues(t, 2, e.Status().Volumes)
			require.Zero(t, src.lends.Load(), "nothing borrowed")
		})
	}
}
