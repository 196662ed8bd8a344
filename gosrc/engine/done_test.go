package engine_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/cpu"
	"github.com/vortexgo/vortexgo/gosrc/engine"
	"github.com/vortexgo/vortexgo/gosrc/format"
)

// doneRecorder is an endpoint that records the engine's done event itself
// (engine.DoneFormatter), or says it did not (records false), and keeps
// what the engine told it.
type doneRecorder struct {
	records       bool
	blocksPerSlot int
	dones, parts  int
	s             backend.Stream
}

func (r *doneRecorder) Prepare(info engine.EndpointInfo) (err error) {
	r.blocksPerSlot = info.BlocksPerSlot
	r.s, err = info.Device.NewStream(0)
	return err
}
func (r *doneRecorder) Stream() backend.Stream { return r.s }
func (r *doneRecorder) Format(*engine.BlockData, *engine.FormatPlan) error {
	return fmt.Errorf("doneRecorder: Format called, expected FormatDone")
}
func (r *doneRecorder) FormatDone(_ *engine.BlockData, _ *engine.FormatPlan, done backend.Event) (bool, error) {
	r.parts++
	if done == nil {
		return false, nil
	}
	r.dones++
	if !r.records {
		return false, nil
	}
	return true, r.s.Record(done)
}
func (r *doneRecorder) Flush() error { return nil }
func (r *doneRecorder) Close() error { return r.s.Close() }

// TestDoneFormatter: an endpoint that records the done event itself gets
// it with each block's last part (one per block formatted) through
// FormatDone, in place of Format, whether it records it or leaves it to
// the engine; and it learns how many blocks each slot cycles
// (EndpointInfo.BlocksPerSlot).
func TestDoneFormatter(t *testing.T) {
	t.Setenv(engine.DeviceBlocksEnv, "") // the pool as allocated: this test asserts its size
	for _, tc := range []struct {
		blocks, slots, perSlot int
		records                bool
	}{
		{4, 2, 2, true},
		{4, 2, 2, false},
		{12, 3, 4, true},
		{5, 1, 5, true},
	} {
		t.Run(fmt.Sprintf("%d blocks/%d slots/records=%v", tc.blocks, tc.slots, tc.records), func(t *testing.T) {
			const samples = 4
			planner, err := format.NewFormatPlanner(format.DefaultFormatPlannerConfig(3, 4))
			require.NoError(t, err)
			acq, proc := newFakeAcq(samples), newFakeProc(samples)
			cfg := engine.Config{RecordsPerBlock: 2, BlocksToAllocate: tc.blocks, PreloadCount: tc.blocks / 2, Slots: tc.slots}
			cfg.AddAcquisition(acq, proc)
			cfg.AddProcessor(proc, planner)
			rec := &doneRecorder{records: tc.records}
			cfg.AddFormatter(planner, rec)
			e, err := engine.New(cfg, cpu.Default())
			require.NoError(t, err)
			t.Cleanup(func() {
				require.NoError(t, e.Close())
				require.NoError(t, rec.Close())
			})
			queueRaster(t, e, raster{AscansPerBscan: 4, BscansPerVolume: 3, Volumes: 2})
			require.NoError(t, e.Prepare())
			require.Equal(t, tc.perSlot, rec.blocksPerSlot)
			require.NoError(t, e.Start())
			require.NoError(t, e.Wait())
			st := e.Status()
			require.Positive(t, st.BlocksFormatted)
			require.Equal(t, int(st.BlocksFormatted), rec.dones, "one done event a block formatted")
			require.GreaterOrEqual(t, rec.parts, rec.dones)
		})
	}
}
