// fakecuda.c is a stand-in libcuda for tests on machines without a GPU.
// Memory is host memory (copies and memsets really happen), every call
// requires the fake context to be current on the calling thread (as the
// real driver does: CUDA_ERROR_INVALID_CONTEXT otherwise), and launches
// of the kernel "probe" record their parameters for the test to read.
// Build: gcc -shared -fPIC -o libfakecuda.so fakecuda.c
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef int CUresult;
#define CTX ((void*)0x1000)

static __thread void* current;

// Call counts of the entry points a pipeline calls per block, for a
// benchmark of the host's cost per block (bench/host_cost.py): indexed as
// fake_call_names; and $FAKECUDA_NOCOPY set makes copies and memsets
// return without moving bytes (the device's DMA, not the host's work).
const char* fake_call_names[] = {"cuLaunchKernel", "cuMemcpyAsync", "cuMemcpy2DAsync", "cuMemsetD8Async",
                                 "cuEventRecord", "cuEventQuery", "cuEventSynchronize", "cuStreamWaitEvent",
                                 "cuStreamQuery", "cuStreamSynchronize", "cuEventElapsedTime", "cuGraphLaunch",
                                 "cuCtxSetCurrent", 0};
long fake_calls[13];
enum { N_LAUNCH, N_COPY, N_COPY2D, N_MEMSET, N_RECORD, N_QUERY, N_EVSYNC, N_WAIT, N_SQUERY, N_SSYNC, N_ELAPSED,
       N_GRAPH, N_CTXSET };
#define TALLY(i) __atomic_add_fetch(&fake_calls[i], 1, __ATOMIC_RELAXED)
static int nocopy = -1;
static int no_copy(void) {
	if (nocopy < 0) nocopy = getenv("FAKECUDA_NOCOPY") != 0;
	return nocopy;
}
// Test hooks, read and written by the test through dlsym'd addresses.
int fake_ctx_sets;
int fake_stream_busy;
// fake_refuse_capture makes cuStreamBeginCapture fail (a driver or library
// that cannot capture), for the fallback of gosrc/process's graphs.
int fake_refuse_capture;
// Stream capture, with the driver's rules for the capturing stream: a
// synchronize or query is refused (CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED),
// so is a wait on an event not recorded in the capture
// (CUDA_ERROR_STREAM_CAPTURE_ISOLATION); either invalidates the capture, and
// every later call on the stream, EndCapture included, then fails with
// CUDA_ERROR_STREAM_CAPTURE_INVALIDATED. As in the driver, each stream
// captures on its own (an engine's slots capture concurrently), and a
// stream that waits on an event recorded in a capture joins that capture
// (the driver's fork): its work is captured, not run, until the capture's
// origin stream waits on an event recorded on it after the fork (the join);
// ending a capture with a fork not joined fails with
// CUDA_ERROR_STREAM_CAPTURE_UNJOINED and ends the forks too. A stream's
// state is 0 none, 1 active, 2 invalidated (cuStreamIsCapturing's
// statuses), kept for up to MAX_CAPTURES streams at once.
#define MAX_CAPTURES 16
static struct {
	void *s, *origin;   // the stream, and the stream whose capture it is in (itself for the origin)
	int state, joined;  // joined: a fork whose origin has waited on it
} captures[MAX_CAPTURES];
static pthread_mutex_t capture_mu = PTHREAD_MUTEX_INITIALIZER;
static int find_capture(void* s) { // under capture_mu
	for (int i = 0; i < MAX_CAPTURES; i++)
		if (captures[i].state && captures[i].s == s) return i;
	return -1;
}
static int capture_state(void* s) {
	pthread_mutex_lock(&capture_mu);
	int i = find_capture(s), st = i < 0 ? 0 : captures[i].state;
	pthread_mutex_unlock(&capture_mu);
	return st;
}
static void* capture_origin(void* s) {
	pthread_mutex_lock(&capture_mu);
	int i = find_capture(s);
	void* o = i < 0 ? NULL : captures[i].origin;
	pthread_mutex_unlock(&capture_mu);
	return o;
}
// begin_capture puts s in origin's capture (origin == s: a new capture)
// and reports whether there was room.
static int begin_capture(void* s, void* origin) {
	int done = 0;
	pthread_mutex_lock(&capture_mu);
	for (int i = 0; i < MAX_CAPTURES && !done; i++) {
		if (!captures[i].state) {
			captures[i].s = s, captures[i].origin = origin, captures[i].state = 1, captures[i].joined = 0;
			done = 1;
		}
	}
	pthread_mutex_unlock(&capture_mu);
	return done;
}
static void invalidate_capture(void* s) {
	pthread_mutex_lock(&capture_mu);
	int i = find_capture(s);
	if (i >= 0) captures[i].state = 2;
	pthread_mutex_unlock(&capture_mu);
}
static int refuse_in_capture(void* s, int code) {
	int st = capture_state(s);
	if (!st) return 0;
	if (st == 2) return 901;
	invalidate_capture(s);
	return code;
}
// An event: its flags, whether its last record was captured, and then the
// stream it was recorded on and that stream's capture origin.
struct fake_event { int flags, captured; void *stream, *origin; };
#define CAPTURED(e) (((struct fake_event*)(e))->captured)

