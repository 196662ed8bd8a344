package ops

import (
	"fmt"
	"math"
	"unsafe"

	"github.com/vortexgo/vortexgo/gosrc/backend"
)

// number is the element types of the element-wise kernels.
type number interface {
	~int8 | ~uint8 | ~int16 | ~uint16 | ~int32 | ~uint32 | ~float32 | ~float64
}

// hostSlice views n elements of type T at host address p. The memory is
// outside the Go heap (CPU backend buffers are mmap'd, pinned buffers come
// from the driver), so reading the address through a pointer-to-pointer
// conversion, which vet accepts, is safe here.
func hostSlice[T number](p uintptr, n uint64) []T {
	if n == 0 {
		return nil
	}
	ptr := *(*unsafe.Pointer)(unsafe.Pointer(&p))
	return unsafe.Slice((*T)(ptr), n)
}

// converter returns the function converting a float64 to D: rounding to
// nearest even and saturating for integers, NaN to 0 (as convert<D> in
// elementwise.cu).
func converter[D number]() func(float64) D {
	lo, hi, integer := limits[D]()
	if !integer {
		return func(x float64) D { return D(x) }
	}
	return func(x float64) D {
		switch {
		case x != x:
			return 0
		case x <= lo:
			return D(lo)
		case x >= hi:
			return D(hi)
		}
		return D(math.RoundToEven(x))
	}
}

// limits returns the range of an integer type and whether D is one.
func limits[D number]() (lo, hi float64, integer bool) {
	var z D
	switch any(z).(type) {
	case int8:
		return math.MinInt8, math.MaxInt8, true
	case uint8:
		return 0, math.MaxUint8, true
	case int16:
		return math.MinInt16, math.MaxInt16, true
	case uint16:
		return 0, math.MaxUint16, true
	case int32:
		return math.MinInt32, math.MaxInt32, true
	case uint32:
		return 0, math.MaxUint32, true
	}
	return 0, 0, false
}

// computesInFloat64 reports whether scale_offset on T uses double, as
// compute<T> in elementwise.cu: float32 cannot hold every 32-bit integer.
func computesInFloat64[T number]() bool {
	var z T
	switch any(z).(type) {
	case int32, uint32, float64:
		return true
	}
	return false
}

// ---- argument decoding for the CPU twins ----

// hostArgs decodes a twin's arguments, remembering the first mismatch so a
// twin can decode all of them and check once.
type hostArgs struct {
	kernel string
	args   []any
	err    error
}

func newHostArgs(kernel string, args []any, want int) *hostArgs {
	h := &hostArgs{kernel: kernel, args: args}
	if len(args) != want {
		h.err = fmt.Errorf("%s: got %d args, expected %d", kernel, len(args), want)
	}
	return h
}

func (h *hostArgs) bad(i int, want string) {
	if h.err == nil {
		h.err = fmt.Errorf("%s: args[%d] has type %T, expected %s", h.kernel, i, h.args[i], want)
	}
}

func (h *hostArgs) ptr(i int) uintptr {
	if h.err != nil {
		return 0
	}
	switch v := h.args[i].(type) {
	case uintptr:
		return v
	case backend.Buffer:
		return v.Ptr()
	}
	h.bad(i, "uintptr")
	return 0
}

func (h *hostArgs) u64(i int) uint64 {
	if h.err != nil {
		return 0
	}
	if v, ok := h.args[i].(uint64); ok {
		return v
	}
	h.bad(i, "uint64")
	return 0
}

func (h *hostArgs) f64(i int) float64 {
	if h.err != nil {
		return 0
	}
	if v, ok := h.args[i].(float64); ok {
		return v
	}
	h.bad(i, "float64")
	return 0
}

// ---- the CPU twins of elementwise.cu ----

// fillHost is fill_<T>(T* dst, unsigned long long n, double v).
func fillHost[T number](kernel string) HostFunc {
	return func(args ...any) error {
		a := newHostArgs(kernel, args, 3)
		dst, n, v := a.ptr(0), a.u64(1), a.f64(2)
		if a.err != nil {
			return a.err
		}
		x := converter[T]()(v)
		d := hostSlice[T](dst, n)
		for i := range d {
			d[i] = x
		}
		return nil
	}
}

// scaleOffsetHost is scale_offset_<T>(T* dst, const T* src, unsigned long
// long n, double scale, double offset).
func scaleOffsetHost[T number](kernel string) HostFunc {
	return func(args ...any) error {
		a := newHostArgs(kernel, args, 5)
		dst, src, n, scale, offset := a.ptr(0), a.ptr(1), a.u64(2), a.f64(3), a.f64(4)
		if a.err != nil {
			return a.err
		}
		conv := converter[T]()
		d, s := hostSlice[T](dst, n), hostSlice[T](src, n)
		if computesInFloat64[T]() {
			for i := range d {
				d[i] = conv(math.FMA(float64(s[i]), scale, offset))
			}
			return nil
		}
		// float32 arithmetic, as fmaf in the kernel: the product of two
		// float32 values is exact in float64, so only the final roundings
		// (to float64, then float32) can differ from fmaf's single one.
		sc, of := float64(float32(scale)), float64(float32(offset))
		for i := range d {
			y := float32(math.FMA(float64(float32(s[i])), sc, of))
			d[i] = conv(float64(y))
		}
		return nil
	}
}

// castHost is cast_<S>_<D>(D* dst, const S* src, unsigned long long n).
func castHost[S, D number](kernel string) HostFunc {
	return func(args ...any) error {
		a := newHostArgs(kernel, args, 3)
		dst, src, n := a.ptr(0), a.ptr(1), a.u64(2)
		if a.err != nil {
			return a.err
		}
		conv := converter[D]()
		d, s := hostSlice[D](dst, n), hostSlice[S](src, n)
		// float64 holds every source value exactly, as double in the kernel.
		for i := range d {
			d[i] = conv(float64(s[i]))
		}
		return nil
	}
}
