package pyapi

import (
	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/cuda"
	"github.com/vortexgo/vortexgo/gosrc/devices"
)

// Device is a compute device (a CUDA GPU or the CPU).
type Device struct{ d backend.Device }

// CUDAAvailable reports whether a CUDA driver and at least one device exist.
func CUDAAvailable() bool { return devices.CUDAAvailable() }

// CUDAUnavailableReason explains why CUDA is not available ("" when it is).
func CUDAUnavailableReason() string { return cuda.UnavailableReason() }

// CUDADeviceCount returns the number of CUDA devices (0 without a driver).
func CUDADeviceCount() int { return cuda.CountOrZero() }

// GetDevice returns the device for spec: "cpu", "cuda", "cuda:N" or "auto".
func GetDevice(spec string) (*Device, error) {
	d, err := devices.Get(spec)
	if err != nil {
		return nil, tag(err)
	}
	return &Device{d: d}, nil
}

// Kind returns "cuda" or "cpu".
func (d *Device) Kind() string { return d.d.Kind().String() }

// Ordinal returns the device index within its backend.
func (d *Device) Ordinal() int { return d.d.Ordinal() }

// Name returns the device name.
func (d *Device) Name() string { return d.d.Name() }

// ComputeCapability returns major*10+minor (0 on the CPU).
func (d *Device) ComputeCapability() int {
	maj, min := d.d.ComputeCapability()
	return maj*10 + min
}

// FreeMemory returns free device memory in bytes.
func (d *Device) FreeMemory() (int, error) {
	free, _, err := d.d.MemInfo()
	return int(free), tag(err)
}

// TotalMemory returns total device memory in bytes.
func (d *Device) TotalMemory() (int, error) {
	_, total, err := d.d.MemInfo()
	return int(total), tag(err)
}

// PriorityLeast is the least stream priority (the default).
func (d *Device) PriorityLeast() int { l, _ := d.d.StreamPriorityRange(); return l }

// PriorityGreatest is the greatest stream priority (a smaller number on CUDA).
func (d *Device) PriorityGreatest() int { _, g := d.d.StreamPriorityRange(); return g }

// Synchronize blocks until all work on the device is done (GIL released).
func (d *Device) Synchronize() error { return tag(d.d.Synchronize()) }

// NewStream creates a non-blocking stream with a clamped priority.
func (d *Device) NewStream(priority int) (*Stream, error) {
	s, err := d.d.NewStream(priority)
	if err != nil {
		return nil, tag(err)
	}
	return newStream(s), nil
}

// WrapStream adopts a foreign stream handle without owning it.
func (d *Device) WrapStream(handle int) (*Stream, error) {
	if handle < 0 {
		return nil, tag(badArg("handle=%d, expected a stream handle >= 0", handle))
	}
	s, err := d.d.WrapStream(uintptr(handle))
	if err != nil {
		return nil, tag(err)
	}
	return newStream(s), nil
}

// NewEvent creates an event; timing enables elapsed-time queries.
func (d *Device) NewEvent(timing bool) (*Event, error) {
	e, err := d.d.NewEvent(timing)
	if err != nil {
		return nil, tag(err)
	}
	return newEvent(e), nil
}
