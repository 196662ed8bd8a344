package cuda

/*
#include "shim.h"
*/
import "C"

import (
	"fmt"
	"sync/atomic"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/internal/invariants"
)

// memHostAllocPortable is CU_MEMHOSTALLOC_PORTABLE: the pinned pages count
// as pinned for every context, not just the one that allocated them.
const memHostAllocPortable = 0x01

// CU_MEMHOSTREGISTER_* flags of cuMemHostRegister.
const (
	memHostRegisterPortable = 0x01
	// memHostRegisterReadOnly pins memory the device only reads: the only
	// way to pin a read-only mapping (a file mapped PROT_READ), whose pages
	// the kernel cannot pin for writing.
	memHostRegisterReadOnly = 0x08
)

// Buffer is device memory (cuMemAlloc_v2), pinned host memory
// (cuMemHostAlloc) or host memory allocated elsewhere and pinned in place
// (cuMemHostRegister: RegisterHost).
type Buffer struct {
	dev        *Device
	ctx        C.uintptr_t
	ptr        uintptr
	size       int
	kind       backend.MemKind
	registered bool // Free unregisters instead of freeing: the memory is not ours
	freed      atomic.Bool
	inv        invariants.Obj
}

var _ backend.Buffer = (*Buffer)(nil)

// Malloc allocates n > 0 bytes of device memory.
func (d *Device) Malloc(n int) (*Buffer, error) {
	if n <= 0 {
		return nil, fmt.Errorf("cuda.Device.Alloc: n=%d, expected n > 0", n)
	}
	r := C.vg_mem_alloc(C.uintptr_t(d.ctx), C.size_t(n))
	if err := errOf(r); err != nil {
		return nil, err
	}
	return &Buffer{dev: d, ctx: C.uintptr_t(d.ctx), ptr: uintptr(r.v0), size: n, kind: backend.DeviceMem,
		inv: invariants.Track("cuda.Buffer", uintptr(r.v0))}, nil
}

// MallocHost allocates n > 0 bytes of page-locked, portable host memory:
// the source or target of copies that do not block the host.
func (d *Device) MallocHost(n int) (*Buffer, error) {
	if n <= 0 {
		return nil, fmt.Errorf("cuda.Device.AllocPinned: n=%d, expected n > 0", n)
	}
	r := C.vg_host_alloc(C.uintptr_t(d.ctx), C.size_t(n), memHostAllocPortable)
	if err := errOf(r); err != nil {
		return nil, err
	}
	return &Buffer{dev: d, ctx: C.uintptr_t(d.ctx), ptr: uintptr(r.v0), size: n, kind: backend.PinnedMem,
		inv: invariants.Track("cuda.Buffer (pinned)", uintptr(r.v0))}, nil
}

// RegisterHost pins the n > 0 bytes of host memory at ptr, which the
// caller allocated (a mapped file, a NumPy array), for every context
// (backend.HostRegistrar). readOnly pins memory the device only reads,
// and is required for a read-only mapping. The caller keeps the memory
// mapped until the returned Buffer's Free has unpinned it.
func (d *Device) RegisterHost(ptr uintptr, n int, readOnly bool) (backend.Buffer, error) {
	if ptr == 0 || n <= 0 {
		return nil, fmt.Errorf("cuda.Device.RegisterHost: ptr=%#x n=%d, expected memory and n > 0", ptr, n)
	}
	flags := C.uint(memHostRegisterPortable)
	if readOnly {
		flags |= memHostRegisterReadOnly
	}
	if err := errOf(C.vg_host_register(C.uintptr_t(d.ctx), C.uintptr_t(ptr), C.size_t(n), flags)); err != nil {
		return nil, err
	}
	return &Buffer{dev: d, ctx: C.uintptr_t(d.ctx), ptr: ptr, size: n, kind: backend.PinnedMem, registered: true,
		inv: invariants.Track("cuda.Buffer (registered)", ptr)}, nil
}

// Ptr returns the address of the first byte (0 for a nil Buffer). In
// invariant builds Ptr after Free panics: our code must not hand out the
// address of memory it freed.
func (b *Buffer) Ptr() uintptr {
	if b == nil {
		return 0
	}
	if invariants.Enabled && b.freed.Load() {
		_ = b.inv.Misuse(errClosed("cuda.Buffer.Ptr"))
	}
	return b.ptr
}

// Size returns the length in bytes.
func (b *Buffer) Size() int { return b.size }

// Kind says whether the bytes are device or pinned memory.
func (b *Buffer) Kind() backend.MemKind { return b.kind }

// Device returns the owning device.
func (b *Buffer) Device() backend.Device { return b.dev }

// Free releases the memory. The driver waits for work using device memory
// before freeing it (cuMemFree synchronises), so freeing does not race
// with queued kernels. Freeing twice returns an error wrapping
// backend.ErrClosed.
func (b *Buffer) Free() error {
	if !b.freed.CompareAndSwap(false, true) {
		return b.inv.Misuse(errClosed("cuda.Buffer.Free"))
	}
	b.inv.Release()
	if b.registered {
		return errOf(C.vg_host_unregister(b.ctx, C.uintptr_t(b.ptr)))
	}
	if b.kind == backend.PinnedMem {
		return errOf(C.vg_host_free(b.ctx, C.uintptr_t(b.ptr)))
	}
	return errOf(C.vg_mem_free(b.ctx, C.uintptr_t(b.ptr)))
}
