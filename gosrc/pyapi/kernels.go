package pyapi

import (
	"errors"
	"fmt"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/handle"
	"github.com/vortexgo/vortexgo/gosrc/memory"
	"github.com/vortexgo/vortexgo/gosrc/ops"
)

// The operations of Arrays (copy, memset, fill, scale_offset, cast) name
// their memory by registry id (a *Buffer an Array owns or a *Lease a view
// holds) plus an address inside it, never by a bare address: each call
// borrows the memory for its duration and checks the range first, so a
// concurrent free() cannot unmap it underneath (the owner's Free only drops
// its reference) and a wrong size is an error, not a stray write. On the
// CPU backend the operation runs before the call returns; on CUDA it is
// queued, and the driver's free waits for queued work. Id 0 names a host
// address the caller keeps alive for the call (a NumPy array).

// Array operation codes (python/vortexgo/_array.py mirrors them).
const (
	opCopy        = iota // n bytes from (sm, src) to (dm, dst)
	opMemset             // n bytes at (dm, dst) set to byte a
	opFill               // n elements of dt at (dm, dst) set to a
	opScaleOffset        // n elements of dt: dst = src*a + b
	opCast               // n elements of sdt at src converted to dt at dst
)

// ArrayOp runs one array operation on stream sid (the method path: errors
// are raised with their Python class).
func ArrayOp(op, sid, dm, dst, sm, src, n, dt, sdt int, a, b float64) error {
	return tag(arrayOp(op, sid, dm, dst, sm, src, n, dt, sdt, a, b))
}

// FastArrayOp is ArrayOp for the fast path: 0 on success, -1 on failure
// (the Python layer then repeats the call through ArrayOp for the error).
func FastArrayOp(op, sid, dm, dst, sm, src, n, dt, sdt int, a, b float64) int {
	return status(arrayOp(op, sid, dm, dst, sm, src, n, dt, sdt, a, b))
}

func arrayOp(op, sid, dm, dst, sm, src, n, dt, sdt int, a, b float64) (err error) {
	s, err := handle.Get[*Stream](&handles, handle.ID(sid))
	if err != nil {
		return fmt.Errorf("stream: %w", err)
	}
	d, sd := backend.DType(dt), backend.DType(sdt)
	if n < 0 || !d.Valid() || !sd.Valid() {
		return badArg("n=%d dtypes %d/%d, expected n >= 0 and dtype codes of vortexgo", n, dt, sdt)
	}
	dn, sn := n*d.Size(), n*sd.Size() // elements to bytes; n <= MaxBytes was checked on allocation
	switch op {
	case opCopy, opMemset:
		dn, sn = n, n
	case opCast:
	default:
		sn = dn
	}
	if n == 0 {
		return nil
	}
	// The last reference may be ours (the owner freed meanwhile): the
	// release then frees, and its error is this call's to report.
	db, herr := hold(dm, uintptr(dst), dn, s.s, op)
	if herr != nil {
		return fmt.Errorf("destination: %w", herr)
	}
	defer func() { err = errors.Join(err, release(db)) }()
	if op == opCopy || op == opScaleOffset || op == opCast {
		sb, herr := hold(sm, uintptr(src), sn, s.s, op)
		if herr != nil {
			return fmt.Errorf("source: %w", herr)
		}
		defer func() { err = errors.Join(err, release(sb)) }()
	}
	switch op {
	case opCopy:
		return s.s.Copy(uintptr(dst), uintptr(src), n)
	case opMemset:
		if a < 0 || a > 255 || a != float64(byte(a)) {
			return badArg("value=%v, expected a byte 0..255", a)
		}
		return s.s.Memset(uintptr(dst), byte(a), n)
	case opFill:
		if err := d.CheckValue(a); err != nil {
			return fmt.Errorf("fill_value: %w", err)
		}
		return ops.Fill(s.s, uintptr(dst), n, d, a)
	case opScaleOffset:
		return ops.ScaleOffset(s.s, uintptr(dst), uintptr(src), n, d, a, b)
	case opCast:
		return ops.Cast(s.s, uintptr(dst), d, uintptr(src), sd, n)
	}
	return badArg("op=%d, expected an array operation code", op)
}

// hold borrows the memory id names for one operation on s and checks that
// the n bytes at ptr lie inside it and that s can reach them; id 0 is a
// caller-kept host address.
func hold(id int, ptr uintptr, n int, s backend.Stream, op int) (*memory.Borrow, error) {
	if id == 0 {
		return nil, nil
	}
	obj, ok := handles.Lookup(handle.ID(id))
	if !ok {
		return nil, fmt.Errorf("memory %v: %w", handle.ID(id), handle.ErrStale)
	}
	var (
		b   *memory.Borrow
		err error
	)
	switch m := obj.(type) {
	case *Buffer:
		if m.sh == nil {
			return nil, badArg("memory %v is a pool's buffer, expected an array's memory", handle.ID(id))
		}
		b, err = m.sh.Borrow()
	case *Lease:
		if m.b == nil {
			return nil, badArg("memory %v is empty, expected %d bytes", handle.ID(id), n)
		}
		b, err = m.b.Borrow()
	default:
		return nil, badArg("handle %v names a %T, expected an array's memory", handle.ID(id), obj)
	}
	if err != nil {
		return nil, err
	}
	if err := b.Shared().Check(ptr, n); err != nil {
		return nil, errors.Join(err, b.Release())
	}
	if err := reachable(b.Shared().Buffer(), s, op); err != nil {
		return nil, errors.Join(err, b.Release())
	}
	return b, nil
}

// reachable refuses work that would fault: a CPU stream dereferencing GPU
// memory, or a CUDA kernel on host memory the driver does not know. CUDA
// copies reach any host address and (unified addressing) any device's.
func reachable(buf backend.Buffer, s backend.Stream, op int) error {
	md, sd := buf.Device(), s.Device()
	pinnedCUDA := buf.Kind() == backend.PinnedMem && md.Kind() == backend.CUDA
	switch {
	case md.Kind() == sd.Kind() && md.Ordinal() == sd.Ordinal(),
		sd.Kind() == backend.CPU && (md.Kind() == backend.CPU || pinnedCUDA),
		sd.Kind() == backend.CUDA && (op == opCopy || pinnedCUDA):
		return nil
	}
	return badArg("%s memory of %s:%d on a stream of %s:%d, expected a stream that can reach it",
		buf.Kind(), md.Kind(), md.Ordinal(), sd.Kind(), sd.Ordinal())
}

func release(b *memory.Borrow) error {
	if b == nil {
		return nil
	}
	return b.Release()
}
