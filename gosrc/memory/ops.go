package memory

import (
	"errors"
	"fmt"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/ops"
)

// OpCode names an operation on arrays (python/vortexgo/_array.py mirrors
// the values).
type OpCode int

// The array operations.
const (
	OpCopy        OpCode = iota // N bytes from source to destination
	OpMemset                    // N bytes set to the byte A
	OpFill                      // N elements of DType set to A
	OpScaleOffset               // N elements of DType: dst = src*A + B
	OpCast                      // N elements of SrcDType converted to DType
)

// Op is one operation on arrays. The caller holds a borrow of the Shared
// memory on each side (see Shared.Check and Shared.Reachable) while it
// runs, so no concurrent close frees it underneath.
type Op struct {
	Code            OpCode
	N               int // bytes for OpCopy and OpMemset, elements otherwise
	DType, SrcDType backend.DType
	A, B            float64
}

// Bytes validates o and returns the bytes it writes and reads (src 0 when
// it reads nothing). N is bounded by backend.MaxBytes, so no product
// overflows.
func (o Op) Bytes() (dst, src int, err error) {
	if o.N < 0 || o.N > backend.MaxBytes || !o.DType.Valid() || !o.SrcDType.Valid() {
		return 0, 0, fmt.Errorf("memory.Op: n=%d dtypes %d/%d, expected 0 <= n <= %d and valid dtypes: %w",
			o.N, o.DType, o.SrcDType, backend.MaxBytes, backend.ErrInvalid)
	}
	switch o.Code {
	case OpCopy:
		return o.N, o.N, nil
	case OpMemset:
		if o.A < 0 || o.A > 255 || o.A != float64(byte(o.A)) {
			return 0, 0, fmt.Errorf("memory.Op: value=%v, expected a byte 0..255: %w", o.A, backend.ErrInvalid)
		}
		return o.N, 0, nil
	case OpFill:
		if err := o.DType.CheckValue(o.A); err != nil {
			return 0, 0, fmt.Errorf("memory.Op: fill_value: %w", err)
		}
		return o.N * o.DType.Size(), 0, nil
	case OpScaleOffset:
		return o.N * o.DType.Size(), o.N * o.DType.Size(), nil
	case OpCast:
		return o.N * o.DType.Size(), o.N * o.SrcDType.Size(), nil
	}
	return 0, 0, fmt.Errorf("memory.Op: code=%d, expected an OpCode: %w", o.Code, backend.ErrInvalid)
}

// Run queues o on s (runs it, on the CPU backend) from src to dst.
func (o Op) Run(s backend.Stream, dst, src uintptr) error {
	switch o.Code {
	case OpCopy:
		return s.Copy(dst, src, o.N)
	case OpMemset:
		return s.Memset(dst, byte(o.A), o.N)
	case OpFill:
		return ops.Fill(s, dst, o.N, o.DType, o.A)
	case OpScaleOffset:
		return ops.ScaleOffset(s, dst, src, o.N, o.DType, o.A, o.B)
	case OpCast:
		return ops.Cast(s, dst, o.DType, src, o.SrcDType, o.N)
	}
	return fmt.Errorf("memory.Op: code=%d, expected an OpCode: %w", o.Code, backend.ErrInvalid)
}

// Borrower is memory an operation can hold for its duration: a *Shared
// through its owner, or a *Borrow (a view's reference, which keeps working
// after the owner closed).
type Borrower interface {
	Borrow() (*Borrow, error)
}

// RunHeld validates o and runs it on s from src to dst, holding the memory
// on each side for the call (a nil Borrower is a host address the caller
// keeps alive, a NumPy array). Each range must lie inside its memory and be
// reachable from s, so a wrong size is an error instead of a stray write;
// a concurrent Close only drops the owner's reference and cannot unmap the
// memory underneath. CPU streams run o before returning; on CUDA it is
// queued, and the driver's free waits for queued work. When the last
// reference is the operation's (the owner closed meanwhile), its release
// frees the memory and reports that error with the operation's.
func (o Op) RunHeld(s backend.Stream, dm Borrower, dst uintptr, sm Borrower, src uintptr) (err error) {
	dn, sn, err := o.Bytes()
	if err != nil || o.N == 0 {
		return err
	}
	db, herr := hold(dm, dst, dn, s, o.Code == OpCopy)
	if herr != nil {
		return fmt.Errorf("destination: %w", herr)
	}
	defer func() { err = errors.Join(err, db.Release()) }()
	if sn > 0 {
		sb, herr := hold(sm, src, sn, s, o.Code == OpCopy)
		if herr != nil {
			return fmt.Errorf("source: %w", herr)
		}
		defer func() { err = errors.Join(err, sb.Release()) }()
	}
	return o.Run(s, dst, src)
}

// hold borrows m for one operation on s after checking that the n bytes at
// ptr lie inside it and that s can reach them; nil m holds nothing.
func hold(m Borrower, ptr uintptr, n int, s backend.Stream, copying bool) (*Borrow, error) {
	if m == nil {
		return nil, nil
	}
	b, err := m.Borrow()
	if err != nil {
		return nil, err
	}
	if err := errors.Join(b.s.Check(ptr, n), b.s.Reachable(s, copying)); err != nil {
		return nil, errors.Join(err, b.Release())
	}
	return b, nil
}
