// Package cuda is vortexgo's CUDA backend: a small shim over the CUDA driver
// API that implements the interfaces of package backend.
//
// # Loading
//
// libcuda.so.1 is dlopen'd on first use (through gosrc/internal/dl) and the
// versioned driver symbols (cuMemAlloc_v2, cuStreamDestroy_v2, ...) are
// resolved by name. No CUDA header or toolkit is needed to build, and on a
// machine without a driver every entry point returns an error that starts
// with "no CUDA driver: " followed by dlopen's message; nothing exits the
// process. cuFFT is loaded the same way, separately, when the first plan is
// made.
//
// # Contexts and threads
//
// Every Device uses its primary context (cuDevicePrimaryCtxRetain), the one
// CuPy and PyTorch use, so pointers and streams cross to Python with no
// copies. Goroutines move between OS threads, and a CUDA context is current
// per thread, so each C wrapper makes the device's context current itself
// (a thread-local read, and a set only when it differs) and then performs
// its one driver call: one cgo crossing per operation on the hot paths
// (event record/query, stream wait/sync/query, copies, launches).
//
// # Errors
//
// Driver failures are *Error values carrying the call's name and the
// CUresult with its name and description from cuGetErrorName and
// cuGetErrorString. Use of a closed stream, event, buffer or graph returns
// an error wrapping backend.ErrClosed.
//
// # The C fast path
//
// Per-call stream and event operations from Python can skip Go entirely:
// the shim's vg_fast_* functions (fast.go, fastpath.h, generated from
// fastlayout.go) read the C-visible table of pyapi's handle registry, in
// which Stream and Event are published through NativeSlot, and python/
// vortexgo/_fastcall.c calls them with the registry's ids. The registry
// releases an id, waiting for fast calls in flight, before Close destroys
// the handle.
//
// # Lifetimes
//
// Devices and their primary contexts live until the process exits: they
// are shared with other libraries in the process, so releasing them from
// here could pull a context out from under CuPy. Streams, events, buffers,
// modules and graphs are released by their Close or Free methods.
package cuda
