package memory

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/internal/invariants"
)

// ErrLockTimeout is wrapped by the error of a lock wait that timed out (or
// of a try-lock that failed). It declares itself a timeout (Timeout()
// true), as context's and os's deadlines do, so the boundary maps every
// timeout by that one test.
var ErrLockTimeout error = lockTimeout{}

type lockTimeout struct{}

func (lockTimeout) Error() string { return "lock wait timed out" }

// Timeout reports true: the wait for the lock ran out.
func (lockTimeout) Timeout() bool { return true }

// ErrLockHeld is wrapped by the error of a Resize whose owner holds the
// tensor's lock itself (waiting for the exclusive lock would deadlock).
var ErrLockHeld = errors.New("lock held by the caller")

// DeviceTensor is a resizable n-d buffer in device or pinned memory, guarded
// by a readers-writer lock with owner tokens and carrying a ready event.
//
// Lock semantics: an owner may take the lock it already holds again
// (reentrant; each Lock needs its Unlock); an exclusive holder may also
// take the shared lock. Upgrading from shared to exclusive is refused,
// because two owners upgrading at once would deadlock. Writers are
// preferred: while one waits, owners that do not hold the lock yet wait
// too, so a steady stream of readers cannot starve the pipeline's writer.
type DeviceTensor struct {
	alloc *Allocator
	kind  backend.MemKind
	ready backend.Event

	mu        sync.Mutex
	changed   chan struct{} // closed and replaced when lock state changes and waiters > 0
	waiters   int
	shape     []int
	dtype     backend.DType
	buf       *Shared // nil while the capacity is 0; views borrow it
	exclOwner int64
	exclCount int
	shared    map[int64]int // owner -> nesting depth
	writers   int           // exclusive requests waiting
	closed    bool
	freed     bool
	// written is the stream of the last write whose ready record Written
	// deferred (nil: the ready event is up to date): WaitReady and Close
	// record it there first.
	written backend.Stream
}

// NewDeviceTensor allocates a tensor of the given shape and dtype in kind
// memory (backend.DeviceMem or backend.PinnedMem) through a.
func NewDeviceTensor(a *Allocator, kind backend.MemKind, shape []int, dtype backend.DType) (*DeviceTensor, error) {
	const op = "memory.NewDeviceTensor"
	if a == nil {
		return nil, fmt.Errorf("%s: a=nil, expected an allocator", op)
	}
	if _, err := kindIndex(op, kind); err != nil {
		return nil, err
	}
	n, err := byteSize(op, shape, dtype)
	if err != nil {
		return nil, err
	}
	ready, err := a.Device().NewEvent(false)
	if err != nil {
		return nil, fmt.Errorf("%s: ready event: %w", op, err)
	}
	t := &DeviceTensor{
		alloc: a, kind: kind, ready: ready,
		changed: make(chan struct{}), shape: slices.Clone(shape), dtype: dtype,
		shared: map[int64]int{},
	}
	if n > 0 {
		buf, err := a.AllocKind(kind, n)
		if err != nil {
			return nil, errors.Join(fmt.Errorf("%s: shape %v %s: %w", op, shape, dtype, err), ready.Close())
		}
		t.buf = NewShared(buf)
	}
	return t, nil
}

// byteSize validates shape and dtype and returns the size in bytes, bounded
// by backend.MaxBytes (ErrTooLarge) before anything is allocated.
func byteSize(op string, shape []int, dtype backend.DType) (int, error) {
	n, err := backend.ByteSize(shape, dtype)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", op, err)
	}
	return n, nil
}

// Device returns the device the tensor lives on.
func (t *DeviceTensor) Device() backend.Device { return t.alloc.Device() }

// Kind reports device or pinned memory.
func (t *DeviceTensor) Kind() backend.MemKind { return t.kind }

// Shape returns a copy of the shape.
func (t *DeviceTensor) Shape() []int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Clone(t.shape)
}

// DType returns the element type.
func (t *DeviceTensor) DType() backend.DType {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.dtype
}

// Strides returns the C-contiguous strides in bytes, as
// __cuda_array_interface__ and DLPack (divided by the item size) want them.
func (t *DeviceTensor) Strides() []int {
	t.mu.Lock()
	defer t.mu.Unlock()
	strides := make([]int, len(t.shape))
	step := t.dtype.Size()
	for i := len(t.shape) - 1; i >= 0; i-- {
		strides[i] = step
		step *= t.shape[i]
	}
	return strides
}

