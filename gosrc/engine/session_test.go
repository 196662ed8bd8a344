package engine_test

import (
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/endpoint"
	"github.com/vortexgo/vortexgo/gosrc/engine"
)

// lifecycle returns the lifecycle events among evs, in order.
func lifecycle(evs []engine.Event) []engine.EngineEvent {
	var out []engine.EngineEvent
	for _, ev := range evs {
		if ev.Kind == engine.EventEngine {
			out = append(out, engine.EngineEvent(ev.ScanIdx))
		}
	}
	return out
}

var (
	completed = []engine.EngineEvent{engine.EngineLaunch, engine.EngineRun, engine.EngineStart,
		engine.EngineComplete, engine.EngineStop, engine.EngineExit}
	shutdown = []engine.EngineEvent{engine.EngineLaunch, engine.EngineRun, engine.EngineStart,
		engine.EngineShutdown, engine.EngineComplete, engine.EngineStop, engine.EngineExit}
)

// TestSessions: one Prepare, then sessions that each run to the end of
// the queued scan or are stopped, with vortex's lifecycle events in
// vortex's order and the counters of each session starting from zero.
func TestSessions(t *testing.T) {
	scan := raster{AscansPerBscan: 5, BscansPerVolume: 2, Volumes: 2}
	tests := []struct {
		name   string
		stop   bool // stop as soon as the first volume arrived
		events []engine.EngineEvent
	}{
		{"to the end of the scan", false, completed},
		{"stopped mid-run", true, shutdown},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ep, err := endpoint.NewStackDeviceTensorEndpoint(backend.Uint16)
			require.NoError(t, err)
			closeEndpoint(t, ep)
			r := newRig(t, 4, scan, ep)
			if tc.stop {
				r.scan.Volumes = 0 // endless: only the stop ends it
			}
			e := r.engine(t)
			st := e.Status()
			require.False(t, st.Prepared || st.Started || st.Active || st.Closed, "a new engine")
			require.NoError(t, e.Prepare())
			require.NoError(t, e.Stop(), "a stop before any session is a no-op")
			st = e.Status()
			require.True(t, st.Prepared)
			require.False(t, st.Started || st.Active)
			for session := range 3 {
				if session > 0 {
					// As in vortex, a session stopped mid-scan leaves the
					// scan active, and the next start refuses to rebase
					// the queue until it is reset.
					if tc.stop {
						require.ErrorContains(t, e.Start(), "scan_queue.reset()")
						e.ScanQueue().Reset()
					}
					// vortex's planner keeps its state across sessions
					// (finish reports, it does not reset): its users
					// reset it before starting again, as here.
					r.fmt.Reset()
					r.queue(t, e) // the previous session played the queue out
				}
				d := startDrainAfter(e)
				require.NoError(t, e.Start(), "session %d", session)
				if tc.stop {
					waitVolumes(t, e, 1)
					require.NoError(t, e.Stop())
				} else {
					require.NoError(t, e.Wait())
				}
				evs := d.wait(t)
				require.Equal(t, tc.events, lifecycle(evs), "session %d", session)
				st := e.Status()
				require.False(t, st.Running)
				require.True(t, st.Done)
				require.Empty(t, st.Err)
				if !tc.stop {
					// 4 blocks of the scan and the one past it in which
					// the queue runs dry.
					require.Equal(t, int64(5), st.BlocksFormatted, "session %d: its own blocks only", session)
					require.Equal(t, int64(2), st.Volumes, "session %d", session)
					require.Equal(t, 2, count(evs, engine.EventVolume, 0))
				}
				require.Equal(t, st.BlocksAcquired, st.BlocksFormatted+st.BlocksDropped)
				require.True(t, st.Started && st.Prepared)
				require.Equal(t, !tc.stop, st.Active, "a session exists until Stop")
				require.NoError(t, e.Stop())
				require.False(t, e.Status().Active)
			}
			require.NoError(t, e.Close())
			st = e.Status()
			require.True(t, st.Closed)
			require.False(t, st.Prepared || st.Active)
			require.Zero(t, st.InFlight, "a closed engine has no blocks")
		})
	}
}

// startDrainAfter drains the events of the session about to start: it
// waits for Start to make the session before reading.
func startDrainAfter(e *engine.Engine) *drain {
	before := e.StartMonotonicNs()
	return drainFrom(e, func() bool { return e.StartMonotonicNs() != before })
}

func waitVolumes(t *testing.T, e *engine.Engine, n int64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for e.Status().Volumes < n {
		require.True(t, time.Now().Before(deadline), "no volume within 10 s")
		time.Sleep(time.Millisecond)
	}
}

