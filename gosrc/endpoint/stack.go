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
// An endpoint executes the Copy actions of the planner's plan with its
// executor (package format: stack, radial, spiral, position), each one
// kernel launch on the endpoint's stream (the kernels' Go twins on the CPU
// backend). FormatHost and the vortexgo_format_<src>_<dst> kernels are the
// plain strided copy, kept for their users outside the engine.
package endpoint

import (
	"errors"
	"fmt"
	"math"
	"unsafe"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/engine"
	"github.com/vortexgo/vortexgo/gosrc/format"
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

// volumeFormatter executes the Copy actions of a format plan into one
// volume with an executor of package format (stack, radial, spiral or
// position), as kernels on the endpoint's stream (their Go twins on the
// CPU backend). Nothing here waits on the host.
type volumeFormatter struct {
	dtype   backend.DType
	src     source
	exec    any    // *format.{Stack,Radial,Spiral,Position}FormatExecutor
	shape   [4]int // the executor's volume shape
	samples int    // samples per record of the block buffer read

	// The CPU path: host streams run the executor's Go code directly
	// through a prebound method value, so formatting a block on the CPU
	// backend allocates nothing (a launch boxes its arguments).
	hostRun  func()
	hostFn   func(*volumeFormatter) error
	hostErr  error
	hostDst  uintptr
	hostBlk  format.DeviceBlock
	hostData *engine.BlockData
	hostAct  format.Action
}

// hostFormatters run one Copy on host memory, by (block, volume) dtype.
var hostFormatters = map[[2]backend.DType]func(*volumeFormatter) error{
	{backend.Float32, backend.Float32}: hostFormat[float32, float32],
	{backend.Float32, backend.Uint16}:  hostFormat[uint16, float32],
	{backend.Float32, backend.Int8}:    hostFormat[int8, float32],
	{backend.Uint16, backend.Uint16}:   hostFormat[uint16, uint16],
	{backend.Int8, backend.Int8}:       hostFormat[int8, int8],
}

// hostFormat executes f.hostAct with the CPU executor on host memory.
func hostFormat[D, S format.Element](f *volumeFormatter) error {
	vol := format.Volume[D]{Data: hostView[D](f.hostDst, f.shape[0]*f.shape[1]*f.shape[2]), Shape: f.shape}
	b := f.hostBlk
	blk := format.Block[S]{Data: hostView[S](b.Ptr, b.Records*b.Samples), Records: b.Records, Samples: b.Samples, Channels: 1}
	switch x := f.exec.(type) {
	case *format.StackFormatExecutor:
		return format.ExecuteStack(x, vol, blk, f.hostAct)
	case *format.RadialFormatExecutor:
		return format.ExecuteRadial(x, vol, blk, f.hostAct)
	case *format.SpiralFormatExecutor:
		return format.ExecuteSpiral(x, vol, blk, f.hostAct)
	case *format.PositionFormatExecutor:
		d := f.hostData
		t := format.Positions{Data: hostView[float64](d.Target.Ptr, d.Target.Records*d.Target.Channels), Records: d.Target.Records, Channels: d.Target.Channels}
		a := format.Positions{Data: hostView[float64](d.Actual.Ptr, d.Actual.Records*d.Actual.Channels), Records: d.Actual.Records, Channels: d.Actual.Channels}
		return format.ExecutePosition(x, vol, blk, t, a, f.hostAct)
	}
	return fmt.Errorf("endpoint: executor %T", f.exec)
}

func (f *volumeFormatter) runHost() { f.hostErr = f.hostFn(f) }

// checkExecutor accepts the executors endpoints run.
func checkExecutor(exec any) error {
	switch exec.(type) {
	case nil, *format.StackFormatExecutor, *format.RadialFormatExecutor, *format.SpiralFormatExecutor, *format.PositionFormatExecutor:
		return nil
	}
	return engine.Invalid("executor: a %T, expected a Stack, Radial, Spiral or PositionFormatExecutor", exec)
}

// configure resolves the volume from the engine's info, the endpoint's
// executor and its shape (nil: for a stack executor, the planner's
// segments x records x the samples kept; other executors need a shape).
func (f *volumeFormatter) configure(info engine.EndpointInfo, src source, dtype backend.DType, exec any, shape []int) error {
	f.src, f.dtype = src, dtype
	f.samples = info.OutputSamples
	if src == srcRaw {
		if dtype != backend.Uint16 {
			return fmt.Errorf("endpoint: spectra dtype=%v, expected uint16", dtype)
		}
		f.samples = info.RawSamples
	} else {
		switch dtype {
		case backend.Int8, backend.Uint16, backend.Float32:
		default:
			return fmt.Errorf("endpoint: dtype=%v, expected int8, uint16 or float32", dtype)
		}
	}
	if exec == nil {
		// No executor of its own: every sample of each record.
		e, err := format.NewStackFormatExecutor(format.StackFormatExecutorConfig{SampleSlice: format.NullSlice()})
		if err != nil {
			return err
		}
		exec = e
	}
	f.exec = exec
	if shape == nil {
		se, ok := exec.(*format.StackFormatExecutor)
		if !ok {
			return engine.Invalid("endpoint: shape=None with a %T, expected the volume's (x, y, samples)", exec)
		}
		kept := f.samples
		if sl := se.Config().SampleSlice; sl.Simple {
			kept = sl.Count()
		}
		if info.SegmentsPerVolume == format.Unbounded || info.RecordsPerSegment == format.Unbounded {
			return engine.Invalid("endpoint: shape=None with a FormatPlannerConfig.shape left unset (vortex's unbounded), expected the endpoint's shape or the planner's")
		}
		shape = []int{info.SegmentsPerVolume, info.RecordsPerSegment, kept}
	}
	if len(shape) != 3 {
		return engine.Invalid("endpoint: shape %v, expected 3 dimensions", shape)
	}
	// The executor keeps its sample slice of each record: the volume's
	// samples must be that many, checked here so that nothing runs
	// half-configured.
	var slice format.SampleSlice
	switch x := exec.(type) {
	case *format.StackFormatExecutor:
		slice = x.Config().SampleSlice
	case *format.RadialFormatExecutor:
		slice = x.Config().SampleSlice
	case *format.SpiralFormatExecutor:
		slice = x.Config().SampleSlice
	case *format.PositionFormatExecutor:
		slice = x.Config().SampleSlice
	}
	kept := f.samples
	if slice.Simple {
		if slice.Stop > f.samples {
			return engine.Invalid("endpoint: sample_slice stop %d, expected <= the %d samples per record", slice.Stop, f.samples)
		}
		kept = slice.Count()
	}
	if shape[2] != kept {
		return engine.Invalid("endpoint: shape %v has %d samples, expected %d (the executor's sample_slice of %d samples per record)", shape, shape[2], kept, f.samples)
	}
	f.shape = [4]int{shape[0], shape[1], shape[2], 1}
	for i, d := range shape {
		if d <= 0 {
			return engine.Invalid("endpoint: shape[%d]=%d, expected > 0 (check the planner's shape and the sample slice)", i, d)
		}
	}
	if _, ok := engine.MulSize(shape[0], shape[1], shape[2], dtype.Size()); !ok {
		return engine.TooLarge("endpoint: volume %v of %v is too large", shape, dtype)
	}
	// The executor's kernel is compiled now, at Prepare, not when the
	// first block is formatted (format.Prepare).
	return format.Prepare(info.Device, exec, f.blockDType(), dtype)
}

// blockDType is the type of the block data format reads: the raw spectra,
// the int8 output for an int8 volume, the float32 output otherwise.
func (f *volumeFormatter) blockDType() backend.DType {
	switch {
	case f.src == srcRaw:
		return backend.Uint16
	case f.dtype == backend.Int8:
		return backend.Int8
	}
	return backend.Float32
}

func (f *volumeFormatter) shape3() []int { return []int{f.shape[0], f.shape[1], f.shape[2]} }

func (f *volumeFormatter) volumeBytes() int {
	return f.shape[0] * f.shape[1] * f.shape[2] * f.dtype.Size()
}

// format enqueues the plan's copies for block b into the volume at dst.
func (f *volumeFormatter) format(s backend.Stream, dst uintptr, b *engine.BlockData, plan *engine.FormatPlan) error {
	blk := format.DeviceBlock{Records: b.Records, Samples: f.samples, Channels: 1, DType: f.blockDType()}
	switch blk.DType {
	case backend.Uint16:
		blk.Ptr = b.Raw
	case backend.Int8:
		blk.Ptr = b.Int8
	default:
		blk.Ptr = b.Processed
	}
	vol := format.DeviceVolume{Ptr: dst, DType: f.dtype, Shape: f.shape}
	hs, host := s.(backend.HostStream)
	if host {
		fn, ok := hostFormatters[[2]backend.DType{blk.DType, f.dtype}]
		if !ok {
			return fmt.Errorf("endpoint: no formatter from %v to %v", blk.DType, f.dtype)
		}
		f.hostFn, f.hostDst, f.hostBlk, f.hostData = fn, dst, blk, b
		if f.hostRun == nil {
			f.hostRun = f.runHost
		}
	}
	if x, ok := f.exec.(*format.StackFormatExecutor); ok && !host {
		return x.LaunchAll(s, vol, blk, plan.Actions)
	}
	for i := range plan.Actions {
		a := plan.Actions[i]
		if a.Kind != format.Copy || a.Count == 0 {
			continue
		}
		if host {
			// Enqueue runs the work at once on a host stream (the engine
			// never captures endpoint streams), so reusing the fields is safe.
			f.hostAct, f.hostErr = a, nil
			if err := hs.Enqueue(f.hostRun); err != nil {
				return err
			}
			if f.hostErr != nil {
				return f.hostErr
			}
			continue
		}
		var err error
		switch x := f.exec.(type) {
		case *format.StackFormatExecutor:
			err = x.Launch(s, vol, blk, a)
		case *format.RadialFormatExecutor:
			err = x.Launch(s, vol, blk, a)
		case *format.SpiralFormatExecutor:
			err = x.Launch(s, vol, blk, a)
		case *format.PositionFormatExecutor:
			err = x.Launch(s, vol, blk, b.Target, b.Actual, a)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// errStopped wraps a lock wait interrupted by the engine's stop.
func errStopped(err error) error { return errors.Join(engine.ErrStopped, err) }