// Ptr returns the address of the first element; 0 when the tensor is empty
// or freed. It stays valid while a lock is held: only Resize (which takes
// the exclusive lock) and the free after Close change it.
func (t *DeviceTensor) Ptr() uintptr {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.buf == nil || t.freed {
		return 0
	}
	return t.buf.Ptr()
}

// Size returns the size of the current shape in bytes.
func (t *DeviceTensor) Size() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n, _ := byteSize("", t.shape, t.dtype)
	return n
}

// Capacity returns the size of the allocation in bytes (>= Size).
func (t *DeviceTensor) Capacity() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.buf == nil || t.freed {
		return 0
	}
	return t.buf.Size()
}

// TensorView is a borrowed snapshot of a tensor's current memory: the
// borrow keeps that memory alive however the tensor is resized or closed
// afterwards (a view taken before a resize keeps showing the old buffer).
type TensorView struct {
	// Borrow is the reference to the memory (of no bytes for an empty tensor).
	Borrow *Borrow
	// Ptr is the address of the first element (0 when empty).
	Ptr uintptr
	// Shape and DType describe the contents when the view was taken.
	Shape []int
	DType backend.DType
}

// View borrows the current memory with its shape and dtype, atomically
// with respect to Resize and Close; it fails with ErrClosed after Close.
// Release the view's Borrow when done.
func (t *DeviceTensor) View() (TensorView, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return TensorView{}, fmt.Errorf("memory.DeviceTensor.View: tensor: %w", backend.ErrClosed)
	}
	buf := t.buf
	if buf == nil {
		// An empty tensor lends empty memory, so every view has a borrow.
		buf = NewShared(&emptyBuffer{dev: t.alloc.Device(), kind: t.kind})
		defer buf.Close()
	}
	b, err := buf.Borrow()
	if err != nil {
		return TensorView{}, fmt.Errorf("memory.DeviceTensor.View: %w", err)
	}
	return TensorView{Borrow: b, Ptr: b.Ptr(), Shape: slices.Clone(t.shape), DType: t.dtype}, nil
}

// LivePtr is Ptr, or an error wrapping backend.ErrClosed after Close (an
// address of a closed tensor names nothing the caller may use).
func (t *DeviceTensor) LivePtr() (uintptr, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return 0, fmt.Errorf("tensor: %w", backend.ErrClosed)
	}
	if t.buf == nil || t.freed {
		return 0, nil
	}
	return t.buf.Ptr(), nil
}

// Closed reports whether Close was called.
func (t *DeviceTensor) Closed() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.closed
}

// TensorInfo describes a tensor, or a view of one when it was taken, as the
// JSON record python/vortexgo/_tensor.py reads in one place.
type TensorInfo struct {
	Shape  []int  `json:"shape"`
	DType  string `json:"dtype"` // the NumPy name
	Nbytes int    `json:"nbytes"`
	Closed bool   `json:"closed"`
}

// Info describes the tensor in one read, so shape, dtype and size agree
// even while another thread resizes it.
func (t *DeviceTensor) Info() TensorInfo {
	t.mu.Lock()
	defer t.mu.Unlock()
	n, _ := byteSize("", t.shape, t.dtype)
	return TensorInfo{Shape: slices.Clone(t.shape), DType: t.dtype.String(), Nbytes: n, Closed: t.closed}
}

// Info describes the contents the view shows.
func (v TensorView) Info() TensorInfo {
	n, _ := byteSize("", v.Shape, v.DType)
	return TensorInfo{Shape: v.Shape, DType: v.DType.String(), Nbytes: n}
}

// LockState is a snapshot of a tensor's lock, for diagnostics and tests.
type LockState struct {
	// ExclusiveOwner holds the exclusive lock when Exclusive is true.
	ExclusiveOwner int64
	// Exclusive reports whether the exclusive lock is held.
	Exclusive bool
	// Shared maps each shared holder to its nesting depth.
	Shared map[int64]int
	// WritersWaiting counts exclusive requests waiting.
	WritersWaiting int
}

// LockState returns a snapshot of the lock.
func (t *DeviceTensor) LockState() LockState {
	t.mu.Lock()
	defer t.mu.Unlock()
	return LockState{ExclusiveOwner: t.exclOwner, Exclusive: t.exclCount > 0, Shared: maps.Clone(t.shared), WritersWaiting: t.writers}
}

func mode(exclusive bool) string {
	if exclusive {
		return "exclusive"
	}
	return "shared"
}