// TestSessionErrorDoesNotPoisonTheNext: a session that fails reports its
// error (Wait, Stop, Status, an EngineError then EngineShutdown), and the
// next session runs clean.
func TestSessionErrorDoesNotPoisonTheNext(t *testing.T) {
	ep := endpoint.NewNullEndpoint()
	closeEndpoint(t, ep)
	r := newRig(t, 4, raster{AscansPerBscan: 5, BscansPerVolume: 2, Volumes: 0}, ep)
	r.acq.failAt = 30
	e := r.engine(t)
	require.NoError(t, e.Prepare())
	d := startDrainAfter(e)
	require.NoError(t, e.Start())
	require.ErrorIs(t, e.Wait(), errFakeAcq)
	require.True(t, e.Status().Active, "a session ended by its error exists until Stop")
	require.ErrorIs(t, e.TakeErr(), errFakeAcq)
	require.NoError(t, e.TakeErr(), "the session's error is taken once")
	require.ErrorIs(t, e.Stop(), errFakeAcq, "stop returns the session's error")
	require.False(t, e.Status().Active)
	evs := d.wait(t)
	require.Equal(t, []engine.EngineEvent{engine.EngineLaunch, engine.EngineRun, engine.EngineStart, engine.EngineError,
		engine.EngineShutdown, engine.EngineComplete, engine.EngineStop, engine.EngineExit}, lifecycle(evs))

	r.acq.failAt = 0
	r.acq.records = r.acq.sent + 20 // four more blocks, then the end of data
	e.ScanQueue().Reset()
	r.fmt.Reset()
	r.queue(t, e)
	d = startDrainAfter(e)
	require.NoError(t, e.Start())
	require.NoError(t, e.Wait())
	evs = d.wait(t)
	st := e.Status()
	require.Empty(t, st.Err)
	require.Nil(t, e.Err())
	require.Equal(t, int64(4), st.BlocksFormatted)
	// The acquisition's end of data ends the session early, as a stop.
	require.Equal(t, shutdown, lifecycle(evs))
}

// TestShutdownInterrupt: shutdown(interrupt=true) drops the blocks
// acquired but not processed, stores every completed volume, and the
// session ends without EngineComplete (vortex: dispatch was cut short).
func TestShutdownInterrupt(t *testing.T) {
	scan := raster{AscansPerBscan: 4, BscansPerVolume: 2}     // endless
	store := &failingStore{bytes: 2 * 4 * 4, failAt: 1 << 60} // never fails
	ep, err := endpoint.NewAscanStackEndpoint(store)
	require.NoError(t, err)
	closeEndpoint(t, ep)
	r := newRig(t, 4, scan, ep)
	r.cfg.RecordsPerBlock = 3 // volumes of 8 records end mid-block
	e := r.engine(t)
	require.NoError(t, e.Prepare())
	d := startDrainAfter(e)
	require.NoError(t, e.Start())
	waitVolumes(t, e, 3)
	e.Shutdown(true)
	require.NoError(t, e.Wait())
	evs := d.wait(t)
	got := lifecycle(evs)
	require.NotContains(t, got, engine.EngineComplete)
	require.Equal(t, engine.EngineShutdown, got[3])
	require.Equal(t, []engine.EngineEvent{engine.EngineStop, engine.EngineExit}, got[len(got)-2:])
	st := e.Status()
	require.Equal(t, st.BlocksAcquired, st.BlocksFormatted+st.BlocksDropped)
	require.GreaterOrEqual(t, ep.Written(), 3, "every completed volume is stored")
	// Events after a stop are best-effort (a full queue drops them), so
	// the store is checked instead: every write was one whole volume.
	require.Equal(t, int64(ep.Written()), store.writes.Load(), "every stored volume written whole, once")
	require.Positive(t, count(evs, engine.EventVolume, 0))
}

// TestClosedStageBetweenSessions: stages are released between sessions
// (they may be closed); the next Start then refuses with ErrClosed.
func TestClosedStageBetweenSessions(t *testing.T) {
	ep := endpoint.NewNullEndpoint()
	r := newRig(t, 4, raster{AscansPerBscan: 5, BscansPerVolume: 2, Volumes: 1}, ep)
	e := r.engine(t)
	require.NoError(t, e.Prepare())
	require.ErrorIs(t, ep.Close(), backend.ErrInUse, "claimed from Prepare")
	require.NoError(t, e.Start())
	require.NoError(t, e.Wait())
	require.NoError(t, ep.Close(), "released when the session ended")
	r.queue(t, e)
	require.ErrorIs(t, e.Start(), backend.ErrClosed)
	require.False(t, e.Status().Running)
}

// TestJobEvents: with SetJobEvents, one EventJob per formatted block, its
// stage times in order (vortex's JobTiming fields) and the session status.
func TestJobEvents(t *testing.T) {
	t.Setenv(engine.DeviceBlocksEnv, "") // the pool as allocated: this test asserts its size
	ep := endpoint.NewNullEndpoint()
	closeEndpoint(t, ep)
	r := newRig(t, 4, raster{AscansPerBscan: 5, BscansPerVolume: 2, Volumes: 3}, ep)
	e := r.engine(t)
	require.NoError(t, e.Prepare())
	e.SetJobEvents(true)
	d := startDrainAfter(e)
	require.NoError(t, e.Start())
	require.NoError(t, e.Wait())
	evs := d.wait(t)
	var ids []int64
	for _, ev := range evs {
		if ev.Kind != engine.EventJob {
			continue
		}
		ids = append(ids, ev.ScanIdx)
		for m := 1; m < len(ev.Times); m++ {
			require.LessOrEqual(t, ev.Times[m-1], ev.Times[m], "job %d: stage %d before %d", ev.ScanIdx, m-1, m)
		}
		require.Positive(t, ev.Times[len(ev.Times)-1])
		require.GreaterOrEqual(t, ev.VolumeIdx, ev.ScanIdx+1, "dispatched includes the job itself")
		require.GreaterOrEqual(t, ev.Sample, int64(0))
		require.LessOrEqual(t, ev.Sample, int64(r.cfg.BlocksToAllocate))
	}
	// 6 blocks of the scan and the one past it in which the queue runs dry.
	require.Equal(t, []int64{0, 1, 2, 3, 4, 5, 6}, ids)
	require.Equal(t, int64(7), e.Status().Dispatched)
}

