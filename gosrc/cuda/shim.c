// shim.c: the C half of the CUDA driver-API shim. See shim.h.
#include "shim.h"

typedef int CUresult;
typedef int CUdevice;
typedef void* CUcontext;
typedef void* CUstream;
typedef void* CUevent;
typedef void* CUmodule;
typedef void* CUfunction;
typedef void* CUgraph;
typedef void* CUgraphExec;
typedef void* CUgraphNode;
typedef unsigned long long CUdeviceptr;

enum {
	CUDA_SUCCESS = 0,
	CU_STREAM_NON_BLOCKING = 1,
	CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75,
	CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76,
	CU_MEMORYTYPE_UNIFIED = 4,
	CU_JIT_ERROR_LOG_BUFFER = 5,
	CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6,
	CU_STREAM_CAPTURE_MODE_RELAXED = 2,
};

// CUDA_MEMCPY2D (the _v2 layout with size_t fields, CUDA >= 3.2).
typedef struct {
	size_t srcXInBytes;
	size_t srcY;
	int srcMemoryType;
	const void* srcHost;
	CUdeviceptr srcDevice;
	void* srcArray;
	size_t srcPitch;
	size_t dstXInBytes;
	size_t dstY;
	int dstMemoryType;
	void* dstHost;
	CUdeviceptr dstDevice;
	void* dstArray;
	size_t dstPitch;
	size_t WidthInBytes;
	size_t Height;
} vg_memcpy2d_t;

static void* fns[VG_FN_COUNT];
static void* fftfns[VG_FFT_COUNT];

void vg_set_fn(int idx, void* p) {
	if (idx >= 0 && idx < VG_FN_COUNT) fns[idx] = p;
}

void vg_set_fft_fn(int idx, void* p) {
	if (idx >= 0 && idx < VG_FFT_COUNT) fftfns[idx] = p;
}

// F(name, type) casts table entry VG_name to a function pointer type.
#define F(name, type) ((type)fns[VG_##name])
#define FFT(name, type) ((type)fftfns[VG_##name])

static vg_ret ok(void) {
	vg_ret r = {0, 0, 0, 0, 0, 0};
	return r;
}

static vg_ret fail(int code, const char* op) {
	vg_ret r = {code, op, 0, 0, 0, 0};
	return r;
}

// make_current makes ctx current on the calling OS thread. Reading the
// current context is a thread-local load in the driver, so the set (which
// is costlier) happens only when the goroutine landed on a thread where it
// is not current yet. Returns 0 on success.
static int make_current(uintptr_t ctx, const char** op) {
	CUcontext cur = 0;
	CUresult r = F(cuCtxGetCurrent, CUresult (*)(CUcontext*))(&cur);
	if (r != CUDA_SUCCESS) {
		*op = "cuCtxGetCurrent";
		return r;
	}
	if (cur != (CUcontext)ctx) {
		r = F(cuCtxSetCurrent, CUresult (*)(CUcontext))((CUcontext)ctx);
		if (r != CUDA_SUCCESS) {
			*op = "cuCtxSetCurrent";
			return r;
		}
	}
	return 0;
}

// CURRENT(ctx) returns from the enclosing wrapper if ctx cannot be made current.
#define CURRENT(ctx)                                  \
	do {                                              \
		const char* _op = 0;                          \
		int _c = make_current((ctx), &_op);           \
		if (_c != 0) return fail(_c, _op);            \
	} while (0)

// CHECK(call, opname) returns a failure naming opname if call fails.
#define CHECK(call, opname)                             \
	do {                                                \
		CUresult _r = (call);                           \
		if (_r != CUDA_SUCCESS) return fail(_r, opname); \
	} while (0)

vg_ret vg_init(void) {
	CHECK(F(cuInit, CUresult (*)(unsigned int))(0), "cuInit");
	return ok();
}

// vg_driver_version returns cuDriverGetVersion's value (1000*major +
// 10*minor: 12080 for CUDA 12.8) in i.
vg_ret vg_driver_version(void) {
	int v = 0;
	CHECK(F(cuDriverGetVersion, CUresult (*)(int*))(&v), "cuDriverGetVersion");
	vg_ret r = ok();
	r.i = v;
	return r;
}

