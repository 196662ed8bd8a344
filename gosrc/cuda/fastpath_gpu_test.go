//go:build gpu

package cuda_test

import (
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vortexgo/vortexgo/gosrc/cuda"
)

// TestFastPathOnGPU drives the shim's C fast path (fastpath.h) against the
// real driver, reading a handle.Registry's table as pyapi's: results, a
// thread without a current context, stale ids, and Close waiting for a
// synchronize in flight on a busy stream.
func TestFastPathOnGPU(t *testing.T) {
	d := device(t)
	require.NotZero(t, cuda.FastAPI(fastReg.Table()))
	s, err := d.CreateStream(0)
	require.NoError(t, err)
	ev, err := d.CreateEvent(false)
	require.NoError(t, err)
	sid, eid := publish(t, s), publish(t, ev)
	t.Cleanup(func() { _ = closeFast(sid, s) })

	require.Zero(t, cuda.FastEventRecord(sid, eid))
	require.Zero(t, cuda.FastStreamWait(sid, eid))
	require.Zero(t, cuda.FastStreamSync(sid))
	require.Zero(t, cuda.FastEventSync(eid))
	require.Equal(t, 1, cuda.FastEventQuery(eid))
	require.Equal(t, 1, cuda.FastStreamQuery(sid))
	require.Equal(t, -1, cuda.FastStreamSync(eid), "an event's id is no stream")

	done := make(chan [3]int)
	go func() {
		runtime.LockOSThread() // a new thread: no current context
		done <- [3]int{cuda.FastEventRecord(sid, eid), cuda.FastStreamSync(sid), cuda.FastEventQuery(eid)}
	}()
	require.Equal(t, [3]int{0, 0, 1}, <-done)

	// Close waits for a synchronize in flight: queue ~50 ms of work
	// (a host-side sleep is not possible, so a big device memset chain).
	s2, err := d.CreateStream(0)
	require.NoError(t, err)
	buf := devBuf(t, d, 256<<20)
	for i := 0; i < 40; i++ {
		require.NoError(t, s2.Memset(buf.Ptr(), byte(i), 256<<20))
	}
	id := publish(t, s2)
	synced := make(chan int)
	go func() { synced <- cuda.FastStreamSync(id) }()
	time.Sleep(time.Millisecond)
	require.NoError(t, closeFast(id, s2))
	assert.Zero(t, <-synced, "the synchronize in flight completed on a live stream")
	assert.Equal(t, -1, cuda.FastStreamSync(id))

	require.NoError(t, closeFast(eid, ev))
	assert.Equal(t, -1, cuda.FastEventQuery(eid))
	assert.Equal(t, -1, cuda.FastEventRecord(sid, eid))
}
