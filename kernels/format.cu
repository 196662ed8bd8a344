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
