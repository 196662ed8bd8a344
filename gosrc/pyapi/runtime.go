package pyapi

import (
	"os"
	"runtime"

	"github.com/vortexgo/vortexgo/gosrc/engine"
	"github.com/vortexgo/vortexgo/gosrc/memory"
)

// SetEnv sets an environment variable in the Go runtime's copy of the
// environment (Python's os.environ does not reach it once Go has started).
func SetEnv(key, value string) error { return tag(os.Setenv(key, value)) }

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
func MemoryUsage() string { return memory.Process().Usage().JSON() }

// ResetMemoryPeak sets the peak usage to the current usage.
func ResetMemoryPeak() { memory.Process().ResetPeak() }
