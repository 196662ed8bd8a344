// Package engine is vortexgo's core: the Engine that runs an acquisition
// through processors, formatters and endpoints, and the contracts
// (adapter.go) every stage implements.
//
// # Pipeline
//
// Four goroutines joined by bounded channels move preallocated Blocks:
//
//	acquire:  vortex's Generate and Acquire stages: take a free block, let
//	          the scan queue (Engine.ScanQueue) write its waveform and
//	          markers, hand the waveform to the IOs (each shifted by its
//	          lead_samples), then Acquisition.Fill its pinned host buffer
//	process:  on a slot stream, record a timing event, upload (H2D), run
//	          every Processor, record the block's ready event; with two or
//	          more slots and OrderedProcessors each slot's blocks are
//	          submitted by a goroutine of their own (submitLoop), and the
//	          acquire loop hands them over itself (route, the direct path)
//	          instead of a process goroutine
//	format:   for each Formatter (the format planner), plan the block from
//	          its markers; each Endpoint makes its own stream wait on the
//	          ready event (device side) and executes the plan with its
//	          executor (stack, radial, spiral, position) as kernels on its
//	          stream; the engine records a done event per endpoint and
//	          posts the block's events for Python
//	recycle:  wait for the block's events, read its timings, return it to
//	          the pool
//
// Only the recycle stage waits on the device for a block, and the acquire
// stage for the upload of the pinned memory it is about to fill again. The
// pool's size bounds the blocks in flight, so a slow stage throttles the
// acquisition instead of growing a queue, and nothing is allocated after
// Prepare. The pool (pool.go) is Config.BlocksToAllocate blocks of pinned
// host memory, which go back to the acquisition once uploaded, and the
// blocks cycled on the device: as many, or on a GPU with small blocks a
// deeper ring (poolBlocks).
//
// # Generate (generate.go)
//
// vortex's acquire loop: the scan queue is rebased to the largest IO lead,
// generates into that lead's waveform, and every smaller lead gets it
// delayed through a preallocated delay line, so lead 0 lines up with the
// acquisition and the markers. Markers generated past a block wait for
// the next; the first block starts with Config.LeadMarker and an
// InactiveLines. When the queue runs dry it holds the last position, and
// the block in which the records past the scan reach PostScanRecords is
// the last (the planner is finished with it). The first PreloadCount
// blocks go to the IOs before they start (IOConfig.Preload; masters start
// last); the acquisition fills each block once the IOs hold the blocks up
// to PreloadCount ahead of it. Difference from vortex: the acquisition's
// own preload is its Fill (our acquisitions have no buffers to post).
//
// # Events for Python
//
// Go never calls Python (DESIGN.md section 1). Events (update, segment,
// volume, scan, error, done) go to a bounded queue that a Python-owned
// dispatcher thread drains with NextRecords, with the GIL released while it
// waits. They are posted once the formatting of their block is dispatched
// (enqueued, not finished), in block order, as vortex fires its callbacks;
// handlers chain their work on the endpoint's stream.
//
// # Stopping
//
// Stop ends the acquisition, lets every acquired block through the
// pipeline, flushes the endpoints (storage writes) and returns. A stop in
// the middle of a volume leaves every completed volume delivered and
// stored. RequestStop does the same without waiting, for use from a
// handler.
package engine
