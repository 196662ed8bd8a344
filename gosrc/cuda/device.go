package cuda

/*
#include "shim.h"
*/
import "C"

import (
	"fmt"
	"sync"

	"github.com/vortexgo/vortexgo/gosrc/backend"
)

// Device is one CUDA device with its retained primary context. Devices are
// created once per ordinal by GetDevice and live for the process.
type Device struct {
	ordinal  int
	dev      C.int
	ctx      uintptr // CUcontext of the primary context
	name     string
	major    int
	minor    int
	total    uint64
	least    int
	greatest int

	modMu   sync.Mutex
	modules map[string]*Module
}

var (
	_ backend.Device = (*Device)(nil)

	devMu   sync.Mutex
	devices = map[int]*Device{}
)

// UnavailableReason explains why CUDA cannot be used ("" when it can): no
// driver, a failed cuInit, or no device.
func UnavailableReason() string {
	if n, err := DeviceCount(); err != nil {
		return err.Error()
	} else if n == 0 {
		return "no CUDA device found"
	}
	return ""
}

// CountOrZero is DeviceCount with 0 for "no driver" or any driver error.
func CountOrZero() int {
	n, _ := DeviceCount()
	return n
}

// DeviceCount returns the number of CUDA devices; it loads the driver first.
func DeviceCount() (int, error) {
	if err := Init(); err != nil {
		return 0, err
	}
	r := C.vg_device_count()
	if err := errOf(r); err != nil {
		return 0, err
	}
	return int(r.i), nil
}

// GetDevice returns the device of the given ordinal, retaining its primary
// context on first use. The same *Device is returned for an ordinal every
// time, so its module cache is shared.
func GetDevice(ordinal int) (*Device, error) {
	if err := Init(); err != nil {
		return nil, err
	}
	devMu.Lock()
	defer devMu.Unlock()
	if d, ok := devices[ordinal]; ok {
		return d, nil
	}
	n, err := DeviceCount()
	if err != nil {
		return nil, err
	}
	if ordinal < 0 || ordinal >= n {
		return nil, fmt.Errorf("cuda.GetDevice: ordinal=%d, expected 0 <= ordinal < %d: %w", ordinal, n, backend.ErrInvalid)
	}
	var name [256]C.char
	r := C.vg_device_open(C.int(ordinal), &name[0], C.int(len(name)))
	if err := errOf(r); err != nil {
		return nil, err
	}
	d := &Device{
		ordinal: ordinal,
		dev:     C.int(r.i),
		ctx:     uintptr(r.v0),
		name:    C.GoString(&name[0]),
		total:   uint64(r.v1),
		modules: map[string]*Module{},
	}
	a := C.vg_device_attrs(C.uintptr_t(d.ctx), d.dev)
	if err := errOf(a); err != nil {
		return nil, err
	}
	d.major, d.minor = int(a.v0), int(a.v1)
	d.least, d.greatest = int(int32(a.i>>32)), int(int32(a.i))
	devices[ordinal] = d
	return d, nil
}

// Kind returns backend.CUDA.
func (d *Device) Kind() backend.Kind { return backend.CUDA }

// Ordinal returns the device index.
func (d *Device) Ordinal() int { return d.ordinal }

// Name returns the device's marketing name ("NVIDIA H200").
func (d *Device) Name() string { return d.name }

// ComputeCapability returns (major, minor), e.g. (9, 0) on H100/H200.
func (d *Device) ComputeCapability() (major, minor int) { return d.major, d.minor }

// TotalMem returns the device memory in bytes.
func (d *Device) TotalMem() uint64 { return d.total }

// Context returns the primary context's CUcontext handle, for interop.
func (d *Device) Context() uintptr { return d.ctx }

// StreamPriorityRange returns the least and greatest priority (least 0,
// greatest -5 on current GPUs: a smaller number is more urgent).
func (d *Device) StreamPriorityRange() (least, greatest int) { return d.least, d.greatest }

// MemInfo returns free and total device memory in bytes.
func (d *Device) MemInfo() (free, total uint64, err error) {
	r := C.vg_mem_info(C.uintptr_t(d.ctx))
	if err := errOf(r); err != nil {
		return 0, 0, err
	}
	return uint64(r.v0), uint64(r.v1), nil
}

// Synchronize blocks until all work in the device's primary context is
// done, including work queued by other libraries sharing the context.
func (d *Device) Synchronize() error {
	return errOf(C.vg_ctx_sync(C.uintptr_t(d.ctx)))
}

// EnablePeerAccess lets d's context reach peer's memory directly (NVLink
// or PCIe peer to peer), so that copies between them and kernels reading
// across them need not stage through host memory. It reports whether the
// two devices can reach each other; false is not an error (copies still
// work, staged). Enabling it again, or for d itself, does nothing. peer
// must be a *cuda.Device (backend.Device for the engine's devices).
func (d *Device) EnablePeerAccess(peer backend.Device) (bool, error) {
	p, ok := peer.(*Device)
	if !ok || p == nil {
		return false, fmt.Errorf("cuda.Device.EnablePeerAccess: peer is a %T, expected a *cuda.Device: %w", peer, backend.ErrInvalid)
	}
	if p == d {
		return true, nil
	}
	r := C.vg_enable_peer(C.uintptr_t(d.ctx), d.dev, C.uintptr_t(p.ctx), p.dev)
	if err := errOf(r); err != nil {
		return false, fmt.Errorf("cuda.Device.EnablePeerAccess(%s -> %s): %w", d, p, err)
	}
	return r.i == 1, nil
}

// String describes the device for logs.
func (d *Device) String() string {
	return fmt.Sprintf("cuda:%d (%s, sm_%d%d)", d.ordinal, d.name, d.major, d.minor)
}

// NewStream implements backend.Device; see CreateStream.
func (d *Device) NewStream(priority int) (backend.Stream, error) {
	s, err := d.CreateStream(priority)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// WrapStream implements backend.Device; see AdoptStream.
func (d *Device) WrapStream(handle uintptr) (backend.Stream, error) {
	s, err := d.AdoptStream(handle)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// NewEvent implements backend.Device; see CreateEvent.
func (d *Device) NewEvent(timing bool) (backend.Event, error) {
	e, err := d.CreateEvent(timing)
	if err != nil {
		return nil, err
	}
	return e, nil
}

// Alloc implements backend.Device; see Malloc.
func (d *Device) Alloc(n int) (backend.Buffer, error) {
	b, err := d.Malloc(n)
	if err != nil {
		return nil, err
	}
	return b, nil
}

// AllocPinned implements backend.Device; see MallocHost.
func (d *Device) AllocPinned(n int) (backend.Buffer, error) {
	b, err := d.MallocHost(n)
	if err != nil {
		return nil, err
	}
	return b, nil
}
