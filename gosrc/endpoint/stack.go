// Package endpoint holds the engine's endpoints: where formatted A-scans
// go. Each endpoint owns a stream; the engine calls Format from its format
// goroutine, and the endpoint makes its stream wait on the block's ready
// event (a device-side wait) before enqueueing its copies, so formatting of
// one endpoint never waits on another, nor the host on the device.
//
// Tensor endpoints write into a memory.DeviceTensor under its exclusive
// lock (owner = the engine's token): a user holding the lock delays the
// engine (backpressure) but never sees a half-written block. Storage
// endpoints format into a private device volume, download each completed
// volume into pinned memory and hand it to a writer goroutine, so disk
// writes stay off the engine's hot path.
//
// # The format kernel
//
// Placing a block's records into a volume is one strided copy per B-scan
// segment, with a depth crop, an optional reversal (bidirectional return
// lines) and an optional cast. On the CPU backend it runs as Go code
// (FormatHost) through backend.HostStream. On CUDA a same-type forward copy
// is a single Copy2D; anything else launches kernels/format.cu's
// vortexgo_format_<src>_<dst> through ops.LaunchByName, whose CPU twins
// this package registers.
package endpoint

import (
	"errors"
	"fmt"
	"math"
	"unsafe"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/engine"
	"github.com/vortexgo/vortexgo/gosrc/ops"
)

// LaunchKernel launches a kernel by name; a variable so tests can count
// or fail launches.
var LaunchKernel = ops.LaunchByName

// maxGridY is CUDA's limit on gridDim.y, which carries the record index.
const maxGridY = 65535

func init() {
	// The CPU twins of format.cu, so ops.LaunchByName works on host
	// streams too (the endpoints themselves call FormatHost directly).
	for p, name := range kernelNames {
		ops.RegisterHost(name, func(args ...any) error {
			a, err := hostArgs(name, p[0], p[1], args)
			if err != nil {
				return err
			}
			return FormatHost(&a)
		})
	}
}

// hostArgs decodes a kernel argument list (see KernelArgs).
func hostArgs(name string, src, dst backend.DType, args []any) (FormatArgs, error) {
	bad := fmt.Errorf("%s: args %v, expected (dst uintptr, src uintptr, records, samples, dst_stride, src_stride, reverse int32)", name, args)
	if len(args) != 7 {
		return FormatArgs{}, bad
	}
	d, ok1 := args[0].(uintptr)
	s, ok2 := args[1].(uintptr)
	var ints [5]int32
	for i := range ints {
		v, ok := args[2+i].(int32)
		if !ok {
			return FormatArgs{}, bad
		}
		ints[i] = v
	}
	if !ok1 || !ok2 {
		return FormatArgs{}, bad
	}
	return FormatArgs{Dst: d, Src: s, DstType: dst, SrcType: src, Records: int(ints[0]), Samples: int(ints[1]),
		DstStride: int(ints[2]), SrcStride: int(ints[3]), Reverse: ints[4] != 0}, nil
}

// FormatArgs describe one strided copy of Records A-scans.
type FormatArgs struct {
	// Dst is the first destination A-scan; Src the first source sample.
	Dst, Src uintptr
	// DstType and SrcType are the element types.
	DstType, SrcType backend.DType
	// Records is the number of A-scans; Samples the samples kept of each.
	Records, Samples int
	// DstStride and SrcStride are the A-scan pitches, in elements.
	DstStride, SrcStride int
	// Reverse writes source record r to destination A-scan Records-1-r.
	Reverse bool
}

// kernelNames maps each supported (src, dst) pair to its kernel in
// kernels/format.cu; a table so that the hot path looks names up without
// building strings.
var kernelNames = map[[2]backend.DType]string{
	{backend.Float32, backend.Float32}: "vortexgo_format_f32_f32",
	{backend.Float32, backend.Uint16}:  "vortexgo_format_f32_u16",
	{backend.Float32, backend.Int8}:    "vortexgo_format_f32_i8",
	{backend.Uint16, backend.Uint16}:   "vortexgo_format_u16_u16",
	{backend.Int8, backend.Int8}:       "vortexgo_format_i8_i8",
}

