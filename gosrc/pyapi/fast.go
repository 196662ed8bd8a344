package pyapi

import (
	"fmt"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/cuda"
	"github.com/vortexgo/vortexgo/gosrc/handle"
)

// The fast path: the per-call operations that Python issues at high rates
// (event record/query/sync, stream wait/query/sync, array operations) as
// package functions over int ids returning an int status. Why: gopy's
// method wrappers resolve handles through a locked map plus a reflection
// lookup and allocate a C string for every error return, which costs more
// than the driver call itself (H200: 0.98 us per event record against
// CuPy's 0.33); a fast call is one cgo entry and a slice index.
//
// Status: 0 = ok (or "not ready" for queries), 1 = ready, -1 = failed; on
// -1 the Python layer repeats the call through the method path (StreamOp,
// ArrayOp), which raises the full error. On CUDA python/vortexgo/_fastcall.c
// skips Go: the shim's C fast path (gosrc/cuda/fastpath.h) reads the
// streams and events that handles publishes (newStream, newEvent), by the
// same ids; these functions serve the CPU backend, borrowed streams and
// installs without that extension.

// FastAPI is the address of the C fast path's function table (fastpath.h),
// read once by python/vortexgo/_fastcall.c at import; the fast path then
// reads handles' C-visible table.
func FastAPI() int { return int(cuda.FastAPI(handles.Table())) }

// handles is the one registry shared by the fast paths and the method path
// (gosrc/handle): a wrapper's ID is generation-tagged, so an ID kept after
// close never names another object (the old int table reused freed ids).
// Owned and adopted CUDA streams and events are also published in its
// C-visible table (handle.RegisterNative), which the C fast path reads.
var handles handle.Registry

// native is x's entry for the C-visible table, nil where C cannot call it
// (CPU objects).
func native(x any) handle.Native {
	n, _ := x.(handle.Native)
	return n
}

// The stream and event operations (python/vortexgo/_stream.py mirrors the
// codes): the first four name a stream, all but the queries and syncs of a
// stream name an event.
const (
	opRecord      = iota // record event eid on stream sid
	opWaitEvent          // later work on stream sid waits for event eid
	opSyncStream         // block until stream sid is idle (GIL released)
	opQueryStream        // is stream sid idle?
	opSyncEvent          // block until event eid completed (GIL released)
	opQueryEvent         // has event eid completed?
)

// streamOp runs op on the live stream sid and event eid it names; done is
// a query's answer.
func streamOp(op, sid, eid int) (done bool, err error) {
	if op < opRecord || op > opQueryEvent {
		return false, badArg("op=%d, expected a stream or event operation %d..%d", op, opRecord, opQueryEvent)
	}
	var s backend.Stream
	var e backend.Event
	if op <= opQueryStream {
		st, err := lookup[*Stream]("stream", sid)
		if err != nil {
			return false, err
		}
		s = st.s
	}
	if op <= opWaitEvent || op >= opSyncEvent {
		ev, err := lookup[*Event]("event", eid)
		if err != nil {
			return false, err
		}
		e = ev.e
	}
	switch op {
	case opRecord:
		return false, s.Record(e)
	case opWaitEvent:
		return false, s.WaitEvent(e)
	case opSyncStream:
		return false, s.Synchronize()
	case opQueryStream:
		return s.Query()
	case opSyncEvent:
		return false, e.Synchronize()
	}
	return e.Query()
}

// lookup is the live object of type T that id names, or an error naming
// what with a ClosedError's sentinel.
func lookup[T any](what string, id int) (T, error) {
	v, err := handle.Get[T](&handles, handle.ID(id))
	if err != nil {
		return v, fmt.Errorf("%s: %w", what, err)
	}
	return v, nil
}

// streamOf and eventOf are the native stream or event behind a Python
// wrapper's registry id: nil for 0 (none), a ClosedError once closed.
func streamOf(id int) (backend.Stream, error) {
	if id == 0 {
		return nil, nil
	}
	s, err := lookup[*Stream]("stream", id)
	if err != nil {
		return nil, err
	}
	return s.s, nil
}

func eventOf(id int) (backend.Event, error) {
	if id == 0 {
		return nil, nil
	}
	e, err := lookup[*Event]("event", id)
	if err != nil {
		return nil, err
	}
	return e.e, nil
}

// StreamOp is the method path of the fast functions below: operation op
// (their codes) on stream sid and event eid, raising the full error.
func StreamOp(op, sid, eid int) (done bool, err error) {
	done, err = streamOp(op, sid, eid)
	return done, tag(err)
}

// status is the fast path's int for a result: -1 failed, 1 done, 0 not.
func status(done bool, err error) int {
	switch {
	case err != nil:
		return -1
	case done:
		return 1
	}
	return 0
}

// FastRecord records event eid on stream sid.
func FastRecord(sid, eid int) int { return status(streamOp(opRecord, sid, eid)) }

// FastWaitEvent makes stream sid wait for event eid.
func FastWaitEvent(sid, eid int) int { return status(streamOp(opWaitEvent, sid, eid)) }

// FastQueryEvent returns 1 when event eid completed, 0 if not, -1 on error.
func FastQueryEvent(eid int) int { return status(streamOp(opQueryEvent, 0, eid)) }

// FastQueryStream returns 1 when stream sid is idle, 0 if not, -1 on error.
func FastQueryStream(sid int) int { return status(streamOp(opQueryStream, sid, 0)) }

// FastSyncStream blocks until stream sid is idle (GIL released).
func FastSyncStream(sid int) int { return status(streamOp(opSyncStream, sid, 0)) }

// FastSyncEvent blocks until event eid completes (GIL released).
func FastSyncEvent(eid int) int { return status(streamOp(opSyncEvent, 0, eid)) }

// DTypeCode returns the fast path's code of a NumPy dtype name (-1 if
// unsupported).
func DTypeCode(name string) int {
	if dt, err := backend.ParseDType(name); err == nil {
		return int(dt)
	}
	return -1
}
