// fastpath.h: the C fast path shared by the shim (gosrc/cuda/shim.c) and
// vortexgo's CPython extension (python/vortexgo/_fastcall.c).
//
// Why: a per-call operation from Python (event record/query/sync, stream
// sync/wait/query) otherwise goes Python -> gopy's C wrapper -> cgo -> Go ->
// C shim, about 0.6 us more than the driver call. The shim keeps a mirror
// table of live CUDA streams and events, written by Go when a stream or event
// is created and retired before it is destroyed; the extension calls the
// functions below through a table whose address Go hands to Python once.
//
// Ids: slot+1 in the low 32 bits, the slot's generation in the high 31 (the
// same layout as gosrc/handle). A stale id (its object closed) never names a
// later object: its generation no longer matches, and the call returns -1.
//
// No CUDA header is included here either: only ints cross this interface.
#ifndef VG_CUDA_FASTPATH_H
#define VG_CUDA_FASTPATH_H

#include <stdint.h>

#define VG_FAST_MAGIC 0x56474650u /* "VGFP" */
#define VG_FAST_VERSION 1u

// Status of every fast function: 0 = done (or "not ready" for a query),
// 1 = ready (queries), -1 = not done here: the caller repeats the call
// through Go's method path, which raises the full error. -1 never hides an
// error: a stale id, a full table or a driver error all take that path.
typedef struct {
	uint32_t magic;   // VG_FAST_MAGIC
	uint32_t version; // VG_FAST_VERSION: the extension refuses any other
	int (*event_record)(int64_t stream_id, int64_t event_id);
	int (*event_query)(int64_t event_id);
	int (*event_sync)(int64_t event_id);
	int (*stream_sync)(int64_t stream_id);
	int (*stream_wait)(int64_t stream_id, int64_t event_id);
	int (*stream_query)(int64_t stream_id);
} vg_fast_api;

#endif