// KernelName returns the format kernel for a (src, dst) type pair.
func KernelName(src, dst backend.DType) (string, error) {
	name, ok := kernelNames[[2]backend.DType{src, dst}]
	if !ok {
		return "", fmt.Errorf("endpoint: no format kernel from %v to %v, expected float32->{float32,uint16,int8} or a same-type copy of uint16/int8", src, dst)
	}
	return name, nil
}

// KernelArgs is the argument list of the format kernel for a, in the
// order format.cu declares it.
func KernelArgs(a *FormatArgs) []any {
	rev := int32(0)
	if a.Reverse {
		rev = 1
	}
	return []any{a.Dst, a.Src, int32(a.Records), int32(a.Samples), int32(a.DstStride), int32(a.SrcStride), rev}
}

// hostView returns n elements of host memory at p (never on the Go heap)
// as a slice of T.
func hostView[T any](p uintptr, n int) []T {
	if n <= 0 {
		return nil
	}
	// Pointer-to-pointer conversion: the memory belongs to the backend
	// (mmap'd or pinned), so vet's concern about uintptr->Pointer (the
	// collector moving or freeing it) does not apply.
	ptr := *(*unsafe.Pointer)(unsafe.Pointer(&p))
	return unsafe.Slice((*T)(ptr), n)
}

// FormatHost is the Go equivalent of the format kernel, for host memory.
// Casts round to nearest and saturate (NaN becomes 0), like format.cu.
func FormatHost(a *FormatArgs) error {
	if _, err := KernelName(a.SrcType, a.DstType); err != nil {
		return err
	}
	if a.Records <= 0 || a.Samples <= 0 {
		return nil
	}
	srcLen := (a.Records-1)*a.SrcStride + a.Samples
	dstLen := (a.Records-1)*a.DstStride + a.Samples
	for r := range a.Records {
		d := r
		if a.Reverse {
			d = a.Records - 1 - r
		}
		so, do := r*a.SrcStride, d*a.DstStride
		switch a.SrcType {
		case backend.Float32:
			src := hostView[float32](a.Src, srcLen)[so : so+a.Samples]
			switch a.DstType {
			case backend.Float32:
				copy(hostView[float32](a.Dst, dstLen)[do:do+a.Samples], src)
			case backend.Uint16:
				dst := hostView[uint16](a.Dst, dstLen)[do : do+a.Samples]
				for i, v := range src {
					dst[i] = uint16(saturate(v, 0, math.MaxUint16))
				}
			case backend.Int8:
				dst := hostView[int8](a.Dst, dstLen)[do : do+a.Samples]
				for i, v := range src {
					dst[i] = int8(saturate(v, math.MinInt8, math.MaxInt8))
				}
			}
		case backend.Uint16:
			copy(hostView[uint16](a.Dst, dstLen)[do:do+a.Samples], hostView[uint16](a.Src, srcLen)[so:so+a.Samples])
		case backend.Int8:
			copy(hostView[int8](a.Dst, dstLen)[do:do+a.Samples], hostView[int8](a.Src, srcLen)[so:so+a.Samples])
		}
	}
	return nil
}

// saturate rounds v to nearest and clamps it to [lo, hi]; NaN gives 0.
func saturate(v float32, lo, hi float64) float64 {
	f := float64(v)
	if f != f {
		return 0
	}
	return math.Max(lo, math.Min(hi, math.RoundToEven(f)))
}

// source selects which buffer of a block an endpoint reads.
type source int

const (
	srcProcessed source = iota // float32 A-scans, or their int8 rendering
	srcRaw                     // uint16 raw spectra
)

// stackFormatter places a block's records into a (bscans, ascans, depth)
// volume of one dtype. It holds one FormatArgs and a bound method value so
// that the CPU path enqueues without allocating.
type stackFormatter struct {
	dtype              backend.DType
	src                source
	bscans, ascans     int
	depth, sampleStart int
	args               FormatArgs
	hostRun            func()
	hostErr            error
	deviceKind         backend.Kind
	volumeElems        int
}

