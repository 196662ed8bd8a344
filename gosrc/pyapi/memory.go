package pyapi

import (
	"time"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/memory"
)

// Memory that Python names by id: the registry holds the memory.Shared an
// Array owns, or the memory.Borrow a view holds, so the array operations
// hold it for their duration (memory.Op.RunHeld).

// Buffer is memory an Array owns (a memory.Shared; its ID names it in the
// array operations), or a buffer a pool lends (sh nil, ID 0: the pool
// frees it).
type Buffer struct {
	Object
	b  backend.Buffer
	sh *memory.Shared
}

// newBuffer registers sh as memory an Array owns (Free releases the
// owner's reference), or passes err on.
func newBuffer(sh *memory.Shared, err error) (*Buffer, error) {
	if err != nil {
		return nil, tag(err)
	}
	return &Buffer{Object{obj: sh, id: handles.Register(sh)}, sh.Buffer(), sh}, nil
}

// Ptr is the address as an int.
func (b *Buffer) Ptr() int { return int(b.b.Ptr()) }

// Lease borrows the memory for a view, a NumPy view or a DLPack capsule;
// a ClosedError once the owner freed it.
func (b *Buffer) Lease() (*Lease, error) {
	if b.sh == nil {
		return nil, tag(badArg("a pool's buffer cannot be borrowed, expected an array's memory"))
	}
	br, err := b.sh.Borrow()
	return newLease(br, err, "")
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

// Lease is one borrower's reference to memory (an array's, a tensor
// view's, a toolkit buffer's); the Python layer releases it when the
// borrower (a vortexgo._lifetime.Keep, a toolkit view) is collected. Its
// ID names the memory in the array operations (0 for a pool's lend).
type Lease struct {
	Object
	ptr     uintptr
	release func() error // a pool's lend gives the buffer back the pool's way
	info    string       // a tensor view's memory.TensorInfo record
}

// newLease registers b, or passes err on: its id names the memory for as
// long as the lease is held (after the owner freed too).
func newLease(b *memory.Borrow, err error, info string) (*Lease, error) {
	if err != nil {
		return nil, tag(err)
	}
	return &Lease{Object{obj: b, id: handles.Register(b)}, b.Ptr(), b.Release, info}, nil
}

// Ptr is the borrowed memory's address (0 when empty).
func (l *Lease) Ptr() int { return int(l.ptr) }

// Info is a tensor view's shape and dtype when taken (a memory.TensorInfo
// JSON record).
func (l *Lease) Info() string { return l.info }

// Release gives the reference back; the last one frees the memory. A
// second Release is a no-op.
func (l *Lease) Release() error {
	handles.Release(l.id)
	return tag(l.release())
}

// ArrayOp runs one memory.Op (code op; n, dtype codes dt and sdt, a, b) on
// stream sid from (sm, src) to (dm, dst): memory named by registry id plus
// an address in it, never by a bare address, so the operation holds it and
// checks the range (id 0: a host address the caller keeps alive, a NumPy
// array). Errors carry their Python class.
func ArrayOp(op, sid, dm, dst, sm, src, n, dt, sdt int, a, b float64) error {
	return tag(arrayOp(op, sid, dm, dst, sm, src, n, dt, sdt, a, b))
}

// FastArrayOp is ArrayOp for the fast path: 0 on success, -1 on failure
// (the Python layer then repeats the call through ArrayOp for the error).
func FastArrayOp(op, sid, dm, dst, sm, src, n, dt, sdt int, a, b float64) int {
	return status(false, arrayOp(op, sid, dm, dst, sm, src, n, dt, sdt, a, b))
}

func arrayOp(op, sid, dm, dst, sm, src, n, dt, sdt int, a, b float64) error {
	s, err := lookup[*Stream]("stream", sid)
	if err != nil {
		return err
	}
	d, err := memoryOf("destination", dm)
	if err != nil {
		return err
	}
	sr, err := memoryOf("source", sm)
	if err != nil {
		return err
	}
	o := memory.Op{Code: memory.OpCode(op), N: n, DType: backend.DType(dt), SrcDType: backend.DType(sdt), A: a, B: b}
	return o.RunHeld(s.s, d, uintptr(dst), sr, uintptr(src))
}

// memoryOf is the memory id names (nil for 0, a caller-kept host address).
func memoryOf(what string, id int) (memory.Borrower, error) {
	if id == 0 {
		return nil, nil
	}
	return lookup[memory.Borrower](what, id)
}

// Tensor is a lockable, resizable n-d buffer (memory.DeviceTensor);
// Object.Close releases its memory (views keep it until they go).
type Tensor struct {
	Object
	t *memory.DeviceTensor
}

func newTensor(t *memory.DeviceTensor, err error) (*Tensor, error) {
	return tagged(&Tensor{Object{obj: t}, t}, err)
}

// NewTensor allocates a tensor; shape is comma-separated ("3,4,5").
func NewTensor(dev *Device, shape, dtype string, pinned bool) (*Tensor, error) {
	a, err := memory.AllocatorFor(dev.d, "tensor")
	if err != nil {
		return nil, tag(err)
	}
	sh, dt, err := backend.ParseShapeDType(shape, dtype)
	if err != nil {
		return nil, tag(err)
	}
	return newTensor(memory.NewDeviceTensor(a, memory.Kind(pinned), sh, dt))
}

// Lock takes the lock for owner; timeoutMs < 0 waits forever (GIL released).
func (t *Tensor) Lock(owner int, exclusive bool, timeoutMs int) error {
	return tag(t.t.Lock(int64(owner), exclusive, time.Duration(timeoutMs)*time.Millisecond))
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
	return newLease(v.Borrow, err, tensorInfoJSON(v.Info()))
}

// Ptr is the current address; a ClosedError after Close.
func (t *Tensor) Ptr() (int, error) {
	p, err := t.t.LivePtr()
	return int(p), tag(err)
}

// Info is the shape, dtype, size and closed state as one JSON record
// (memory.TensorInfo).
func (t *Tensor) Info() string { return tensorInfoJSON(t.t.Info()) }

// tensorInfoJSON is the info as JSON, a 0-d tensor's shape [] (not null).
func tensorInfoJSON(i memory.TensorInfo) string {
	if i.Shape == nil {
		i.Shape = []int{}
	}
	return encodeJSON(i)
}

// SetReady records the ready event on s after the last write.
func (t *Tensor) SetReady(s *Stream) error { return tag(onStream(s, t.t.SetReady)) }

// WaitReady makes s wait for the ready event (no host wait).
func (t *Tensor) WaitReady(s *Stream) error { return tag(onStream(s, t.t.WaitReady)) }