struct fake_stream { int prio; };

// fake_probe: what the last launch of "probe" received.
struct fake_probe {
	unsigned grid[3], block[3], shmem;
	void* stream;
	uint64_t p0; int32_t p1; float p2; double p3;
	int launches;
};
struct fake_probe fake_probe_rec;

#define NEED_CTX() do { if (current != CTX) return 201; } while (0)

CUresult cuInit(unsigned f) { (void)f; return 0; }
// A CUDA 13.0 driver, or $FAKECUDA_DRIVER_VERSION.
CUresult cuDriverGetVersion(int* v) {
	const char* e = getenv("FAKECUDA_DRIVER_VERSION");
	*v = e ? atoi(e) : 13000;
	return 0;
}
CUresult cuGetErrorName(CUresult c, const char** s) {
	switch (c) {
	case 2: *s = "CUDA_ERROR_OUT_OF_MEMORY"; return 0;
	case 201: *s = "CUDA_ERROR_INVALID_CONTEXT"; return 0;
	case 218: *s = "CUDA_ERROR_INVALID_PTX"; return 0;
	case 500: *s = "CUDA_ERROR_NOT_FOUND"; return 0;
	case 600: *s = "CUDA_ERROR_NOT_READY"; return 0;
	case 900: *s = "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED"; return 0;
	case 901: *s = "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED"; return 0;
	case 905: *s = "CUDA_ERROR_STREAM_CAPTURE_ISOLATION"; return 0;
	}
	return 1;
}
CUresult cuGetErrorString(CUresult c, const char** s) {
	switch (c) {
	case 2: *s = "out of memory"; return 0;
	case 201: *s = "invalid device context"; return 0;
	case 218: *s = "a PTX JIT compilation failed"; return 0;
	case 500: *s = "named symbol not found"; return 0;
	}
	return 1;
}
CUresult cuDeviceGetCount(int* n) { *n = 1; return 0; }
CUresult cuDeviceGet(int* d, int o) { if (o != 0) return 101; *d = 0; return 0; }
CUresult cuDeviceGetName(char* n, int len, int d) { (void)d; strncpy(n, "Fake GPU", len); return 0; }
CUresult cuDeviceGetAttribute(int* v, int a, int d) { (void)d; *v = a == 75 ? 9 : a == 76 ? 0 : -1; return 0; }
CUresult cuDeviceTotalMem_v2(size_t* b, int d) { (void)d; *b = 1ull << 30; return 0; }
CUresult cuDevicePrimaryCtxRetain(void** c, int d) { (void)d; *c = CTX; return 0; }
CUresult cuCtxGetCurrent(void** c) { *c = current; return 0; }
CUresult cuCtxSetCurrent(void* c) { TALLY(N_CTXSET); current = c; __sync_fetch_and_add(&fake_ctx_sets, 1); return 0; }
CUresult cuCtxSynchronize(void) { NEED_CTX(); return 0; }
CUresult cuCtxGetStreamPriorityRange(int* l, int* g) { NEED_CTX(); *l = 0; *g = -5; return 0; }
CUresult cuMemGetInfo_v2(size_t* f, size_t* t) { NEED_CTX(); *f = 1ull << 29; *t = 1ull << 30; return 0; }
CUresult cuStreamCreateWithPriority(void** s, unsigned fl, int p) {
	NEED_CTX();
	if (fl != 1) return 1; // the shim must ask for CU_STREAM_NON_BLOCKING
	struct fake_stream* fs = malloc(sizeof *fs);
	fs->prio = p;
	*s = fs;
	return 0;
}
// fake_sync_hold makes cuStreamSynchronize block while it is non-zero;
// fake_in_sync counts the calls blocked there, and fake_destroyed_in_use is
// set if a stream is destroyed while one is: Close must wait for them.
int fake_sync_hold, fake_in_sync, fake_destroyed_in_use;
CUresult cuStreamDestroy_v2(void* s) {
	NEED_CTX();
	if (__atomic_load_n(&fake_in_sync, __ATOMIC_SEQ_CST)) fake_destroyed_in_use = 1;
	free(s);
	return 0;
}
CUresult cuStreamGetPriority(void* s, int* p) { NEED_CTX(); *p = s ? ((struct fake_stream*)s)->prio : 0; return 0; }
CUresult cuStreamSynchronize(void* s) {
	TALLY(N_SSYNC);
	NEED_CTX();
	int r = refuse_in_capture(s, 900);
	if (r) return r;
	__atomic_add_fetch(&fake_in_sync, 1, __ATOMIC_SEQ_CST);
	while (__atomic_load_n(&fake_sync_hold, __ATOMIC_SEQ_CST)) usleep(100);
	__atomic_sub_fetch(&fake_in_sync, 1, __ATOMIC_SEQ_CST);
	fake_stream_busy = 0;
	return 0;
}
CUresult cuStreamQuery(void* s) {
	TALLY(N_SQUERY);
	NEED_CTX();
	int r = refuse_in_capture(s, 900);
	return r ? r : fake_stream_busy ? 600 : 0;
}
CUresult cuStreamWaitEvent(void* s, void* e, unsigned f) {
	TALLY(N_WAIT);
	NEED_CTX();
	if (f > 1) return 1;
	if (capture_state(s) == 2) return 901;
	// CU_EVENT_WAIT_EXTERNAL: in a capture, an external event wait node (the
	// event is not the capture's: no fork, no isolation); outside, a wait.
	if (f == 1) return 0;
	struct fake_event* ev = e;
	if (!ev->captured) return refuse_in_capture(s, 905);
	void* origin = capture_origin(s);
	if (!origin) return begin_capture(s, ev->origin) ? 0 : 1; // a fork: s joins the capture
	if (origin != ev->origin) return refuse_in_capture(s, 905); // another capture's event
	if (origin == s && ev->stream != s) { // the origin joins a fork back
		pthread_mutex_lock(&capture_mu);
		int i = find_capture(ev->stream);
		if (i >= 0) captures[i].joined = 1;
		pthread_mutex_unlock(&capture_mu);
	}
	return 0;
}
CUresult cuEventCreate(void** e, unsigned f) {
	NEED_CTX();
	struct fake_event* ev = calloc(1, sizeof *ev);
	ev->flags = (int)f;
	*e = ev;
	return 0;
}
CUresult cuEventDestroy_v2(void* e) { NEED_CTX(); free(e); return 0; }
CUresult cuEventRecord(void* e, void* s) {
	TALLY(N_RECORD);
	NEED_CTX();
	int st = capture_state(s);
	if (st == 2) return 901;
	struct fake_event* ev = e;
	ev->captured = st != 0, ev->stream = s, ev->origin = st ? capture_origin(s) : NULL;
	return 0;
}
// cuEventRecordWithFlags with CU_EVENT_RECORD_EXTERNAL, as the driver: only
// on a capturing stream, where the record becomes an external event node of
// the graph (the event itself is not the capture's: a wait on it neither
// forks nor isolates), recorded again at each launch.
CUresult cuEventRecordWithFlags(void* e, void* s, unsigned f) {
	if (f == 0) return cuEventRecord(e, s);
	TALLY(N_RECORD);
	NEED_CTX();
	int st = capture_state(s);
	if (f != 1 || st == 0) return 1; // CUDA_ERROR_INVALID_VALUE: external outside a capture
	if (st == 2) return 901;
	return 0;
}
CUresult cuEventQuery(void* e) { (void)e; TALLY(N_QUERY); NEED_CTX(); return fake_stream_busy ? 600 : 0; }
CUresult cuEventSynchronize(void* e) { (void)e; TALLY(N_EVSYNC); NEED_CTX(); fake_stream_busy = 0; return 0; }
CUresult cuEventElapsedTime_v2(float* ms, void* a, void* b) { (void)a; (void)b; TALLY(N_ELAPSED); NEED_CTX(); *ms = 1.5f; return 0; }
CUresult cuMemAlloc_v2(uint64_t* p, size_t n) {
	NEED_CTX();
	if (n > (1ull << 40)) return 2;
	*p = (uint64_t)(uintptr_t)malloc(n);
	return 0;
}
CUresult cuMemFree_v2(uint64_t p) { NEED_CTX(); free((void*)(uintptr_t)p); return 0; }
CUresult cuMemHostAlloc(void** p, size_t n, unsigned f) { NEED_CTX(); if (f != 1) return 1; *p = malloc(n); return 0; }
CUresult cuMemFreeHost(void* p) { NEED_CTX(); free(p); return 0; }
/* Registered ranges: the flags of the last registration and how many are live. */
int fake_register_flags = -1;
int fake_registered = 0;
CUresult cuMemHostRegister_v2(void* p, size_t n, unsigned f) {
	NEED_CTX();
	if (!p || !n) return 1; /* CUDA_ERROR_INVALID_VALUE */
	fake_register_flags = (int)f;
	fake_registered++;
	return 0;
}
/* Peer access: whether the (pretend) devices reach each other, and how
   often it was enabled; enabling it twice is the driver's
   CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED. */
