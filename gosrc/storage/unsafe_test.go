package storage

import "unsafe"

// unsafePointer is the address of b's first byte (the bindings pass host
// memory as an address and a length).
func unsafePointer(b []byte) unsafe.Pointer { return unsafe.Pointer(unsafe.SliceData(b)) }