// TestProfilerLog: vortex's profiler format, read back: the version
// record, then the lifecycle events and every block's job marks in order.
func TestProfilerLog(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "profile.bin")
	ep := endpoint.NewNullEndpoint()
	closeEndpoint(t, ep)
	r := newRig(t, 4, raster{AscansPerBscan: 5, BscansPerVolume: 2, Volumes: 2}, ep)
	e := r.engine(t)
	require.NoError(t, e.Prepare())
	e.SetProfilerLog(path)
	require.NoError(t, e.Start())
	require.NoError(t, e.Wait())
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Zero(t, len(raw)%32)
	type rec struct{ code, index, job, ts uint64 }
	var recs []rec
	for i := 0; i < len(raw); i += 32 {
		u := func(o int) uint64 { return binary.LittleEndian.Uint64(raw[i+o:]) }
		recs = append(recs, rec{u(0), u(8), u(16), u(24)})
	}
	require.Equal(t, ^uint64(0), recs[0].code, "the version record first")
	var life []engine.EngineEvent
	marks := map[uint64][]uint64{} // job -> job mark codes in order
	last := map[uint64]uint64{}
	for _, r := range recs[1:] {
		switch {
		case r.code < 0x100:
			life = append(life, engine.EngineEvent(r.code))
		case r.code < 0x10000:
			marks[r.job] = append(marks[r.job], r.code)
			require.GreaterOrEqual(t, r.ts, last[r.job], "job %d's marks in time order", r.job)
			last[r.job] = r.ts
		}
	}
	require.Equal(t, completed, life)
	require.Len(t, marks, 5) // 4 blocks of the scan and the one past it
	for job, m := range marks {
		require.Equal(t, []uint64{engine.ProfJobCreate, engine.ProfJobClearance, engine.ProfJobGenerateScan,
			engine.ProfJobGenerateStrobe, engine.ProfJobAcquireDispatchBegin, engine.ProfJobAcquireDispatchEnd,
			engine.ProfJobAcquireJoin, engine.ProfJobProcessDispatchBegin, engine.ProfJobProcessDispatchEnd,
			engine.ProfJobFormatJoin, engine.ProfJobRecycle}, m, "job %d", job)
	}
	require.Zero(t, e.Status().ProfilerDropped)
}

// TestFailedStartReleasesAndReclaims: a Start that fails (here the
// profiler log cannot be created) releases the stages like the end of a
// session; one closed before the next Start is refused by that Start,
// never used after its close.
func TestFailedStartReleasesAndReclaims(t *testing.T) {
	ep := endpoint.NewNullEndpoint()
	r := newRig(t, 4, raster{AscansPerBscan: 5, BscansPerVolume: 2, Volumes: 1}, ep)
	e := r.engine(t)
	require.NoError(t, e.Prepare())
	file := filepath.Join(t.TempDir(), "a-file")
	require.NoError(t, os.WriteFile(file, nil, 0o644))
	e.SetProfilerLog(filepath.Join(file, "profile.bin"))
	require.ErrorContains(t, e.Start(), "profiler log")
	require.False(t, e.Status().Running)
	require.NoError(t, ep.Close(), "released by the failed Start")
	e.SetProfilerLog("")
	require.ErrorIs(t, e.Start(), backend.ErrClosed, "the next Start claims again and refuses the closed endpoint")
}

func TestSpinSeconds(t *testing.T) {
	for _, tc := range []struct {
		s    float64
		want time.Duration
		ok   bool
	}{
		{0, engine.NoSpin, true},
		{1e-10, engine.NoSpin, true}, // rounds to no spin
		{50e-6, 50 * time.Microsecond, true},
		{1, time.Second, true},
		{1.000001, 0, false},
		{-1e-9, 0, false},
		{1.797693134862316e+299, 0, false},
		{math.Inf(1), 0, false},
		{math.NaN(), 0, false},
	} {
		d, err := engine.SpinSeconds(tc.s)
		if !tc.ok {
			require.ErrorIs(t, err, backend.ErrInvalid, "%g", tc.s)
			require.ErrorContains(t, err, "EngineConfig.dispatch_spin=")
			continue
		}
		require.NoError(t, err, "%g", tc.s)
		require.Equal(t, tc.want, d, "%g", tc.s)
	}
}
