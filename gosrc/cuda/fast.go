package cuda

/*
#include "shim.h"
*/
import "C"

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// The C fast path (fastpath.h): a mirror table of live streams and events in
// the shim, which vortexgo's CPython extension calls without entering Go.
// This file allocates its slots. Each slot carries a generation so that an
// id kept after Close never names a later stream or event, and Close retires
// the slot (waiting for fast calls in flight) before the handle is destroyed.

// FastAPI is the address of the shim's vg_fast_api table (fastpath.h). It is
// valid for the life of the process; its functions return -1 for ids that
// name nothing, so it may be handed out before the driver is loaded.
func FastAPI() uintptr { return uintptr(C.vg_fast_api_addr()) }

const fastSlots = int(C.VG_FAST_SLOTS)

// fastTable allocates slot indices: fresh ones first, then released ones
// first-in first-out, so a slot rests as long as possible before reuse
// (generations make reuse safe regardless).
var fastTable struct {
	mu   sync.Mutex
	gens []uint32
	free []int
}

// fastPublish mirrors a live handle into a slot and returns its id, or 0
// when the table is full (the caller's fast calls then take Go's path).
func fastPublish(kind int, ctx, h C.uintptr_t) int64 {
	t := &fastTable
	t.mu.Lock()
	defer t.mu.Unlock()
	var slot int
	switch {
	case len(t.gens) < fastSlots:
		t.gens = append(t.gens, 0)
		slot = len(t.gens) - 1
	case len(t.free) > 0:
		slot = t.free[0]
		t.free = t.free[1:]
	default:
		return 0
	}
	gen := (t.gens[slot] + 1) & (1<<31 - 1)
	if gen == 0 {
		gen = 1
	}
	t.gens[slot] = gen
	C.vg_fast_publish(C.int(slot), C.uint32_t(gen), C.int(kind), ctx, h)
	return int64(gen)<<32 | int64(slot+1)
}

// fastRetire makes id name nothing and returns once no fast call uses it;
// only then may the handle be destroyed. Retiring 0 does nothing.
func fastRetire(id int64) {
	if id == 0 {
		return
	}
	slot := int(uint32(id)) - 1
	C.vg_fast_retire(C.int(slot))
	t := &fastTable
	t.mu.Lock()
	t.free = append(t.free, slot)
	t.mu.Unlock()
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
	// Yield a few times, then sleep backing off to 1 ms (as vg_fast_retire).
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
