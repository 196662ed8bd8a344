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

#include "oct_value.cuh"

// Rolling average: the last cnt records of the block enter the history
// ring (w rows of n values) at row index, wrapping, then the mean of the
// ring's valid rows [0, count) goes to avg, from the exact integer sum,
// divided in float64 and rounded once (as the CPU processor's
// history.mean). Each block owns 32 samples (x) of every row: it writes
// its columns of the new rows (y strides over them) and, after a barrier,
// sums its columns, y striding over the rows, the blockDim.y partial sums
// meeting in shared memory in a tree. Integer sums are exact in any order,
// so the mean is the same whatever blockDim.y. Why one launch: a history
// kernel with one thread per value followed by a mean kernel cost 31 us
// per 8192-record block on an H100 (bench/probe_kernels.py), and a mean
// with one thread per sample summing every row ran a few blocks on 132
// SMs, bound by the latency of its sequential loads. Why 32 rows at once
// (blockDim.y, a power of two up to OCT_MEAN_ROWS): a record of 1024
// samples is only 32 blocks, on 32 of the GPU's SMs, and the blocks of
// every slot wait for this kernel in turn (the history is in block order):
// with 8 rows at once its 8 dependent steps a thread made a 256-record
// block's processing 15% slower with one slot (docs/bench.md, session 52).
// Launch: grid ceil(n / 32), block (32, y), y a power of two <= 32.
#define OCT_MEAN_ROWS 32
extern "C" __global__ void oct_history_mean(const uint16_t *__restrict__ raw, int32_t *__restrict__ ring,
                                            float *__restrict__ avg, int records, int n, int ch, int channel,
                                            int is_signed, int cnt, int index, int w, int count) {
    __shared__ long long part[OCT_MEAN_ROWS][32];
    int i = blockIdx.x * 32 + threadIdx.x;
    int rows = blockDim.y;
    if (i < n) {
        for (int q = threadIdx.y; q < cnt; q += rows) {
            ring[((index + q) % w) * n + i] = sample(raw, records - cnt + q, i, n, ch, channel, is_signed);
        }
    }
    __syncthreads(); // the block's ring writes are visible to its sums
    long long s = 0;
    if (i < n) {
        for (int r = threadIdx.y; r < count; r += rows) s += ring[r * n + i];
    }
    part[threadIdx.y][threadIdx.x] = s;
    for (int half = rows / 2; half > 0; half /= 2) {
        __syncthreads();
        if (threadIdx.y < half) part[threadIdx.y][threadIdx.x] += part[threadIdx.y + half][threadIdx.x];
    }
    if (threadIdx.y != 0 || i >= n) return;
    avg[i] = __double2float_rn(__ddiv_rn((double)part[0][threadIdx.x], (double)count));
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
// resampling, m == n) or through the record's clock phase (phase, n per
// record, and its maximum phase_max, from oct_clock_phase; null: no
// clock; m == n), and the complex spectral filter (null: none), writing
// the complex spectrum, m values per record. out may hold the clock's
// analytic signal: oct_clock_phase has consumed it.
//
// Grid: x covers the m output samples (blockDim.x threads each), y the
// records, each thread striding over records by gridDim.y. Why: the
// per-sample tables (indices, weights, the averages at both indices, the
// filter) are the same for every record, so a thread reads them once and
// then streams only the raw gathers and the complex stores; one thread per
// value re-read nine table values per output and ran at half the copy
// bandwidth (issue 10, bench/probe_kernels.py). The arithmetic per value is
// unchanged, so the output is bit for bit the same.
extern "C" __global__ void oct_spectrum(const uint16_t *__restrict__ raw, const float *__restrict__ avg,
                                        const int32_t *__restrict__ before, const int32_t *__restrict__ after,
                                        const float *__restrict__ w_before, const float *__restrict__ w_after,
                                        const float *__restrict__ phase, const float *__restrict__ phase_max,
                                        const float2 *__restrict__ filt, float2 *__restrict__ out, int n, int m,
                                        int ch, int channel, int is_signed, int records) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= m) return;
    float2 h = filt ? filt[j] : make_float2(1.f, 0.f);
    int ib = j, ia = j;
    float wb = 0.f, wa = 0.f;
    if (!phase && before) {
        ib = before[j];
        ia = after[j];
        wb = w_before[j];
        wa = w_after[j];
    }
    // load()'s average at both indices, read once (0 when there is none:
    // the subtraction is skipped then, as load does).
    float avb = (!phase && avg) ? avg[ib] : 0.f;
    float ava = (!phase && avg) ? avg[ia] : 0.f;
    for (int r = blockIdx.y; r < records; r += gridDim.y) {
        float v;
        if (phase) {
            // vortex's query: the linear phase max*j/n, the first sample whose
            // phase is not below it (thrust's lower_bound; at most n-1, where
            // vortex would read past the record), and the phase difference as
            // the weight (process.clockScratch.tables defines it).
            const float *p = phase + (size_t)r * n;
            float q = __fdiv_rn(__fmul_rn(phase_max[r], (float)j), (float)n);
            int start = 0, len = n;
            while (start < len) {
                int i = (start + len) / 2;
                if (p[i] < q) {
                    start = i + 1;
                } else {
                    len = i;
                }
            }
            int b = min(start, n - 1), a = min(b + 1, n - 1);
            float ratio = __fsub_rn(q, p[b]);
            float x0 = load(raw, avg, r, b, n, ch, channel, is_signed);
            float x1 = load(raw, avg, r, a, n, ch, channel, is_signed);
            v = __fadd_rn(__fmul_rn(__fsub_rn(1.f, ratio), x0), __fmul_rn(ratio, x1));
        } else {
            float x0 = (float)sample(raw, r, ib, n, ch, channel, is_signed);
            if (avg) x0 = __fsub_rn(x0, avb);
            if (before) {
                float x1 = (float)sample(raw, r, ia, n, ch, channel, is_signed);
                if (avg) x1 = __fsub_rn(x1, ava);
                v = __fadd_rn(__fmul_rn(wb, x0), __fmul_rn(wa, x1));
            } else {
                v = x0;
            }
        }
        float2 c = make_float2(v, 0.f);
        if (filt) {
            c = make_float2(__fmul_rn(v, h.x), __fmul_rn(v, h.y));
        }
        out[r * m + j] = c;
    }
}

