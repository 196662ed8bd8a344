// fakecufft.c is a stand-in cuFFT for the fake driver (fakecuda.c): plans are
// handles and executions do nothing, so a pipeline's host side (the engine,
// the processors' launches, the formatter) runs without a GPU. Counters say
// how often each entry point was called. Build it as libcufft.so.12 (the
// file name tells vortexgo which CUDA it belongs to):
//   gcc -shared -fPIC -o libcufft.so.12 fakecufft.c
#include <stdint.h>

typedef int cufftResult;
typedef int cufftHandle;

long fake_cufft_plans, fake_cufft_execs, fake_cufft_set_streams, fake_cufft_destroys;
static int next_plan = 1;

cufftResult cufftPlanMany(cufftHandle* plan, int rank, int* n, int* inembed, int istride, int idist, int* onembed,
                          int ostride, int odist, int type, int batch) {
	(void)inembed; (void)istride; (void)idist; (void)onembed; (void)ostride; (void)odist; (void)type;
	if (!plan || rank != 1 || !n || n[0] < 1 || batch < 1) return 4; /* CUFFT_INVALID_VALUE */
	*plan = __sync_fetch_and_add(&next_plan, 1);
	__sync_fetch_and_add(&fake_cufft_plans, 1);
	return 0;
}
cufftResult cufftSetStream(cufftHandle plan, void* stream) {
	(void)plan; (void)stream;
	__sync_fetch_and_add(&fake_cufft_set_streams, 1);
	return 0;
}
cufftResult cufftExecC2C(cufftHandle plan, void* in, void* out, int direction) {
	(void)plan; (void)in; (void)out; (void)direction;
	__sync_fetch_and_add(&fake_cufft_execs, 1);
	return 0;
}
cufftResult cufftExecR2C(cufftHandle plan, void* in, void* out) {
	(void)plan; (void)in; (void)out;
	__sync_fetch_and_add(&fake_cufft_execs, 1);
	return 0;
}
cufftResult cufftDestroy(cufftHandle plan) {
	(void)plan;
	__sync_fetch_and_add(&fake_cufft_destroys, 1);
	return 0;
}
