// Package cpu is the host implementation of the backend contract: a Device,
// Streams, Events, Buffers and Graphs whose work runs on the CPU.
//
// # Synchronous semantics
//
// Every stream operation runs to completion on the calling goroutine before
// the call returns, like Warp's "cpu" device. Events are therefore complete
// as soon as they are recorded, Query always reports done, and waiting on a
// CPU event is a no-op. Code written for CUDA's asynchronous rules is
// correct here as well; the converse is not true, so tests that pass on the
// CPU do not prove the absence of missing waits on CUDA.
//
// Several goroutines may share one stream: a per-stream mutex serialises
// their work so stream order holds. A function passed to Stream.Enqueue
// runs with that mutex held, so it must not issue work to the same stream.
//
// # Memory
//
// Buffers are anonymous mmap regions, outside the Go heap: the garbage
// collector neither moves nor frees them, so their addresses can be handed
// to NumPy or C. Their lifetime is explicit (Free); there are no
// finalizers. Copy and Memset accept any host address, as CUDA's unified
// addressing does for host and device pointers, which also means that a bad
// address faults the process exactly as it would in C. "Pinned" memory is
// the same kind of allocation reporting backend.PinnedMem.
//
// # Graphs
//
// While a stream captures (BeginCapture .. EndCapture), work issued to it is
// recorded instead of run; Graph.Launch replays the recorded operations in
// order on any host stream.
package cpu