const char* vg_error_name(int code) {
	const char* s = 0;
	if (fns[VG_cuGetErrorName] == 0) return 0;
	if (F(cuGetErrorName, CUresult (*)(CUresult, const char**))(code, &s) != CUDA_SUCCESS) return 0;
	return s;
}

const char* vg_error_string(int code) {
	const char* s = 0;
	if (fns[VG_cuGetErrorString] == 0) return 0;
	if (F(cuGetErrorString, CUresult (*)(CUresult, const char**))(code, &s) != CUDA_SUCCESS) return 0;
	return s;
}

vg_ret vg_device_count(void) {
	int n = 0;
	CHECK(F(cuDeviceGetCount, CUresult (*)(int*))(&n), "cuDeviceGetCount");
	vg_ret r = ok();
	r.i = n;
	return r;
}

vg_ret vg_device_open(int ordinal, char* name, int namecap) {
	CUdevice dev = 0;
	CUcontext ctx = 0;
	size_t total = 0;
	CHECK(F(cuDeviceGet, CUresult (*)(CUdevice*, int))(&dev, ordinal), "cuDeviceGet");
	CHECK(F(cuDeviceGetName, CUresult (*)(char*, int, CUdevice))(name, namecap, dev), "cuDeviceGetName");
	CHECK(F(cuDeviceTotalMem, CUresult (*)(size_t*, CUdevice))(&total, dev), "cuDeviceTotalMem_v2");
	CHECK(F(cuDevicePrimaryCtxRetain, CUresult (*)(CUcontext*, CUdevice))(&ctx, dev), "cuDevicePrimaryCtxRetain");
	vg_ret r = ok();
	r.v0 = (uintptr_t)ctx;
	r.v1 = (uintptr_t)total;
	r.i = dev;
	return r;
}

vg_ret vg_device_attrs(uintptr_t ctx, int dev) {
	int major = 0, minor = 0, least = 0, greatest = 0;
	CURRENT(ctx);
	CHECK(F(cuDeviceGetAttribute, CUresult (*)(int*, int, CUdevice))(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev),
	      "cuDeviceGetAttribute");
	CHECK(F(cuDeviceGetAttribute, CUresult (*)(int*, int, CUdevice))(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev),
	      "cuDeviceGetAttribute");
	CHECK(F(cuCtxGetStreamPriorityRange, CUresult (*)(int*, int*))(&least, &greatest), "cuCtxGetStreamPriorityRange");
	vg_ret r = ok();
	r.v0 = (uintptr_t)major;
	r.v1 = (uintptr_t)minor;
	r.i = ((long long)least << 32) | (long long)(unsigned int)greatest;
	return r;
}

vg_ret vg_ctx_sync(uintptr_t ctx) {
	CURRENT(ctx);
	CHECK(F(cuCtxSynchronize, CUresult (*)(void))(), "cuCtxSynchronize");
	return ok();
}

vg_ret vg_mem_info(uintptr_t ctx) {
	size_t freeb = 0, total = 0;
	CURRENT(ctx);
	CHECK(F(cuMemGetInfo, CUresult (*)(size_t*, size_t*))(&freeb, &total), "cuMemGetInfo_v2");
	vg_ret r = ok();
	r.v0 = (uintptr_t)freeb;
	r.v1 = (uintptr_t)total;
	return r;
}

// ---- streams ----

vg_ret vg_stream_create(uintptr_t ctx, int priority) {
	CUstream s = 0;
	CURRENT(ctx);
	CHECK(F(cuStreamCreateWithPriority, CUresult (*)(CUstream*, unsigned int, int))(&s, CU_STREAM_NON_BLOCKING, priority),
	      "cuStreamCreateWithPriority");
	vg_ret r = ok();
	r.v0 = (uintptr_t)s;
	return r;
}

