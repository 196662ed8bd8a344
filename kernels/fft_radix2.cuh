// Radix-2 building blocks of the one-pass FFT kernels (fft.cu):
// compile-time root tables and the decimation-in-time butterflies in
// registers; the fused processing kernels (fused.cuh) use its cmul and
// log2i. Included into each module's anonymous namespace; not a module of
// its own (build_ptx.sh compiles *.cu).
#pragma once


constexpr double kPi = 3.14159265358979323846;

// Taylor series for |x| <= pi; 40 terms reach double precision there.
constexpr double taylor_sin(double x) {
    double term = x, sum = x;
    for (int i = 1; i < 40; ++i) {
        term *= -x * x / ((2.0 * i) * (2.0 * i + 1.0));
        sum += term;
    }
    return sum;
}

constexpr double taylor_cos(double x) {
    double term = 1.0, sum = 1.0;
    for (int i = 1; i < 40; ++i) {
        term *= -x * x / ((2.0 * i - 1.0) * (2.0 * i));
        sum += term;
    }
    return sum;
}

// turn returns 2 pi j / m reduced to [-pi, pi].
constexpr double turn(int j, int m) {
    j %= m;
    if (2 * j > m) j -= m;
    return 2.0 * kPi * j / m;
}

// Roots holds cos and sin of 2 pi j / M for j in [0, M).
template <int M> struct Roots {
    float c[M];
    float s[M];
    constexpr Roots() : c(), s() {
        for (int j = 0; j < M; ++j) {
            c[j] = static_cast<float>(taylor_cos(turn(j, M)));
            s[j] = static_cast<float>(taylor_sin(turn(j, M)));
        }
    }
};

template <int M> __constant__ Roots<M> roots = Roots<M>();

__device__ __forceinline__ float2 cmul(float2 a, float2 b) {
    return make_float2(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x);
}

__host__ __device__ constexpr int bitrev(int i, int bits) {
    int r = 0;
    for (int b = 0; b < bits; ++b) r |= ((i >> b) & 1) << (bits - 1 - b);
    return r;
}

__host__ __device__ constexpr int log2i(int r) { return r <= 1 ? 0 : 1 + log2i(r / 2); }

// radix2_stages applies the decimation-in-time butterflies of span LEN and
// every longer span to z (loaded in bit-reversed order), with the inverse
// transform's roots exp(+2 pi i j / LEN). Recursion on LEN, not a loop,
// keeps every index a constant, so z stays in registers.
template <int R, int LEN> __device__ __forceinline__ void radix2_stages(float2 (&z)[R]) {
#pragma unroll
    for (int i = 0; i < R; i += LEN) {
#pragma unroll
        for (int j = 0; j < LEN / 2; ++j) {
            const int q = j * (R / LEN);
            const float2 w = make_float2(roots<R>.c[q], roots<R>.s[q]);
            const float2 u = z[i + j], v = cmul(z[i + j + LEN / 2], w);
            z[i + j] = make_float2(u.x + v.x, u.y + v.y);
            z[i + j + LEN / 2] = make_float2(u.x - v.x, u.y - v.y);
        }
    }
    if constexpr (LEN < R) radix2_stages<R, LEN * 2>(z);
}
