// shim.h declares the C side of the CUDA driver-API shim.
//
// No CUDA header is included: the few types and constants used are declared
// here from the documented ABI, so the package builds without a toolkit.
// Every handle crosses into Go as a uintptr_t (never a Go unsafe.Pointer),
// and every wrapper makes the device's context current itself, so one cgo
// call is one driver operation whatever OS thread the goroutine is on.
#ifndef VG_CUDA_SHIM_H
#define VG_CUDA_SHIM_H

#include <stddef.h>
#include <stdint.h>

#include "fastpath.h"

// vg_ret is what every wrapper returns, by value, so hot paths pass no
// out-pointers (a Go pointer handed to C escapes to the heap). code is a
// CUresult (or cufftResult); op names the call that failed (a static
// string); v0, v1, i and f carry results.
typedef struct {
	int code;
	const char* op;
	uintptr_t v0;
	uintptr_t v1;
	long long i;
	float f;
} vg_ret;

// Indices into the driver function table, filled from dlsym by Go.
enum {
	VG_cuInit,
	VG_cuGetErrorName,
	VG_cuGetErrorString,
	VG_cuDeviceGetCount,
	VG_cuDeviceGet,
	VG_cuDeviceGetName,
	VG_cuDeviceGetAttribute,
	VG_cuDeviceTotalMem,
	VG_cuDevicePrimaryCtxRetain,
	VG_cuCtxGetCurrent,
	VG_cuCtxSetCurrent,
	VG_cuCtxSynchronize,
	VG_cuCtxGetStreamPriorityRange,
	VG_cuMemGetInfo,
	VG_cuStreamCreateWithPriority,
	VG_cuStreamDestroy,
	VG_cuStreamGetPriority,
	VG_cuStreamSynchronize,
	VG_cuStreamQuery,
	VG_cuStreamWaitEvent,
	VG_cuEventCreate,
	VG_cuEventDestroy,
	VG_cuEventRecord,
	VG_cuEventRecordWithFlags,
	VG_cuEventQuery,
	VG_cuEventSynchronize,
	VG_cuEventElapsedTime,
	VG_cuMemAlloc,
	VG_cuMemFree,
	VG_cuMemHostAlloc,
	VG_cuMemFreeHost,
	VG_cuMemHostRegister,
	VG_cuDeviceCanAccessPeer,
	VG_cuCtxEnablePeerAccess,
	VG_cuMemHostUnregister,
	VG_cuMemcpyAsync,
	VG_cuMemcpyHtoDAsync,
	VG_cuMemcpyDtoHAsync,
	VG_cuMemcpyDtoDAsync,
	VG_cuMemcpy2DAsync,
	VG_cuMemsetD8Async,
	VG_cuModuleLoadDataEx,
	VG_cuModuleUnload,
	VG_cuModuleGetFunction,
	VG_cuLaunchKernel,
	VG_cuStreamBeginCapture,
	VG_cuStreamEndCapture,
	VG_cuStreamIsCapturing,
	VG_cuGraphInstantiateWithFlags,
	VG_cuGraphLaunch,
	VG_cuGraphGetNodes,
	VG_cuGraphDestroy,
	VG_cuGraphExecDestroy,
	VG_cuDriverGetVersion,
	VG_FN_COUNT
};

// Indices into the cuFFT function table.
enum {
	VG_cufftPlanMany,
	VG_cufftSetStream,
	VG_cufftExecC2C,
	VG_cufftExecR2C,
	VG_cufftDestroy,
	VG_FFT_COUNT
};

// Most kernel parameters one launch takes; each sits in an 8-byte slot.
#define VG_MAX_KERNEL_ARGS 32

void vg_set_fn(int idx, void* p);
void vg_set_fft_fn(int idx, void* p);

vg_ret vg_init(void);
vg_ret vg_driver_version(void);
const char* vg_error_name(int code);
const char* vg_error_string(int code);

// Devices and contexts.
vg_ret vg_device_count(void);
// vg_device_open retains the primary context of device ordinal, fills name
// (namecap bytes) and returns v0 = primary context, v1 = total memory,
// i = CUdevice.
vg_ret vg_device_open(int ordinal, char* name, int namecap);
// vg_device_attrs returns cc major in v0, minor in v1, and the stream
// priority range packed as i = (least << 32) | (greatest & 0xffffffff).
vg_ret vg_device_attrs(uintptr_t ctx, int dev);
vg_ret vg_ctx_sync(uintptr_t ctx);
vg_ret vg_mem_info(uintptr_t ctx);

