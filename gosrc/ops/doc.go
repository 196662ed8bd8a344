// Package ops runs vortexgo's kernels on any backend.
//
// Each kernel of kernels/ exists twice: as PTX, launched by name on a
// *cuda.Stream (the module is JIT-loaded once per device and functions are
// cached), and as a Go function with the same argument list, run in stream
// order through backend.HostStream.Enqueue on the CPU backend. Fill,
// ScaleOffset and Cast are typed front ends to the element-wise kernels;
// LaunchByName reaches any kernel, including those other packages add in
// kernels/*.cu, whose CPU twins they register with RegisterHost.
//
// # Arguments
//
// Kernel arguments are uintptr (pointers), int32, uint32, int64, uint64,
// float32 and float64, exactly as the CUDA C parameter types: the driver
// copies as many bytes as the kernel declares, so a mismatch is not caught
// on CUDA. A backend.Buffer may stand for its pointer.
//
// # Conversions
//
// Conversions to integer types round to nearest (ties to even) and
// saturate; NaN becomes 0. The CPU twins compute in the same precision as
// the kernels (float32 for 8/16-bit integers and float32, float64 for
// 32-bit integers and float64, with a fused multiply-add), so results
// agree exactly except that a float32 multiply-add is emulated in float64
// on the CPU and may differ in the last bit in rare cases.
package ops
