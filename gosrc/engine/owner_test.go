package engine_test

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/cpu"
	"github.com/vortexgo/vortexgo/gosrc/endpoint"
	"github.com/vortexgo/vortexgo/gosrc/engine"
	"github.com/vortexgo/vortexgo/gosrc/format"
	"github.com/vortexgo/vortexgo/gosrc/marker"
)

// TestOneStageOneEngine: a stage of an engine that is prepared and not
// closed is refused to another engine, naming it; closing the first (or
// its failed Prepare) releases it.
func TestOneStageOneEngine(t *testing.T) {
	scan := raster{AscansPerBscan: 4, BscansPerVolume: 2, Volumes: 2}
	tests := []struct {
		name  string
		share func(first *rig, ep engine.Endpoint) *rig // a second rig over one of first's stages
		words string
	}{
		{"acquisition", func(f *rig, _ engine.Endpoint) *rig { return rigOf(t, scan, f.acq, nil, nil) }, "fakeAcq"},
		{"processor", func(f *rig, _ engine.Endpoint) *rig { return rigOf(t, scan, nil, f.proc, nil) }, "fakeProc"},
		{"planner", func(f *rig, _ engine.Endpoint) *rig { return rigOf(t, scan, nil, nil, f.fmt) }, "FormatPlanner"},
		{"endpoint", func(f *rig, ep engine.Endpoint) *rig { return rigOf(t, scan, nil, nil, nil, ep) }, "NullEndpoint"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ep := nullEP(t)
			first := newRig(t, 8, scan, ep)
			e1 := first.engine(t)
			require.NoError(t, e1.Prepare())
			e2 := tc.share(first, ep).engine(t)
			err := e2.Prepare()
			require.ErrorIs(t, err, backend.ErrInUse)
			require.ErrorContains(t, err, tc.words)
			require.ErrorContains(t, err, "another engine")
			require.ErrorContains(t, err, "close that engine")

			d := startDrain(e1)
			require.NoError(t, e1.Start())
			require.NoError(t, e1.Wait(), "the refusal left the first engine unharmed")
			d.wait(t)
			require.Equal(t, int64(2), e1.Status().Volumes)
			require.NoError(t, e1.Close())

			e3 := tc.share(first, ep).engine(t)
			require.NoError(t, e3.Prepare(), "closing the first engine released the stage")
			d = startDrain(e3)
			require.NoError(t, e3.Start())
			require.NoError(t, e3.Wait())
			d.wait(t)
			require.Equal(t, int64(2), e3.Status().Volumes, "the rebuilt engine runs")
		})
	}
}

func TestFailedPrepareReleasesTheStages(t *testing.T) {
	scan := raster{AscansPerBscan: 4, BscansPerVolume: 2, Volumes: 1}
	bad := newRig(t, 8, scan, nullEP(t))
	bad.proc.samples = 0 // refused by Prepare after it owned the stages
	eb, err := engine.New(bad.cfg, cpu.Default())
	require.NoError(t, err)
	require.ErrorContains(t, eb.Prepare(), "OutputSamples()=0")
	bad.proc.samples = 8
	r := rigOf(t, scan, bad.acq, bad.proc, bad.fmt)
	require.NoError(t, r.engine(t).Prepare(), "the failed engine, never closed, holds nothing")
}

// failingEndpoint is a NullEndpoint whose Prepare fails while fail is set.
type failingEndpoint struct {
	*endpoint.NullEndpoint
	fail bool
}

func (e *failingEndpoint) Prepare(info engine.EndpointInfo) error {
	if e.fail {
		return errors.New("failingEndpoint: not ready")
	}
	return e.NullEndpoint.Prepare(info)
}

// TestFailedPrepareCanBeTriedAgain: a Prepare that fails at a later
// endpoint, after an earlier one was prepared, leaves the engine new; once
// the cause is gone the same engine's next Prepare runs (the earlier
// endpoint starts over instead of refusing a second Prepare), and so does
// the run.
func TestFailedPrepareCanBeTriedAgain(t *testing.T) {
	scan := raster{AscansPerBscan: 4, BscansPerVolume: 2, Volumes: 2}
	first := nullEP(t)
	late := &failingEndpoint{NullEndpoint: endpoint.NewNullEndpoint(), fail: true}
	closeEndpoint(t, late)
	r := newRig(t, 8, scan, first, late)
	e := r.engine(t)
	err := e.Prepare()
	require.ErrorContains(t, err, "endpoint #1")
	require.ErrorContains(t, err, "not ready")
	require.NotNil(t, first.Stream(), "the first endpoint was prepared before the failure")
	late.fail = false
	require.NoError(t, e.Prepare(), "the same engine, tried again")
	d := startDrain(e)
	require.NoError(t, e.Start())
	require.NoError(t, e.Wait())
	d.wait(t)
	require.Equal(t, int64(2), e.Status().Volumes)
}

