package pyapi

import (
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vortexgo/vortexgo/gosrc/engine"
	"github.com/vortexgo/vortexgo/gosrc/handle"
	"github.com/vortexgo/vortexgo/gosrc/internal/invariants"
	"github.com/vortexgo/vortexgo/gosrc/internal/testmem"
	"github.com/vortexgo/vortexgo/gosrc/memory"
)

func TestFastPathOnCPU(t *testing.T) {
	dev, err := GetDevice("cpu")
	require.NoError(t, err)
	s, err := dev.NewStream(0)
	require.NoError(t, err)
	e, err := dev.NewEvent(true)
	require.NoError(t, err)
	require.Positive(t, s.ID())
	require.Zero(t, FastRecord(s.ID(), e.ID()))
	require.Equal(t, 1, FastQueryEvent(e.ID()))
	require.Equal(t, 1, FastQueryStream(s.ID()))
	require.Zero(t, FastSyncStream(s.ID()))
	require.Zero(t, FastSyncEvent(e.ID()))
	require.Zero(t, FastWaitEvent(s.ID(), e.ID()))
	buf, err := dev.Alloc(64, false)
	require.NoError(t, err)
	defer func() { require.NoError(t, buf.Free()) }()
	f32 := DTypeCode("float32")
	require.Zero(t, FastArrayOp(int(memory.OpFill), s.ID(), buf.ID(), buf.Ptr(), 0, 0, 16, f32, f32, 2, 0))
	require.Zero(t, FastArrayOp(int(memory.OpScaleOffset), s.ID(), buf.ID(), buf.Ptr(), buf.ID(), buf.Ptr(), 16, f32, f32, 2, 1))
	require.Equal(t, -1, DTypeCode("float16"))
	require.Equal(t, -1, FastArrayOp(int(memory.OpFill), s.ID(), buf.ID(), buf.Ptr(), 0, 0, 16, 99, 99, 0, 0), "bad dtype code")
	// Unregistered (0) and closed ids fail, so Python takes the method path.
	require.Equal(t, -1, FastRecord(0, e.ID()))
	sid := s.ID()
	require.NoError(t, s.Close())
	require.Equal(t, -1, FastRecord(sid, e.ID()))
	require.Equal(t, -1, FastSyncStream(sid))
	eid := e.ID()
	require.NoError(t, e.Close())
	require.Equal(t, -1, FastQueryEvent(eid))
	// A closed id never names the next object, even when its slot is reused.
	s2, err := dev.NewStream(0)
	require.NoError(t, err)
	require.NotEqual(t, sid, s2.ID())
	require.Equal(t, -1, FastSyncStream(sid))
	require.Zero(t, FastSyncStream(s2.ID()))
	require.NoError(t, s2.Close())
	_, err = s2.Handle()
	require.ErrorContains(t, err, "ClosedError: ")
}

// TestResizeWhileHoldingIsLockError: memory.ErrLockHeld crosses to Python
// as a LockError.
func TestResizeWhileHoldingIsLockError(t *testing.T) {
	dev, err := GetDevice("cpu")
	require.NoError(t, err)
	tn, err := NewTensor(dev, "4", "int8", false)
	require.NoError(t, err)
	defer func() { require.NoError(t, tn.Close()) }()
	require.NoError(t, tn.Lock(7, true, -1))
	err = tn.Resize(7, "8", "int8")
	require.ErrorContains(t, err, "LockError: ")
	require.ErrorContains(t, err, "would deadlock")
	require.NoError(t, tn.Unlock(7, true))
	require.NoError(t, tn.Resize(7, "8", "int8"))
	require.Contains(t, tn.Info(), `"shape":[8]`)
}

// TestClosedObjectsRaise: every method of a closed stream, event or graph
// fails with a ClosedError, and their ids name nothing on either path.
func TestClosedObjectsRaise(t *testing.T) {
	dev, err := GetDevice("cpu")
	require.NoError(t, err)
	s, err := dev.NewStream(0)
	require.NoError(t, err)
	e, err := dev.NewEvent(true)
	require.NoError(t, err)
	require.Nil(t, native(s.s), "CPU streams are not published for the C fast path")
	require.Nil(t, native(e.e))
	require.Equal(t, -1, FastQueryStream(e.ID()), "an event's id is no stream")
	require.Equal(t, -1, FastQueryEvent(s.ID()), "a stream's id is no event")

	buf, err := dev.Alloc(8, false)
	require.NoError(t, err)
	defer func() { require.NoError(t, buf.Free()) }()
	require.NoError(t, s.BeginCapture())
	require.NoError(t, ArrayOp(int(memory.OpMemset), s.ID(), buf.ID(), buf.Ptr(), 0, 0, 8, 0, 0, 0, 0))
	g, err := s.EndCapture()
	require.NoError(t, err)
	n, err := g.Nodes()
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.NoError(t, g.Launch(s))
	require.NoError(t, g.Close())

	live, err := dev.NewStream(0)
	require.NoError(t, err)
	defer func() { require.NoError(t, live.Close()) }()
	require.NoError(t, s.Close())
	require.NoError(t, e.Close())
	op := func(code, sid, eid int) error { _, err := StreamOp(code, sid, eid); return err }
	calls := map[string]error{
		"graph.Launch": g.Launch(live),
		"graph.Close":  g.Close(),
		"stream.Close": s.Close(),
		"stream.Sync":  op(opSyncStream, s.ID(), 0),
		"stream.Rec":   op(opRecord, live.ID(), e.ID()),
		"stream.Wait":  op(opWaitEvent, s.ID(), e.ID()),
		"stream.Query": op(opQueryStream, s.ID(), 0),
		"stream.Copy":  ArrayOp(int(memory.OpCopy), s.ID(), 0, 0, 0, 0, 0, 0, 0, 0, 0),
		"event.Sync":   op(opSyncEvent, 0, e.ID()),
		"event.Query":  op(opQueryEvent, 0, e.ID()),
		"event.Close":  e.Close(),
		"unknown op":   op(99, live.ID(), 0),
	}
	_, calls["graph.Nodes"] = g.Nodes()
	_, calls["stream.Handle"] = s.Handle()
	_, calls["event.Handle"] = e.Handle()
	_, calls["event.Elapsed"] = e.ElapsedTime(e)
	require.ErrorContains(t, calls["unknown op"], "ValueError: op=99", "a live stream, a bad code")
	delete(calls, "unknown op")
	for name, err := range calls {
		require.ErrorContains(t, err, "ClosedError: ", name)
	}
}

