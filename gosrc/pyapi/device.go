package pyapi

import (
	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/devices"
	"github.com/vortexgo/vortexgo/gosrc/memory"
)

// Device is a compute device (a CUDA GPU or the CPU).
type Device struct{ d backend.Device }

// CUDAStatus is whether CUDA is available, why not and how many devices
// there are, as one JSON record (devices.CUDAStatus).
func CUDAStatus() string { return devices.CUDAStatus() }

// GetDevice returns the device for spec: "cpu", "cuda", "cuda:N" or "auto".
func GetDevice(spec string) (*Device, error) {
	d, err := devices.Get(spec)
	if err != nil {
		return nil, tag(err)
	}
	return &Device{d: d}, nil
}

// Info describes the device as one JSON record (devices.Info): kind,
// ordinal, name, compute capability, stream priority range and memory.
func (d *Device) Info() (string, error) {
	s, err := devices.Describe(d.d)
	return s, tag(err)
}

// Synchronize blocks until all work on the device is done (GIL released).
func (d *Device) Synchronize() error { return tag(d.d.Synchronize()) }

// NewStream creates a non-blocking stream with a clamped priority.
func (d *Device) NewStream(priority int) (*Stream, error) { return newStream(d.d.NewStream(priority)) }

// WrapStream adopts a foreign stream handle without owning it.
func (d *Device) WrapStream(handle int) (*Stream, error) {
	if handle < 0 {
		return nil, tag(badArg("handle=%d, expected a stream handle >= 0", handle))
	}
	return newStream(d.d.WrapStream(uintptr(handle)))
}

// NewEvent creates an event; timing enables elapsed-time queries.
func (d *Device) NewEvent(timing bool) (*Event, error) { return newEvent(d.d.NewEvent(timing)) }

// allocator is d's allocator charging the process budget as purpose; a
// nil d is Python's None.
func (d *Device) allocator(purpose string) (*memory.Allocator, error) {
	if d == nil {
		return nil, badArg("device=None, expected a Device")
	}
	return memory.AllocatorFor(d.d, purpose)
}

// Alloc allocates nbytes (0 allowed) of device memory, or of pinned host
// memory, charged to the process budget as "array".
func (d *Device) Alloc(nbytes int, pinned bool) (*Buffer, error) {
	a, err := d.allocator("array")
	if err != nil {
		return nil, tag(err)
	}
	return newBuffer(a.AllocShared(memory.Kind(pinned), nbytes))
}
