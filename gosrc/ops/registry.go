package ops

import (
	"errors"
	"fmt"
	"log"
	"sort"
	"strings"
	"sync"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/cuda"
	"github.com/vortexgo/vortexgo/kernels"
)

// HostFunc is the CPU twin of a kernel. It receives the same arguments as
// the CUDA kernel, in order, and runs to completion.
type HostFunc func(args ...any) error

var (
	hostMu  sync.RWMutex
	hostFns = map[string]HostFunc{}
)

// RegisterHost registers the CPU implementation of kernel name, replacing
// any earlier one. Packages that add kernels/*.cu call it from init.
func RegisterHost(name string, fn func(args ...any) error) {
	if name == "" || fn == nil {
		panic(fmt.Sprintf("ops.RegisterHost: name=%q fn=%v, expected a kernel name and a function", name, fn != nil))
	}
	hostMu.Lock()
	defer hostMu.Unlock()
	hostFns[name] = fn
}

// hostFunc returns the registered CPU twin of name.
func hostFunc(name string) (HostFunc, bool) {
	hostMu.RLock()
	defer hostMu.RUnlock()
	fn, ok := hostFns[name]
	return fn, ok
}

// OnReplayError receives errors of CPU twins that ran during a graph
// replay (when they were captured, no caller was left to return them to).
// The default logs them. Set it before launching graphs.
var OnReplayError = func(kernel string, err error) {
	log.Printf("vortexgo ops: kernel %s failed during graph replay: %v", kernel, err)
}

// LaunchByName launches kernel name on s with grid x block threads. On a
// *cuda.Stream the kernel is looked up in every embedded PTX module
// (kernels.Names()); on a backend.HostStream its registered CPU twin runs
// in stream order (grid and block are ignored there).
func LaunchByName(s backend.Stream, name string, grid, block [3]uint32, args ...any) error {
	const op = "ops.LaunchByName"
	switch st := s.(type) {
	case nil:
		return fmt.Errorf("%s(%s): s is nil, expected a stream", op, name)
	case *cuda.Stream:
		fn, err := cudaFunction(st.CUDADevice(), name)
		if err != nil {
			return fmt.Errorf("%s: %w", op, err)
		}
		return st.Launch(fn, cuda.Dim3{X: grid[0], Y: grid[1], Z: grid[2]},
			cuda.Dim3{X: block[0], Y: block[1], Z: block[2]}, 0, args...)
	case backend.HostStream:
		fn, ok := hostFunc(name)
		if !ok {
			return fmt.Errorf("%s: no CPU implementation of kernel %q (register one with ops.RegisterHost)", op, name)
		}
		return runHost(st, name, fn, args)
	default:
		return fmt.Errorf("%s(%s): s is %T, expected a *cuda.Stream or a backend.HostStream", op, name, s)
	}
}

// runHost runs fn in stream order. A CPU stream runs it during Enqueue, so
// its error is returned; a capturing stream records it, and its errors
// surface on replay through OnReplayError.
func runHost(s backend.HostStream, name string, fn HostFunc, args []any) error {
	// call decides, under its mutex, whether a run's error goes to this
	// caller (the run happened inside Enqueue) or to OnReplayError (the
	// work was captured and runs later, maybe on another goroutine).
	var call struct {
		mu        sync.Mutex
		done      bool
		abandoned bool
		err       error
	}
	err := s.Enqueue(func() {
		e := fn(args...)
		call.mu.Lock()
		if !call.done && !call.abandoned {
			call.done, call.err = true, e
			call.mu.Unlock()
			return
		}
		call.mu.Unlock()
		if e != nil {
			OnReplayError(name, e)
		}
	})
	if err != nil {
		return err
	}
	call.mu.Lock()
	defer call.mu.Unlock()
	if call.done {
		return call.err
	}
	call.abandoned = true
	return nil
}

// ---- CUDA side ----

var (
	indexOnce sync.Once
	index     map[string]string // kernel name -> module name
	indexErr  error
)

// kernelModule returns the embedded module that defines kernel name.
func kernelModule(name string) (string, error) {
	indexOnce.Do(func() { index, indexErr = buildIndex(kernels.Names(), kernels.Entries) })
	if indexErr != nil {
		return "", indexErr
	}
	mod, ok := index[name]
	if !ok {
		return "", fmt.Errorf("no kernel %q in the embedded modules [%s]", name, strings.Join(kernels.Names(), " "))
	}
	return mod, nil
}

// buildIndex maps each kernel to its module. A name defined twice is an
// error: which one LaunchByName meant would be ambiguous.
func buildIndex(modules []string, entries func(string) ([]string, error)) (map[string]string, error) {
	idx := map[string]string{}
	var errs []error
	for _, m := range modules {
		names, err := entries(m)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, n := range names {
			if prev, dup := idx[n]; dup {
				errs = append(errs, fmt.Errorf("kernel %q is defined in both %s.ptx and %s.ptx", n, prev, m))
				continue
			}
			idx[n] = m
		}
	}
	return idx, errors.Join(errs...)
}

// deviceKernels caches the functions resolved on one device.
type deviceKernels struct {
	mu  sync.RWMutex
	fns map[string]*cuda.Function
}

// cudaFns maps *cuda.Device to *deviceKernels. Keyed by pointer, so a
// lookup does not allocate.
var cudaFns sync.Map

// Prepare resolves the named kernels on dev now, loading (JIT-compiling) the
// modules that define them, so that their first launch, on a stream in a
// hot path, does not: with the driver's JIT cache empty (a fresh machine, a
// container, a driver update) the format module's compile held an engine's
// first block for 2 s on an H100 host (bench/probe_first_block.py), which a
// real-time source cannot wait through. A name no embedded module defines
// is an error on every backend; on devices other than CUDA there is nothing
// to load.
func Prepare(dev backend.Device, names ...string) error {
	for _, n := range names {
		if _, err := kernelModule(n); err != nil {
			return fmt.Errorf("ops.Prepare: %w", err)
		}
	}
	cd, ok := dev.(*cuda.Device)
	if !ok {
		return nil
	}
	for _, n := range names {
		if _, err := cudaFunction(cd, n); err != nil {
			return fmt.Errorf("ops.Prepare: %w", err)
		}
	}
	return nil
}

// cudaFunction returns kernel name on dev, loading its module on first use
// (one JIT compile per module and device).
func cudaFunction(dev *cuda.Device, name string) (*cuda.Function, error) {
	v, ok := cudaFns.Load(dev)
	if !ok {
		v, _ = cudaFns.LoadOrStore(dev, &deviceKernels{fns: map[string]*cuda.Function{}})
	}
	dk := v.(*deviceKernels)
	dk.mu.RLock()
	fn := dk.fns[name]
	dk.mu.RUnlock()
	if fn != nil {
		return fn, nil
	}
	mod, err := kernelModule(name)
	if err != nil {
		return nil, err
	}
	ptx, err := kernels.PTX(mod)
	if err != nil {
		return nil, err
	}
	m, err := dev.LoadNamedModule("kernels/"+mod, ptx)
	if err != nil {
		return nil, err
	}
	fn, err = m.Function(name)
	if err != nil {
		return nil, err
	}
	dk.mu.Lock()
	dk.fns[name] = fn
	dk.mu.Unlock()
	return fn, nil
}

// HostKernels returns the names with a registered CPU twin, sorted.
func HostKernels() []string {
	hostMu.RLock()
	defer hostMu.RUnlock()
	out := make([]string, 0, len(hostFns))
	for n := range hostFns {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