// configure resolves the geometry from the engine's info.
func (f *stackFormatter) configure(info engine.EndpointInfo, src source, dtype backend.DType) error {
	f.src, f.dtype = src, dtype
	f.bscans, f.ascans = info.Bscans, info.Ascans
	if src == srcRaw {
		if dtype != backend.Uint16 {
			return fmt.Errorf("endpoint: spectra dtype=%v, expected uint16", dtype)
		}
		f.sampleStart, f.depth = 0, info.RawSamples
	} else {
		f.sampleStart, f.depth = info.SampleStart, info.SampleStop-info.SampleStart
		switch dtype {
		case backend.Int8, backend.Uint16, backend.Float32:
		default:
			return fmt.Errorf("endpoint: dtype=%v, expected int8, uint16 or float32", dtype)
		}
	}
	if f.bscans <= 0 || f.ascans <= 0 || f.depth <= 0 {
		return fmt.Errorf("endpoint: volume shape (%d, %d, %d), expected all > 0 (check the formatter's scan and sample slice)", f.bscans, f.ascans, f.depth)
	}
	f.volumeElems = f.bscans * f.ascans * f.depth
	f.hostRun = f.runHost
	return nil
}

func (f *stackFormatter) shape() []int { return []int{f.bscans, f.ascans, f.depth} }

func (f *stackFormatter) volumeBytes() int { return f.volumeElems * f.dtype.Size() }

// runHost executes f.args; it runs inside HostStream.Enqueue.
func (f *stackFormatter) runHost() { f.hostErr = FormatHost(&f.args) }

// format enqueues the plan's copies for block b into the volume at dst.
func (f *stackFormatter) format(s backend.Stream, dst uintptr, b *engine.BlockData, plan *engine.FormatPlan) error {
	for i := range plan.Actions {
		a := &plan.Actions[i]
		if a.Kind != engine.ActionCopy {
			continue
		}
		if a.SrcRecord < 0 || a.SrcRecord+a.Records > b.Records || a.DstAscan < 0 || a.DstAscan+a.Records > f.ascans || a.Bscan < 0 || a.Bscan >= f.bscans {
			return fmt.Errorf("endpoint: copy of records [%d, %d) to bscan %d ascans [%d, %d), expected records within the block's %d and a destination inside (%d, %d)",
				a.SrcRecord, a.SrcRecord+a.Records, a.Bscan, a.DstAscan, a.DstAscan+a.Records, b.Records, f.bscans, f.ascans)
		}
		args := &f.args
		switch {
		case f.src == srcRaw:
			args.Src, args.SrcType, args.SrcStride = b.Raw, backend.Uint16, b.RawSamples
		case f.dtype == backend.Int8:
			args.Src, args.SrcType, args.SrcStride = b.Int8, backend.Int8, b.OutputSamples
		default:
			args.Src, args.SrcType, args.SrcStride = b.Processed, backend.Float32, b.OutputSamples
		}
		args.Src += uintptr((a.SrcRecord*args.SrcStride + f.sampleStart) * args.SrcType.Size())
		args.Dst = dst + uintptr((a.Bscan*f.ascans+a.DstAscan)*f.depth*f.dtype.Size())
		args.DstType, args.DstStride = f.dtype, f.depth
		args.Records, args.Samples, args.Reverse = a.Records, f.depth, a.Reverse
		if err := f.launch(s); err != nil {
			return err
		}
	}
	return nil
}

// launch runs f.args on s by the cheapest path the backend offers.
func (f *stackFormatter) launch(s backend.Stream) error {
	a := &f.args
	if hs, ok := s.(backend.HostStream); ok {
		// Enqueue runs the work at once on a host stream (the engine never
		// captures endpoint streams), so reusing f.args is safe and the
		// bound method value avoids a closure per copy.
		f.hostErr = nil
		if err := hs.Enqueue(f.hostRun); err != nil {
			return err
		}
		return f.hostErr
	}
	es := a.SrcType.Size()
	if a.SrcType == a.DstType && !a.Reverse {
		return s.Copy2D(a.Dst, a.DstStride*es, a.Src, a.SrcStride*es, a.Samples*es, a.Records)
	}
	name, err := KernelName(a.SrcType, a.DstType)
	if err != nil {
		return err
	}
	if a.Records > maxGridY {
		return fmt.Errorf("endpoint: a B-scan segment of %d A-scans, expected at most %d (the format kernel's grid y)", a.Records, maxGridY)
	}
	const threads = 256
	grid := [3]uint32{uint32((a.Samples + threads - 1) / threads), uint32(a.Records), 1}
	return LaunchKernel(s, name, grid, [3]uint32{threads, 1, 1}, KernelArgs(a)...)
}

// errStopped wraps a lock wait interrupted by the engine's stop.
func errStopped(err error) error { return errors.Join(engine.ErrStopped, err) }