// holdersLocked describes the current holders for error messages.
func (t *DeviceTensor) holdersLocked() string {
	if t.exclCount > 0 {
		return fmt.Sprintf("held exclusively by owner %d", t.exclOwner)
	}
	if len(t.shared) == 0 {
		return "not held"
	}
	owners := slices.Collect(maps.Keys(t.shared))
	sort.Slice(owners, func(i, j int) bool { return owners[i] < owners[j] })
	return fmt.Sprintf("held shared by owners %v", owners)
}

// broadcastLocked wakes every waiter. The channel is only replaced when
// someone waits, so uncontended lock/unlock allocates nothing.
func (t *DeviceTensor) broadcastLocked() {
	if t.waiters > 0 {
		close(t.changed)
		t.changed = make(chan struct{})
	}
}

// tryAcquireLocked takes the lock if the rules allow it now.
func (t *DeviceTensor) tryAcquireLocked(op string, owner int64, exclusive bool) (bool, error) {
	holdsExcl := t.exclCount > 0 && t.exclOwner == owner
	if exclusive {
		switch {
		case holdsExcl:
			t.exclCount++
			return true, nil
		case t.shared[owner] > 0:
			return false, fmt.Errorf("%s: owner %d holds the shared lock; upgrading to exclusive could deadlock, expected Unlock(owner, false) first", op, owner)
		case t.exclCount == 0 && len(t.shared) == 0:
			t.exclOwner, t.exclCount = owner, 1
			return true, nil
		}
		return false, nil
	}
	switch {
	case holdsExcl, t.shared[owner] > 0:
		// Reentrant, even with writers waiting: making a holder wait for a
		// writer that waits for the holder would deadlock.
		t.shared[owner]++
		return true, nil
	case t.exclCount == 0 && t.writers == 0:
		t.shared[owner] = 1
		return true, nil
	}
	return false, nil
}

// Lock takes the lock for owner, shared or exclusive. timeout < 0 waits
// forever, 0 tries once, > 0 waits at most that long; a timeout returns an
// error wrapping ErrLockTimeout that names the wait and the holders.
func (t *DeviceTensor) Lock(owner int64, exclusive bool, timeout time.Duration) error {
	var deadline <-chan time.Time
	if timeout > 0 {
		timer := time.NewTimer(timeout)
		defer timer.Stop()
		deadline = timer.C
	}
	return t.lock("memory.DeviceTensor.Lock", nil, owner, exclusive, timeout, deadline)
}

// LockContext is Lock with a context instead of a timeout.
func (t *DeviceTensor) LockContext(ctx context.Context, owner int64, exclusive bool) error {
	return t.lock("memory.DeviceTensor.LockContext", ctx, owner, exclusive, -1, nil)
}

