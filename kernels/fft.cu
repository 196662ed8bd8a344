// One-pass inverse FFTs for record lengths cuFFT splits into several passes.
//
// A swept source's k-clock decides the record length, and it is rarely a
// power of two: an Axsun 100 kHz source gives 1376 samples (2^5 x 43),
// vortex's default source (engine.Source) and the length of its demos. cuFFT transforms 2^5 x 43 in several passes
// over device memory and took two thirds of the CUDA processor's time there
// (216 us per 8192 records on an H100, against 54 us at 1024 samples). These
// kernels transform N = P x R points (P odd, R a power of two) in one read and
// one write of device memory: every record is held in shared memory between
// the two factors' transforms.
//
// The inverse transform, unnormalised, as cuFFT's CUFFT_INVERSE:
//   X[k] = sum_n x[n] exp(+2 pi i n k / N),
// split as n = R n2 + n1, k = k1 + P k2 (Cooley-Tukey):
//   step 1: Y[n1][k1] = exp(+2 pi i n1 k1 / N) sum_n2 x[R n2 + n1] exp(+2 pi i n2 k1 / P)
//   step 2: X[k1 + P k2] = sum_n1 Y[n1][k1] exp(+2 pi i n1 k2 / R)
// Step 1 runs one thread per (record, n1): its P inputs sit in registers and
// it computes the P-point DFT directly, pairing x[n] with x[P-n] and X[k] with
// X[P-k] so each cosine and sine constant serves four multiply-adds (H^2 x 4
// FMAs for H = (P-1)/2 instead of P^2 x 4). Step 2 runs one thread per
// (record, k1): an R-point radix-2 FFT in registers. The DFT constants come
// from __constant__ tables built at compile time, so the unrolled loops read
// them as constant-bank operands of the FMAs; the N-th roots of unity of the
// twiddles come from a table the caller computes in float64.

namespace {

#include "fft_radix2.cuh"

// Row pitch of the shared-memory transpose, in float2: one more than R so
// the rows step by 8 bytes across the banks.
template <int R> __host__ __device__ constexpr int pitch() { return R + 1; }

// fft_pr transforms records [blockIdx.x S, blockIdx.x S + S) with T threads.
template <int P, int R, int S, int T>
__device__ __forceinline__ void fft_pr(float2 *__restrict__ data, const float2 *__restrict__ tw, int records) {
    static_assert(P % 2 == 1, "P must be odd");
    static_assert((R & (R - 1)) == 0 && R >= 2, "R must be a power of two");
    constexpr int N = P * R;
    constexpr int H = (P - 1) / 2;
    constexpr int L = pitch<R>();
    __shared__ float2 sm[S * P * L];

    const int first = blockIdx.x * S;

    // Step 1: the P-point DFTs down the columns n1, twiddled, into rows k1.
#pragma unroll 1
    for (int item = threadIdx.x; item < S * R; item += T) {
        const int s = item / R, n1 = item % R, rec = first + s;
        if (rec < records) {
            const float2 *x = data + static_cast<size_t>(rec) * N + n1;
            float2 *row = sm + s * P * L + n1;
            float2 x0 = x[0];
            float2 a[H > 0 ? H : 1], b[H > 0 ? H : 1];
#pragma unroll
            for (int n = 1; n <= H; ++n) {
                float2 u = x[n * R], v = x[(P - n) * R];
                a[n - 1] = make_float2(u.x + v.x, u.y + v.y);
                b[n - 1] = make_float2(u.x - v.x, u.y - v.y);
            }
            float2 sum = x0;
#pragma unroll
            for (int n = 0; n < H; ++n) {
                sum.x += a[n].x;
                sum.y += a[n].y;
            }
            row[0] = sum; // the twiddle of k1 = 0 is 1
#pragma unroll
            for (int k = 1; k <= H; ++k) {
                float2 A = x0, B = make_float2(0.f, 0.f);
#pragma unroll
                for (int n = 1; n <= H; ++n) {
                    const float c = roots<P>.c[(n * k) % P], sn = roots<P>.s[(n * k) % P];
                    A.x = fmaf(a[n - 1].x, c, A.x);
                    A.y = fmaf(a[n - 1].y, c, A.y);
                    B.x = fmaf(b[n - 1].x, sn, B.x);
                    B.y = fmaf(b[n - 1].y, sn, B.y);
                }
                // X[k] = A + iB, X[P-k] = A - iB; then the twiddles of (n1, k).
                const float2 lo = make_float2(A.x - B.y, A.y + B.x);
                const float2 hi = make_float2(A.x + B.y, A.y - B.x);
                row[k * L] = cmul(lo, __ldg(tw + n1 * k));
                row[(P - k) * L] = cmul(hi, __ldg(tw + n1 * (P - k)));
            }
        }
    }
    __syncthreads(); // every record's rows are in shared memory

    // Step 2: an R-point FFT along each row k1, written to X[k1 + P k2].
#pragma unroll 1
    for (int item = threadIdx.x; item < S * P; item += T) {
        const int s = item / P, k1 = item % P, rec = first + s;
        if (rec < records) {
            const float2 *row = sm + s * P * L + k1 * L;
            constexpr int bits = log2i(R);
            float2 z[R];
#pragma unroll
            for (int i = 0; i < R; ++i) z[i] = row[bitrev(i, bits)];
            radix2_stages<R, 2>(z);
            float2 *out = data + static_cast<size_t>(rec) * N + k1;
#pragma unroll
            for (int k2 = 0; k2 < R; ++k2) out[P * k2] = z[k2];
        }
    }
}

} // namespace

// Entry points: fft_inverse_<P>x<R>(data, tw, records) in place on records
// x (P*R) complex64 values, tw[j] = exp(+2 pi i j / (P*R)) for j in
// [0, P*R). Launch: grid ceil(records / S), block T; gosrc/process/fft.go
// holds the same table. The geometry is the fastest of those
// bench/probe_fft.py --variants timed on an H100: the P-point DFT keeps
// 2P floats live per thread, so registers bound the blocks per SM, and
// asking for B blocks per SM (168 registers at most) beat both fewer
// blocks and spilling to fit more (H100, 8192 records: 51 / 87 / 199 us
// at 688 / 1376 / 2752 points against cuFFT's 111 / 218 / 365).
#define FFT_ENTRY(P, R, S, T, B)                                                                               \
    extern "C" __global__ void __launch_bounds__(T, B)                                                        \
        fft_inverse_##P##x##R(float2 *__restrict__ data, const float2 *__restrict__ tw, int records) {       \
        fft_pr<P, R, S, T>(data, tw, records);                                                                 \
    }

FFT_ENTRY(43, 16, 4, 64, 6)
FFT_ENTRY(43, 32, 2, 64, 6)
FFT_ENTRY(43, 64, 2, 128, 3)
