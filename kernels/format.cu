// format.cu: place a block's records into a (bscans, ascans, depth) volume.
//
// One launch copies `records` A-scans of one B-scan segment: source record
// r (src + r*src_stride, already offset to the first kept sample) goes to
// destination A-scan r, or records-1-r when `reverse` is set (the return
// lines of a bidirectional raster scan), each `samples` long. The depth
// crop is the caller's source offset plus `samples`; the cast is the
// kernel's type pair. gosrc/endpoint launches these through
// ops.LaunchByName and registers Go twins (endpoint.FormatHost) for the
// CPU backend; keep the two in step.
//
// Launch shape: grid (ceil(samples/256), records, 1), block (256, 1, 1);
// a grid-stride loop over samples makes any x extent correct.
//
// Casts to integers round to nearest (ties to even) and saturate; NaN
// becomes 0, as in elementwise.cu.

typedef signed char vg_int8;
typedef unsigned short vg_uint16;

__device__ __forceinline__ float vg_keep(float v) { return v; }
__device__ __forceinline__ vg_uint16 vg_keep(vg_uint16 v) { return v; }
__device__ __forceinline__ vg_int8 vg_keep(vg_int8 v) { return v; }

__device__ __forceinline__ vg_uint16 vg_to_u16(float v) {
	if (v != v) return 0;
	float r = rintf(v);  // ties to even, like Go's math.RoundToEven
	r = fminf(fmaxf(r, 0.0f), 65535.0f);
	return (vg_uint16)r;
}

__device__ __forceinline__ vg_int8 vg_to_i8(float v) {
	if (v != v) return 0;
	float r = rintf(v);
	r = fminf(fmaxf(r, -128.0f), 127.0f);
	return (vg_int8)r;
}

#define VG_FORMAT(NAME, SRC_T, DST_T, CONVERT)                                          \
	extern "C" __global__ void NAME(DST_T* __restrict__ dst, const SRC_T* __restrict__ src, \
	                                int records, int samples, int dst_stride,            \
	                                int src_stride, int reverse) {                        \
		int r = blockIdx.y;                                                                \
		if (r >= records) return;                                                          \
		int d = reverse ? records - 1 - r : r;                                             \
		const SRC_T* s = src + (long long)r * src_stride;                                  \
		DST_T* o = dst + (long long)d * dst_stride;                                        \
		for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < samples;                   \
		     i += gridDim.x * blockDim.x) {                                                \
			o[i] = CONVERT(s[i]);                                                          \
		}                                                                                  \
	}

VG_FORMAT(vortexgo_format_f32_f32, float, float, vg_keep)
VG_FORMAT(vortexgo_format_f32_u16, float, vg_uint16, vg_to_u16)
VG_FORMAT(vortexgo_format_f32_i8, float, vg_int8, vg_to_i8)
VG_FORMAT(vortexgo_format_u16_u16, vg_uint16, vg_uint16, vg_keep)
VG_FORMAT(vortexgo_format_i8_i8, vg_int8, vg_int8, vg_keep)

// ---------------------------------------------------------------------------
// vortex's format executors (gosrc/format), one kernel per executor
// and (source, destination) type pair: vortexgo_{stack,radial,spiral,
// position}_<src>_<dst>. gosrc/format plans every launch (element
// offsets and strides, float32 geometry as vortex computes it on the host)
// and registers Go twins that run the same arithmetic on the CPU backend;
// keep the two in step. Integer outputs round half away from zero (vortex's
// round_clip_cast: roundf) and saturate; NaN becomes 0. Products and sums
// that nvcc would contract in vortex's kernels are written as explicit
// fma so that the Go twins can follow them exactly.

#include <math_constants.h>

__device__ __forceinline__ void vg_store(float* o, double v) { *o = (float)v; }
__device__ __forceinline__ void vg_store(vg_uint16* o, double v) {
	if (v != v) { *o = 0; return; }
	double r = fmin(fmax(round(v), 0.0), 65535.0);
	*o = (vg_uint16)r;
}
__device__ __forceinline__ void vg_store(vg_int8* o, double v) {
	if (v != v) { *o = 0; return; }
	double r = fmin(fmax(round(v), -128.0), 127.0);
	*o = (vg_int8)r;
}

