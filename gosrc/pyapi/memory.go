package pyapi

import (
	"time"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/handle"
	"github.com/vortexgo/vortexgo/gosrc/memory"
)

// Buffer is memory an Array owns (a memory.Shared, registered so the array
// operations of kernels.go can name it by id), or a buffer a pool lends
// (sh nil: the pool frees it).
type Buffer struct {
	b  backend.Buffer
	sh *memory.Shared
	id handle.ID
}

// newBuffer registers sh as memory an Array owns; Free releases the
// owner's reference. Other wrappers may hand Python memory this way.
func newBuffer(sh *memory.Shared) *Buffer {
	b := &Buffer{b: sh.Buffer(), sh: sh}
	b.id = handles.Register(b)
	return b
}

// Alloc allocates nbytes (0 allowed) of device memory, or of pinned host
// memory, charged to the process budget as "array".
func (d *Device) Alloc(nbytes int, pinned bool) (*Buffer, error) {
	a, err := memory.AllocatorFor(d.d, "array")
	if err != nil {
		return nil, tag(err)
	}
	sh, err := a.AllocShared(memory.Kind(pinned), nbytes)
	if err != nil {
		return nil, tag(err)
	}
	return newBuffer(sh), nil
}

// ID names the memory in the array operations (0 for a pool's buffer).
func (b *Buffer) ID() int { return int(b.id) }

// Ptr is the address as an int.
func (b *Buffer) Ptr() int { return int(b.b.Ptr()) }

// Lease borrows the memory for a view, a NumPy view or a DLPack capsule;
// a ClosedError once the owner freed it.
func (b *Buffer) Lease() (*Lease, error) {
	br, err := b.borrow()
	if err != nil {
		return nil, tag(err)
	}
	return newLease(br), nil
}

func (b *Buffer) borrow() (*memory.Borrow, error) {
	if b.sh == nil {
		return nil, badArg("a pool's buffer cannot be borrowed, expected an array's memory")
	}
	return b.sh.Borrow()
}

// Free releases the owner's reference: the memory goes back now if nothing
// borrows it, else with the last borrower. The id stops naming it first,
// so no operation can start on it afterwards.
func (b *Buffer) Free() error {
	if b.sh == nil {
		return tag(b.b.Free())
	}
	handles.Release(b.id)
	return tag(b.sh.Close())
}

// Lease is one borrower's reference to memory; the Python layer releases it
// when the borrower (a vortexgo._lifetime.Keep) is collected.
type Lease struct {
	b     *memory.Borrow
	id    handle.ID
	shape []int // a tensor view's shape and dtype when taken
	dtype backend.DType
}

// newLease registers b: its id names the memory in the array operations,
// for as long as the lease is held (after the owner freed too).
func newLease(b *memory.Borrow) *Lease {
	l := &Lease{b: b}
	l.id = handles.Register(l)
	return l
}

// ID names the borrowed memory in the array operations.
func (l *Lease) ID() int { return int(l.id) }

// Ptr is the borrowed memory's address (0 when empty).
func (l *Lease) Ptr() int { return int(l.b.Ptr()) }

// Shape is a tensor view's shape, comma-separated.
func (l *Lease) Shape() string { return backend.FormatShape(l.shape) }

// DType is a tensor view's NumPy dtype name.
func (l *Lease) DType() string { return l.dtype.String() }

func (l *Lease) borrow() (*memory.Borrow, error) { return l.b.Borrow() }

// Release gives the reference back; the last one frees the memory. A
// second Release is a no-op.
func (l *Lease) Release() error {
	handles.Release(l.id)
	return tag(l.b.Release())
}

// SetMemoryBudget sets the limits in bytes for device and pinned memory
// (0 = unlimited); see memory.Budget.SetLimits.
func SetMemoryBudget(deviceBytes, pinnedBytes int) error {
	return tag(memory.Process().SetLimits(int64(deviceBytes), int64(pinnedBytes)))
}

// MemoryUsage is the process budget's usage as one JSON record
// (memory.Usage.JSON).
func MemoryUsage() string { return memory.Process().Usage().JSON() }