int fake_peer_can = 0;
int fake_peer_enabled = 0;
CUresult cuDeviceCanAccessPeer(int* can, int d, int peer) { (void)d; (void)peer; *can = fake_peer_can; return 0; }
CUresult cuCtxEnablePeerAccess(void* peer, unsigned f) {
	NEED_CTX();
	if (!peer || f != 0) return 1; /* CUDA_ERROR_INVALID_VALUE */
	if (fake_peer_enabled) return 704;
	fake_peer_enabled = 1;
	return 0;
}
CUresult cuMemHostUnregister(void* p) {
	NEED_CTX();
	if (fake_registered == 0) return 712; /* CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED */
	fake_registered--;
	return 0;
}
CUresult cuMemcpyAsync(uint64_t d, uint64_t s, size_t n, void* st) { (void)st; TALLY(N_COPY); NEED_CTX(); if (!no_copy()) memmove((void*)(uintptr_t)d, (void*)(uintptr_t)s, n); return 0; }
CUresult cuMemcpyHtoDAsync_v2(uint64_t d, const void* s, size_t n, void* st) { return cuMemcpyAsync(d, (uint64_t)(uintptr_t)s, n, st); }
CUresult cuMemcpyDtoHAsync_v2(void* d, uint64_t s, size_t n, void* st) { return cuMemcpyAsync((uint64_t)(uintptr_t)d, s, n, st); }
CUresult cuMemcpyDtoDAsync_v2(uint64_t d, uint64_t s, size_t n, void* st) { return cuMemcpyAsync(d, s, n, st); }
typedef struct {
	size_t srcXInBytes, srcY; int srcMemoryType; const void* srcHost; uint64_t srcDevice; void* srcArray; size_t srcPitch;
	size_t dstXInBytes, dstY; int dstMemoryType; void* dstHost; uint64_t dstDevice; void* dstArray; size_t dstPitch;
	size_t WidthInBytes, Height;
} M2D;
CUresult cuMemcpy2DAsync_v2(const M2D* p, void* st) {
	(void)st;
	TALLY(N_COPY2D);
	NEED_CTX();
	if (p->srcMemoryType != 4 || p->dstMemoryType != 4) return 1;
	if (!no_copy())
	for (size_t y = 0; y < p->Height; y++)
		memmove((char*)(uintptr_t)p->dstDevice + y * p->dstPitch, (const char*)(uintptr_t)p->srcDevice + y * p->srcPitch,
		        p->WidthInBytes);
	return 0;
}
CUresult cuMemsetD8Async(uint64_t d, unsigned char v, size_t n, void* st) { (void)st; TALLY(N_MEMSET); NEED_CTX(); if (!no_copy()) memset((void*)(uintptr_t)d, v, n); return 0; }
CUresult cuModuleLoadDataEx(void** m, const void* img, unsigned n, int* opts, void** vals) {
	NEED_CTX();
	if (strstr((const char*)img, "bogus")) {
		for (unsigned i = 0; i < n; i++)
			if (opts[i] == 5) strcpy((char*)vals[i], "ptxas fatal: fake syntax error");
		return 218;
	}
	*m = malloc(1);
	return 0;
}
CUresult cuModuleUnload(void* m) { NEED_CTX(); free(m); return 0; }
CUresult cuModuleGetFunction(void** f, void* m, const char* name) {
	(void)m;
	NEED_CTX();
	if (strcmp(name, "missing") == 0) return 500;
	*f = strcmp(name, "probe") == 0 ? (void*)0x2 : (void*)0x1;
	return 0;
}
CUresult cuLaunchKernel(void* f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                        unsigned sh, void* s, void** params, void** extra) {
	TALLY(N_LAUNCH);
	NEED_CTX();
	if (extra) return 1;
	if (f == (void*)0x2) {
		fake_probe_rec.grid[0] = gx; fake_probe_rec.grid[1] = gy; fake_probe_rec.grid[2] = gz;
		fake_probe_rec.block[0] = bx; fake_probe_rec.block[1] = by; fake_probe_rec.block[2] = bz;
		fake_probe_rec.shmem = sh;
		fake_probe_rec.stream = s;
		memcpy(&fake_probe_rec.p0, params[0], 8);
		memcpy(&fake_probe_rec.p1, params[1], 4);
		memcpy(&fake_probe_rec.p2, params[2], 4);
		memcpy(&fake_probe_rec.p3, params[3], 8);
		fake_probe_rec.launches++;
	}
	return 0;
}
CUresult cuStreamBeginCapture_v2(void* s, int mode) {
	NEED_CTX();
	if (mode != 2 || !s || capture_state(s)) return 1;
	if (__atomic_load_n(&fake_refuse_capture, __ATOMIC_SEQ_CST)) return 801; // CUDA_ERROR_NOT_SUPPORTED
	return begin_capture(s, s) ? 0 : 1;
}
CUresult cuStreamEndCapture(void* s, void** g) {
	NEED_CTX();
	int r = 0;
	pthread_mutex_lock(&capture_mu);
	int o = find_capture(s);
	if (o < 0) r = 1;
	else if (captures[o].origin != s) r = 903; // CUDA_ERROR_STREAM_CAPTURE_UNMATCHED: a fork's stream
	else {
		if (captures[o].state == 2) r = 901;
		for (int i = 0; i < MAX_CAPTURES; i++) {
			if (!captures[i].state || captures[i].origin != s) continue;
			if (i != o && !captures[i].joined && !r) r = 904; // CUDA_ERROR_STREAM_CAPTURE_UNJOINED
			captures[i].state = 0;
		}
	}
	pthread_mutex_unlock(&capture_mu);
	*g = r ? NULL : malloc(1);
	return r;
}
CUresult cuStreamIsCapturing(void* s, int* st) { NEED_CTX(); *st = capture_state(s); return 0; }
CUresult cuGraphInstantiateWithFlags(void** e, void* g, unsigned long long f) { (void)g; (void)f; NEED_CTX(); *e = malloc(1); return 0; }
CUresult cuGraphLaunch(void* e, void* s) { (void)e; (void)s; TALLY(N_GRAPH); NEED_CTX(); return 0; }
CUresult cuGraphGetNodes(void* g, void** nodes, size_t* n) { (void)g; NEED_CTX(); if (nodes) return 1; *n = 3; return 0; }
CUresult cuGraphDestroy(void* g) { NEED_CTX(); free(g); return 0; }
CUresult cuGraphExecDestroy(void* e) { NEED_CTX(); free(e); return 0; }
