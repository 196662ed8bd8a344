// OCT processing kernels for gosrc/process.CUDAProcessor.
//
// The chain and its exact arithmetic are defined in gosrc/process/doc.go;
// the CPU processor computes the same float32 operations in the same order
// (explicit __f*_rn intrinsics forbid the fused multiply-adds nvcc would
// otherwise form), so both backends agree bit for bit up to the FFT.
//
// All indices are 32-bit: Config.Validate bounds a block to 2^31-1 values.

#include <stdint.h>

#define OCT_MAGNITUDE 1
#define OCT_SQUARE 2
#define OCT_LOG10 4

// Step 1a: per-chunk column sums of the raw block, t[c*n + i] = sum of
// raw[r*n + i] over the records r of chunk c (chunk records each). They let
// oct_background start each chunk's window sum without re-reading the
// whole window. One-dimensional grid of ceil(n/blockDim) blocks per chunk
// (gridDim.y would cap the chunks at 65535).
extern "C" __global__ void oct_chunk_sums(const uint16_t *__restrict__ raw, uint32_t *__restrict__ t,
                                          int records, int n, int chunk) {
    int per = (n + blockDim.x - 1) / blockDim.x;
    int c = blockIdx.x / per;
    int i = (blockIdx.x % per) * blockDim.x + threadIdx.x;
    if (i >= n) return;
    int lo = c * chunk;
    int hi = min(lo + chunk, records);
    uint32_t s = 0;
    for (int r = lo; r < hi; ++r) s += raw[r * n + i];
    t[c * n + i] = s;
}

// windowStart mirrors process.windowStart.
__device__ __forceinline__ int window_start(int r, int w, int records) {
    return min(max(r - w / 2, 0), records - w);
}

// Step 1b: background subtraction. Each thread owns one sample i of the
// records of one chunk: it forms the window sum of its first record from
// the chunk sums plus at most two partial chunks, then slides the window
// record by record. Integer sums are exact (and unsigned wrap-around in
// the sliding update cancels), so the result equals the CPU's bit for bit.
// Grid as oct_chunk_sums.
extern "C" __global__ void oct_background(const uint16_t *__restrict__ raw, const uint32_t *__restrict__ t,
                                          float *__restrict__ out, int records, int n, int chunk, int window) {
    int per = (n + blockDim.x - 1) / blockDim.x;
    int i = (blockIdx.x % per) * blockDim.x + threadIdx.x;
    if (i >= n) return;
    int lo = (blockIdx.x / per) * chunk;
    int hi = min(lo + chunk, records);
    int w = min(window, records);
    int a = window_start(lo, w, records), b = a + w;
    int ca = (a + chunk - 1) / chunk, cb = b / chunk; // whole chunks inside [a, b)
    uint32_t sum = 0;
    if (ca <= cb) {
        for (int r = a; r < ca * chunk; ++r) sum += raw[r * n + i];
        for (int c = ca; c < cb; ++c) sum += t[c * n + i];
        for (int r = cb * chunk; r < b; ++r) sum += raw[r * n + i];
    } else {
        for (int r = a; r < b; ++r) sum += raw[r * n + i];
    }
    float fw = (float)w;
    for (int r = lo; r < hi; ++r) {
        for (int s = window_start(r, w, records); a < s; ++a) {
            sum += (uint32_t)raw[(a + w) * n + i] - (uint32_t)raw[a * n + i];
        }
        float mean = __fdiv_rn(__uint2float_rn(sum), fw);
        out[r * n + i] = __fsub_rn((float)raw[r * n + i], mean);
    }
}

// Steps 2 and 3: resampling by linear interpolation and the complex
// spectral filter, writing the complex spectrum. pos and filt may be null
// (no resampling: m == n; no filter). One-dimensional grid of
// ceil(m/blockDim) blocks per record (gridDim.y would cap records at 65535).
template <typename T>
__device__ __forceinline__ void resample(const T *__restrict__ in, float2 *__restrict__ out,
                                         const float *__restrict__ pos, const float2 *__restrict__ filt,
                                         int n, int m) {
    int per = (m + blockDim.x - 1) / blockDim.x;
    int r = blockIdx.x / per;
    int j = (blockIdx.x % per) * blockDim.x + threadIdx.x;
    if (j >= m) return;
    const T *x = in + r * n;
    float v;
    if (pos) {
        float p = pos[j];
        int i0 = min((int)p, n - 2); // p >= 0, so truncation is floor
        float f = __fsub_rn(p, (float)i0);
        float a = (float)x[i0], b = (float)x[i0 + 1];
        v = __fadd_rn(a, __fmul_rn(f, __fsub_rn(b, a)));
    } else {
        v = (float)x[j];
    }
    float2 c = make_float2(v, 0.f);
    if (filt) {
        float2 h = filt[j];
        c = make_float2(__fmul_rn(v, h.x), __fmul_rn(v, h.y));
    }
    out[r * m + j] = c;
}

extern "C" __global__ void oct_resample_u16(const uint16_t *__restrict__ in, float2 *__restrict__ out,
                                            const float *__restrict__ pos, const float2 *__restrict__ filt,
                                            int n, int m) {
    resample(in, out, pos, filt, n, m);
}

extern "C" __global__ void oct_resample_f32(const float *__restrict__ in, float2 *__restrict__ out,
                                            const float *__restrict__ pos, const float2 *__restrict__ filt,
                                            int n, int m) {
    resample(in, out, pos, filt, n, m);
}

// Step 5: scaling (1/M after the inverse FFT), magnitude, square, decibels,
// the float32 output and the int8 rendering through Levels. out8 may be
// null. Grid-stride over total = records*m values.
extern "C" __global__ void oct_post(const float2 *__restrict__ in, float *__restrict__ out,
                                    int8_t *__restrict__ out8, int total, int flags, float scale,
                                    float lo, float step) {
    // Unsigned: total < 2^31 and the stride < 2^31, so k + stride cannot wrap.
    for (unsigned k = blockIdx.x * blockDim.x + threadIdx.x; k < (unsigned)total; k += gridDim.x * blockDim.x) {
        float2 c = in[k];
        float re = __fmul_rn(c.x, scale), im = __fmul_rn(c.y, scale);
        // The power |y|^2 or Re(y)^2; decibels come from it directly
        // (20*log10|y| = 10*log10|y|^2), floored so outputs stay finite.
        float p = __fmul_rn(re, re);
        if (flags & OCT_MAGNITUDE) p = __fadd_rn(p, __fmul_rn(im, im));
        float v;
        if (flags & OCT_LOG10) {
            const float min_normal = 1.17549435e-38f;
            v = 10.f * log10f(fmaxf(p, min_normal));
        } else if (flags & OCT_SQUARE) {
            v = p;
        } else if (flags & OCT_MAGNITUDE) {
            v = __fsqrt_rn(p);
        } else {
            v = re;
        }
        out[k] = v;
        if (out8) {
            float q = __fsub_rn(__fmul_rn(__fsub_rn(v, lo), step), 128.f);
            int8_t b;
            if (q != q || q <= -128.f) {
                b = -128;
            } else if (q >= 127.f) {
                b = 127;
            } else {
                b = (int8_t)__float2int_rn(q);
            }
            out8[k] = b;
        }
    }
}