// Stack: copy `count` records; record i of the copy (at src + src_base +
// i*src_rec_stride, samples src_sample_stride apart, `channels` contiguous
// channels each) goes to destination record i, or count-1-i when reversed.
// Launch: grid (ceil(samples*channels/256), min(count, 65535)), block 256.
#define VG_STACK(NAME, SRC_T, DST_T)                                                          \
	extern "C" __global__ void NAME(DST_T* __restrict__ dst, const SRC_T* __restrict__ src,       \
	                                int count, int samples, int channels, long long src_base,    \
	                                long long src_rec_stride, long long src_sample_stride,       \
	                                long long dst_base, long long dst_rec_stride, int reverse,   \
	                                float scale, float offset) {                                 \
		long long n = (long long)samples * channels;                                             \
		for (int i = blockIdx.y; i < count; i += gridDim.y) {                                    \
			int d = reverse ? count - 1 - i : i;                                                 \
			const SRC_T* s = src + src_base + (long long)i * src_rec_stride;                     \
			DST_T* o = dst + dst_base + (long long)d * dst_rec_stride;                           \
			for (long long e = blockIdx.x * (long long)blockDim.x + threadIdx.x; e < n;          \
			     e += (long long)gridDim.x * blockDim.x) {                                       \
				long long k = e / channels, c = e % channels;                                    \
				float v = fmaf(scale, (float)s[k * src_sample_stride + c], offset);              \
				vg_store(&o[e], (double)v);                                                      \
			}                                                                                    \
		}                                                                                        \
	}

// Radial: one thread per (x, y) pixel of the (nx, ny, samples) volume; the
// segment's record j is at src + src_base + j*src_rec_stride (negative
// stride for reversed segments), samples src_step apart.
// Launch: grid (ceil(nx/16), ceil(ny/16)), block (16, 16).
#define VG_RADIAL(NAME, SRC_T, DST_T)                                                         \
	extern "C" __global__ void NAME(DST_T* __restrict__ dst, const SRC_T* __restrict__ src,       \
	                                int count, int samples, long long src_base,                  \
	                                long long src_rec_stride, long long src_step, int nx,        \
	                                int ny, float scale, float offset, float pitch_x,            \
	                                float pitch_y, float off_x, float off_y, float pitch_r,      \
	                                float pitch_t, float off_r, float off_t) {                   \
		int ix = blockIdx.x * blockDim.x + threadIdx.x;                                          \
		int iy = blockIdx.y * blockDim.y + threadIdx.y;                                          \
		if (ix >= nx || iy >= ny) return;                                                        \
		float x = fmaf(pitch_x, (float)ix, off_x);                                               \
		float y = fmaf(pitch_y, (float)iy, off_y);                                               \
		float r = hypotf(x, y);                                                                  \
		float theta = atan2f(x, y);                                                              \
		long long before = 0, after = 0;                                                         \
		float ratio = 0;                                                                         \
		bool valid = false;                                                                      \
		for (int i = 0; i < 2; i++) {                                                            \
			if (i > 0) {                                                                         \
				r = -r;                                                                          \
				theta = (float)((double)theta + CUDART_PI);                                      \
			}                                                                                    \
			float diff = theta - off_t;                                                          \
			diff = (float)fma(-round((double)diff / (2 * CUDART_PI)), 2 * CUDART_PI, (double)diff); \
			if (fabsf(diff) > pitch_t / 2) continue;                                             \
			float ridx = (r - off_r) / pitch_r;                                                  \
			long long b = (long long)floorf(ridx), a = (long long)ceilf(ridx);                   \
			/* vortex's signed/unsigned compare rejects b < 0 too */                             \
			if (a < 0 || b < 0 || b >= count) continue;                                          \
			if (a > count - 1) a = count - 1;                                                    \
			before = b;                                                                          \
			after = a;                                                                           \
			ratio = ridx - (float)b;                                                             \
			valid = true;                                                                        \
			break;                                                                               \
		}                                                                                        \
		if (!valid) return;                                                                      \
		const SRC_T* sb = src + src_base + before * src_rec_stride;                              \
		const SRC_T* sa = src + src_base + after * src_rec_stride;                               \
		DST_T* o = dst + ((long long)ix * ny + iy) * samples;                                    \
		for (int z = 0; z < samples; z++) {                                                      \
			float v = fmaf(ratio, (float)sb[z * src_step], (1 - ratio) * (float)sa[z * src_step]); \
			vg_store(&o[z], (double)fmaf(scale, v, offset));                                     \
		}                                                                                        \
	}