// TestCloseRacesCalls: goroutines calling a stream and an event while
// others close them get results or ClosedErrors, never a crash, and
// exactly one Close of each succeeds (run with -race).
func TestCloseRacesCalls(t *testing.T) {
	// Python threads racing close() against calls is user misuse that must
	// come back as ClosedError, not an invariant panic of our own code.
	invariants.AllowMisuse(t)
	dev, err := GetDevice("cpu")
	require.NoError(t, err)
	for iter := 0; iter < 50; iter++ {
		s, err := dev.NewStream(0)
		require.NoError(t, err)
		e, err := dev.NewEvent(false)
		require.NoError(t, err)
		sid, eid := s.ID(), e.ID()
		type result struct {
			closes int
			err    error
		}
		out := make(chan result, 8)
		for w := 0; w < 8; w++ {
			go func(w int) {
				var r result
				keep := func(err error) {
					if err != nil && r.err == nil && !strings.HasPrefix(err.Error(), "ClosedError: ") {
						r.err = err
					}
				}
				for k := 0; k < 20; k++ {
					switch (w + k) % 6 {
					case 0:
						_, err := StreamOp(opRecord, sid, eid)
						keep(err)
					case 1:
						_, err := StreamOp(opSyncStream, sid, 0)
						keep(err)
					case 2:
						FastRecord(sid, eid)
						FastSyncEvent(eid)
					case 3:
						_, err := StreamOp(opQueryEvent, 0, eid)
						keep(err)
					case 4:
						if err := s.Close(); err == nil {
							r.closes++
						} else {
							keep(err)
						}
					case 5:
						if err := e.Close(); err == nil {
							r.closes++
						} else {
							keep(err)
						}
					}
				}
				out <- r
			}(w)
		}
		closes := 0
		for w := 0; w < 8; w++ {
			r := <-out
			require.NoError(t, r.err)
			closes += r.closes
		}
		require.Equal(t, 2, closes, "one Close of the stream and one of the event succeed")
		require.False(t, handles.Live(handle.ID(sid)))
		require.False(t, handles.Live(handle.ID(eid)))
	}
}

// TestFastNextEvents: the dispatcher's fast call names the engine by its
// registry id; a closed or unknown id is a ClosedError (never a crash),
// a bad buffer a ValueError, and NextEvents still reads a closed engine's
// queue (the dispatcher drains the last session through it).
func TestFastNextEvents(t *testing.T) {
	dev, err := GetDevice("cpu")
	require.NoError(t, err)
	cfg, err := NewEngineConfig("{}", 0, false)
	require.NoError(t, err)
	e, err := NewEngine(dev, cfg)
	require.NoError(t, err)
	id := e.ID()
	require.Positive(t, id)
	buf, addr := testmem.Slice[int64](t, 4*engine.EventFields)
	ptr := int(addr)
	n, err := FastNextEvents(id, ptr, 4, 0, 1)
	require.NoError(t, err, "a live engine before Start: no events")
	require.Zero(t, n)
	_, err = FastNextEvents(id, ptr, 0, 0, 1)
	require.ErrorContains(t, err, "ValueError: ")
	_, err = FastNextEvents(id, 0, 4, 0, 1)
	require.ErrorContains(t, err, "ValueError: ")
	for _, bad := range []int{0, -1, id + 1<<40} {
		_, err = FastNextEvents(bad, ptr, 4, 0, 1)
		require.ErrorContains(t, err, "ClosedError: ", "id %d", bad)
	}
	require.NoError(t, e.Close())
	_, err = FastNextEvents(id, ptr, 4, 0, 1)
	require.ErrorContains(t, err, "ClosedError: ")
	n, err = e.NextEvents(ptr, 4, 0)
	require.NoError(t, err)
	require.Zero(t, n)
	runtime.KeepAlive(buf)
}
