// elementwise.cu: element-wise kernels over the vortexgo dtypes.
//
// Every kernel is extern "C" (unmangled names, looked up by name from Go)
// and uses a grid-stride loop over a 64-bit element count, so any launch
// shape covers any n. gosrc/ops has a Go twin of each kernel for the CPU
// backend; keep the two in step.
//
// Conversions to integer types round to nearest (ties to even) and
// saturate at the type's range; NaN becomes 0. Plain C++ casts of
// out-of-range floats are undefined, and saturation is what image
// formatting (float -> int8/uint8) wants.

typedef signed char vg_int8;
typedef unsigned char vg_uint8;
typedef short vg_int16;
typedef unsigned short vg_uint16;
typedef int vg_int32;
typedef unsigned int vg_uint32;
typedef float vg_float32;
typedef double vg_float64;

// X-macro over (dtype name, C type), in backend.DType order.
#define VG_TYPES(X)          \
	X(int8, vg_int8)         \
	X(uint8, vg_uint8)       \
	X(int16, vg_int16)       \
	X(uint16, vg_uint16)     \
	X(int32, vg_int32)       \
	X(uint32, vg_uint32)     \
	X(float32, vg_float32)   \
	X(float64, vg_float64)

// The same list again for the inner loop of the cast cross product (a
// macro cannot expand itself).
#define VG_DST_TYPES(X, sname, S)     \
	X(sname, S, int8, vg_int8)        \
	X(sname, S, uint8, vg_uint8)      \
	X(sname, S, int16, vg_int16)      \
	X(sname, S, uint16, vg_uint16)    \
	X(sname, S, int32, vg_int32)      \
	X(sname, S, uint32, vg_uint32)    \
	X(sname, S, float32, vg_float32)  \
	X(sname, S, float64, vg_float64)

// limits<T>: range of the integer types, as compile-time constants.
template <typename T> struct limits;
template <> struct limits<vg_int8> { static constexpr double lo = -128.0, hi = 127.0; static constexpr bool integer = true; };
template <> struct limits<vg_uint8> { static constexpr double lo = 0.0, hi = 255.0; static constexpr bool integer = true; };
template <> struct limits<vg_int16> { static constexpr double lo = -32768.0, hi = 32767.0; static constexpr bool integer = true; };
template <> struct limits<vg_uint16> { static constexpr double lo = 0.0, hi = 65535.0; static constexpr bool integer = true; };
template <> struct limits<vg_int32> { static constexpr double lo = -2147483648.0, hi = 2147483647.0; static constexpr bool integer = true; };
template <> struct limits<vg_uint32> { static constexpr double lo = 0.0, hi = 4294967295.0; static constexpr bool integer = true; };
template <> struct limits<vg_float32> { static constexpr double lo = 0, hi = 0; static constexpr bool integer = false; };
template <> struct limits<vg_float64> { static constexpr double lo = 0, hi = 0; static constexpr bool integer = false; };

// compute<T>: the arithmetic type of scale_offset. float is exact for the
// 8- and 16-bit integers and float32; 32-bit integers and float64 need
// double.
template <typename T> struct compute { typedef float type; };
template <> struct compute<vg_int32> { typedef double type; };
template <> struct compute<vg_uint32> { typedef double type; };
template <> struct compute<vg_float64> { typedef double type; };

__device__ __forceinline__ float vg_rint(float x) { return rintf(x); }
__device__ __forceinline__ double vg_rint(double x) { return rint(x); }
__device__ __forceinline__ float vg_fma(float a, float b, float c) { return fmaf(a, b, c); }
__device__ __forceinline__ double vg_fma(double a, double b, double c) { return fma(a, b, c); }

// convert rounds and saturates x into D (see the file comment).
template <typename D, typename C>
__device__ __forceinline__ D convert(C x) {
	if (limits<D>::integer) {
		if (x != x) return D(0); // NaN
		x = vg_rint(x);
		if (x <= C(limits<D>::lo)) return D(limits<D>::lo);
		if (x >= C(limits<D>::hi)) return D(limits<D>::hi);
	}
	return D(x);
}

// Grid-stride loop over [0, n) with 64-bit indices.
#define VG_FOR(i, n)                                                                  \
	for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; \
	     i < (n); i += (unsigned long long)blockDim.x * gridDim.x)

template <typename T>
__device__ __forceinline__ void fill_impl(T* dst, unsigned long long n, double v) {
	const T x = convert<T, double>(v);
	VG_FOR(i, n) dst[i] = x;
}

template <typename T>
__device__ __forceinline__ void scale_offset_impl(T* dst, const T* src, unsigned long long n, double scale, double offset) {
	typedef typename compute<T>::type C;
	const C s = C(scale), o = C(offset);
	VG_FOR(i, n) dst[i] = convert<T, C>(vg_fma(C(src[i]), s, o));
}

template <typename S, typename D>
__device__ __forceinline__ void cast_impl(D* dst, const S* src, unsigned long long n) {
	// double holds every value of every source type exactly.
	VG_FOR(i, n) dst[i] = convert<D, double>(double(src[i]));
}

// fill_<t>(dst, n, v): dst[i] = v converted to t.
#define VG_DEF_FILL(name, T) \
	extern "C" __global__ void fill_##name(T* dst, unsigned long long n, double v) { fill_impl<T>(dst, n, v); }
VG_TYPES(VG_DEF_FILL)

// scale_offset_<t>(dst, src, n, scale, offset): dst[i] = src[i]*scale + offset
// (one fused multiply-add in compute<t>), converted back to t. dst may equal src.
#define VG_DEF_SCALE_OFFSET(name, T)                                                                            \
	extern "C" __global__ void scale_offset_##name(T* dst, const T* src, unsigned long long n, double scale,     \
	                                               double offset) {                                               \
		scale_offset_impl<T>(dst, src, n, scale, offset);                                                         \
	}
VG_TYPES(VG_DEF_SCALE_OFFSET)

// cast_<src>_<dst>(dst, src, n): dst[i] = src[i] converted.
#define VG_DEF_CAST(sname, S, dname, D)                                                          \
	extern "C" __global__ void cast_##sname##_##dname(D* dst, const S* src, unsigned long long n) { \
		cast_impl<S, D>(dst, src, n);                                                             \
	}
#define VG_DEF_CASTS_FROM(sname, S) VG_DST_TYPES(VG_DEF_CAST, sname, S)
VG_TYPES(VG_DEF_CASTS_FROM)

// spin_ns(ns): one thread busy-waits ns nanoseconds of %globaltimer, so a
// test or benchmark can make a stream stage take a known time. Launch it
// with one block of one thread.
extern "C" __global__ void spin_ns(unsigned long long ns) {
	unsigned long long start, now;
	asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
	do {
		asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
	} while (now - start < ns);
}
