package pyapi

import (
	"errors"
	"fmt"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/handle"
	"github.com/vortexgo/vortexgo/gosrc/memory"
)

// Array operations name memory by registry id (a *Buffer an Array owns, a
// *Lease a view holds) plus an address in it, never by a bare address: each
// call borrows the memory for its duration and checks the range, so a
// concurrent free() cannot unmap it underneath (Free only drops the owner's
// reference) and a wrong size is an error, not a stray write. CPU streams
// run the operation before returning; on CUDA it is queued, and the
// driver's free waits for queued work. Id 0 is a host address the caller
// keeps alive for the call (a NumPy array).

// ArrayOp runs one memory.Op (code op; n, dtype codes dt and sdt, a, b)
// from (sm, src) to (dm, dst) on stream sid; errors carry their Python class.
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
	o := memory.Op{Code: memory.OpCode(op), N: n, DType: backend.DType(dt), SrcDType: backend.DType(sdt), A: a, B: b}
	dn, sn, err := o.Bytes()
	if err != nil || n == 0 {
		return err
	}
	// The last reference may be ours (the owner freed meanwhile): the
	// release then frees, and its error is this call's to report.
	db, herr := hold(dm, uintptr(dst), dn, s.s, o.Code == memory.OpCopy)
	if herr != nil {
		return fmt.Errorf("destination: %w", herr)
	}
	defer func() { err = errors.Join(err, db.Release()) }()
	if sn > 0 {
		sb, herr := hold(sm, uintptr(src), sn, s.s, o.Code == memory.OpCopy)
		if herr != nil {
			return fmt.Errorf("source: %w", herr)
		}
		defer func() { err = errors.Join(err, sb.Release()) }()
	}
	return o.Run(s.s, uintptr(dst), uintptr(src))
}

// borrower is memory the operations can name: a *Buffer or a *Lease.
type borrower interface {
	borrow() (*memory.Borrow, error)
}

// hold borrows the memory id names for one operation on s and checks that
// the n bytes at ptr lie inside it and that s can reach them; id 0 is a
// caller-kept host address.
func hold(id int, ptr uintptr, n int, s backend.Stream, copying bool) (*memory.Borrow, error) {
	if id == 0 {
		return nil, nil
	}
	m, err := handle.Get[borrower](&handles, handle.ID(id))
	if err != nil {
		return nil, err
	}
	b, err := m.borrow()
	if err != nil {
		return nil, err
	}
	sh := b.Shared()
	if err := errors.Join(sh.Check(ptr, n), sh.Reachable(s, copying)); err != nil {
		return nil, errors.Join(err, b.Release())
	}
	return b, nil
}