// Dynamic resampling from a k-clock channel (vortex's clock_channel), in
// vortex's order and float32: oct_clock_load, the forward FFT,
// oct_clock_window, the inverse FFT, oct_clock_phase, then oct_spectrum
// with the phase. process.clockScratch.tables is the same in float64.

// block_sum_ll returns the sum of v over the block (blockDim.x = 256) to
// every thread.
__device__ __forceinline__ long long block_sum_ll(long long v, long long *sh) {
    sh[threadIdx.x] = v;
    __syncthreads();
    for (int s = 128; s > 0; s >>= 1) {
        if (threadIdx.x < s) sh[threadIdx.x] += sh[threadIdx.x + s];
        __syncthreads();
    }
    long long total = sh[0];
    __syncthreads();
    return total;
}

// oct_clock_load: the clock channel (clock) of each record minus the
// record's mean (the exact integer sum over n, divided in float64 and
// rounded once), as complex64 into out (n per record). One block of 256
// threads per record.
extern "C" __global__ void oct_clock_load(const uint16_t *__restrict__ raw, float2 *__restrict__ out, int n, int ch,
                                          int clock, int is_signed) {
    __shared__ long long sh[256];
    int r = blockIdx.x;
    long long s = 0;
    for (int i = threadIdx.x; i < n; i += blockDim.x) s += sample(raw, r, i, n, ch, clock, is_signed);
    s = block_sum_ll(s, sh);
    float mean = __double2float_rn(__ddiv_rn((double)s, (double)n));
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
        float v = (float)sample(raw, r, i, n, ch, clock, is_signed);
        out[(size_t)r * n + i] = make_float2(__fsub_rn(v, mean), 0.f);
    }
}

// oct_clock_window: vortex's Hilbert window on the clock's spectrum, bin
// 0 and bin n/2 kept, bins 1..n/2-1 doubled, the rest zeroed, all divided
// by n (the inverse FFT's normalisation). Grid ceil(total/blockDim) over
// total = records*n values.
extern "C" __global__ void oct_clock_window(float2 *__restrict__ z, int n, int total) {
    int k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= total) return;
    int i = k % n, h = n / 2;
    float2 c = z[k];
    float w = i > h ? 0.f : (i == 0 || i == h ? 1.f : 2.f);
    float fn = (float)n;
    z[k] = make_float2(__fdiv_rn(__fmul_rn(c.x, w), fn), __fdiv_rn(__fmul_rn(c.y, w), fn));
}

