// Fused processing kernels: steps 1-5 of the OCT chain (gosrc/process/doc.go)
// for records whose inverse FFT has a power-of-two length M, in one launch
// and one pass over device memory.
//
// The chain otherwise runs three kernels a block: oct_spectrum writes the
// complex spectrum (8 bytes a value), cuFFT transforms it in place (16 more)
// and oct_post reads it back (8) for the outputs. At the block sizes users
// pick for latency (256-512 records) each kernel is a few microseconds of
// the device's time whatever it moves, and with one processor slot every
// block's kernels wait for the last block's: 9.1 us a 256 x 1024 block on an
// H200 against its 12 us of copy (docs/bench.md, session 52). Here a block of
// M / 4 threads holds one record in shared memory from the spectrum to the
// outputs: the raw samples are read once, the outputs written once.
//
// Per value the arithmetic of steps 1-3 and 5 is oct_spectrum's and
// oct_post's (oct_value.cuh), so those steps give the same bits; the inverse
// FFT is a Stockham autosort transform (radix 4, natural order in and out),
// its twiddles the M-th roots of unity from a table the caller computes in
// float64 (gosrc/process.rootsOfUnity).
//
// Why a thread for each 4 values: session 52's first version gave each
// thread a whole 32-point column (two records a block of 64 threads), so a
// 256-record block ran 128 blocks of two warps over 132 SMs, each thread 32
// chains of dependent gathers: 28.6 us a 256 x 1024 block against the three
// kernels' 15.7 (bench/host_cost.py on an H200, session 53). A block of
// M / 4 threads a record keeps 8-16 warps on every SM at 256 records.
//
// One module per length (fused1024.cu, fused2048.cu), so that a processor
// JIT-compiles only its own on first use.
//
// Only the table-resampled chain is fused (no k-clock: its phase comes from
// a transform of its own); the processor falls back to the three kernels
// otherwise (gosrc/process/fused.go).

#pragma once

#include <stdint.h>

#include "oct_value.cuh"

