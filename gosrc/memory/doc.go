// Package memory owns the memory objects that cross into Python: locked
// device tensors, pools of pinned staging buffers, and the budget every
// allocation is charged to.
//
// # Allocation and budget
//
// All allocations go through an Allocator, which charges a Budget before
// asking the device and gives the charge back when the native allocation
// fails or the buffer is freed, so usage returns to zero when everything is
// released. A Budget with limit 0 only counts.
//
// # DeviceTensor
//
// A DeviceTensor is an n-d buffer guarded by a readers-writer lock whose
// holders are named by an owner token (the Python layer passes the Python
// thread id), so a thread that already holds the lock can be told that
// resizing now would deadlock, instead of hanging. The writer records the
// tensor's ready event after its last write; readers make their streams
// wait on it, so no host synchronisation is needed to consume a tensor.
//
// # BufferPool
//
// A BufferPool recycles pinned buffers of one size. A buffer returned with an
// event becomes reusable only once that event completes; Get queries
// returned buffers' events and never blocks while another buffer is free,
// like CuPy's _EventWatcher.
//
// # Waiting
//
// Every wait in this package (lock, pool) sleeps on a channel that is closed
// when the state changes; nothing spins. Waits take a timeout or a context,
// and their errors say what was waited for.
package memory
