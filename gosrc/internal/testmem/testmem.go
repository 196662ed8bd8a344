// Package testmem gives tests memory whose address they hand to code as an
// integer, as the Python layer hands over a NumPy buffer's. The memory is
// on the heap and pinned until the test ends, so it cannot move while the
// code writes to it. A slice that does not escape lives on its goroutine's
// stack, and a stack that grows is copied elsewhere: an address taken
// before then points at the old copy, and whatever is written there is
// lost to the test and lands in freed stack memory
// (TestRecordsAt read records that had gone to the old stack, in
// about 1 run in 100 under -race).
package testmem

import (
	"runtime"
	"testing"
	"unsafe"
)

// Slice returns n zeroed Ts (n >= 1) on the heap, pinned until t ends, and
// the address of the first.
func Slice[T any](t testing.TB, n int) ([]T, uintptr) {
	t.Helper()
	if n < 1 {
		t.Fatalf("testmem.Slice: n=%d, expected >= 1", n)
	}
	s := make([]T, n)
	var p runtime.Pinner
	p.Pin(&s[0]) // escapes s to the heap, and keeps it in place
	t.Cleanup(p.Unpin)
	return s, uintptr(unsafe.Pointer(&s[0]))
}
