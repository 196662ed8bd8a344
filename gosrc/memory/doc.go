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
// The Python layer allocates through the process-wide budget (Process,
// AllocatorFor), so one limit and one usage cover every device and purpose.
// Sizes are bounded by backend.MaxBytes before the budget or a driver sees
// them: an impossible request is an ErrTooLarge, never a fatal error.
//
// # Ownership
//
// Memory handed to Python is Shared: the owner holds one reference and each
// borrower (a view, a NumPy view, a DLPack capsule, a tensor view, an
// operation in progress) holds another. Closing the owner drops its
// reference; the memory is freed with the last one, so nothing is ever
// freed under a user. Operations on arrays (Op) run while their caller
// holds a borrow of each side, after Shared.Check and Shared.Reachable.
//
// # DeviceTensor
//
// A DeviceTensor is an n-d buffer guarded by a readers-writer lock whose
// holders are named by an owner token (the Python layer passes the Python
// thread id), so a thread that already holds the lock can be told that
// resizing now would deadlock, instead of hanging. The writer records the
// tensor's ready event after its last write; readers make their streams
// wait on it, so no host synchronisation is needed to consume a tensor.
// Its buffer is Shared: View borrows it, and a view outlives Resize and
// Close.
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