vg_ret vg_stream_destroy(uintptr_t ctx, uintptr_t s) {
	CURRENT(ctx);
	CHECK(F(cuStreamDestroy, CUresult (*)(CUstream))((CUstream)s), "cuStreamDestroy_v2");
	return ok();
}

vg_ret vg_stream_priority(uintptr_t ctx, uintptr_t s) {
	int p = 0;
	CURRENT(ctx);
	CHECK(F(cuStreamGetPriority, CUresult (*)(CUstream, int*))((CUstream)s, &p), "cuStreamGetPriority");
	vg_ret r = ok();
	r.i = p;
	return r;
}

vg_ret vg_stream_sync(uintptr_t ctx, uintptr_t s) {
	CURRENT(ctx);
	CHECK(F(cuStreamSynchronize, CUresult (*)(CUstream))((CUstream)s), "cuStreamSynchronize");
	return ok();
}

// vg_stream_query returns CUDA_ERROR_NOT_READY (600) as a code: Go maps it
// to (false, nil).
vg_ret vg_stream_query(uintptr_t ctx, uintptr_t s) {
	CURRENT(ctx);
	CHECK(F(cuStreamQuery, CUresult (*)(CUstream))((CUstream)s), "cuStreamQuery");
	return ok();
}

vg_ret vg_stream_wait(uintptr_t ctx, uintptr_t s, uintptr_t ev) {
	CURRENT(ctx);
	CHECK(F(cuStreamWaitEvent, CUresult (*)(CUstream, CUevent, unsigned int))((CUstream)s, (CUevent)ev, 0),
	      "cuStreamWaitEvent");
	return ok();
}

vg_ret vg_memcpy(uintptr_t ctx, uintptr_t dst, uintptr_t src, size_t n, uintptr_t s) {
	CURRENT(ctx);
	CHECK(F(cuMemcpyAsync, CUresult (*)(CUdeviceptr, CUdeviceptr, size_t, CUstream))(dst, src, n, (CUstream)s),
	      "cuMemcpyAsync");
	return ok();
}

vg_ret vg_memcpy_htod(uintptr_t ctx, uintptr_t dst, uintptr_t src, size_t n, uintptr_t s) {
	CURRENT(ctx);
	CHECK(F(cuMemcpyHtoDAsync, CUresult (*)(CUdeviceptr, const void*, size_t, CUstream))(dst, (const void*)src, n, (CUstream)s),
	      "cuMemcpyHtoDAsync_v2");
	return ok();
}

vg_ret vg_memcpy_dtoh(uintptr_t ctx, uintptr_t dst, uintptr_t src, size_t n, uintptr_t s) {
	CURRENT(ctx);
	CHECK(F(cuMemcpyDtoHAsync, CUresult (*)(void*, CUdeviceptr, size_t, CUstream))((void*)dst, src, n, (CUstream)s),
	      "cuMemcpyDtoHAsync_v2");
	return ok();
}

vg_ret vg_memcpy_dtod(uintptr_t ctx, uintptr_t dst, uintptr_t src, size_t n, uintptr_t s) {
	CURRENT(ctx);
	CHECK(F(cuMemcpyDtoDAsync, CUresult (*)(CUdeviceptr, CUdeviceptr, size_t, CUstream))(dst, src, n, (CUstream)s),
	      "cuMemcpyDtoDAsync_v2");
	return ok();
}

vg_ret vg_memcpy2d(uintptr_t ctx, uintptr_t dst, size_t dpitch, uintptr_t src, size_t spitch,
                   size_t width, size_t height, uintptr_t s) {
	vg_memcpy2d_t p = {0};
	CURRENT(ctx);
	// UNIFIED on both sides: with unified addressing the driver finds out
	// itself whether each pointer is device, pinned or pageable memory.
	p.srcMemoryType = CU_MEMORYTYPE_UNIFIED;
	p.srcDevice = src;
	p.srcPitch = spitch;
	p.dstMemoryType = CU_MEMORYTYPE_UNIFIED;
	p.dstDevice = dst;
	p.dstPitch = dpitch;
	p.WidthInBytes = width;
	p.Height = height;
	CHECK(F(cuMemcpy2DAsync, CUresult (*)(const vg_memcpy2d_t*, CUstream))(&p, (CUstream)s), "cuMemcpy2DAsync_v2");
	return ok();
}