// Spiral: as radial, with the spiral's geometry (double precision from the
// ideal time on, as vortex's M_PI constants promote it).
#define VG_SPIRAL(NAME, SRC_T, DST_T)                                                         \
	extern "C" __global__ void NAME(DST_T* __restrict__ dst, const SRC_T* __restrict__ src,       \
	                                int count, int samples, long long src_base,                  \
	                                long long src_rec_stride, long long src_step, int nx,        \
	                                int ny, float scale, float offset, float pitch_x,            \
	                                float pitch_y, float off_x, float off_y, float seg_pitch,    \
	                                float seg_offset, float radial_pitch, float velocity) {      \
		int ix = blockIdx.x * blockDim.x + threadIdx.x;                                          \
		int iy = blockIdx.y * blockDim.y + threadIdx.y;                                          \
		if (ix >= nx || iy >= ny) return;                                                        \
		float x = fmaf(pitch_x, (float)ix, off_x);                                               \
		float y = fmaf(pitch_y, (float)iy, off_y);                                               \
		float r = hypotf(x, y);                                                                  \
		float theta = atan2f(x, y);                                                              \
		double omega = (double)velocity;                                                         \
		double ideal_t = ((double)(r * 2.0f) * CUDART_PI) / (double)(radial_pitch * velocity);   \
		double ring = fma(omega, ideal_t, -(double)theta) / (2 * CUDART_PI);                     \
		ring = theta >= 0 ? floor(ring) : ceil(ring);                                            \
		if (ring < 0) ring = 0;                                                                  \
		double spiral_t = fma(ring * 2, CUDART_PI, (double)theta) / omega;                       \
		double sidx = (spiral_t - (double)seg_offset) / (double)seg_pitch;                       \
		long long b = (long long)floor(sidx), a = (long long)ceil(sidx);                         \
		if (a < 0 || b < 0 || b >= count) return;                                                \
		if (a > count - 1) a = count - 1;                                                        \
		double ratio = sidx - (double)b;                                                         \
		const SRC_T* sb = src + src_base + b * src_rec_stride;                                   \
		const SRC_T* sa = src + src_base + a * src_rec_stride;                                   \
		DST_T* o = dst + ((long long)ix * ny + iy) * samples;                                    \
		for (int z = 0; z < samples; z++) {                                                      \
			double v = fma(ratio, (double)sb[z * src_step], (1 - ratio) * (double)sa[z * src_step]); \
			vg_store(&o[z], fma((double)scale, v, (double)offset));                              \
		}                                                                                        \
	}

// Position: one thread per record; the record lands at the pixel its
// (x, y) position maps to through the float32 2x3 matrix m (products and
// sums rounded one by one: __dmul_rn/__dadd_rn keep nvcc from contracting,
// so the Go twin can follow). Records mapping outside the volume are
// dropped; records sharing a pixel race, as in vortex.
// Launch: grid ceil(count/256), block 256.
#define VG_POSITION(NAME, SRC_T, DST_T)                                                       \
	extern "C" __global__ void NAME(DST_T* __restrict__ dst, const SRC_T* __restrict__ src,       \
	                                const double* __restrict__ pos, int count, int samples,      \
	                                long long src_base, long long src_rec_stride,                \
	                                long long src_step, long long pos_base,                      \
	                                long long pos_rec_stride, int ch_x, int ch_y, int nx,        \
	                                int ny, float scale, float offset, float m0, float m1,       \
	                                float m2, float m3, float m4, float m5) {                    \
		int j = blockIdx.x * blockDim.x + threadIdx.x;                                           \
		if (j >= count) return;                                                                  \
		const double* p = pos + pos_base + (long long)j * pos_rec_stride;                        \
		double xg = p[ch_x], yg = p[ch_y];                                                       \
		double fx = __dadd_rn(__dadd_rn(__dmul_rn(m0, xg), __dmul_rn(m1, yg)), (double)m2);      \
		double fy = __dadd_rn(__dadd_rn(__dmul_rn(m3, xg), __dmul_rn(m4, yg)), (double)m5);      \
		fx = floor(fx);                                                                          \
		fy = floor(fy);                                                                          \
		if (!(fx >= 0 && fx < nx && fy >= 0 && fy < ny)) return;                                 \
		const SRC_T* s = src + src_base + (long long)j * src_rec_stride;                         \
		DST_T* o = dst + ((long long)fx * ny + (long long)fy) * samples;                         \
		for (int z = 0; z < samples; z++) {                                                      \
			vg_store(&o[z], (double)fmaf(scale, (float)s[z * src_step], offset));                \
		}                                                                                        \
	}

#define VG_EXECUTORS(SUFFIX, SRC_T, DST_T)                 \
	VG_STACK(vortexgo_stack_##SUFFIX, SRC_T, DST_T)        \
	VG_RADIAL(vortexgo_radial_##SUFFIX, SRC_T, DST_T)      \
	VG_SPIRAL(vortexgo_spiral_##SUFFIX, SRC_T, DST_T)      \
	VG_POSITION(vortexgo_position_##SUFFIX, SRC_T, DST_T)

VG_EXECUTORS(f32_f32, float, float)
VG_EXECUTORS(f32_u16, float, vg_uint16)
VG_EXECUTORS(f32_i8, float, vg_int8)
VG_EXECUTORS(u16_u16, vg_uint16, vg_uint16)
VG_EXECUTORS(u16_f32, vg_uint16, float)
VG_EXECUTORS(i8_i8, vg_int8, vg_int8)
VG_EXECUTORS(i8_f32, vg_int8, float)
