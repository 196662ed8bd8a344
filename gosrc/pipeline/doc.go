// Package pipeline is vortexgo's async toolkit: the pieces that keep the
// upload, compute and download engines of a device busy at the same time.
//
// # Pieces
//
//   - TripleBuffer: three device buffers that rotate through
//     Free -> Uploading -> Processing -> Downloading -> Free. The rotation is
//     host bookkeeping in one atomic word; GPU ordering comes from events.
//   - AsyncCoordinator: dedicated upload, compute and download streams. Every
//     queued operation gets an OpID and a pair of timing events; dependencies
//     between operations become stream-waits-on-event, never host waits.
//     Poll reports completed operations without blocking.
//   - PipelineStageManager: named stages over logical buffers (each with one
//     or more physical versions), run in a set order each iteration. Hazards
//     between stages and between consecutive iterations are resolved with
//     events, so iterations overlap across the three streams. An iteration
//     cycle can be captured into a graph and replayed.
//   - ManagedGpuContext: one device's coordinator plus factories for triple
//     buffers and pipeline managers, and TripleBufferedStep.
//   - Readback: asynchronous device-to-host copies into pooled pinned
//     buffers, so frame N+1 is processed while frame N is read back.
//
// # Host synchronisation
//
// Nothing in the hot paths (queueing, polling, executing an iteration,
// starting a readback) blocks the host. The calls that do block say so in
// their names or docs: Wait, SynchronizeAll, Close, and a Readback whose
// pool is exhausted (back-pressure, documented there).
//
// # Python
//
// Go never calls Python (see DESIGN.md §1). A Python callable becomes a
// compute operation through BeginExternal/EndExternal: the coordinator makes
// the compute stream wait on the dependencies and hands the stream out;
// Python enqueues its CuPy work on it and then ends the operation, which
// records the completion event.
package pipeline