vg_ret vg_memset(uintptr_t ctx, uintptr_t dst, unsigned char v, size_t n, uintptr_t s) {
	CURRENT(ctx);
	CHECK(F(cuMemsetD8Async, CUresult (*)(CUdeviceptr, unsigned char, size_t, CUstream))(dst, v, n, (CUstream)s),
	      "cuMemsetD8Async");
	return ok();
}

vg_ret vg_begin_capture(uintptr_t ctx, uintptr_t s) {
	CURRENT(ctx);
	CHECK(F(cuStreamBeginCapture, CUresult (*)(CUstream, int))((CUstream)s, CU_STREAM_CAPTURE_MODE_RELAXED),
	      "cuStreamBeginCapture_v2");
	return ok();
}

vg_ret vg_end_capture(uintptr_t ctx, uintptr_t s) {
	CUgraph g = 0;
	CUgraphExec exec = 0;
	size_t nodes = 0;
	CURRENT(ctx);
	CHECK(F(cuStreamEndCapture, CUresult (*)(CUstream, CUgraph*))((CUstream)s, &g), "cuStreamEndCapture");
	CUresult r = F(cuGraphGetNodes, CUresult (*)(CUgraph, CUgraphNode*, size_t*))(g, 0, &nodes);
	if (r != CUDA_SUCCESS) {
		F(cuGraphDestroy, CUresult (*)(CUgraph))(g);
		return fail(r, "cuGraphGetNodes");
	}
	r = F(cuGraphInstantiateWithFlags, CUresult (*)(CUgraphExec*, CUgraph, unsigned long long))(&exec, g, 0);
	if (r != CUDA_SUCCESS) {
		F(cuGraphDestroy, CUresult (*)(CUgraph))(g);
		return fail(r, "cuGraphInstantiateWithFlags");
	}
	vg_ret out = ok();
	out.v0 = (uintptr_t)g;
	out.v1 = (uintptr_t)exec;
	out.i = (long long)nodes;
	return out;
}

vg_ret vg_is_capturing(uintptr_t ctx, uintptr_t s) {
	int status = 0;
	CURRENT(ctx);
	CHECK(F(cuStreamIsCapturing, CUresult (*)(CUstream, int*))((CUstream)s, &status), "cuStreamIsCapturing");
	vg_ret r = ok();
	r.i = status;
	return r;
}

vg_ret vg_graph_launch(uintptr_t ctx, uintptr_t exec, uintptr_t s) {
	CURRENT(ctx);
	CHECK(F(cuGraphLaunch, CUresult (*)(CUgraphExec, CUstream))((CUgraphExec)exec, (CUstream)s), "cuGraphLaunch");
	return ok();
}

vg_ret vg_graph_destroy(uintptr_t ctx, uintptr_t graph, uintptr_t exec) {
	CURRENT(ctx);
	CHECK(F(cuGraphExecDestroy, CUresult (*)(CUgraphExec))((CUgraphExec)exec), "cuGraphExecDestroy");
	CHECK(F(cuGraphDestroy, CUresult (*)(CUgraph))((CUgraph)graph), "cuGraphDestroy");
	return ok();
}

// ---- events ----

vg_ret vg_event_create(uintptr_t ctx, unsigned int flags) {
	CUevent ev = 0;
	CURRENT(ctx);
	CHECK(F(cuEventCreate, CUresult (*)(CUevent*, unsigned int))(&ev, flags), "cuEventCreate");
	vg_ret r = ok();
	r.v0 = (uintptr_t)ev;
	return r;
}

vg_ret vg_event_destroy(uintptr_t ctx, uintptr_t ev) {
	CURRENT(ctx);
	CHECK(F(cuEventDestroy, CUresult (*)(CUevent))((CUevent)ev), "cuEventDestroy_v2");
	return ok();
}