// Streams.
vg_ret vg_stream_create(uintptr_t ctx, int priority);
vg_ret vg_stream_destroy(uintptr_t ctx, uintptr_t s);
vg_ret vg_stream_priority(uintptr_t ctx, uintptr_t s);
vg_ret vg_stream_sync(uintptr_t ctx, uintptr_t s);
vg_ret vg_stream_query(uintptr_t ctx, uintptr_t s);
vg_ret vg_stream_wait(uintptr_t ctx, uintptr_t s, uintptr_t ev);
vg_ret vg_memcpy(uintptr_t ctx, uintptr_t dst, uintptr_t src, size_t n, uintptr_t s);
vg_ret vg_memcpy_htod(uintptr_t ctx, uintptr_t dst, uintptr_t src, size_t n, uintptr_t s);
vg_ret vg_memcpy_dtoh(uintptr_t ctx, uintptr_t dst, uintptr_t src, size_t n, uintptr_t s);
vg_ret vg_memcpy_dtod(uintptr_t ctx, uintptr_t dst, uintptr_t src, size_t n, uintptr_t s);
vg_ret vg_memcpy2d(uintptr_t ctx, uintptr_t dst, size_t dpitch, uintptr_t src, size_t spitch,
                   size_t width, size_t height, uintptr_t s);
vg_ret vg_memset(uintptr_t ctx, uintptr_t dst, unsigned char v, size_t n, uintptr_t s);
vg_ret vg_begin_capture(uintptr_t ctx, uintptr_t s);
// vg_end_capture returns v0 = CUgraph, v1 = CUgraphExec, i = node count.
vg_ret vg_end_capture(uintptr_t ctx, uintptr_t s);
vg_ret vg_is_capturing(uintptr_t ctx, uintptr_t s);
vg_ret vg_graph_launch(uintptr_t ctx, uintptr_t exec, uintptr_t s);
vg_ret vg_graph_destroy(uintptr_t ctx, uintptr_t graph, uintptr_t exec);

// Events.
vg_ret vg_event_create(uintptr_t ctx, unsigned int flags);
vg_ret vg_event_destroy(uintptr_t ctx, uintptr_t ev);
vg_ret vg_event_record(uintptr_t ctx, uintptr_t ev, uintptr_t s);
// vg_event_record_external records ev on a capturing stream as an external
// event node (CU_EVENT_RECORD_EXTERNAL): each launch of the graph records ev.
vg_ret vg_event_record_external(uintptr_t ctx, uintptr_t ev, uintptr_t s);
// vg_stream_wait_external makes a capturing stream wait on ev as an external
// event wait node (CU_EVENT_WAIT_EXTERNAL): each launch of the graph waits
// for ev's latest record as of that launch.
vg_ret vg_stream_wait_external(uintptr_t ctx, uintptr_t s, uintptr_t ev);
vg_ret vg_event_query(uintptr_t ctx, uintptr_t ev);
vg_ret vg_event_sync(uintptr_t ctx, uintptr_t ev);
vg_ret vg_event_elapsed(uintptr_t ctx, uintptr_t start, uintptr_t end);

// Memory.
vg_ret vg_mem_alloc(uintptr_t ctx, size_t n);
vg_ret vg_mem_free(uintptr_t ctx, uintptr_t p);
vg_ret vg_host_alloc(uintptr_t ctx, size_t n, unsigned int flags);
vg_ret vg_host_free(uintptr_t ctx, uintptr_t p);
vg_ret vg_host_register(uintptr_t ctx, uintptr_t p, size_t n, unsigned int flags);
// vg_enable_peer lets ctx (device dev) reach peer_ctx's memory (device
// peer_dev) directly; i is 1 when it can (now or already), 0 when the
// devices cannot reach each other (copies then stage through the host).
vg_ret vg_enable_peer(uintptr_t ctx, int dev, uintptr_t peer_ctx, int peer_dev);
vg_ret vg_host_unregister(uintptr_t ctx, uintptr_t p);

// Modules and kernels. image must be NUL-terminated PTX; log receives the
// JIT error log (logcap bytes).
vg_ret vg_module_load(uintptr_t ctx, const void* image, char* log, unsigned int logcap);
vg_ret vg_module_unload(uintptr_t ctx, uintptr_t mod);
vg_ret vg_module_function(uintptr_t ctx, uintptr_t mod, const char* name);
// vg_launch builds the void* params[] array on its own stack from args,
// which holds nargs 8-byte slots (one per kernel parameter).
vg_ret vg_launch(uintptr_t ctx, uintptr_t fn,
                 unsigned int gx, unsigned int gy, unsigned int gz,
                 unsigned int bx, unsigned int by, unsigned int bz,
                 unsigned int shmem, uintptr_t s, const unsigned char* args, int nargs);

// cuFFT.
vg_ret vg_fft_plan(uintptr_t ctx, int n, int batch, int type);
vg_ret vg_fft_set_stream(uintptr_t ctx, int plan, uintptr_t s);
vg_ret vg_fft_exec_c2c(uintptr_t ctx, int plan, uintptr_t in, uintptr_t out, int direction);
vg_ret vg_fft_exec_r2c(uintptr_t ctx, int plan, uintptr_t in, uintptr_t out);
vg_ret vg_fft_destroy(uintptr_t ctx, int plan);


// ---- the fast path (fastpath.h, generated: the table and the functions) ----
// vg_fast_use_table makes the fast functions read a registry's C-visible
// table (handle.Registry.Table: its address and length in vg_handle_slots);
// vg_fast_api_addr is
// the address of the process's vg_fast_api.
void vg_fast_use_table(uintptr_t table, int slots);
uintptr_t vg_fast_api_addr(void);

#endif
