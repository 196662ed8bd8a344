package pyapi

import (
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"runtime/trace"
	"strconv"
	"strings"
	"time"
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
func init() {
	profileFromEnv("VORTEXGO_CPUPROFILE", pprof.StartCPUProfile, pprof.StopCPUProfile)
	profileFromEnv("VORTEXGO_TRACE", trace.Start, trace.Stop)
}

// profileFromEnv starts a profile named by the variable's path[,seconds]
// and stops it after the seconds (10 by default). A bad value is reported
// on stderr and ignored: a diagnostic must never stop the import.
func profileFromEnv(name string, start func(w io.Writer) error, stop func()) {
	spec := os.Getenv(name)
	if spec == "" {
		return
	}
	path, secs, _ := strings.Cut(spec, ",")
	d := 10 * time.Second
	if secs != "" {
		v, err := strconv.ParseFloat(secs, 64)
		if err != nil || v <= 0 || v > 3600 {
			fmt.Fprintf(os.Stderr, "vortexgo: %s=%q: seconds %q, expected a number in (0, 3600]; not profiling\n", name, spec, secs)
			return
		}
		d = time.Duration(v * float64(time.Second))
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
