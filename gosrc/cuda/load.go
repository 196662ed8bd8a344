package cuda

/*
#include "shim.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"sync"
	"unsafe"

	"github.com/vortexgo/vortexgo/gosrc/internal/dl"
)

// DriverPathEnv names an environment variable holding the full path of a
// driver library to load instead of libcuda.so.1 (unusual installs, and
// the tests, which load a fake driver through it).
const DriverPathEnv = "VORTEXGO_CUDA_DRIVER"

// driverLibs returns the names tried for the driver. libcuda.so.1 is the
// soname every driver install provides; the unversioned name exists only
// with a toolkit's development stubs.
func driverLibs() []string {
	if p, _ := dl.Getenv(DriverPathEnv); p != "" { // the live environment: set from Python after import counts
		return []string{p}
	}
	return []string{"libcuda.so.1"}
}

// symbol maps a driver function-table slot to the exported names that may
// provide it, tried in order (newest ABI first).
type symbol struct {
	idx   int
	names []string
}

// driverSymbols lists every driver entry point the shim calls. The
// versioned names are the ABI cuda.h's macros resolve to (cuMemAlloc is
// cuMemAlloc_v2 since CUDA 3.2, and so on); calling the unversioned
// symbols through dlsym would get the legacy ABI.
var driverSymbols = []symbol{
	{C.VG_cuInit, []string{"cuInit"}},
	{C.VG_cuGetErrorName, []string{"cuGetErrorName"}},
	{C.VG_cuGetErrorString, []string{"cuGetErrorString"}},
	{C.VG_cuDeviceGetCount, []string{"cuDeviceGetCount"}},
	{C.VG_cuDeviceGet, []string{"cuDeviceGet"}},
	{C.VG_cuDeviceGetName, []string{"cuDeviceGetName"}},
	{C.VG_cuDeviceGetAttribute, []string{"cuDeviceGetAttribute"}},
	{C.VG_cuDeviceTotalMem, []string{"cuDeviceTotalMem_v2"}},
	{C.VG_cuDevicePrimaryCtxRetain, []string{"cuDevicePrimaryCtxRetain"}},
	{C.VG_cuCtxGetCurrent, []string{"cuCtxGetCurrent"}},
	{C.VG_cuCtxSetCurrent, []string{"cuCtxSetCurrent"}},
	{C.VG_cuCtxSynchronize, []string{"cuCtxSynchronize"}},
	{C.VG_cuCtxGetStreamPriorityRange, []string{"cuCtxGetStreamPriorityRange"}},
	{C.VG_cuMemGetInfo, []string{"cuMemGetInfo_v2"}},
	{C.VG_cuStreamCreateWithPriority, []string{"cuStreamCreateWithPriority"}},
	{C.VG_cuStreamDestroy, []string{"cuStreamDestroy_v2"}},
	{C.VG_cuStreamGetPriority, []string{"cuStreamGetPriority"}},
	{C.VG_cuStreamSynchronize, []string{"cuStreamSynchronize"}},
	{C.VG_cuStreamQuery, []string{"cuStreamQuery"}},
	{C.VG_cuStreamWaitEvent, []string{"cuStreamWaitEvent"}},
	{C.VG_cuEventCreate, []string{"cuEventCreate"}},
	{C.VG_cuEventDestroy, []string{"cuEventDestroy_v2"}},
	{C.VG_cuEventRecord, []string{"cuEventRecord"}},
	{C.VG_cuEventRecordWithFlags, []string{"cuEventRecordWithFlags"}},
	{C.VG_cuEventQuery, []string{"cuEventQuery"}},
	{C.VG_cuEventSynchronize, []string{"cuEventSynchronize"}},
	{C.VG_cuEventElapsedTime, []string{"cuEventElapsedTime_v2", "cuEventElapsedTime"}},
	{C.VG_cuMemAlloc, []string{"cuMemAlloc_v2"}},
	{C.VG_cuMemFree, []string{"cuMemFree_v2"}},
	{C.VG_cuMemHostAlloc, []string{"cuMemHostAlloc"}},
	{C.VG_cuMemFreeHost, []string{"cuMemFreeHost"}},
	{C.VG_cuMemHostRegister, []string{"cuMemHostRegister_v2", "cuMemHostRegister"}},
	{C.VG_cuDeviceCanAccessPeer, []string{"cuDeviceCanAccessPeer"}},
	{C.VG_cuCtxEnablePeerAccess, []string{"cuCtxEnablePeerAccess"}},
	{C.VG_cuMemHostUnregister, []string{"cuMemHostUnregister"}},
	{C.VG_cuMemcpyAsync, []string{"cuMemcpyAsync"}},
	{C.VG_cuMemcpyHtoDAsync, []string{"cuMemcpyHtoDAsync_v2"}},
	{C.VG_cuMemcpyDtoHAsync, []string{"cuMemcpyDtoHAsync_v2"}},
	{C.VG_cuMemcpyDtoDAsync, []string{"cuMemcpyDtoDAsync_v2"}},
	{C.VG_cuMemcpy2DAsync, []string{"cuMemcpy2DAsync_v2"}},
	{C.VG_cuMemsetD8Async, []string{"cuMemsetD8Async"}},
	{C.VG_cuModuleLoadDataEx, []string{"cuModuleLoadDataEx"}},
	{C.VG_cuModuleUnload, []string{"cuModuleUnload"}},
	{C.VG_cuModuleGetFunction, []string{"cuModuleGetFunction"}},
	{C.VG_cuLaunchKernel, []string{"cuLaunchKernel"}},
	{C.VG_cuStreamBeginCapture, []string{"cuStreamBeginCapture_v2"}},
	{C.VG_cuStreamEndCapture, []string{"cuStreamEndCapture"}},
	{C.VG_cuStreamIsCapturing, []string{"cuStreamIsCapturing"}},
	{C.VG_cuGraphInstantiateWithFlags, []string{"cuGraphInstantiateWithFlags"}},
	{C.VG_cuGraphLaunch, []string{"cuGraphLaunch"}},
	{C.VG_cuGraphGetNodes, []string{"cuGraphGetNodes"}},
	{C.VG_cuGraphDestroy, []string{"cuGraphDestroy"}},
	{C.VG_cuGraphExecDestroy, []string{"cuGraphExecDestroy"}},
	{C.VG_cuDriverGetVersion, []string{"cuDriverGetVersion"}},
}

// Sizes of the C function tables; a test checks the symbol lists fill them.
const (
	driverFnCount = int(C.VG_FN_COUNT)
	fftFnCount    = int(C.VG_FFT_COUNT)
)

// ErrNoDriver is wrapped by the error Init returns when the driver library
// cannot be loaded, so callers can fall back to the CPU backend with
// errors.Is(err, cuda.ErrNoDriver).
var ErrNoDriver = errors.New("no CUDA driver")

var (
	initOnce sync.Once
	initErr  error
)

// Init loads the driver and calls cuInit, once per process; later calls
// return the first call's result. Without libcuda.so.1 the error reads
// "no CUDA driver: <dlopen's message>".
func Init() error {
	initOnce.Do(func() { initErr = load(driverLibs(), driverSymbols, setDriverFn) })
	return initErr
}

// DriverVersion returns the CUDA version the driver supports, as
// cuDriverGetVersion gives it: 1000*major + 10*minor (13000 for CUDA 13.0,
// 12080 for 12.8), the "CUDA Version" nvidia-smi prints.
func DriverVersion() (int, error) {
	if err := Init(); err != nil {
		return 0, err
	}
	r := C.vg_driver_version()
	if err := errOf(r); err != nil {
		return 0, err
	}
	return int(r.i), nil
}

// Available reports whether a CUDA driver was loaded and initialised.
func Available() bool { return Init() == nil }

// setDriverFn stores a resolved symbol in the C function table.
func setDriverFn(idx int, p unsafe.Pointer) { C.vg_set_fn(C.int(idx), p) }

// load opens the first library of names, resolves syms through set and
// calls cuInit. It is separate from Init so tests can drive it with
// libraries that do or do not exist.
func load(names []string, syms []symbol, set func(int, unsafe.Pointer)) error {
	lib, err := dl.Open(names...)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrNoDriver, err)
	}
	if err := resolve(lib, syms, set); err != nil {
		return fmt.Errorf("%w: %v", ErrNoDriver, err)
	}
	return errOf(C.vg_init())
}

// resolve looks up every symbol, trying its names in order, and reports
// the first symbol none of whose names exists (an old driver).
func resolve(lib *dl.Library, syms []symbol, set func(int, unsafe.Pointer)) error {
	for _, s := range syms {
		var firstErr error
		found := false
		for _, name := range s.names {
			p, err := lib.Sym(name)
			if err != nil {
				if firstErr == nil {
					firstErr = err
				}
				continue
			}
			set(s.idx, p)
			found = true
			break
		}
		if !found {
			return fmt.Errorf("%s lacks %v (driver too old?): %v", lib.Name(), s.names, firstErr)
		}
	}
	return nil
}