namespace {

#include "fft_radix2.cuh"

// spectrum_value is oct_spectrum's value for record r, output sample j,
// without a k-clock: the sample(s) at the resampling table's indices minus
// the average record there, interpolated, times the spectral filter.
__device__ __forceinline__ float2 spectrum_value(const uint16_t *__restrict__ raw, const float *__restrict__ avg,
                                                 const int32_t *__restrict__ before, const int32_t *__restrict__ after,
                                                 const float *__restrict__ w_before, const float *__restrict__ w_after,
                                                 const float2 *__restrict__ filt, int r, int j, int n, int ch,
                                                 int channel, int is_signed) {
    int ib = j, ia = j;
    float wb = 0.f, wa = 0.f;
    if (before) {
        ib = __ldg(before + j);
        ia = __ldg(after + j);
        wb = __ldg(w_before + j);
        wa = __ldg(w_after + j);
    }
    float x0 = (float)sample(raw, r, ib, n, ch, channel, is_signed);
    if (avg) x0 = __fsub_rn(x0, __ldg(avg + ib));
    float v;
    if (before) {
        float x1 = (float)sample(raw, r, ia, n, ch, channel, is_signed);
        if (avg) x1 = __fsub_rn(x1, __ldg(avg + ia));
        v = __fadd_rn(__fmul_rn(wb, x0), __fmul_rn(wa, x1));
    } else {
        v = x0;
    }
    if (filt) {
        const float2 h = __ldg(filt + j);
        return make_float2(__fmul_rn(v, h.x), __fmul_rn(v, h.y));
    }
    return make_float2(v, 0.f);
}

// butterfly2 is the 2-point DFT of (u, v) in place: (u + v, u - v).
__device__ __forceinline__ void butterfly2(float2 &u, float2 &v) {
    const float2 s = make_float2(u.x + v.x, u.y + v.y);
    v = make_float2(u.x - v.x, u.y - v.y);
    u = s;
}

// butterfly4 is the 4-point inverse DFT of a in place:
// A[k] = sum_r a[r] exp(+2 pi i r k / 4), with exp(+2 pi i / 4) = i.
__device__ __forceinline__ void butterfly4(float2 (&a)[4]) {
    butterfly2(a[0], a[2]); // a[0], a[2]: s0, d0
    butterfly2(a[1], a[3]); // a[1], a[3]: s1, d1
    const float2 s0 = a[0], d0 = a[2], s1 = a[1], d1 = a[3];
    a[0] = make_float2(s0.x + s1.x, s0.y + s1.y);
    a[2] = make_float2(s0.x - s1.x, s0.y - s1.y);
    a[1] = make_float2(d0.x - d1.y, d0.y + d1.x); // d0 + i d1
    a[3] = make_float2(d0.x + d1.y, d0.y - d1.x); // d0 - i d1
}

// stockham_pass loads a pass's inputs a[r] = src[j + r T], twiddles them
// by exp(+2 pi i r k / M)^stride (k = j mod ns, stride = M / (4 ns)) and
// takes their 4-point DFT: what every pass after the first does before it
// stores.
template <int T>
__device__ __forceinline__ void stockham_pass(float2 (&a)[4], const float2 *src, const float2 *__restrict__ tw, int j,
                                              int k, int stride) {
#pragma unroll
    for (int r = 0; r < 4; ++r) a[r] = src[j + r * T];
#pragma unroll
    for (int r = 1; r < 4; ++r) a[r] = cmul(a[r], __ldg(tw + r * k * stride));
    butterfly4(a);
}

// fused_stockham processes record blockIdx.x, of m = M output samples,
// with T = M / 4 threads: thread j computes the spectrum's values j + r T
// (r = 0..3, coalesced), the inverse FFT runs as Stockham autosort passes
// through shared memory (radix 4, after one radix-2 pass where log2 M is
// odd; one barrier a pass, ping-ponging two buffers), and the last pass
// leaves X[j + r T] in thread j's registers for step 5, so the outputs are
// stored coalesced without a last trip through shared memory. A pass of
// span ns (sub-transforms of ns points done) reads a[r] = src[j + r T],
// twiddles it by exp(+2 pi i r (j mod ns) / (4 ns)), and writes the 4-point
// DFT to dst[(j / ns) 4 ns + j mod ns + r ns].
template <int M, int T>
__device__ __forceinline__ void fused_stockham(const uint16_t *__restrict__ raw, const float *__restrict__ avg,
                                               const int32_t *__restrict__ before, const int32_t *__restrict__ after,
                                               const float *__restrict__ w_before, const float *__restrict__ w_after,
                                               const float2 *__restrict__ filt, const float2 *__restrict__ tw,
                                               float *__restrict__ out, int8_t *__restrict__ out8, int n, int ch,
                                               int channel, int is_signed, int records, int flags, float out_mul,
                                               float out_add, float lvl_mul, float lvl_add) {
    static_assert((M & (M - 1)) == 0 && M >= 16, "M must be a power of two");
    static_assert(T * 4 == M, "one thread for each 4 values");
    __shared__ float2 buf[2][M];

    const int rec = blockIdx.x, j = threadIdx.x;
    if (rec >= records) return; // the grid is exactly records: a guard, not a path

    float2 a[4];
#pragma unroll
    for (int r = 0; r < 4; ++r) {
        a[r] = spectrum_value(raw, avg, before, after, w_before, w_after, filt, rec, j + r * T, n, ch, channel,
                              is_signed);
    }

    // The first pass (ns = 1) needs no twiddles and reads what the thread
    // holds: radix 2 on the pairs (x[i], x[i + M/2]) for i = j and j + T
    // where log2 M is odd, else radix 4 on x[j + r T].
    int ns;
    if constexpr (log2i(M) % 2 == 1) {
        butterfly2(a[0], a[2]);
        butterfly2(a[1], a[3]);
        buf[0][2 * j] = a[0];
        buf[0][2 * j + 1] = a[2];
        buf[0][2 * (j + T)] = a[1];
        buf[0][2 * (j + T) + 1] = a[3];
        ns = 2;
    } else {
        butterfly4(a);
#pragma unroll
        for (int r = 0; r < 4; ++r) buf[0][4 * j + r] = a[r];
        ns = 4;
    }

    int from = 0;
#pragma unroll
    for (; ns < M / 4; ns *= 4, from ^= 1) {
        __syncthreads(); // the last pass's writes are in
        const int k = j % ns;
        stockham_pass<T>(a, buf[from], tw, j, k, M / (4 * ns));
        const int base = (j / ns) * 4 * ns + k;
#pragma unroll
        for (int r = 0; r < 4; ++r) buf[from ^ 1][base + r * ns] = a[r];
    }

    // The last pass (ns = M / 4, so k = j and stride 1): its outputs are
    // X[j + r T].
    __syncthreads();
    stockham_pass<T>(a, buf[from], tw, j, j, 1);
    const size_t base = static_cast<size_t>(rec) * M + j;
#pragma unroll
    for (int r = 0; r < 4; ++r) {
        float v;
        int8_t b;
        post(a[r], flags, out_mul, out_add, lvl_mul, lvl_add, &v, &b);
        if (out) out[base + r * T] = v; // null when no endpoint reads the float32 A-scans
        if (out8) out8[base + r * T] = b;
    }
}

} // namespace

// Entry points: oct_fused_<M>(raw, avg, before, after, w_before, w_after,
// filt, tw, out, out8, n, ch, channel, is_signed, records, flags, out_mul,
// out_add, lvl_mul, lvl_add); the arguments are oct_spectrum's and
// oct_post's (null tables: none), tw[j] = exp(+2 pi i j / M) for j in
// [0, M). Launch: grid records, block M / 4; gosrc/process/fused.go holds
// the same table (one entry per module).
#define FUSED_ENTRY(M)                                                                                                 \
    extern "C" __global__ void __launch_bounds__(M / 4) oct_fused_##M(                                                  \
        const uint16_t *__restrict__ raw, const float *__restrict__ avg, const int32_t *__restrict__ before,          \
        const int32_t *__restrict__ after, const float *__restrict__ w_before, const float *__restrict__ w_after,     \
        const float2 *__restrict__ filt, const float2 *__restrict__ tw, float *__restrict__ out,                       \
        int8_t *__restrict__ out8, int n, int ch, int channel, int is_signed, int records, int flags, float out_mul,  \
        float out_add, float lvl_mul, float lvl_add) {                                                                 \
        fused_stockham<M, M / 4>(raw, avg, before, after, w_before, w_after, filt, tw, out, out8, n, ch, channel,      \
                                 is_signed, records, flags, out_mul, out_add, lvl_mul, lvl_add);                       \
    }
