package pyapi

import (
	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/cuda"
	"github.com/vortexgo/vortexgo/gosrc/handle"
	"github.com/vortexgo/vortexgo/gosrc/ops"
)

// The fast path: the per-call operations that Python issues at high rates
// (event record/query/sync, stream wait/query/sync, small kernel launches)
// as package functions over int ids returning an int status.
//
// Why: gopy's method wrappers resolve handles through a locked map plus a
// reflection-based embed lookup and allocate a C string for every error
// return, which costs more than the driver call itself (measured on an
// H200: 0.98 us per event record against CuPy's 0.33). Ints cross the
// boundary as ints, so a fast call is one cgo entry and a slice index.
//
// Status convention: 0 = ok (or "not ready" for queries), 1 = ready,
// -1 = failed. On -1 the Python layer repeats the call through the method
// API, which raises the full, tagged error; fast calls never hide errors.
//
// On CUDA a faster path skips Go: python/vortexgo/_fastcall.c calls the
// shim's C functions (gosrc/cuda/fastpath.h) with the ids of FastID. These
// functions serve the CPU backend and installs without that extension.

// FastAPI is the address of the C fast path's function table (fastpath.h),
// read once by python/vortexgo/_fastcall.c at import.
func FastAPI() int { return int(cuda.FastAPI()) }

// handles is the one registry shared by the fast path and the method path
// (gosrc/handle): a wrapper's ID is generation-tagged, so an ID kept after
// close never names another object (the old int table reused freed ids).
var handles handle.Registry

func fastStream(id int) backend.Stream {
	if s, err := handle.Get[*Stream](&handles, handle.ID(id)); err == nil {
		return s.s
	}
	return nil
}

func fastEvent(id int) backend.Event {
	if e, err := handle.Get[*Event](&handles, handle.ID(id)); err == nil {
		return e.e
	}
	return nil
}

func status(err error) int {
	if err != nil {
		return -1
	}
	return 0
}

func ready(done bool, err error) int {
	if err != nil {
		return -1
	}
	if done {
		return 1
	}
	return 0
}

// onPair runs op on stream sid and event eid; -1 if either is not live.
func onPair(sid, eid int, op func(backend.Stream, backend.Event) error) int {
	s, e := fastStream(sid), fastEvent(eid)
	if s == nil || e == nil {
		return -1
	}
	return status(op(s, e))
}

// FastRecord records event eid on stream sid.
func FastRecord(sid, eid int) int { return onPair(sid, eid, backend.Stream.Record) }

// FastWaitEvent makes stream sid wait for event eid.
func FastWaitEvent(sid, eid int) int { return onPair(sid, eid, backend.Stream.WaitEvent) }

// FastQueryEvent returns 1 when event eid completed, 0 if not, -1 on error.
func FastQueryEvent(eid int) int {
	if e := fastEvent(eid); e != nil {
		return ready(e.Query())
	}
	return -1
}

// FastQueryStream returns 1 when stream sid is idle, 0 if not, -1 on error.
func FastQueryStream(sid int) int {
	if s := fastStream(sid); s != nil {
		return ready(s.Query())
	}
	return -1
}

// FastSyncStream blocks until stream sid is idle (GIL released).
func FastSyncStream(sid int) int {
	if s := fastStream(sid); s != nil {
		return status(s.Synchronize())
	}
	return -1
}

// FastSyncEvent blocks until event eid completes (GIL released).
func FastSyncEvent(eid int) int {
	if e := fastEvent(eid); e != nil {
		return status(e.Synchronize())
	}
	return -1
}

// FastCopy copies nbytes from src to dst on stream sid.
func FastCopy(sid, dst, src, nbytes int) int {
	s := fastStream(sid)
	if s == nil || nbytes < 0 {
		return -1
	}
	if nbytes == 0 {
		return 0
	}
	return status(s.Copy(uintptr(dst), uintptr(src), nbytes))
}

// FastFill fills n elements of dtype code dt at dst with v on stream sid.
func FastFill(sid, dst, n, dt int, v float64) int {
	s := fastStream(sid)
	if s == nil || !backend.DType(dt).Valid() {
		return -1
	}
	return status(ops.Fill(s, uintptr(dst), n, backend.DType(dt), v))
}

// FastScaleOffset computes dst = src*scale + offset over n elements of dtype code dt.
func FastScaleOffset(sid, dst, src, n, dt int, scale, offset float64) int {
	s := fastStream(sid)
	if s == nil || !backend.DType(dt).Valid() {
		return -1
	}
	return status(ops.ScaleOffset(s, uintptr(dst), uintptr(src), n, backend.DType(dt), scale, offset))
}

// DTypeCode returns the fast-path code of a NumPy dtype name (-1 if unsupported).
func DTypeCode(name string) int {
	dt, err := backend.ParseDType(name)
	if err != nil {
		return -1
	}
	return int(dt)
}
