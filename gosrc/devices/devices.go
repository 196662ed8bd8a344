// Package devices chooses a backend.Device from a user's spec ("auto",
// "cpu", "cuda:1") and lists the devices of both backends.
//
// "auto" (or "") picks CUDA device 0 when a driver loads and reports a
// device, else the CPU, so the same program runs on a laptop and on a GPU
// node. Asking for "cuda" explicitly never falls back: a missing driver is
// an error, because silently running a GPU pipeline on the CPU would hide
// a broken installation behind a 100x slowdown.
package devices

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/cpu"
	"github.com/vortexgo/vortexgo/gosrc/cuda"
)

// cudaAPI is the part of gosrc/cuda this package uses. It is a variable so
// tests can exercise device selection without a GPU (go-nvml's habit).
type cudaAPI interface {
	Init() error
	DeviceCount() (int, error)
	Device(ordinal int) (backend.Device, error)
}

type realCUDA struct{}

func (realCUDA) Init() error               { return cuda.Init() }
func (realCUDA) DeviceCount() (int, error) { return cuda.DeviceCount() }
func (realCUDA) Device(ordinal int) (backend.Device, error) {
	d, err := cuda.GetDevice(ordinal)
	if err != nil {
		return nil, err // not a typed nil inside the interface
	}
	return d, nil
}

var provider cudaAPI = realCUDA{}

// acceptedForms is quoted by every spec error.
const acceptedForms = `"auto", "", "cpu", "cuda" or "cuda:N" (N >= 0)`

// CUDAAvailable reports whether a CUDA driver loads and reports at least one
// device.
func CUDAAvailable() bool {
	if provider.Init() != nil {
		return false
	}
	n, err := provider.DeviceCount()
	return err == nil && n > 0
}

// Get returns the device named by spec: "auto" or "" (CUDA device 0 if
// available, else the CPU), "cpu", "cuda" (= "cuda:0") or "cuda:N". Case
// and surrounding spaces are ignored.
func Get(spec string) (backend.Device, error) {
	s := strings.ToLower(strings.TrimSpace(spec))
	switch s {
	case "", "auto":
		if CUDAAvailable() {
			if d, err := provider.Device(0); err == nil {
				return d, nil
			}
			// A device that is listed but cannot be opened (no memory for
			// its context, exclusive mode taken) falls back like a missing
			// driver: "auto" promises a working device, not a GPU.
		}
		return cpu.Default(), nil
	case "cpu", "cpu:0":
		return cpu.Default(), nil
	}
	rest, ok := strings.CutPrefix(s, "cuda")
	if !ok {
		return nil, fmt.Errorf("devices.Get: device=%q, expected %s: %w", spec, acceptedForms, backend.ErrInvalid)
	}
	ordinal := 0
	if rest != "" {
		num, ok := strings.CutPrefix(rest, ":")
		n, err := strconv.Atoi(num)
		if !ok || err != nil || n < 0 || num != strconv.Itoa(n) {
			return nil, fmt.Errorf("devices.Get: device=%q, expected %s: %w", spec, acceptedForms, backend.ErrInvalid)
		}
		ordinal = n
	}
	if err := provider.Init(); err != nil {
		return nil, fmt.Errorf("devices.Get: device=%q: %w (use \"cpu\" or \"auto\" to run without a GPU)", spec, err)
	}
	d, err := provider.Device(ordinal)
	if err != nil {
		return nil, fmt.Errorf("devices.Get: device=%q: %w", spec, err)
	}
	return d, nil
}

// All returns the CUDA devices that can be opened, in ordinal order, then
// the CPU. Without a driver it returns only the CPU.
func All() []backend.Device {
	var all []backend.Device
	if provider.Init() == nil {
		if n, err := provider.DeviceCount(); err == nil {
			for i := range n {
				if d, err := provider.Device(i); err == nil {
					all = append(all, d)
				}
			}
		}
	}
	return append(all, cpu.Default())
}

// Info describes a device: the record python/vortexgo/_device.py reads in
// one place (one call instead of a getter per field; pyapi encodes it).
type Info struct {
	Kind              string `json:"kind"` // "cuda" or "cpu"
	Ordinal           int    `json:"ordinal"`
	Name              string `json:"name"`
	ComputeCapability [2]int `json:"compute_capability"` // (0, 0) on the CPU
	// PriorityRange is (least, greatest); on CUDA greater is a smaller number.
	PriorityRange [2]int `json:"priority_range"`
	FreeMemory    uint64 `json:"free_memory"` // bytes, read from the driver at the call
	TotalMemory   uint64 `json:"total_memory"`
}

// Describe returns d's Info; it fails when the memory figures cannot be
// read.
func Describe(d backend.Device) (Info, error) {
	in := Info{Kind: d.Kind().String(), Ordinal: d.Ordinal(), Name: d.Name()}
	in.ComputeCapability[0], in.ComputeCapability[1] = d.ComputeCapability()
	in.PriorityRange[0], in.PriorityRange[1] = d.StreamPriorityRange()
	var err error
	if in.FreeMemory, in.TotalMemory, err = d.MemInfo(); err != nil {
		return Info{}, fmt.Errorf("devices.Describe: %s:%d: %w", in.Kind, in.Ordinal, err)
	}
	return in, nil
}

// CUDAState is the CUDA driver's state, the record
// python/vortexgo/_device.py reads in one place: whether a device can be
// used, why not (the loader's or driver's message), and how many there are.
type CUDAState struct {
	Available bool   `json:"available"`
	Reason    string `json:"reason"`
	Devices   int    `json:"devices"`
}

// CUDAStatus returns the CUDA driver's state.
func CUDAStatus() CUDAState {
	return CUDAState{CUDAAvailable(), cuda.UnavailableReason(), cuda.CountOrZero()}
}
