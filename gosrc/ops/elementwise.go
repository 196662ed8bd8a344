package ops

import (
	"fmt"
	"time"

	"github.com/vortexgo/vortexgo/gosrc/backend"
)

// Launch shape of the element-wise kernels. The kernels loop with a grid
// stride, so the grid only needs to fill the GPU: 8192 blocks of 256
// threads is several waves on any current GPU, and larger arrays take more
// iterations per thread rather than more blocks.
const (
	blockSize = 256
	maxBlocks = 8192
)

// grid1D returns the grid for n elements.
func grid1D(n int) [3]uint32 {
	blocks := min((n+blockSize-1)/blockSize, maxBlocks)
	return [3]uint32{uint32(max(blocks, 1)), 1, 1}
}

var block1D = [3]uint32{blockSize, 1, 1}

// elementTypes lists the dtypes the element-wise kernels support.
const elementTypes = "int8, uint8, int16, uint16, int32, uint32, float32, float64"

// checkDType rejects types without element-wise kernels (complex64).
func checkDType(op, arg string, dt backend.DType) error {
	if !dt.Valid() || dt == backend.Complex64 {
		return fmt.Errorf("%s: %s=%v, expected one of %s", op, arg, dt, elementTypes)
	}
	return nil
}

// checkCommon validates the stream, the count and the pointers.
func checkCommon(op string, s backend.Stream, n int, ptrs ...uintptr) error {
	if s == nil {
		return fmt.Errorf("%s: s is nil, expected a stream", op)
	}
	if n < 0 {
		return fmt.Errorf("%s: n=%d, expected n >= 0", op, n)
	}
	if n > 0 {
		for _, p := range ptrs {
			if p == 0 {
				return fmt.Errorf("%s: null pointer with n=%d, expected a valid address", op, n)
			}
		}
	}
	return nil
}

// Fill sets n elements of type dt at dst to v (converted: rounded and
// saturated for integer types) in stream order.
func Fill(s backend.Stream, dst uintptr, n int, dt backend.DType, v float64) error {
	const op = "ops.Fill"
	if err := checkCommon(op, s, n, dst); err != nil {
		return err
	}
	if err := checkDType(op, "dt", dt); err != nil {
		return err
	}
	if n == 0 {
		return nil
	}
	return LaunchByName(s, "fill_"+dt.String(), grid1D(n), block1D, dst, uint64(n), v)
}

// ScaleOffset computes dst[i] = src[i]*scale + offset over n elements of
// type dt in stream order (in float32 for 8/16-bit integers and float32,
// in float64 otherwise; integer results rounded and saturated). dst may
// equal src.
func ScaleOffset(s backend.Stream, dst, src uintptr, n int, dt backend.DType, scale, offset float64) error {
	const op = "ops.ScaleOffset"
	if err := checkCommon(op, s, n, dst, src); err != nil {
		return err
	}
	if err := checkDType(op, "dt", dt); err != nil {
		return err
	}
	if n == 0 {
		return nil
	}
	return LaunchByName(s, "scale_offset_"+dt.String(), grid1D(n), block1D, dst, src, uint64(n), scale, offset)
}

// Cast converts n elements from src (of srcType) to dst (of dstType) in
// stream order; integer results are rounded and saturated. The ranges must
// not overlap unless dst == src and the types have the same size.
func Cast(s backend.Stream, dst uintptr, dstType backend.DType, src uintptr, srcType backend.DType, n int) error {
	const op = "ops.Cast"
	if err := checkCommon(op, s, n, dst, src); err != nil {
		return err
	}
	if err := checkDType(op, "dstType", dstType); err != nil {
		return err
	}
	if err := checkDType(op, "srcType", srcType); err != nil {
		return err
	}
	if n == 0 {
		return nil
	}
	return LaunchByName(s, "cast_"+srcType.String()+"_"+dstType.String(), grid1D(n), block1D, dst, src, uint64(n))
}

// Spin makes s busy for d: a one-thread kernel polling %globaltimer on
// CUDA, a sleep on the CPU. Tests and benchmarks use it to give a stage a
// known duration.
func Spin(s backend.Stream, d time.Duration) error {
	if d < 0 {
		return fmt.Errorf("ops.Spin: d=%v, expected d >= 0", d)
	}
	one := [3]uint32{1, 1, 1}
	return LaunchByName(s, "spin_ns", one, one, uint64(d.Nanoseconds()))
}

// spinHost is spin_ns(unsigned long long ns).
func spinHost(args ...any) error {
	a := newHostArgs("spin_ns", args, 1)
	ns := a.u64(0)
	if a.err != nil {
		return a.err
	}
	time.Sleep(time.Duration(ns))
	return nil
}

func init() {
	RegisterHost("spin_ns", spinHost)
	registerElementwise[int8]("int8")
	registerElementwise[uint8]("uint8")
	registerElementwise[int16]("int16")
	registerElementwise[uint16]("uint16")
	registerElementwise[int32]("int32")
	registerElementwise[uint32]("uint32")
	registerElementwise[float32]("float32")
	registerElementwise[float64]("float64")
}

// registerElementwise registers the CPU twins of fill_<t>, scale_offset_<t>
// and cast_<t>_<every type>.
func registerElementwise[T number](t string) {
	reg := func(name string, fn func(string) HostFunc) { RegisterHost(name, fn(name)) }
	reg("fill_"+t, fillHost[T])
	reg("scale_offset_"+t, scaleOffsetHost[T])
	reg("cast_"+t+"_int8", castHost[T, int8])
	reg("cast_"+t+"_uint8", castHost[T, uint8])
	reg("cast_"+t+"_int16", castHost[T, int16])
	reg("cast_"+t+"_uint16", castHost[T, uint16])
	reg("cast_"+t+"_int32", castHost[T, int32])
	reg("cast_"+t+"_uint32", castHost[T, uint32])
	reg("cast_"+t+"_float32", castHost[T, float32])
	reg("cast_"+t+"_float64", castHost[T, float64])
}
