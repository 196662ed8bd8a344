package cuda_test

import (
	"errors"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/cuda"
	"github.com/vortexgo/vortexgo/gosrc/internal/dl"
	"github.com/vortexgo/vortexgo/gosrc/internal/invariants"
)

// testFastPath drives the shim's C fast path (fastpath.h) against the fake
// driver; it runs inside TestFakeDriverChild, after cuda.Init.
func testFastPath(t *testing.T, d *cuda.Device, lib *dl.Library) {
	busy := fakeSym[int32](t, lib, "fake_stream_busy")
	hold := fakeSym[int32](t, lib, "fake_sync_hold")
	inSync := fakeSym[int32](t, lib, "fake_in_sync")
	destroyedInUse := fakeSym[int32](t, lib, "fake_destroyed_in_use")

	s, err := d.CreateStream(0)
	require.NoError(t, err)
	ev, err := d.CreateEvent(false)
	require.NoError(t, err)
	sid, eid := s.FastID(), ev.FastID()
	require.Positive(t, sid)
	require.Positive(t, eid)

	t.Run("calls reach the driver", func(t *testing.T) {
		require.Zero(t, cuda.FastEventRecord(sid, eid))
		require.Zero(t, cuda.FastStreamWait(sid, eid))
		*busy = 1
		assert.Zero(t, cuda.FastEventQuery(eid), "NOT_READY is 0")
		assert.Zero(t, cuda.FastStreamQuery(sid))
		require.Zero(t, cuda.FastStreamSync(sid))
		assert.Equal(t, 1, cuda.FastEventQuery(eid))
		assert.Equal(t, 1, cuda.FastStreamQuery(sid))
		assert.Zero(t, cuda.FastEventSync(eid))
	})

	t.Run("a fresh thread gets the context made current", func(t *testing.T) {
		done := make(chan int)
		go func() {
			runtime.LockOSThread() // a new thread: no context, no cache
			done <- cuda.FastEventRecord(sid, eid)
		}()
		require.Zero(t, <-done)
	})

	t.Run("ids that name nothing answer -1", func(t *testing.T) {
		other := sid&0xffffffff | (sid>>32+1)<<32 // same slot, next generation
		for name, got := range map[string]int{
			"zero":            cuda.FastStreamSync(0),
			"negative":        cuda.FastStreamSync(-sid),
			"slot past table": cuda.FastStreamSync(1<<32 | 70000),
			"wrong gen":       cuda.FastStreamSync(other),
			"event as stream": cuda.FastStreamSync(eid),
			"stream as event": cuda.FastEventQuery(sid),
			"record swapped":  cuda.FastEventRecord(eid, sid),
		} {
			assert.Equal(t, -1, got, name)
		}
	})

	t.Run("close waits for a fast call in flight", func(t *testing.T) {
		s2, err := d.CreateStream(0)
		require.NoError(t, err)
		id := s2.FastID()
		atomic.StoreInt32(hold, 1)
		defer atomic.StoreInt32(hold, 0) // a failure below must not leave later syncs blocked
		synced := make(chan int)
		go func() { synced <- cuda.FastStreamSync(id) }()
		require.Eventually(t, func() bool { return atomic.LoadInt32(inSync) == 1 }, 5*time.Second, time.Millisecond)
		closed := make(chan error)
		go func() { closed <- s2.Close() }()
		select {
		case err := <-closed:
			t.Fatalf("Close returned (%v) while a fast call used the stream", err)
		case <-time.After(30 * time.Millisecond):
		}
		atomic.StoreInt32(hold, 0)
		require.Zero(t, <-synced)
		require.NoError(t, <-closed)
		assert.Zero(t, atomic.LoadInt32(destroyedInUse), "stream destroyed under a call")
		assert.Equal(t, -1, cuda.FastStreamSync(id), "a closed stream's id names nothing")
	})

	t.Run("close waits for a Go call in flight", func(t *testing.T) {
		invariants.AllowMisuse(t) // checks the ErrClosed a user sees after a racing Close
		s2, err := d.CreateStream(0)
		require.NoError(t, err)
		atomic.StoreInt32(hold, 1)
		defer atomic.StoreInt32(hold, 0)
		synced := make(chan error)
		go func() { synced <- s2.Synchronize() }()
		require.Eventually(t, func() bool { return atomic.LoadInt32(inSync) == 1 }, 5*time.Second, time.Millisecond)
		closed := make(chan error)
		go func() { closed <- s2.Close() }()
		select {
		case err := <-closed:
			t.Fatalf("Close returned (%v) while Synchronize used the stream", err)
		case <-time.After(30 * time.Millisecond):
		}
		atomic.StoreInt32(hold, 0)
		require.NoError(t, <-synced)
		require.NoError(t, <-closed)
		assert.Zero(t, atomic.LoadInt32(destroyedInUse))
		require.ErrorIs(t, s2.Synchronize(), backend.ErrClosed)
	})

	t.Run("racing close and calls never reach a destroyed handle", func(t *testing.T) {
		invariants.AllowMisuse(t) // calls racing Close are user misuse: ErrClosed, never a panic
		for i := 0; i < 50; i++ {
			s2, err := d.CreateStream(0)
			require.NoError(t, err)
			e2, err := d.CreateEvent(false)
			require.NoError(t, err)
			ids := [2]int64{s2.FastID(), e2.FastID()}
			errs := make(chan error, 8)
			for w := 0; w < 8; w++ {
				go func(w int) {
					var err error
					for k := 0; k < 20; k++ {
						switch (w + k) % 4 {
						case 0:
							cuda.FastEventRecord(ids[0], ids[1])
						case 1:
							cuda.FastStreamSync(ids[0])
						case 2:
							if e := s2.Record(e2); e != nil && err == nil && !isClosed(e) {
								err = e
							}
						case 3:
							if e := s2.Close(); e != nil && err == nil && !isClosed(e) {
								err = e
							}
						}
					}
					errs <- err
				}(w)
			}
			for w := 0; w < 8; w++ {
				require.NoError(t, <-errs)
			}
			require.NoError(t, e2.Close())
			require.Equal(t, -1, cuda.FastEventRecord(ids[0], ids[1]))
		}
		assert.Zero(t, atomic.LoadInt32(destroyedInUse))
	})

	require.NoError(t, ev.Close())
	require.NoError(t, s.Close())
	assert.Equal(t, -1, cuda.FastEventQuery(eid), "a closed event's id names nothing")
	assert.Equal(t, -1, cuda.FastEventRecord(sid, eid))
}

func isClosed(err error) bool { return errors.Is(err, backend.ErrClosed) }
