// Package engine is vortexgo's core: the Engine that runs an acquisition
// through processors, formatters and endpoints, and the contracts
// (adapter.go) every stage implements.
//
// # Pipeline
//
// Four goroutines joined by bounded channels move preallocated Blocks:
//
//	acquire:  take a free block, Acquisition.Fill its pinned host buffer
//	process:  on a slot stream, record a timing event, upload (H2D), run
//	          every Processor, record the block's ready event
//	format:   for each Formatter, plan the block; each Endpoint makes its
//	          own stream wait on the ready event (device side) and enqueues
//	          its copies; the engine records a done event per endpoint and
//	          posts the block's events for Python
//	recycle:  wait for the block's events, read its timings, return it to
//	          the pool
//
// Only the recycle stage waits on the device. The pool's size
// (Config.BlocksToAllocate) bounds the blocks in flight, so a slow stage
// throttles the acquisition instead of growing a queue, and nothing is
// allocated after Prepare.
//
// # Events for Python
//
// Go never calls Python (DESIGN.md section 1). Events (update, segment,
// volume, scan, error, done) go to a bounded queue that a Python-owned
// dispatcher thread drains with NextEvents, with the GIL released while it
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