vg_ret vg_event_record(uintptr_t ctx, uintptr_t ev, uintptr_t s) {
	CURRENT(ctx);
	CHECK(F(cuEventRecord, CUresult (*)(CUevent, CUstream))((CUevent)ev, (CUstream)s), "cuEventRecord");
	return ok();
}

vg_ret vg_event_record_external(uintptr_t ctx, uintptr_t ev, uintptr_t s) {
	CURRENT(ctx);
	CHECK(F(cuEventRecordWithFlags, CUresult (*)(CUevent, CUstream, unsigned))((CUevent)ev, (CUstream)s, 0x1 /* CU_EVENT_RECORD_EXTERNAL */),
	      "cuEventRecordWithFlags");
	return ok();
}

vg_ret vg_stream_wait_external(uintptr_t ctx, uintptr_t s, uintptr_t ev) {
	CURRENT(ctx);
	CHECK(F(cuStreamWaitEvent, CUresult (*)(CUstream, CUevent, unsigned int))((CUstream)s, (CUevent)ev, 0x1 /* CU_EVENT_WAIT_EXTERNAL */),
	      "cuStreamWaitEvent");
	return ok();
}

vg_ret vg_event_query(uintptr_t ctx, uintptr_t ev) {
	CURRENT(ctx);
	CHECK(F(cuEventQuery, CUresult (*)(CUevent))((CUevent)ev), "cuEventQuery");
	return ok();
}

vg_ret vg_event_sync(uintptr_t ctx, uintptr_t ev) {
	CURRENT(ctx);
	CHECK(F(cuEventSynchronize, CUresult (*)(CUevent))((CUevent)ev), "cuEventSynchronize");
	return ok();
}

vg_ret vg_event_elapsed(uintptr_t ctx, uintptr_t start, uintptr_t end) {
	float ms = 0;
	CURRENT(ctx);
	CHECK(F(cuEventElapsedTime, CUresult (*)(float*, CUevent, CUevent))(&ms, (CUevent)start, (CUevent)end),
	      "cuEventElapsedTime");
	vg_ret r = ok();
	r.f = ms;
	return r;
}

// ---- memory ----

vg_ret vg_mem_alloc(uintptr_t ctx, size_t n) {
	CUdeviceptr p = 0;
	CURRENT(ctx);
	CHECK(F(cuMemAlloc, CUresult (*)(CUdeviceptr*, size_t))(&p, n), "cuMemAlloc_v2");
	vg_ret r = ok();
	r.v0 = (uintptr_t)p;
	return r;
}

vg_ret vg_mem_free(uintptr_t ctx, uintptr_t p) {
	CURRENT(ctx);
	CHECK(F(cuMemFree, CUresult (*)(CUdeviceptr))(p), "cuMemFree_v2");
	return ok();
}

vg_ret vg_host_alloc(uintptr_t ctx, size_t n, unsigned int flags) {
	void* p = 0;
	CURRENT(ctx);
	CHECK(F(cuMemHostAlloc, CUresult (*)(void**, size_t, unsigned int))(&p, n, flags), "cuMemHostAlloc");
	vg_ret r = ok();
	r.v0 = (uintptr_t)p;
	return r;
}

vg_ret vg_host_free(uintptr_t ctx, uintptr_t p) {
	CURRENT(ctx);
	CHECK(F(cuMemFreeHost, CUresult (*)(void*))((void*)p), "cuMemFreeHost");
	return ok();
}

vg_ret vg_host_register(uintptr_t ctx, uintptr_t p, size_t n, unsigned int flags) {
	CURRENT(ctx);
	CHECK(F(cuMemHostRegister, CUresult (*)(void*, size_t, unsigned int))((void*)p, n, flags), "cuMemHostRegister_v2");
	return ok();
}

