package engine_test

import (
	"errors"
	"math"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/endpoint"
	"github.com/vortexgo/vortexgo/gosrc/engine"
	"github.com/vortexgo/vortexgo/gosrc/storage"
)

func TestClaim(t *testing.T) {
	tests := []struct {
		name     string
		takes    int
		drops    int
		wantErr  error
		released int
	}{
		{"unclaimed closes", 0, 0, nil, 1},
		{"claimed refuses", 1, 0, backend.ErrInUse, 0},
		{"claimed twice, dropped once, refuses", 2, 1, backend.ErrInUse, 0},
		{"dropped closes", 1, 1, nil, 1},
		{"extra drops are harmless", 1, 3, nil, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var c engine.Claim
			c.Name("TestStage")
			for range tc.takes {
				require.NoError(t, c.Take())
			}
			for range tc.drops {
				c.Drop()
			}
			released := 0
			release := func() error { released++; return nil }
			err := c.Close(release)
			if tc.wantErr != nil {
				require.ErrorIs(t, err, tc.wantErr)
				require.ErrorContains(t, err, "TestStage")
				require.ErrorContains(t, err, "stop the engine first")
				require.True(t, c.InUse())
			} else {
				require.NoError(t, err)
				require.NoError(t, c.Close(release), "closing twice is a no-op")
				require.ErrorIs(t, c.Take(), backend.ErrClosed, "a closed stage cannot be claimed")
				c.Reopen()
				require.NoError(t, c.Take(), "a reopened stage can")
			}
			require.Equal(t, tc.released, released)
			if tc.wantErr != nil {
				require.NoError(t, c.Err("Op"), "a stage refused closing is still open")
			}
		})
	}
}

func TestClaimErr(t *testing.T) {
	var c engine.Claim
	c.Name("TestStage")
	require.NoError(t, c.Err("TestStage.Prepare"), "an open stage")
	require.NoError(t, c.Close(func() error { return nil }))
	err := c.Err("TestStage.Prepare")
	require.ErrorIs(t, err, backend.ErrClosed)
	require.ErrorContains(t, err, "TestStage.Prepare: TestStage is closed")
	c.Reopen()
	require.NoError(t, c.Err("TestStage.Prepare"), "a reopened stage")
}

func TestClaimCloseKeepsAFailedRelease(t *testing.T) {
	var c engine.Claim
	boom := errors.New("boom")
	require.ErrorIs(t, c.Close(func() error { return boom }), boom)
	require.NoError(t, c.Take(), "a failed close leaves the stage open")
}

func TestMulSize(t *testing.T) {
	tests := []struct {
		name    string
		factors []int
		want    int
		ok      bool
	}{
		{"empty", nil, 1, true},
		{"small", []int{2, 3, 4}, 24, true},
		{"zero", []int{0, math.MaxInt}, 0, true},
		{"max", []int{math.MaxInt, 1}, math.MaxInt, true},
		{"overflow", []int{1 << 32, 1 << 32}, 0, false},
		{"overflow past int63", []int{1 << 62, 2}, 0, false},
		{"negative", []int{2, -1}, 0, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n, ok := engine.MulSize(tc.factors...)
			require.Equal(t, tc.ok, ok)
			require.Equal(t, tc.want, n)
		})
	}
}

// failingStore is a VolumeWriter whose writes fail from the failAt-th on
// (a full disk).
type failingStore struct {
	bytes  int
	failAt int64
	writes atomic.Int64
}

var errDiskFull = errors.New("no space left on device")

func (s *failingStore) DType() backend.DType { return backend.Int8 }
func (s *failingStore) VolumeBytes() int     { return s.bytes }
func (s *failingStore) WriteVolume(data []byte) error {
	if s.writes.Add(1) > s.failAt {
		return errDiskFull
	}
	return nil
}

func TestStorageWriteErrorStopsTheEngineAtOnce(t *testing.T) {
	scan := raster{AscansPerBscan: 4, BscansPerVolume: 2} // endless
	store := &failingStore{bytes: 2 * 4 * 8, failAt: 3}
	ep, err := endpoint.NewAscanStackEndpoint(store)
	require.NoError(t, err)
	// Closing flushes, and reports the write error once more.
	t.Cleanup(func() { require.ErrorIs(t, ep.Close(), errDiskFull) })
	r := newRig(t, 8, scan, ep)
	e := r.engine(t)
	require.NoError(t, e.Prepare())
	d := startDrain(e)
	require.NoError(t, e.Start())
	err = waitOr(t, e, 10*time.Second, "the engine kept running after a failed write")
	require.ErrorIs(t, err, errDiskFull)
	evs := d.wait(t)
	require.Equal(t, 1, countEngine(evs, engine.EngineError), "one error event")
	require.Equal(t, 3, ep.Written(), "the volumes stored before the failure")
	st := e.Status()
	require.Contains(t, st.Err, "no space left")
	// A few volumes may be formatted while the stop takes effect, never an
	// unbounded run.
	require.Less(t, st.Volumes, int64(3+2*4+4))
}

