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
	"github.com/vortexgo/vortexgo/gosrc/format"
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

// lenderRig is a simulated source of 2 volumes of 4 x 40 records of 64
// samples, replayed for `volumes` volumes, and an engine of 48-record
// blocks (the replay wraps mid-block) that formats its raw spectra into a
// spectra endpoint.
type lenderRig struct {
	ep *endpoint.StackTensorEndpoint
	e  *engine.Engine
}

const lenderBlocks = 4

// newLenderRig builds the rig; wrap turns the simulated source into the
// acquisition the engine sees.
func newLenderRig(t *testing.T, volumes int, wrap func(*acquire.SimulatedAcquisition) engine.Acquisition) *lenderRig {
	t.Helper()
	const samples = 64
	scan := raster{AscansPerBscan: 40, BscansPerVolume: 4, Volumes: volumes}
	cfg := acquire.DefaultSimulatedConfig()
	cfg.SamplesPerRecord, cfg.AscansPerBscan, cfg.BscansPerVolume = samples, 40, 4
	cfg.Volumes, cfg.TotalVolumes = 2, volumes
	sim, err := acquire.NewSimulatedAcquisition(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, sim.Close()) })
	ep, err := endpoint.NewSpectraStackDeviceTensorEndpoint()
	require.NoError(t, err)
	closeEndpoint(t, ep)
	fmtr, err := format.NewFormatPlanner(format.DefaultFormatPlannerConfig(scan.BscansPerVolume, scan.AscansPerBscan))
	require.NoError(t, err)
	proc := newFakeProc(samples)
	ec := engine.Config{RecordsPerBlock: 48, BlocksToAllocate: lenderBlocks, PreloadCount: 2, EventPolicy: engine.QueueDrop, EventQueueSize: 1}
	ec.AddAcquisition(wrap(sim), proc)
	ec.AddProcessor(proc, fmtr)
	ec.AddFormatter(fmtr, ep)
	e, err := engine.New(ec, cpu.Default())
	require.NoError(t, err)
	t.Cleanup(func() { _ = e.Close() })
	queueRaster(t, e, scan)
	return &lenderRig{ep: ep, e: e}
}

// TestLenderMatchesFill runs the same simulated scan through the engine
// twice, uploading from lent pinned memory (zero-copy) and from Fill's
// copy, and requires identical raw volumes. Blocks of 48 records over a
// ring of 2 x 4 x 40 records make the replay wrap mid-block.
func TestLenderMatchesFill(t *testing.T) {
	run := func(t *testing.T, lend bool) ([]byte, int64) {
		t.Helper()
		var lender *countingLender
		r := newLenderRig(t, 5, func(sim *acquire.SimulatedAcquisition) engine.Acquisition {
			lender = &countingLender{SimulatedAcquisition: sim}
			if !lend {
				return fillOnly{lender}
			}
			return lender
		})
		e := r.e
		require.NoError(t, e.Prepare())
		// A lending source needs no pinned host buffer in the pool's
		// blocks; a filling one needs one in each.
		if lend {
			require.Zero(t, e.HostBufferBlocks(0), "host buffers with a lender")
		} else {
			require.Equal(t, lenderBlocks, e.HostBufferBlocks(0), "host buffers with Fill")
		}
		require.NoError(t, e.Start())
		require.NoError(t, e.Wait())
		require.NoError(t, e.Close())
		st := e.Status()
		require.Equal(t, int64(5), st.Volumes)
		tn := r.ep.Tensor()
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
	for _, tc := range []struct {
		name string
		err  error
		want string // Prepare's error, or "" when it fills
	}{
		{"declines", fmt.Errorf("reads blocks: %w", engine.ErrNoLend), ""},
		{"fails", errors.New("pinning failed"), "engine.Prepare: acquisition #0: pinning its data: pinning failed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var src *decliningLender
			r := newLenderRig(t, 2, func(sim *acquire.SimulatedAcquisition) engine.Acquisition {
				src = &decliningLender{countingLender: countingLender{SimulatedAcquisition: sim}, err: tc.err}
				return src
			})
			e := r.e
			if tc.want != "" {
				require.EqualError(t, e.Prepare(), tc.want)
				return
			}
			require.NoError(t, e.Prepare())
			require.Equal(t, lenderBlocks, e.HostBufferBlocks(0), "a declining lender's blocks are filled")
			require.NoError(t, e.Start())
			require.NoError(t, e.Wait())
			require.EqualValues(t, 2, e.Status().Volumes)
			require.Zero(t, src.lends.Load(), "nothing borrowed")
		})
	}
}