vg_ret vg_enable_peer(uintptr_t ctx, int dev, uintptr_t peer_ctx, int peer_dev) {
	int can = 0;
	vg_ret r = ok();
	CUresult c;
	CHECK(F(cuDeviceCanAccessPeer, CUresult (*)(int*, CUdevice, CUdevice))(&can, dev, peer_dev), "cuDeviceCanAccessPeer");
	if (!can) return r;
	CURRENT(ctx);
	c = F(cuCtxEnablePeerAccess, CUresult (*)(CUcontext, unsigned int))((CUcontext)peer_ctx, 0);
	if (c != CUDA_SUCCESS && c != 704 /* CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED */) return fail(c, "cuCtxEnablePeerAccess");
	r.i = 1;
	return r;
}

vg_ret vg_host_unregister(uintptr_t ctx, uintptr_t p) {
	CURRENT(ctx);
	CHECK(F(cuMemHostUnregister, CUresult (*)(void*))((void*)p), "cuMemHostUnregister");
	return ok();
}

// ---- modules and kernels ----

vg_ret vg_module_load(uintptr_t ctx, const void* image, char* log, unsigned int logcap) {
	CUmodule m = 0;
	int opts[2] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
	void* vals[2] = {(void*)log, (void*)(uintptr_t)logcap};
	CURRENT(ctx);
	if (logcap > 0) log[0] = 0;
	CHECK(F(cuModuleLoadDataEx, CUresult (*)(CUmodule*, const void*, unsigned int, int*, void**))(&m, image, 2, opts, vals),
	      "cuModuleLoadDataEx");
	vg_ret r = ok();
	r.v0 = (uintptr_t)m;
	return r;
}

vg_ret vg_module_unload(uintptr_t ctx, uintptr_t mod) {
	CURRENT(ctx);
	CHECK(F(cuModuleUnload, CUresult (*)(CUmodule))((CUmodule)mod), "cuModuleUnload");
	return ok();
}

vg_ret vg_module_function(uintptr_t ctx, uintptr_t mod, const char* name) {
	CUfunction fn = 0;
	CURRENT(ctx);
	CHECK(F(cuModuleGetFunction, CUresult (*)(CUfunction*, CUmodule, const char*))(&fn, (CUmodule)mod, name),
	      "cuModuleGetFunction");
	vg_ret r = ok();
	r.v0 = (uintptr_t)fn;
	return r;
}

vg_ret vg_launch(uintptr_t ctx, uintptr_t fn,
                 unsigned int gx, unsigned int gy, unsigned int gz,
                 unsigned int bx, unsigned int by, unsigned int bz,
                 unsigned int shmem, uintptr_t s, const unsigned char* args, int nargs) {
	void* params[VG_MAX_KERNEL_ARGS];
	int i;
	if (nargs < 0 || nargs > VG_MAX_KERNEL_ARGS) return fail(1 /* CUDA_ERROR_INVALID_VALUE */, "cuLaunchKernel");
	CURRENT(ctx);
	// The driver copies each parameter's bytes (sizes come from the
	// kernel's signature) before cuLaunchKernel returns, so pointers into
	// the caller's buffer need to live only for this call.
	for (i = 0; i < nargs; i++) params[i] = (void*)(args + 8 * i);
	CHECK(F(cuLaunchKernel, CUresult (*)(CUfunction, unsigned int, unsigned int, unsigned int, unsigned int, unsigned int,
	                                      unsigned int, unsigned int, CUstream, void**, void**))(
	          (CUfunction)fn, gx, gy, gz, bx, by, bz, shmem, (CUstream)s, nargs > 0 ? params : 0, 0),
	      "cuLaunchKernel");
	return ok();
}

// ---- cuFFT ----
// cuFFT is built on the runtime API, which uses the device's primary
// context: making it current here keeps plans and our streams on one context.

vg_ret vg_fft_plan(uintptr_t ctx, int n, int batch, int type) {
	int plan = 0;
	int dims[1];
	dims[0] = n;
	CURRENT(ctx);
	CHECK(FFT(cufftPlanMany, int (*)(int*, int, int*, int*, int, int, int*, int, int, int, int))(
	          &plan, 1, dims, 0, 1, 0, 0, 1, 0, type, batch),
	      "cufftPlanMany");
	vg_ret r = ok();
	r.i = plan;
	return r;
}