func (t *DeviceTensor) lock(op string, ctx context.Context, owner int64, exclusive bool, timeout time.Duration, deadline <-chan time.Time) error {
	var done <-chan struct{}
	if ctx != nil {
		done = ctx.Done()
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	waitingWriter := false
	stopWaiting := func() {
		if waitingWriter {
			t.writers--
			// Readers held back by writer preference may go now.
			t.broadcastLocked()
		}
	}
	for {
		if t.closed {
			stopWaiting()
			return fmt.Errorf("%s: owner %d: tensor: %w", op, owner, backend.ErrClosed)
		}
		ok, err := t.tryAcquireLocked(op, owner, exclusive)
		if ok {
			invariants.Acquired("memory.DeviceTensor", t, owner, exclusive)
		}
		if ok || err != nil {
			stopWaiting()
			return err
		}
		if timeout == 0 {
			return fmt.Errorf("%s: owner %d could not take the %s lock without waiting (%s): %w",
				op, owner, mode(exclusive), t.holdersLocked(), ErrLockTimeout)
		}
		if exclusive && !waitingWriter {
			t.writers++
			waitingWriter = true
		}
		ch := t.changed
		t.waiters++
		t.mu.Unlock()
		var timedOut, cancelled bool
		select {
		case <-ch:
		case <-deadline:
			timedOut = true
		case <-done:
			cancelled = true
		}
		t.mu.Lock()
		t.waiters--
		switch {
		case timedOut:
			stopWaiting()
			return fmt.Errorf("%s: owner %d timed out after %v waiting for the %s lock (%s): %w",
				op, owner, timeout, mode(exclusive), t.holdersLocked(), ErrLockTimeout)
		case cancelled:
			stopWaiting()
			return fmt.Errorf("%s: owner %d stopped waiting for the %s lock (%s): %w",
				op, owner, mode(exclusive), t.holdersLocked(), ctx.Err())
		}
	}
}

// Unlock releases one level of owner's shared or exclusive lock. Unlocking
// a lock the owner does not hold is an error.
func (t *DeviceTensor) Unlock(owner int64, exclusive bool) error {
	const op = "memory.DeviceTensor.Unlock"
	t.mu.Lock()
	defer t.mu.Unlock()
	if exclusive {
		if t.exclCount == 0 || t.exclOwner != owner {
			return fmt.Errorf("%s: owner %d does not hold the exclusive lock (%s)", op, owner, t.holdersLocked())
		}
		t.exclCount--
		if t.exclCount == 0 {
			t.exclOwner = 0
		}
	} else {
		depth := t.shared[owner]
		if depth == 0 {
			return fmt.Errorf("%s: owner %d does not hold the shared lock (%s)", op, owner, t.holdersLocked())
		}
		if depth == 1 {
			delete(t.shared, owner)
		} else {
			t.shared[owner] = depth - 1
		}
	}
	invariants.Released(t, owner, exclusive)
	t.broadcastLocked()
	if t.closed && t.exclCount == 0 && len(t.shared) == 0 {
		return t.freeLocked()
	}
	return nil
}

// holdsLocked reports which lock owner holds, if any.
func (t *DeviceTensor) holdsLocked(owner int64) (held, exclusive bool) {
	if t.exclCount > 0 && t.exclOwner == owner {
		return true, true
	}
	return t.shared[owner] > 0, false
}

// SetReady records the ready event on s, after the writer's last write was
// issued to s. Call it while holding the exclusive lock.
func (t *DeviceTensor) SetReady(s backend.Stream) error {
	const op = "memory.DeviceTensor.SetReady"
	if s == nil {
		return fmt.Errorf("%s: s=nil, expected the stream of the last write", op)
	}
	// The record happens under t.mu so that Close cannot free the event
	// underneath it; it is a sub-microsecond driver call.
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.freed {
		return fmt.Errorf("%s: tensor: %w", op, backend.ErrClosed)
	}
	t.written = nil // as two records: the event marks the later one
	if err := s.Record(t.ready); err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	return nil
}

// Written is SetReady deferred: it notes that the last write was issued to
// s and records the ready event there only when a reader asks for it
// (WaitReady) or the tensor closes, so that a writer streaming blocks into
// the tensor spends no driver call per block on an event no one waits for
// (issue 29: an engine's tensor endpoint, formatting each small block,
// recorded it every block). The record then lands after whatever was
// queued on s since, later than the write: readers wait for at least the
// write, never less. As with SetReady, the event marks the last SetReady or
// Written only: a write on another stream before it must be followed by s.
// s must stay open until the tensor is closed or a later SetReady or
// Written: its owner closes the tensor first (a tensor endpoint frees its
// tensor before its stream).
func (t *DeviceTensor) Written(s backend.Stream) error {
	const op = "memory.DeviceTensor.Written"
	if s == nil {
		return fmt.Errorf("%s: s=nil, expected the stream of the last write", op)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.freed {
		return fmt.Errorf("%s: tensor: %w", op, backend.ErrClosed)
	}
	t.written = s
	return nil
}

// recordWrittenLocked records the ready event Written deferred, if any.
func (t *DeviceTensor) recordWrittenLocked(op string) error {
	s := t.written
	if s == nil {
		return nil
	}
	// Left pending when the record fails: a later reader retries it and
	// gets the error too, rather than a wait on an event that misses the
	// write.
	if err := s.Record(t.ready); err != nil {
		return fmt.Errorf("%s: recording the ready event deferred by Written: %w", op, err)
	}
	t.written = nil
	return nil
}

// WaitReady makes s wait for the ready event (no host wait). The wait is
// queued under t.mu so that Close cannot destroy the event underneath it.
func (t *DeviceTensor) WaitReady(s backend.Stream) error {
	const op = "memory.DeviceTensor.WaitReady"
	if s == nil {
		return fmt.Errorf("%s: s=nil, expected the reader's stream: %w", op, backend.ErrInvalid)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.freed {
		return fmt.Errorf("%s: tensor: %w", op, backend.ErrClosed)
	}
	if err := t.recordWrittenLocked(op); err != nil {
		return err
	}
	if err := s.WaitEvent(t.ready); err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	return nil
}

// Resize changes the shape and dtype, waiting for the exclusive lock. It
// reallocates only when the new size exceeds the capacity; the contents are
// not preserved then. If owner holds the lock itself, Resize returns an
// error instead: waiting for the exclusive lock while holding it would
// deadlock (vortex's caution about modifying an endpoint inside
// `with endpoint.tensor`).
func (t *DeviceTensor) Resize(owner int64, shape []int, dtype backend.DType) error {
	return t.ResizeContext(context.Background(), owner, shape, dtype)
}

// ResizeContext is Resize with a context bounding the wait for the lock.
func (t *DeviceTensor) ResizeContext(ctx context.Context, owner int64, shape []int, dtype backend.DType) error {
	const op = "memory.DeviceTensor.Resize"
	n, err := byteSize(op, shape, dtype)
	if err != nil {
		return err
	}
	t.mu.Lock()
	if held, excl := t.holdsLocked(owner); held {
		t.mu.Unlock()
		return fmt.Errorf("%s: owner %d holds the %s lock; resizing while holding the lock would deadlock, expected Unlock first: %w",
			op, owner, mode(excl), ErrLockHeld)
	}
	t.mu.Unlock()
	if err := t.lock(op, ctx, owner, true, -1, nil); err != nil {
		return err
	}
	t.mu.Lock()
	resizeErr := t.resizeLocked(op, n, shape, dtype)
	t.mu.Unlock()
	return errors.Join(resizeErr, t.Unlock(owner, true))
}

func (t *DeviceTensor) resizeLocked(op string, n int, shape []int, dtype backend.DType) error {
	capacity := 0
	if t.buf != nil {
		capacity = t.buf.Size()
	}
	if n > capacity {
		if t.buf != nil {
			// Readers that released the lock may still have work queued on
			// their own streams that reads the old buffer, and the ready
			// event does not cover them. Resizing is a configuration-time
			// operation, so a device-wide host sync is the defended price
			// of never freeing memory under queued work.
			if err := t.alloc.Device().Synchronize(); err != nil {
				return fmt.Errorf("%s: waiting for work on the old buffer: %w", op, err)
			}
			// Release before allocating: tensors are volumes and peak
			// memory matters more than keeping old contents on failure.
			// Views still borrowing the old buffer keep it until they go.
			old := t.buf
			t.buf = nil
			t.shape = []int{0}
			if err := old.Close(); err != nil {
				return fmt.Errorf("%s: freeing the old buffer: %w", op, err)
			}
		}
		buf, err := t.alloc.AllocKind(t.kind, n)
		if err != nil {
			return fmt.Errorf("%s: shape %v %s (%d bytes); the tensor is left empty: %w", op, shape, dtype, n, err)
		}
		t.buf = NewShared(buf)
	}
	t.shape = slices.Clone(shape)
	t.dtype = dtype
	return nil
}

// Close marks the tensor closed: waiting and later Lock calls fail with
// backend.ErrClosed. The memory and the ready event are freed now if no one
// holds the lock, else when the last holder unlocks, so a holder never sees
// its memory freed underneath it. A second Close is an error.
func (t *DeviceTensor) Close() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return fmt.Errorf("memory.DeviceTensor.Close: tensor already closed: %w", backend.ErrClosed)
	}
	t.closed = true
	t.broadcastLocked()
	// A holder may still ask for the ready event until it unlocks, when the
	// writer's stream may be gone (Written's contract: open until now).
	err := t.recordWrittenLocked("memory.DeviceTensor.Close")
	if t.exclCount == 0 && len(t.shared) == 0 {
		return errors.Join(err, t.freeLocked())
	}
	return err
}

func (t *DeviceTensor) freeLocked() error {
	if t.freed {
		return nil
	}
	t.freed = true
	var errs []error
	if t.buf != nil {
		// As in Resize: readers may have queued work that still reads the
		// buffer. Close is teardown, so a host sync is acceptable here.
		if err := t.alloc.Device().Synchronize(); err != nil {
			errs = append(errs, fmt.Errorf("waiting for work on the buffer: %w", err))
		}
		// Views borrowing the buffer keep it until they release it.
		errs = append(errs, t.buf.Close())
		t.buf = nil
	}
	errs = append(errs, t.ready.Close())
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("memory.DeviceTensor: freeing: %w", err)
	}
	return nil
}
