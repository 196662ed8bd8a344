package pyapi

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
	"strconv"
	"strings"
	"time"

	"github.com/vortexgo/vortexgo/gosrc/engine"
	"github.com/vortexgo/vortexgo/gosrc/internal/dl"
)

// With VORTEXGO_CPUPROFILE=path[,seconds] in the environment the Go core
// writes a CPU profile of its first seconds (default 10) to path, for
// `go tool pprof` against the extension: where the engine's host time
// per block goes on a machine without Go (the GPU machine, bench/host_cost.py
// --profile). Only Go's goroutines are sampled, their driver calls
// (cgo) included; Python's threads are not.
//
// VORTEXGO_TRACE=path[,seconds] writes an execution trace the same way,
// for `go tool trace` (its -pprof=sched and -pprof=sync profiles): where a
// block waits between the engine's goroutines rather than what they compute,
// the part of issue 29's per-block time a CPU profile cannot see.
//
// VORTEXGO_HANG_STACKS=seconds writes every goroutine's stack to stderr once
// that long after the Go core started: a case that hangs inside a Go call
// then shows where Go is waiting (Python's faulthandler shows only the
// Python frames, ending at the call into Go), while a case that ends in time
// prints nothing. VORTEXGO_HANG_STACKS_AT=seconds does the same at that
// moment of CLOCK_MONOTONIC (Python's time.monotonic()), and wins over the
// other: the test harnesses set it just below a case's hang timeout on
// faulthandler's clock, because the Go core starts at vortexgo's first use,
// not at its import, and on a loaded machine that came late enough for a
// relative delay to miss faulthandler's dump.
func init() {
	profileFromEnv("VORTEXGO_CPUPROFILE", pprof.StartCPUProfile, pprof.StopCPUProfile)
	profileFromEnv("VORTEXGO_TRACE", trace.Start, trace.Stop)
	if !stacksAtFromEnv("VORTEXGO_HANG_STACKS_AT") {
		stacksFromEnv("VORTEXGO_HANG_STACKS")
	}
}

// stacksFromEnv arms the one-time goroutine dump of VORTEXGO_HANG_STACKS. A
// bad value is reported on stderr and ignored, as profileFromEnv does.
func stacksFromEnv(name string) {
	spec, _ := dl.Getenv(name) // the live environment: a notebook's os.environ[...] counts
	if spec == "" {
		return
	}
	if d, ok := seconds(name, spec, spec); ok {
		dumpStacksAfter(d, name)
	}
}

// stacksAtFromEnv arms the dump at the CLOCK_MONOTONIC moment (seconds) of
// VORTEXGO_HANG_STACKS_AT, at once if it has passed; it reports whether the
// variable armed it (a bad value is reported on stderr and ignored).
func stacksAtFromEnv(name string) bool {
	spec, _ := dl.Getenv(name) // the live environment: a notebook's os.environ[...] counts
	if spec == "" {
		return false
	}
	at, err := strconv.ParseFloat(spec, 64)
	if err != nil || !(at > 0 && at < 1e9) {
		fmt.Fprintf(os.Stderr, "vortexgo: %s=%q: expected a moment of CLOCK_MONOTONIC in seconds (Python's time.monotonic()); ignored\n", name, spec)
		return false
	}
	d := time.Duration(at*float64(time.Second)) - time.Duration(engine.MonotonicNs())
	dumpStacksAfter(max(d, 0), name)
	return true
}

// dumpStacksAfter writes every goroutine's stack to stderr once, d from
// now; name is the variable that asked for it.
func dumpStacksAfter(d time.Duration, name string) {
	time.AfterFunc(d, func() {
		buf := make([]byte, 4<<20) // bounded: a dump past it is cut, never a growing allocation
		n := runtime.Stack(buf, true)
		fmt.Fprintf(os.Stderr, "vortexgo: goroutine stacks %s after start (%s)\n%s\nvortexgo: end of goroutine stacks\n", d, name, buf[:n])
	})
}

// seconds parses a diagnostic's duration in seconds, (0, 3600]; a bad one is
// reported on stderr naming the variable and its value.
func seconds(name, spec, secs string) (time.Duration, bool) {
	v, err := strconv.ParseFloat(secs, 64)
	if err != nil || !(v > 0 && v <= 3600) {
		fmt.Fprintf(os.Stderr, "vortexgo: %s=%q: seconds %q, expected a number in (0, 3600]; ignored\n", name, spec, secs)
		return 0, false
	}
	return time.Duration(v * float64(time.Second)), true
}

// profileFromEnv starts a profile named by the variable's path[,seconds]
// and stops it after the seconds (10 by default). A bad value is reported
// on stderr and ignored: a diagnostic must never stop the import.
func profileFromEnv(name string, start func(w io.Writer) error, stop func()) {
	spec, _ := dl.Getenv(name) // the live environment: a notebook's os.environ[...] counts
	if spec == "" {
		return
	}
	path, secs, _ := strings.Cut(spec, ",")
	d := 10 * time.Second
	if secs != "" {
		var ok bool
		if d, ok = seconds(name, spec, secs); !ok {
			return
		}
	}
	f, err := os.Create(path)
	if err != nil {
		fmt.Fprintf(os.Stderr, "vortexgo: %s: %v; not profiling\n", name, err)
		return
	}
	if err := start(f); err != nil {
		fmt.Fprintf(os.Stderr, "vortexgo: %s: %v; not profiling\n", name, err)
		_ = f.Close()
		return
	}
	time.AfterFunc(d, func() {
		stop()
		_ = f.Close()
	})
}