// oct_clock_phase: the unwrapped phase of each record's analytic signal
// z: the successive phase differences wrapped into [-pi, pi] (0 for
// sample 0), summed in order of a 256-wide scan per chunk, into phase (n
// per record), and the maximum into phase_max. One block of 256 threads
// per record.
extern "C" __global__ void oct_clock_phase(const float2 *__restrict__ z, float *__restrict__ phase,
                                           float *__restrict__ phase_max, int n) {
    __shared__ float sh[256];
    const float pi = 3.14159265358979f, two_pi = 6.28318530717959f;
    int r = blockIdx.x, t = threadIdx.x;
    const float2 *zr = z + (size_t)r * n;
    float carry = 0.f, top = 0.f; // phase[0] = 0, so the maximum is at least 0
    for (int base = 0; base < n; base += blockDim.x) {
        int i = base + t;
        float d = 0.f;
        if (i > 0 && i < n) {
            float2 c = zr[i], p = zr[i - 1];
            d = __fsub_rn(atan2f(c.y, c.x), atan2f(p.y, p.x));
            if (d > pi) {
                d = __fsub_rn(d, two_pi);
            } else if (d < -pi) {
                d = __fadd_rn(d, two_pi);
            }
        }
        // Inclusive Hillis-Steele scan of the chunk.
        sh[t] = d;
        __syncthreads();
        for (int s = 1; s < 256; s <<= 1) {
            float add = t >= s ? sh[t - s] : 0.f;
            __syncthreads();
            sh[t] = __fadd_rn(sh[t], add);
            __syncthreads();
        }
        float v = __fadd_rn(carry, sh[t]);
        if (i < n) {
            phase[(size_t)r * n + i] = v;
            top = fmaxf(top, v);
        }
        carry = __fadd_rn(carry, sh[255]);
        __syncthreads();
    }
    // The maximum over the block.
    sh[t] = top;
    __syncthreads();
    for (int s = 128; s > 0; s >>= 1) {
        if (t < s) sh[t] = fmaxf(sh[t], sh[t + s]);
        __syncthreads();
    }
    if (t == 0) phase_max[r] = sh[0];
}

// Step 5: f = log10(a), a*a or a, for a = |y| (EnableMagnitude, or
// EnableSquare without log10, as vortex) or Re(y); when out is not null,
// out = out_mul*f + out_add, and when out8 is not null, the int8 of lvl_mul*f + lvl_add
// (OCT_LEVELS) or of out. The constants carry the 1/M normalisation, the
// decibel factor and the levels (process.postParams.kernel). Grid-stride
// over total = records*m values.
extern "C" __global__ void oct_post(const float2 *__restrict__ in, float *__restrict__ out,
                                    int8_t *__restrict__ out8, int total, int flags, float out_mul, float out_add,
                                    float lvl_mul, float lvl_add) {
    // Four values per iteration: two 16-byte loads, one 4-byte int8 store
    // and one 16-byte float32 store (the scalar loop ran at 0.57-0.67 of
    // the copy bandwidth with int8 alone; bench/probe_kernels.py). The
    // vector path needs in and out aligned to 16 bytes and out8 to 4 (the
    // processor's buffers are; a caller's offset may not be); the values
    // past the last whole quad, and every value of a misaligned call, take
    // the scalar path. Unsigned: total < 2^31 and the stride < 2^31, so
    // k + stride cannot wrap.
    unsigned stride = gridDim.x * blockDim.x;
    unsigned first = blockIdx.x * blockDim.x + threadIdx.x;
    bool aligned = ((uintptr_t)in % 16 == 0) && ((uintptr_t)out % 16 == 0) && ((uintptr_t)out8 % 4 == 0);
    unsigned quads = aligned ? (unsigned)total / 4 : 0;
    const float4 *in4 = reinterpret_cast<const float4 *>(in);
    for (unsigned q = first; q < quads; q += stride) {
        float4 p0 = in4[2 * q], p1 = in4[2 * q + 1];
        float v[4];
        int8_t b[4];
        post(make_float2(p0.x, p0.y), flags, out_mul, out_add, lvl_mul, lvl_add, &v[0], &b[0]);
        post(make_float2(p0.z, p0.w), flags, out_mul, out_add, lvl_mul, lvl_add, &v[1], &b[1]);
        post(make_float2(p1.x, p1.y), flags, out_mul, out_add, lvl_mul, lvl_add, &v[2], &b[2]);
        post(make_float2(p1.z, p1.w), flags, out_mul, out_add, lvl_mul, lvl_add, &v[3], &b[3]);
        if (out) {  // null when no endpoint reads the float32 A-scans (the engine says so)
            reinterpret_cast<float4 *>(out)[q] = make_float4(v[0], v[1], v[2], v[3]);
        }
        if (out8) {
            reinterpret_cast<char4 *>(out8)[q] = make_char4(b[0], b[1], b[2], b[3]);
        }
    }
    for (unsigned k = quads * 4 + first; k < (unsigned)total; k += stride) {
        float v;
        int8_t b;
        post(in[k], flags, out_mul, out_add, lvl_mul, lvl_add, &v, &b);
        if (out) out[k] = v;
        if (out8) out8[k] = b;
    }
}