func TestOwnIsIdempotentAndClosedEnginesOwnNothing(t *testing.T) {
	scan := raster{AscansPerBscan: 4, BscansPerVolume: 2, Volumes: 1}
	r := newRig(t, 8, scan, nullEP(t))
	e := r.engine(t)
	require.NoError(t, e.Own())
	require.NoError(t, e.Own(), "owning again")
	require.NoError(t, e.Prepare(), "Prepare after Own")
	require.NoError(t, e.Close())
	require.ErrorIs(t, e.Own(), backend.ErrClosed)
}

// TestConcurrentPrepares: engines over one acquisition prepared at once:
// exactly one wins each round, the others are refused, and -race sees the
// owner table guarded.
func TestConcurrentPrepares(t *testing.T) {
	scan := raster{AscansPerBscan: 4, BscansPerVolume: 2, Volumes: 1}
	for range 5 {
		first := newRig(t, 8, scan, nullEP(t))
		engines := []*engine.Engine{first.engine(t)}
		for range 3 {
			r := rigOf(t, scan, first.acq, nil, nil)
			engines = append(engines, r.engine(t))
		}
		errs := make([]error, len(engines))
		var wg sync.WaitGroup
		for i, e := range engines {
			wg.Go(func() { errs[i] = e.Prepare() })
		}
		wg.Wait()
		won := 0
		for _, err := range errs {
			if err == nil {
				won++
			} else {
				require.ErrorIs(t, err, backend.ErrInUse)
			}
		}
		require.Equal(t, 1, won)
	}
}

// TestScanOfARunningEngine: the scan a running engine plays cannot be
// queued in another running engine's queue, nor can its queue be played by
// another engine; both are free once the run ends.
func TestScanOfARunningEngine(t *testing.T) {
	scan := raster{AscansPerBscan: 4, BscansPerVolume: 2}
	r1 := newRig(t, 8, scan, nullEP(t))
	r1.acq.delay = time.Millisecond
	e1, err := engine.New(r1.cfg, cpu.Default())
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, e1.Close()) })
	looping := indexRaster(t, scan, true)
	require.NoError(t, e1.ScanQueue().Append(looping, nil, marker.NewScanBoundary(0, 0, 0)))
	require.NoError(t, e1.Prepare())
	d1 := startDrain(e1)
	require.NoError(t, e1.Start())

	r2 := newRig(t, 8, raster{AscansPerBscan: 4, BscansPerVolume: 2}, nullEP(t))
	r2.acq.delay = time.Millisecond
	e2, err := engine.New(r2.cfg, cpu.Default())
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, e2.Close()) })
	require.NoError(t, e2.ScanQueue().Append(indexRaster(t, scan, true), nil, marker.NewScanBoundary(0, 0, 0)))
	require.NoError(t, e2.Prepare())
	d2 := startDrain(e2)
	require.NoError(t, e2.Start())

	err = e2.ScanQueue().Append(looping, nil, marker.NewScanBoundary(0, 0, 0))
	require.ErrorIs(t, err, backend.ErrInUse)
	require.ErrorContains(t, err, "another running engine")
	err = e2.SetScanQueue(e1.ScanQueue())
	require.ErrorIs(t, err, backend.ErrInUse, "replacing the queue of a running engine")
	require.ErrorContains(t, err, "stop() the engine")

	require.NoError(t, e2.Stop())
	d2.wait(t)
	require.NoError(t, e2.SetScanQueue(e1.ScanQueue()), "between sessions")
	e2.ScanQueue() // read back under the lock
	require.NoError(t, e1.Stop())
	d1.wait(t)
	require.Empty(t, e1.Status().Err)
}

// rigOf is newRig over the given stages (nil: a fresh one; no endpoints:
// a NullEndpoint).
func rigOf(t *testing.T, scan raster, acq *fakeAcq, proc *fakeProc, fmt *format.FormatPlanner, eps ...engine.Endpoint) *rig {
	t.Helper()
	if len(eps) == 0 {
		eps = []engine.Endpoint{nullEP(t)}
	}
	r := newRig(t, 8, scan, eps...)
	if acq == nil {
		acq = r.acq
	}
	if proc == nil {
		proc = r.proc
	}
	if fmt == nil {
		fmt = r.fmt
	}
	r.acq, r.proc, r.fmt = acq, proc, fmt
	r.cfg = engine.Config{RecordsPerBlock: 5, BlocksToAllocate: 4, PreloadCount: 2}
	r.cfg.AddAcquisition(acq, proc)
	r.cfg.AddProcessor(proc, fmt)
	r.cfg.AddFormatter(fmt, eps...)
	return r
}

// nullEP is a NullEndpoint closed when the test ends (after its engines).
func nullEP(t *testing.T) *endpoint.NullEndpoint {
	ep := endpoint.NewNullEndpoint()
	closeEndpoint(t, ep)
	return ep
}
