package cpu_test

import "unsafe"

// hostPtr returns the address of a Go slice's first byte. The caller keeps
// the slice alive for the duration of the use.
func hostPtr(b []byte) uintptr { return uintptr(unsafe.Pointer(&b[0])) }
