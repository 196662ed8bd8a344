// Package hostmem reads and writes buffers that a Python caller owns and
// names by address (a NumPy array, an array.array), for the duration of one
// call: the boundary's lists, records and bulk data.
//
// The memory is never on the Go heap and the caller keeps it alive until
// the call returns, so the address is turned into a pointer through a
// pointer-to-pointer conversion (vet's uintptr->Pointer concern is about
// Go-heap memory moving, which cannot happen here). Nothing here keeps a
// slice past the call: data Go keeps is copied (CopyIn).
package hostmem

import (
	"unsafe"

	"github.com/vortexgo/vortexgo/gosrc/backend"
)

// Span views the n elements of T at ptr; nil for n == 0. A negative n, or
// ptr 0 with n > 0, is an error wrapping backend.ErrInvalid.
func Span[T any](ptr, n int) ([]T, error) {
	switch {
	case n < 0:
		return nil, backend.Invalidf("n=%d, expected >= 0", n)
	case n == 0:
		return nil, nil
	case ptr == 0:
		return nil, backend.Invalidf("ptr=0 with n=%d, expected the address of %d elements", n, n)
	}
	p := uintptr(ptr)
	return unsafe.Slice((*T)(*(*unsafe.Pointer)(unsafe.Pointer(&p))), n), nil
}

// CopyIn copies the n elements of T at ptr into a new Go slice.
func CopyIn[T any](ptr, n int) ([]T, error) {
	s, err := Span[T](ptr, n)
	if err != nil || s == nil {
		return nil, err
	}
	return append([]T(nil), s...), nil
}

// CopyOut copies src into the caller's buffer of exactly len(src) elements.
func CopyOut[T any](ptr, n int, src []T) error {
	if n != len(src) {
		return backend.Invalidf("n=%d, expected %d", n, len(src))
	}
	dst, err := Span[T](ptr, n)
	copy(dst, src)
	return err
}

// Record writes vals into the caller's n float64s at ptr when they fit,
// and returns len(vals) either way, so a caller whose buffer was too small
// retries with that size (python/vortexgo/toolkit/_records.py).
func Record(ptr, n int, vals ...float64) int {
	if len(vals) <= n {
		dst, _ := Span[float64](ptr, n) // ptr 0 with n > 0 writes nothing
		copy(dst, vals)
	}
	return len(vals)
}

// Ints converts the caller's list of n int64s at ptr (ptr 0 or n <= 0:
// the empty list); values below lo become lo (an id that cannot exist,
// which the callee then names).
func Ints[T ~int | ~uint64 | ~uintptr](ptr, n int, lo int64) []T {
	src, _ := Span[int64](ptr, max(n, 0)) // ptr 0 with n > 0 views nothing
	out := make([]T, 0, len(src))
	for _, v := range src {
		out = append(out, T(max(v, lo)))
	}
	return out
}
