package pyapi

import (
	"fmt"
	"os"
	"runtime/pprof"
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
func init() {
	spec := os.Getenv("VORTEXGO_CPUPROFILE")
	if spec == "" {
		return
	}
	path, secs, _ := strings.Cut(spec, ",")
	d := 10 * time.Second
	if secs != "" {
		v, err := strconv.ParseFloat(secs, 64)
		if err != nil || v <= 0 || v > 3600 {
			fmt.Fprintf(os.Stderr, "vortexgo: VORTEXGO_CPUPROFILE=%q: seconds %q, expected a number in (0, 3600]; not profiling\n", spec, secs)
			return
		}
		d = time.Duration(v * float64(time.Second))
	}
	f, err := os.Create(path)
	if err != nil {
		fmt.Fprintf(os.Stderr, "vortexgo: VORTEXGO_CPUPROFILE: %v; not profiling\n", err)
		return
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		fmt.Fprintf(os.Stderr, "vortexgo: VORTEXGO_CPUPROFILE: %v; not profiling\n", err)
		_ = f.Close()
		return
	}
	time.AfterFunc(d, func() {
		pprof.StopCPUProfile()
		_ = f.Close()
	})
}