vg_ret vg_fft_set_stream(uintptr_t ctx, int plan, uintptr_t s) {
	CURRENT(ctx);
	CHECK(FFT(cufftSetStream, int (*)(int, void*))(plan, (void*)s), "cufftSetStream");
	return ok();
}

vg_ret vg_fft_exec_c2c(uintptr_t ctx, int plan, uintptr_t in, uintptr_t out, int direction) {
	CURRENT(ctx);
	CHECK(FFT(cufftExecC2C, int (*)(int, void*, void*, int))(plan, (void*)in, (void*)out, direction), "cufftExecC2C");
	return ok();
}

vg_ret vg_fft_exec_r2c(uintptr_t ctx, int plan, uintptr_t in, uintptr_t out) {
	CURRENT(ctx);
	CHECK(FFT(cufftExecR2C, int (*)(int, void*, void*))(plan, (void*)in, (void*)out), "cufftExecR2C");
	return ok();
}

vg_ret vg_fft_destroy(uintptr_t ctx, int plan) {
	CURRENT(ctx);
	CHECK(FFT(cufftDestroy, int (*)(int))(plan), "cufftDestroy");
	return ok();
}

// ---- the fast path (fastpath.h) ----

// The C-visible table of the registry that names the fast path's streams
// and events (handle.Registry.Table, set by Go through vg_fast_use_table):
// Go publishes an entry (kind, ctx, ptr, then gen) and retires it (gen = 0,
// then waits for in_use to drop to 0) before the handle is destroyed.
static vg_handle_slot* table;
static uint32_t table_len;

// tls_ctx caches the context the fast path last made current on this
// thread, so the common call costs no cuCtxGetCurrent. Someone else may
// change the thread's context behind it (CuPy on another device): a failed
// driver call therefore drops the cache and retries once after a real check.
static __thread uintptr_t tls_ctx;

void vg_fast_use_table(uintptr_t t, int slots) {
	// The length last: a reader that sees it sees the table it belongs to.
	__atomic_store_n(&table_len, 0, __ATOMIC_SEQ_CST);
	__atomic_store_n(&table, (vg_handle_slot*)t, __ATOMIC_SEQ_CST);
	__atomic_store_n(&table_len, t && slots > 0 ? (uint32_t)slots : 0, __ATOMIC_SEQ_CST);
}

// acquire returns the live slot id names, marked in use, or 0 if id is
// stale, not published, of another kind, or out of range.
static vg_handle_slot* acquire(int64_t id, int32_t kind) {
	uint32_t idx = (uint32_t)id - 1;
	uint32_t gen = (uint32_t)((uint64_t)id >> VG_ID_SLOT_BITS);
	uint32_t n = __atomic_load_n(&table_len, __ATOMIC_ACQUIRE);
	if (id <= 0 || idx >= n || gen == 0) return 0;
	vg_handle_slot* s = &__atomic_load_n(&table, __ATOMIC_ACQUIRE)[idx];
	// An id the registry does not publish (a CPU object, a borrowed stream)
	// or no longer does costs one load: no mark that a Release would wait on.
	if (__atomic_load_n(&s->gen, __ATOMIC_RELAXED) != gen) return 0;
	// Both sides are seq_cst (a Dekker pair with Go's Release): either this
	// call sees gen == 0 and backs off, or its in_use increment is visible to
	// Release, which waits for it.
	__atomic_fetch_add(&s->in_use, 1, __ATOMIC_SEQ_CST);
	if (__atomic_load_n(&s->gen, __ATOMIC_SEQ_CST) != gen || s->kind != kind) {
		__atomic_fetch_sub(&s->in_use, 1, __ATOMIC_SEQ_CST);
		return 0;
	}
	return s;
}

static void release(vg_handle_slot* s) { __atomic_fetch_sub(&s->in_use, 1, __ATOMIC_SEQ_CST); }