func TestClosingStagesOfARunningEngineIsRefused(t *testing.T) {
	scan := raster{AscansPerBscan: 4, BscansPerVolume: 2} // endless
	stack, err := storage.NewSimpleStack(backend.Int8)
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "s.npy")
	require.NoError(t, stack.Open(storage.SimpleStackConfig{Path: path, Shape: [3]int{2, 4, 8}, Header: storage.HeaderNumPy}))
	store, err := endpoint.NewAscanStackEndpoint(stack)
	require.NoError(t, err)
	tensor, err := endpoint.NewStackHostTensorEndpoint(backend.Int8)
	require.NoError(t, err)
	null := endpoint.NewNullEndpoint()
	r := newRig(t, 8, scan, store, tensor, null)
	r.acq.delay = time.Millisecond
	e := r.engine(t)

	stages := []struct {
		name  string
		close func() error
	}{
		{"StackStorageEndpoint", store.Close},
		{"SimpleStack", stack.Close},
		{"StackHostTensorEndpoint", tensor.Close},
		{"NullEndpoint", null.Close},
	}
	require.NoError(t, e.Prepare())
	for _, st := range stages {
		require.ErrorIs(t, st.close(), backend.ErrInUse, "%s after Prepare", st.name)
	}
	d := startDrain(e)
	require.NoError(t, e.Start())
	require.Eventually(t, func() bool { return store.Written() >= 2 }, 10*time.Second, time.Millisecond)
	for _, st := range stages {
		err := st.close()
		require.ErrorIs(t, err, backend.ErrInUse, st.name)
		require.ErrorContains(t, err, "stop the engine first", st.name)
	}
	require.NoError(t, e.Stop())
	d.wait(t)
	require.Empty(t, e.Status().Err, "the refused closes did not disturb the run")
	for _, st := range stages {
		require.NoError(t, st.close(), "%s after the run", st.name)
	}
	shape, _ := readNPY(t, path)
	require.Equal(t, store.Written(), shape[0], "every stored volume is in the file")
}

func TestStopBeforeStartDoesNotPoisonTheRun(t *testing.T) {
	scan := raster{AscansPerBscan: 4, BscansPerVolume: 2, Volumes: 3}
	null := endpoint.NewNullEndpoint()
	closeEndpoint(t, null)
	r := newRig(t, 8, scan, null)
	e := r.engine(t)
	require.NoError(t, e.Stop(), "never prepared")
	require.NoError(t, e.Prepare())
	require.NoError(t, e.Stop(), "prepared, not started")
	e.RequestStop()
	d := startDrain(e)
	require.NoError(t, e.Start())
	require.NoError(t, e.Wait())
	d.wait(t)
	require.Equal(t, int64(3), e.Status().Volumes)
}

func TestBlockPoolIsBoundedBeforeAllocating(t *testing.T) {
	scan := raster{AscansPerBscan: 4, BscansPerVolume: 2, Volumes: 1}
	null := endpoint.NewNullEndpoint()
	closeEndpoint(t, null)
	r := newRig(t, 1<<40, scan, null)
	e := r.engine(t)
	err := e.Prepare()
	require.ErrorIs(t, err, backend.ErrTooLarge)
	require.ErrorContains(t, err, "block pool")
}

func TestRecords(t *testing.T) {
	ev := engine.Event{Kind: engine.EventJob, Endpoint: 2, Sample: 3, ScanIdx: 4, VolumeIdx: 5, BscanIdx: 6, Timestamp: 7,
		Times: [7]int64{8, 9, 10, 11, 12, 13, 14}}
	rec := make([]int64, engine.EventFields)
	ev.Record(rec)
	require.Equal(t, []int64{int64(engine.EventJob), 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14}, rec)

	masks := []struct {
		bits int
		want []engine.EventKind
		ok   bool
	}{
		{0, nil, true},
		{1 | 4, []engine.EventKind{engine.EventUpdate, engine.EventVolume}, true},
		{15, []engine.EventKind{engine.EventUpdate, engine.EventSegment, engine.EventVolume, engine.EventScan}, true},
		{16, nil, false},
		{-1, nil, false},
	}
	for _, m := range masks {
		ks, err := engine.EventMask(m.bits)
		if !m.ok {
			require.ErrorIs(t, err, backend.ErrInvalid, "bits %#x", m.bits)
			continue
		}
		require.NoError(t, err)
		require.Equal(t, m.want, ks)
	}
}
