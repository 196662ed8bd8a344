package pyapi

import (
	"runtime"

	"golang.org/x/sys/unix"
)

// Goroutines is the number of goroutines in the Go runtime: soak tests
// sample it to show that a long run leaks none (scripts/soak.py).
func Goroutines() int { return runtime.NumGoroutine() }

// MonotonicNs reads CLOCK_MONOTONIC in nanoseconds: the clock behind
// Python's time.monotonic_ns and time.perf_counter_ns on Linux, so values
// from Go and from Python can be subtracted (callback latency, see
// Engine.StartMonotonicNs). 0 if the clock cannot be read.
func MonotonicNs() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return 0
	}
	return ts.Nano()
}
