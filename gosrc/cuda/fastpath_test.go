package cuda_test

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/cuda"
	"github.com/vortexgo/vortexgo/gosrc/handle"
	"github.com/vortexgo/vortexgo/gosrc/internal/fakecudatest"
	"github.com/vortexgo/vortexgo/gosrc/internal/invariants"
)

// fastReg is the registry whose table the fast path reads in these tests,
// as pyapi's handles is in the extension (cuda.FastAPI hands it over).
var fastReg handle.Registry

// publish registers a stream or event in fastReg's C-visible table as
// pyapi does, and returns its id for the fast functions.
func publish(t *testing.T, obj handle.Native) int64 {
	id := int64(fastReg.RegisterNative(obj, obj))
	require.Positive(t, id)
	return id
}

// closeFast closes a published object as pyapi does: the id goes first
// (waiting for fast calls in flight), then the native object, by the one
// caller that released the id (a second gets the registry's ErrStale).
func closeFast(id int64, c interface{ Close() error }) error {
	if err := fastReg.Close("test object", handle.ID(id)); err != nil {
		return err
	}
	return c.Close()
}

// testFastPath drives the shim's C fast path (fastpath.h) against the fake
// driver, reading a handle.Registry's table; it runs inside
// TestFakeDriverChild, after cuda.Init.
func testFastPath(t *testing.T, d *cuda.Device) {
	busy := fakecudatest.Sym[int32](t, cuda.DriverPathEnv, "fake_stream_busy")
	hold := fakecudatest.Sym[int32](t, cuda.DriverPathEnv, "fake_sync_hold")
	inSync := fakecudatest.Sym[int32](t, cuda.DriverPathEnv, "fake_in_sync")
	destroyedInUse := fakecudatest.Sym[int32](t, cuda.DriverPathEnv, "fake_destroyed_in_use")

	require.Equal(t, -1, cuda.FastStreamSync(1<<32|1), "no table yet: nothing is named")
	require.NotZero(t, cuda.FastAPI(fastReg.Table()))

	s, err := d.CreateStream(0)
	require.NoError(t, err)
	ev, err := d.CreateEvent(false)
	require.NoError(t, err)
	sid, eid := publish(t, s), publish(t, ev)
	plain, err := d.CreateStream(0)
	require.NoError(t, err)
	plainID := int64(fastReg.Register(plain)) // registered, not published: Go's paths only

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
			"slot past table": cuda.FastStreamSync(1<<32 | (handle.TableSlots + 1)),
			"not published":   cuda.FastStreamSync(plainID),
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
		id := publish(t, s2)
		atomic.StoreInt32(hold, 1)
		defer atomic.StoreInt32(hold, 0) // a failure below must not leave later syncs blocked
		synced := make(chan int)
		go func() { synced <- cuda.FastStreamSync(id) }()
		require.Eventually(t, func() bool { return atomic.LoadInt32(inSync) == 1 }, 5*time.Second, time.Millisecond)
		closed := make(chan error)
		go func() { closed <- closeFast(id, s2) }()
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
			ids := [2]int64{publish(t, s2), publish(t, e2)}
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
							if e := closeFast(ids[0], s2); e != nil && err == nil && !isClosed(e) {
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
			require.NoError(t, closeFast(ids[1], e2))
			require.Equal(t, -1, cuda.FastEventRecord(ids[0], ids[1]))
		}
		assert.Zero(t, atomic.LoadInt32(destroyedInUse))
	})

	t.Run("a slot's next object is not reached by the old id", func(t *testing.T) {
		s2, err := d.CreateStream(0)
		require.NoError(t, err)
		old := publish(t, s2)
		require.NoError(t, closeFast(old, s2))
		// Freed slots are reused first-in first-out: publish until one lands
		// in old's slot.
		var fresh []int64
		var streams []*cuda.Stream
		for len(fresh) == 0 || uint32(fresh[len(fresh)-1]) != uint32(old) {
			require.Less(t, len(fresh), 1000, "the slot was never reused")
			s3, err := d.CreateStream(0)
			require.NoError(t, err)
			streams = append(streams, s3)
			fresh = append(fresh, publish(t, s3))
		}
		assert.Equal(t, -1, cuda.FastStreamSync(old))
		assert.Zero(t, cuda.FastStreamSync(fresh[len(fresh)-1]))
		for i, s3 := range streams {
			require.NoError(t, closeFast(fresh[i], s3))
		}
	})

	require.NoError(t, closeFast(eid, ev))
	require.NoError(t, closeFast(sid, s))
	require.NoError(t, closeFast(plainID, plain))
	assert.Equal(t, -1, cuda.FastEventQuery(eid), "a closed event's id names nothing")
	assert.Equal(t, -1, cuda.FastEventRecord(sid, eid))
	assert.Zero(t, fastReg.Len())
}

func isClosed(err error) bool { return errors.Is(err, backend.ErrClosed) }

// TestGeneratedFastPathIsFresh fails when fastpath.h, written by go
// generate from fastlayout.go and handle.Slot, is stale: run `go generate
// ./gosrc/cuda`.
func TestGeneratedFastPathIsFresh(t *testing.T) {
	got, err := os.ReadFile(filepath.Join("..", "..", cuda.FastPathHeaderPath))
	require.NoError(t, err)
	require.Equal(t, cuda.FastPathHeader(handle.LayoutC()), string(got),
		"%s is stale: run `go generate ./gosrc/cuda`", cuda.FastPathHeaderPath)
}
