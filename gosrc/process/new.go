package process

import (
	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/cuda"
	"github.com/vortexgo/vortexgo/gosrc/engine"
)

// The processors on a device a caller names (vortex's processors take it
// in their config; the bindings pass the user's): each refuses a device it
// cannot run on, and every error matches backend.ErrInvalid naming the
// value.

// NewCPUProcessorOn is NewCPUProcessor on dev, which must be the CPU
// device.
func NewCPUProcessorOn(dev backend.Device, cfg Config) (*CPUProcessor, error) {
	if dev.Kind() != backend.CPU {
		return nil, engine.Invalid("CPUProcessor on device %s, expected the cpu device", dev.Name())
	}
	return invalid(NewCPUProcessor(cfg))
}

// NewCUDAProcessorOn is NewCUDAProcessor on dev, which must be a CUDA
// device.
func NewCUDAProcessorOn(dev backend.Device, cfg Config) (*CUDAProcessor, error) {
	cd, ok := dev.(*cuda.Device)
	if !ok {
		return nil, engine.Invalid("CUDAProcessor on device %q, expected a CUDA device", dev.Name())
	}
	return invalid(NewCUDAProcessor(cd, cfg))
}

// NewCopyProcessorOn is NewCopyProcessor on dev, which must be the CPU
// device (vortex's CopyProcessor is a CPU processor).
func NewCopyProcessorOn(dev backend.Device, cfg Config) (*CopyProcessor, error) {
	if dev.Kind() != backend.CPU {
		return nil, engine.Invalid("CopyProcessor on device %s, expected the cpu device (vortex's CopyProcessor is a CPU processor)", dev.Name())
	}
	return invalid(NewCopyProcessor(cfg))
}

// NewNullProcessorOn is NewNullProcessor; a NullProcessor computes nothing,
// so any device will do.
func NewNullProcessorOn(_ backend.Device, cfg Config) (*NullProcessor, error) {
	return invalid(NewNullProcessor(cfg))
}

// invalid makes a constructor's error one that matches backend.ErrInvalid.
func invalid[P any](p P, err error) (P, error) {
	if err != nil {
		var zero P
		return zero, engine.Invalid("%v", err)
	}
	return p, nil
}
