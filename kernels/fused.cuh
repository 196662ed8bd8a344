// Fused processing kernels: steps 1-5 of the OCT chain (gosrc/process/doc.go)
// for records whose inverse FFT has a power-of-two length m = P x R, in one
// launch and one pass over device memory.
//
// The chain otherwise runs three kernels a block: oct_spectrum writes the
// complex spectrum (8 bytes a value), cuFFT transforms it in place (16 more)
// and oct_post reads it back (8) for the outputs. At the block sizes users
// pick for latency (256-512 records) each kernel is a few microseconds of
// the device's time whatever it moves, and with one processor slot every
// block's kernels wait for the last block's: 9.1 us a 256 x 1024 block on an
// H200 against its 12 us of copy (docs/bench.md, session 52). Here a block of
// threads holds S records in shared memory from the spectrum to the outputs:
// the raw samples are read once, the outputs written once.
//
// Per value the arithmetic of steps 1-3 and 5 is oct_spectrum's and
// oct_post's (oct_value.cuh), so those steps give the same bits; the inverse
// FFT is fft.cu's Cooley-Tukey split, with both factors radix-2 transforms
// in registers:
//   n = R n2 + n1, k = k1 + P k2,
//   step 1: Y[n1][k1] = exp(+2 pi i n1 k1 / m) sum_n2 x[R n2 + n1] exp(+2 pi i n2 k1 / P)
//   step 2: X[k1 + P k2] = sum_n1 Y[n1][k1] exp(+2 pi i n1 k2 / R)
// with the m-th roots of unity of the twiddles from a table the caller
// computes in float64 (gosrc/process.rootsOfUnity).
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

// fused_pr processes records [blockIdx.x S, blockIdx.x S + S) of m = P x R
// output samples with T threads.
template <int P, int R, int S, int T>
__device__ __forceinline__ void fused_pr(const uint16_t *__restrict__ raw, const float *__restrict__ avg,
                                         const int32_t *__restrict__ before, const int32_t *__restrict__ after,
                                         const float *__restrict__ w_before, const float *__restrict__ w_after,
                                         const float2 *__restrict__ filt, const float2 *__restrict__ tw,
                                         float *__restrict__ out, int8_t *__restrict__ out8, int n, int ch,
                                         int channel, int is_signed, int records, int flags, float out_mul,
                                         float out_add, float lvl_mul, float lvl_add) {
    static_assert((P & (P - 1)) == 0 && P >= 2, "P must be a power of two");
    static_assert((R & (R - 1)) == 0 && R >= 2, "R must be a power of two");
    constexpr int M = P * R;
    constexpr int L = pitch<R>();
    __shared__ float2 sm[S * P * L];

    const int first = blockIdx.x * S;

    // Step 1: the spectrum's values down column n1, their P-point inverse
    // FFT, twiddled, into rows k1.
#pragma unroll 1
    for (int item = threadIdx.x; item < S * R; item += T) {
        const int s = item / R, n1 = item % R, rec = first + s;
        if (rec < records) {
            constexpr int bits = log2i(P);
            float2 z[P];
#pragma unroll
            for (int i = 0; i < P; ++i) {
                z[i] = spectrum_value(raw, avg, before, after, w_before, w_after, filt, rec, R * bitrev(i, bits) + n1, n,
                                      ch, channel, is_signed);
            }
            radix2_stages<P, 2>(z);
            float2 *row = sm + s * P * L + n1;
            row[0] = z[0]; // the twiddle of k1 = 0 is 1
#pragma unroll
            for (int k1 = 1; k1 < P; ++k1) row[k1 * L] = cmul(z[k1], __ldg(tw + n1 * k1));
        }
    }
    __syncthreads(); // every record's rows are in shared memory

    // Step 2: an R-point inverse FFT along each row k1, then step 5 on
    // X[k1 + P k2]: a warp's threads hold consecutive k1, so each k2's
    // stores are contiguous.
#pragma unroll 1
    for (int item = threadIdx.x; item < S * P; item += T) {
        const int s = item / P, k1 = item % P, rec = first + s;
        if (rec < records) {
            constexpr int bits = log2i(R);
            const float2 *row = sm + s * P * L + k1 * L;
            float2 z[R];
#pragma unroll
            for (int i = 0; i < R; ++i) z[i] = row[bitrev(i, bits)];
            radix2_stages<R, 2>(z);
            const size_t base = static_cast<size_t>(rec) * M + k1;
#pragma unroll
            for (int k2 = 0; k2 < R; ++k2) {
                float v;
                int8_t b;
                post(z[k2], flags, out_mul, out_add, lvl_mul, lvl_add, &v, &b);
                if (out) out[base + P * k2] = v; // null when no endpoint reads the float32 A-scans
                if (out8) out8[base + P * k2] = b;
            }
        }
    }
}

} // namespace

// Entry points: oct_fused_<P>x<R>(raw, avg, before, after, w_before,
// w_after, filt, tw, out, out8, n, ch, channel, is_signed, records, flags,
// out_mul, out_add, lvl_mul, lvl_add); the arguments are oct_spectrum's and
// oct_post's (null tables: none), tw[j] = exp(+2 pi i j / m) for j in
// [0, m). Launch: grid ceil(records / S), block T; gosrc/process/fused.go
// holds the same table (one entry per module).
#define FUSED_ENTRY(P, R, S, T)                                                                                        \
    extern "C" __global__ void __launch_bounds__(T) oct_fused_##P##x##R(                                               \
        const uint16_t *__restrict__ raw, const float *__restrict__ avg, const int32_t *__restrict__ before,          \
        const int32_t *__restrict__ after, const float *__restrict__ w_before, const float *__restrict__ w_after,     \
        const float2 *__restrict__ filt, const float2 *__restrict__ tw, float *__restrict__ out,                       \
        int8_t *__restrict__ out8, int n, int ch, int channel, int is_signed, int records, int flags, float out_mul,  \
        float out_add, float lvl_mul, float lvl_add) {                                                                 \
        fused_pr<P, R, S, T>(raw, avg, before, after, w_before, w_after, filt, tw, out, out8, n, ch, channel,         \
                             is_signed, records, flags, out_mul, out_add, lvl_mul, lvl_add);                           \
    }
