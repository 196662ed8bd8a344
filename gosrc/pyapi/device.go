package pyapi

import (
	"os"
	"runtime"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/devices"
	"github.com/vortexgo/vortexgo/gosrc/engine"
	"github.com/vortexgo/vortexgo/gosrc/memory"
)

// Device is a compute device (a CUDA GPU or the CPU).
type Device struct{ d backend.Device }

// CUDAStatus is whether CUDA is available, why not and how many devices
// there are, as one JSON record (devices.CUDAStatus).
func CUDAStatus() string { return encodeJSON(devices.CUDAStatus()) }

// GetDevice returns the device for spec: "cpu", "cuda", "cuda:N" or "auto".
func GetDevice(spec string) (*Device, error) {
	d, err := devices.Get(spec)
	return tagged(&Device{d: d}, err)
}

// Info describes the device as one JSON record (devices.Info): kind,
// ordinal, name, compute capability, stream priority range and memory.
func (d *Device) Info() (string, error) {
	in, err := devices.Describe(d.d)
	return encodeJSON(in), tag(err)
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

// Alloc allocates nbytes (0 allowed) of device memory, or of pinned host
// memory, charged to the process budget as "array".
func (d *Device) Alloc(nbytes int, pinned bool) (*Buffer, error) {
	a, err := memory.AllocatorFor(d.d, "array")
	if err != nil {
		return nil, tag(err)
	}
	return newBuffer(a.AllocShared(memory.Kind(pinned), nbytes))
}

// SetEnv sets an environment variable in the Go runtime's copy of the
// environment (Python's os.environ does not reach it once Go has started).
func SetEnv(key, value string) error { return tag(os.Setenv(key, value)) }

// maxCPUThreads bounds SetCPUThreads: far above any host's cores, and a
// typo (a million) is refused rather than handed to the scheduler.
const maxCPUThreads = 4096

// SetCPUThreads sets how many threads run Go code at once (GOMAXPROCS):
// the CPU processor spreads a block over that many goroutines, and a file
// acquisition reads with up to four of them. It returns the previous
// value; n = 0 only reads it. Several processes sharing one host (Dask
// workers) each take their share of the cores this way, not all of them.
// Processors and acquisitions made before the call keep their width.
func SetCPUThreads(n int) (int, error) {
	if n < 0 || n > maxCPUThreads {
		return 0, tag(badArg("SetCPUThreads: threads=%d, expected 1 to %d (0 reads the current value)", n, maxCPUThreads))
	}
	return runtime.GOMAXPROCS(n), nil
}

// Noop does nothing: the benchmark measures one Python->Go call with it.
func Noop() {}

// Goroutines is the number of goroutines in the Go runtime: soak tests
// sample it to show that a long run leaks none (scripts/soak.py).
func Goroutines() int { return runtime.NumGoroutine() }

// MonotonicNs reads CLOCK_MONOTONIC in nanoseconds (engine.MonotonicNs):
// Python's time.monotonic_ns clock, so Go's and Python's times subtract.
func MonotonicNs() int64 { return engine.MonotonicNs() }

// SetMemoryBudget sets the limits in bytes for device and pinned memory
// (0 = unlimited); see memory.Budget.SetLimits.
func SetMemoryBudget(deviceBytes, pinnedBytes int) error {
	return tag(memory.Process().SetLimits(int64(deviceBytes), int64(pinnedBytes)))
}

// MemoryUsage is the process budget's usage as one JSON record
// (memory.Usage.JSON).
func MemoryUsage() string { return encodeJSON(memory.Process().Usage()) }

// ResetMemoryPeak sets the peak usage to the current usage.
func ResetMemoryPeak() { memory.Process().ResetPeak() }
