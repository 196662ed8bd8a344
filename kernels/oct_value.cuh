// Per-value steps of the OCT chain shared by oct.cu's kernels and the fused
// kernels of fused.cu: reading a sample, step 5 (post) and vortex's int8
// cast. A header, not a module (build_ptx.sh compiles *.cu).
#pragma once

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

// round_clip is vortex's round_clip_cast to int8: round half away from
// zero, clip, and NaN as 0 (what the device's float-to-int conversion gives).
__device__ __forceinline__ int8_t round_clip(float t) {
    if (t != t) return 0;
    float v = roundf(t);
    if (v >= 127.f) return 127;
    if (v <= -128.f) return -128;
    return (int8_t)(int)v;
}

// post is step 5 for one value (see oct_post).
__device__ __forceinline__ void post(float2 c, int flags, float out_mul, float out_add, float lvl_mul, float lvl_add,
                                     float *v_out, int8_t *v8_out) {
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
    *v_out = v;
    float t = (flags & OCT_LEVELS) ? __fadd_rn(__fmul_rn(lvl_mul, f), lvl_add) : v;
    *v8_out = round_clip(t);
}

