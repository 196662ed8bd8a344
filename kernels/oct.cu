// OCT processing kernels for gosrc/process.CUDAProcessor: vortex's
// CUDAProcessor chain (src/vortex/process/cuda.cu) with vortex's float32
// arithmetic. The chain is defined in gosrc/process/doc.go; the CPU
// processor computes the same steps, the FFT and step 5 in float64.
//
// Explicit __f*_rn intrinsics forbid the fused multiply-adds nvcc would
// otherwise form, so steps 1-3 are bit for bit those of the CPU processor
// (and of vortex's CPUProcessor, compiled without FMA).
//
// All indices are 32-bit: Config.Validate bounds a block and the history
// to 2^31-1 values.

#include <stdint.h>

#define OCT_LOG10 1
#define OCT_SQUARE 2
#define OCT_MAGNITUDE 4
#define OCT_LEVELS 8

// sample reads record r's sample i of the processed channel, as int16 when
// is_signed (vortex's interpret_as_signed), else as uint16.
__device__ __forceinline__ int sample(const uint16_t *__restrict__ raw, int r, int i, int n, int ch, int channel,
                                      int is_signed) {
    uint16_t v = raw[(r * n + i) * ch + channel];
    return is_signed ? (int)(int16_t)v : (int)v;
}

// Rolling average, part 1: the last cnt records of the block enter the
// history ring (w rows of n values) at row index, wrapping. One thread per
// value; grid ceil(cnt*n / blockDim).
extern "C" __global__ void oct_history(const uint16_t *__restrict__ raw, int32_t *__restrict__ ring, int records,
                                       int n, int ch, int channel, int is_signed, int cnt, int index, int w) {
    int k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= cnt * n) return;
    int q = k / n, i = k % n;
    int r = records - cnt + q;
    int row = (index + q) % w;
    ring[row * n + i] = sample(raw, r, i, n, ch, channel, is_signed);
}

// Rolling average, part 2: the mean of the history's valid rows
// [0, count), from the exact integer sum, divided in float64 and rounded
// once (as the CPU processor's history.mean). Grid ceil(n / blockDim).
extern "C" __global__ void oct_mean(const int32_t *__restrict__ ring, float *__restrict__ avg, int n, int count) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    long long s = 0;
    for (int r = 0; r < count; ++r) s += ring[r * n + i];
    avg[i] = __double2float_rn(__ddiv_rn((double)s, (double)count));
}

// load is step 1 for one value: the sample as float32 minus the average
// record (avg may be null).
__device__ __forceinline__ float load(const uint16_t *__restrict__ raw, const float *__restrict__ avg, int r, int i,
                                      int n, int ch, int channel, int is_signed) {
    float v = (float)sample(raw, r, i, n, ch, channel, is_signed);
    return avg ? __fsub_rn(v, avg[i]) : v;
}

// Steps 1-3: average subtraction, resampling by linear interpolation
// through vortex's tables (before/after indices and weights; null: no
// resampling, m == n) and the complex spectral filter (null: none),
// writing the complex spectrum, m values per record. One-dimensional grid
// of ceil(m/blockDim) blocks per record (gridDim.y would cap records at
// 65535).
extern "C" __global__ void oct_spectrum(const uint16_t *__restrict__ raw, const float *__restrict__ avg,
                                        const int32_t *__restrict__ before, const int32_t *__restrict__ after,
                                        const float *__restrict__ w_before, const float *__restrict__ w_after,
                                        const float2 *__restrict__ filt, float2 *__restrict__ out, int n, int m,
                                        int ch, int channel, int is_signed) {
    int per = (m + blockDim.x - 1) / blockDim.x;
    int r = blockIdx.x / per;
    int j = (blockIdx.x % per) * blockDim.x + threadIdx.x;
    if (j >= m) return;
    float v;
    if (before) {
        float a = load(raw, avg, r, before[j], n, ch, channel, is_signed);
        float b = load(raw, avg, r, after[j], n, ch, channel, is_signed);
        v = __fadd_rn(__fmul_rn(w_before[j], a), __fmul_rn(w_after[j], b));
    } else {
        v = load(raw, avg, r, j, n, ch, channel, is_signed);
    }
    float2 c = make_float2(v, 0.f);
    if (filt) {
        float2 h = filt[j];
        c = make_float2(__fmul_rn(v, h.x), __fmul_rn(v, h.y));
    }
    out[r * m + j] = c;
}

// round_clip is vortex's round_clip_cast to int8: round half away from
// zero, clip, and NaN as 0 (what the device's float-to-int conversion gives).
__device__ __forceinline__ int8_t round_clip(float t) {
    if (t != t) return 0;
    float v = roundf(t);
    if (v >= 127.f) return 127;
    if (v <= -128.f) return -128;
    return (int8_t)(int)v;
}

// Step 5: f = log10(a), a*a or a, for a = |y| (EnableMagnitude, or
// EnableSquare without log10, as vortex) or Re(y); out = out_mul*f +
// out_add and, when out8 is not null, the int8 of lvl_mul*f + lvl_add
// (OCT_LEVELS) or of out. The constants carry the 1/M normalisation, the
// decibel factor and the levels (process.postParams.kernel). Grid-stride
// over total = records*m values.
extern "C" __global__ void oct_post(const float2 *__restrict__ in, float *__restrict__ out,
                                    int8_t *__restrict__ out8, int total, int flags, float out_mul, float out_add,
                                    float lvl_mul, float lvl_add) {
    // Unsigned: total < 2^31 and the stride < 2^31, so k + stride cannot wrap.
    for (unsigned k = blockIdx.x * blockDim.x + threadIdx.x; k < (unsigned)total; k += gridDim.x * blockDim.x) {
        float2 c = in[k];
        bool mag = (flags & OCT_MAGNITUDE) || ((flags & OCT_SQUARE) && !(flags & OCT_LOG10));
        float a = mag ? hypotf(c.x, c.y) : c.x;
        float f;
        if (flags & OCT_LOG10) {
            f = log10f(a);
        } else if (flags & OCT_SQUARE) {
            f = __fmul_rn(a, a);
        } else {
            f = a;
        }
        float v = __fadd_rn(__fmul_rn(out_mul, f), out_add);
        out[k] = v;
        if (out8) {
            float t = (flags & OCT_LEVELS) ? __fadd_rn(__fmul_rn(lvl_mul, f), lvl_add) : v;
            out8[k] = round_clip(t);
        }
    }
}
