package cuda

/*
#include "shim.h"
*/
import "C"

import (
	"runtime"
	"sync/atomic"
	"time"
)

// The C fast path (fastpath.h): shim.c's vg_fast_* functions, which
// vortexgo's CPython extension calls without entering Go, read the streams
// and events that pyapi's handle.Registry publishes in its C-visible table
// (handle.RegisterNative with a Stream's or Event's NativeSlot): there is
// one registry, and one id per object. The registry's Release waits for
// fast calls in flight on a slot, so Close, which follows it, never
// destroys a handle under one.

// FastAPI hands the shim the C-visible table of a handle.Registry (its
// Table: address and length in slots) and returns the address of the
// shim's vg_fast_api (fastpath.h), valid for the life of the process. The
// fast functions read the table of the last call: one registry per process
// serves the fast path (pyapi's). They return -1 for ids the table does
// not publish, so the address may be handed out before the driver is
// loaded.
func FastAPI(table uintptr, slots int) uintptr {
	C.vg_fast_use_table(C.uintptr_t(table), C.int(slots))
	return uintptr(C.vg_fast_api_addr())
}

// The fast entry points, callable from Go so that tests drive the same C
// code the extension calls (export_test.go).
func fastEventRecord(sid, eid int64) int {
	return int(C.vg_fast_event_record(C.int64_t(sid), C.int64_t(eid)))
}
func fastEventQuery(eid int64) int  { return int(C.vg_fast_event_query(C.int64_t(eid))) }
func fastEventSync(eid int64) int   { return int(C.vg_fast_event_sync(C.int64_t(eid))) }
func fastStreamSync(sid int64) int  { return int(C.vg_fast_stream_sync(C.int64_t(sid))) }
func fastStreamQuery(sid int64) int { return int(C.vg_fast_stream_query(C.int64_t(sid))) }
func fastStreamWait(sid, eid int64) int {
	return int(C.vg_fast_stream_wait(C.int64_t(sid), C.int64_t(eid)))
}

// guard counts Go calls using a native handle, so that Close, which may run
// on another goroutine, destroys the handle only after they return: a call
// racing Close either fails with ErrClosed or completes on a live handle.
// Zero value: open, unused.
type guard struct{ n atomic.Int64 }

const guardClosed = int64(1) << 62

// enter marks one use; false (nothing marked) once closed.
func (g *guard) enter() bool {
	if g.n.Add(1)&guardClosed != 0 {
		g.n.Add(-1)
		return false
	}
	return true
}

// exit ends a use begun by a successful enter.
func (g *guard) exit() { g.n.Add(-1) }

// closed reports whether shut has run.
func (g *guard) closed() bool { return g.n.Load()&guardClosed != 0 }

// shut refuses new uses and waits for those in flight; false if it already
// ran. The wait is the cost of never freeing under a user: a Synchronize in
// flight delays Close until the stream drains, which is what it waits for
// anyway before the driver releases the stream.
func (g *guard) shut() bool {
	for {
		v := g.n.Load()
		if v&guardClosed != 0 {
			return false
		}
		if g.n.CompareAndSwap(v, v|guardClosed) {
			break
		}
	}
	// Yield a few times, then sleep backing off to 1 ms (as the registry's
	// wait for fast calls, handle.Registry.Release).
	wait := 10 * time.Microsecond
	for i := 0; g.n.Load() != guardClosed; i++ {
		if i < 64 {
			runtime.Gosched()
			continue
		}
		time.Sleep(wait)
		wait = min(2*wait, time.Millisecond)
	}
	return true
}