// fast_current makes ctx current on this thread; force skips the cache.
static int fast_current(uintptr_t ctx, int force) {
	const char* op = 0;
	if (!force && tls_ctx == ctx) return 0;
	tls_ctx = 0;
	if (make_current(ctx, &op) != 0) return -1;
	tls_ctx = ctx;
	return 0;
}

enum { CUDA_ERROR_NOT_READY = 600 };

// RUN(ctx, r, call) sets r to call's CUresult with ctx current, retrying
// once with a checked context if the cached one may have been wrong.
#define RUN(ctx, r, call)                                                     \
	do {                                                                      \
		int _try;                                                             \
		r = -1;                                                               \
		for (_try = 0; _try < 2; _try++) {                                    \
			if (fast_current((ctx), _try) != 0) break;                        \
			r = (call);                                                       \
			if (r == CUDA_SUCCESS || r == CUDA_ERROR_NOT_READY) break;        \
		}                                                                     \
	} while (0)

static int done(CUresult r) { return r == CUDA_SUCCESS ? 0 : -1; }

static int ready(CUresult r) {
	if (r == CUDA_SUCCESS) return 1;
	return r == CUDA_ERROR_NOT_READY ? 0 : -1;
}

int vg_fast_event_record(int64_t sid, int64_t eid) {
	CUresult r;
	vg_handle_slot* s = acquire(sid, VG_KIND_STREAM);
	if (!s) return -1;
	vg_handle_slot* e = acquire(eid, VG_KIND_EVENT);
	if (!e) {
		release(s);
		return -1;
	}
	RUN((uintptr_t)s->ctx, r, F(cuEventRecord, CUresult (*)(CUevent, CUstream))((CUevent)(uintptr_t)e->ptr, (CUstream)(uintptr_t)s->ptr));
	release(e);
	release(s);
	return done(r);
}

int vg_fast_stream_wait(int64_t sid, int64_t eid) {
	CUresult r;
	vg_handle_slot* s = acquire(sid, VG_KIND_STREAM);
	if (!s) return -1;
	vg_handle_slot* e = acquire(eid, VG_KIND_EVENT);
	if (!e) {
		release(s);
		return -1;
	}
	RUN((uintptr_t)s->ctx, r,
	    F(cuStreamWaitEvent, CUresult (*)(CUstream, CUevent, unsigned int))((CUstream)(uintptr_t)s->ptr, (CUevent)(uintptr_t)e->ptr, 0));
	release(e);
	release(s);
	return done(r);
}

int vg_fast_event_query(int64_t eid) {
	CUresult r;
	vg_handle_slot* e = acquire(eid, VG_KIND_EVENT);
	if (!e) return -1;
	RUN((uintptr_t)e->ctx, r, F(cuEventQuery, CUresult (*)(CUevent))((CUevent)(uintptr_t)e->ptr));
	release(e);
	return ready(r);
}

int vg_fast_event_sync(int64_t eid) {
	CUresult r;
	vg_handle_slot* e = acquire(eid, VG_KIND_EVENT);
	if (!e) return -1;
	RUN((uintptr_t)e->ctx, r, F(cuEventSynchronize, CUresult (*)(CUevent))((CUevent)(uintptr_t)e->ptr));
	release(e);
	return done(r);
}

int vg_fast_stream_sync(int64_t sid) {
	CUresult r;
	vg_handle_slot* s = acquire(sid, VG_KIND_STREAM);
	if (!s) return -1;
	RUN((uintptr_t)s->ctx, r, F(cuStreamSynchronize, CUresult (*)(CUstream))((CUstream)(uintptr_t)s->ptr));
	release(s);
	return done(r);
}

int vg_fast_stream_query(int64_t sid) {
	CUresult r;
	vg_handle_slot* s = acquire(sid, VG_KIND_STREAM);
	if (!s) return -1;
	RUN((uintptr_t)s->ctx, r, F(cuStreamQuery, CUresult (*)(CUstream))((CUstream)(uintptr_t)s->ptr));
	release(s);
	return ready(r);
}

static const vg_fast_api fast_api = VG_FAST_API_INIT;

uintptr_t vg_fast_api_addr(void) { return (uintptr_t)&fast_api; }