// ResetMemoryPeak sets the peak usage to the current usage.
func ResetMemoryPeak() { memory.Process().ResetPeak() }

// Helpers of the other wrappers: the policy lives in memory and backend.
func allocatorFor(dev backend.Device, purpose string) (*memory.Allocator, error) {
	return memory.AllocatorFor(dev, purpose)
}
func parseShape(s string) ([]int, error)            { return backend.ParseShape(s) }
func formatShape(shape []int) string                { return backend.FormatShape(shape) }
func parseDType(name string) (backend.DType, error) { return backend.ParseDType(name) }

// Tensor is a lockable, resizable n-d buffer (memory.DeviceTensor).
type Tensor struct{ t *memory.DeviceTensor }

// NewTensor allocates a tensor; shape is comma-separated ("3,4,5").
func NewTensor(dev *Device, shape, dtype string, pinned bool) (*Tensor, error) {
	if dev == nil {
		return nil, tag(badArg("device=None, expected a Device"))
	}
	sh, dt, err := backend.ParseShapeDType(shape, dtype)
	if err != nil {
		return nil, tag(err)
	}
	a, err := memory.AllocatorFor(dev.d, "tensor")
	if err != nil {
		return nil, tag(err)
	}
	t, err := memory.NewDeviceTensor(a, memory.Kind(pinned), sh, dt)
	if err != nil {
		return nil, tag(err)
	}
	return &Tensor{t: t}, nil
}

// Lock takes the lock for owner; timeoutMs < 0 waits forever (GIL released).
func (t *Tensor) Lock(owner int, exclusive bool, timeoutMs int) error {
	timeout := time.Duration(timeoutMs) * time.Millisecond
	if timeoutMs < 0 {
		timeout = -1
	}
	return tag(t.t.Lock(int64(owner), exclusive, timeout))
}

// Unlock releases one level of owner's lock.
func (t *Tensor) Unlock(owner int, exclusive bool) error {
	return tag(t.t.Unlock(int64(owner), exclusive))
}

// Resize changes shape and dtype; a LockError if owner holds the lock
// (memory.ErrLockHeld).
func (t *Tensor) Resize(owner int, shape, dtype string) error {
	sh, dt, err := backend.ParseShapeDType(shape, dtype)
	if err != nil {
		return tag(err)
	}
	return tag(t.t.Resize(int64(owner), sh, dt))
}

// View borrows the current memory with its shape and dtype (a ClosedError
// after Close): the view stays valid across Resize and Close.
func (t *Tensor) View() (*Lease, error) {
	v, err := t.t.View()
	if err != nil {
		return nil, tag(err)
	}
	l := newLease(v.Borrow)
	l.shape, l.dtype = v.Shape, v.DType
	return l, nil
}

// Ptr is the current address; a ClosedError after Close.
func (t *Tensor) Ptr() (int, error) {
	if t.t.Closed() {
		return 0, tag(backend.ErrClosed)
	}
	return int(t.t.Ptr()), nil
}

// Shape is the shape, comma-separated.
func (t *Tensor) Shape() string { return backend.FormatShape(t.t.Shape()) }

// DType is the NumPy dtype name.
func (t *Tensor) DType() string { return t.t.DType().String() }

// Nbytes is the size in bytes.
func (t *Tensor) Nbytes() int { return t.t.Size() }

// Closed reports whether the tensor (or the endpoint owning it) closed it.
func (t *Tensor) Closed() bool { return t.t.Closed() }

// SetReady records the ready event on s after the last write.
func (t *Tensor) SetReady(s *Stream) error {
	if err := streamArg(s); err != nil {
		return tag(err)
	}
	return tag(t.t.SetReady(s.s))
}

// WaitReady makes s wait for the ready event (no host wait).
func (t *Tensor) WaitReady(s *Stream) error {
	if err := streamArg(s); err != nil {
		return tag(err)
	}
	return tag(t.t.WaitReady(s.s))
}

func streamArg(s *Stream) error {
	if s == nil {
		return badArg("stream=None, expected a Stream")
	}
	return s.live()
}

// Close releases the tensor's memory (views keep it until they go).
func (t *Tensor) Close() error { return tag(t.t.Close()) }
