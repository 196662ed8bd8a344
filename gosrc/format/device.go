package format

import (
	"fmt"
	"unsafe"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/ops"
)

// The executors on a backend stream: each Launch checks its arguments on
// the host, computes the same parameters as the CPU executor and enqueues
// one kernel of kernels/format.cu (vortexgo_<family>_<src>_<dst>) through
// ops.LaunchByName. Nothing waits on the host: the copy runs in stream
// order, and the caller keeps the buffers alive until the stream has
// passed it. On the CPU backend the kernels' Go twins, registered below,
// run the CPU executor's code on the buffers' host memory.

// DeviceVolume is a volume in backend memory: Shape's product elements of
// DType at Ptr, row-major (see Volume for the shapes).
type DeviceVolume struct {
	// Ptr is the address of the first element.
	Ptr uintptr
	// DType is the element type.
	DType backend.DType
	// Shape is the volume's four dimensions.
	Shape [4]int
}

// DeviceBlock is a block of records in backend memory: (Records, Samples,
// Channels) row-major elements of DType at Ptr.
type DeviceBlock struct {
	// Ptr is the address of the first element.
	Ptr uintptr
	// DType is the element type.
	DType backend.DType
	// Records is the number of records in the block.
	Records int
	// Samples is the number of samples per record.
	Samples int
	// Channels is the number of channels per sample.
	Channels int
}

// DevicePositions is a (Records, Channels) float64 array of positions in
// backend memory.
type DevicePositions struct {
	// Ptr is the address of the first element.
	Ptr uintptr
	// Records is the number of rows.
	Records int
	// Channels is the number of columns.
	Channels int
}

type family int

const (
	famStack family = iota
	famRadial
	famSpiral
	famPosition
)

var familyNames = [...]string{"stack", "radial", "spiral", "position"}

type dtypePair [2]backend.DType // source, destination

// hostRunners are the Go twins, by type pair: the kernels' type pairs.
var hostRunners = map[dtypePair]func(f family, args []any) error{
	{backend.Float32, backend.Float32}: hostRun[float32, float32],
	{backend.Float32, backend.Uint16}:  hostRun[uint16, float32],
	{backend.Float32, backend.Int8}:    hostRun[int8, float32],
	{backend.Uint16, backend.Uint16}:   hostRun[uint16, uint16],
	{backend.Uint16, backend.Float32}:  hostRun[float32, uint16],
	{backend.Int8, backend.Int8}:       hostRun[int8, int8],
	{backend.Int8, backend.Float32}:    hostRun[float32, int8],
}

var dtypeSuffix = map[backend.DType]string{backend.Float32: "f32", backend.Uint16: "u16", backend.Int8: "i8"}

// kernelNames[family][pair] is the kernel's name, built once so that a
// launch does not format strings.
var kernelNames [len(familyNames)]map[dtypePair]string

func init() {
	for f := range familyNames {
		kernelNames[f] = map[dtypePair]string{}
		for pair := range hostRunners {
			name := fmt.Sprintf("vortexgo_%s_%s_%s", familyNames[f], dtypeSuffix[pair[0]], dtypeSuffix[pair[1]])
			kernelNames[f][pair] = name
			run, fam := hostRunners[pair], family(f)
			ops.RegisterHost(name, func(args ...any) error { return run(fam, args) })
		}
	}
}

func kernelName(what string, f family, src, dst backend.DType) (string, error) {
	name, ok := kernelNames[f][dtypePair{src, dst}]
	if !ok {
		return "", backend.Invalidf("%s: block %s to volume %s, expected one of float32>float32, float32>uint16, float32>int8, uint16>uint16, uint16>float32, int8>int8, int8>float32", what, src, dst)
	}
	return name, nil
}

func (v DeviceVolume) check(what string) error {
	if v.Ptr == 0 {
		return backend.Invalidf("%s: volume pointer is 0", what)
	}
	_, err := volumeElements(what, v.Shape)
	return err
}

func (b DeviceBlock) check(what string) error {
	if b.Ptr == 0 && b.Records > 0 {
		return backend.Invalidf("%s: block pointer is 0", what)
	}
	if b.Records < 0 || b.Samples <= 0 || b.Channels <= 0 || b.Records > maxShape || b.Samples > maxShape || b.Channels > maxShape {
		return backend.Invalidf("%s: block shape (%d, %d, %d): expected records >= 0, samples and channels >= 1", what, b.Records, b.Samples, b.Channels)
	}
	return nil
}

const threads = 256

// gridOf is ceil(n/d), at least 1.
func gridOf(n, d int) uint32 { return uint32(max(1, (n+d-1)/d)) }

// Launch enqueues the Copy action a on s: the action's records of blk into
// vol, as ExecuteStack does.
func (e *StackFormatExecutor) Launch(s backend.Stream, vol DeviceVolume, blk DeviceBlock, a Action) error {
	name, err := stackKernel(vol, blk)
	if err != nil {
		return err
	}
	p, err := stackPlan(&e.cfg, vol.Shape, blk.Records, blk.Samples, blk.Channels, &a)
	if err != nil {
		return err
	}
	if p.count == 0 {
		return nil
	}
	return launchStack(s, name, vol, blk, &p)
}

// launchStack enqueues the stack kernel name on s for the planned copy p.
func launchStack(s backend.Stream, name string, vol DeviceVolume, blk DeviceBlock, p *stackParams) error {
	grid := [3]uint32{gridOf(p.samples*p.channels, threads), uint32(min(p.count, 65535)), 1}
	return ops.LaunchByName(s, name, grid, [3]uint32{threads, 1, 1}, stackArgs(vol.Ptr, blk.Ptr, p)...)
}

// LaunchAll enqueues every Copy action of acts on s (a plan's other actions
// write nothing and are skipped), as Launch does for each, after checking
// them all (a bad action writes nothing). Copies that
// continue one another in both the block and the volume (a raster's B-scans
// filling consecutive segments) go out as one launch: one kernel per block
// instead of one per B-scan, each of which would pay a launch and a tail on
// the stream the block was processed on.
func (e *StackFormatExecutor) LaunchAll(s backend.Stream, vol DeviceVolume, blk DeviceBlock, acts []Action) error {
	name, err := stackKernel(vol, blk)
	if err != nil {
		return err
	}
	var buf [4]stackParams // one run per block in a raster
	runs, err := e.stackRuns(vol.Shape, blk, acts, buf[:0])
	if err != nil {
		return err
	}
	for i := range runs {
		if err := launchStack(s, name, vol, blk, &runs[i]); err != nil {
			return err
		}
	}
	return nil
}

// stackRuns plans acts' copies, appending to runs, and merges each copy
// that starts where the previous one ended, in the block and in the volume,
// with the same direction and layout.
func (e *StackFormatExecutor) stackRuns(shape [4]int, blk DeviceBlock, acts []Action, runs []stackParams) ([]stackParams, error) {
	for i := range acts {
		a := &acts[i]
		if a.Kind != Copy || a.Count == 0 {
			continue
		}
		p, err := stackPlan(&e.cfg, shape, blk.Records, blk.Samples, blk.Channels, a)
		if err != nil {
			return runs, err
		}
		if n := len(runs); n > 0 && continues(&runs[n-1], &p) {
			runs[n-1].count += p.count
			continue
		}
		runs = append(runs, p)
	}
	return runs, nil
}

// continues reports whether copy q starts where p ends, in the block and in
// the volume, with the same layout: the two are one copy of p.count+q.count
// records. Reversed copies run back to front within their own range and do
// not merge.
func continues(p, q *stackParams) bool {
	return !p.reverse && !q.reverse && p.samples == q.samples && p.channels == q.channels &&
		p.srcRecStride == q.srcRecStride && p.srcSampleStride == q.srcSampleStride && p.dstRecStride == q.dstRecStride &&
		p.scale == q.scale && p.offset == q.offset &&
		q.srcBase == p.srcBase+p.count*p.srcRecStride && q.dstBase == p.dstBase+p.count*p.dstRecStride
}

// stackKernel checks a volume and a block for a stack copy and names the
// kernel for their types.
func stackKernel(vol DeviceVolume, blk DeviceBlock) (string, error) {
	const what = "StackFormatExecutor.Launch"
	if err := vol.check(what); err != nil {
		return "", err
	}
	if err := blk.check(what); err != nil {
		return "", err
	}
	return kernelName(what, famStack, blk.DType, vol.DType)
}

func stackArgs(dst, src uintptr, p *stackParams) []any {
	return []any{dst, src, int32(p.count), int32(p.samples), int32(p.channels), int64(p.srcBase),
		int64(p.srcRecStride), int64(p.srcSampleStride), int64(p.dstBase), int64(p.dstRecStride),
		b32(p.reverse), p.scale, p.offset}
}

func b32(b bool) int32 {
	if b {
		return 1
	}
	return 0
}

// rectLaunch launches a radial or spiral kernel over the (x, y) grid.
func rectLaunch(s backend.Stream, name string, vol, blk uintptr, p *rectParams, geom ...any) error {
	args := append([]any{vol, blk, int32(p.count), int32(p.samples), int64(p.srcBase), int64(p.srcRecStride),
		int64(p.srcStep), int32(p.x), int32(p.y), p.scale, p.offset, p.pitchX, p.pitchY, p.offX, p.offY}, geom...)
	grid := [3]uint32{gridOf(p.x, 16), gridOf(p.y, 16), 1}
	return ops.LaunchByName(s, name, grid, [3]uint32{16, 16, 1}, args...)
}

// rectRecords checks a Copy against the block and returns the address of
// the copy's first record.
func rectRecords(what string, blk DeviceBlock, a *Action) (uintptr, error) {
	if err := blk.check(what); err != nil {
		return 0, err
	}
	if err := checkCopy(what, a, blk.Records); err != nil {
		return 0, err
	}
	return blk.Ptr + uintptr(a.BlockOffset*blk.Samples*blk.Channels*blk.DType.Size()), nil
}

// Launch enqueues the Copy action a on s, as ExecuteRadial does.
func (e *RadialFormatExecutor) Launch(s backend.Stream, vol DeviceVolume, blk DeviceBlock, a Action) error {
	const what = "RadialFormatExecutor.Launch"
	if err := vol.check(what); err != nil {
		return err
	}
	src, err := rectRecords(what, blk, &a)
	if err != nil {
		return err
	}
	name, err := kernelName(what, famRadial, blk.DType, vol.DType)
	if err != nil {
		return err
	}
	p, err := e.params(vol.Shape, a.Count, blk.Samples, blk.Channels, a.BufferSegment, a.BufferRecord, a.Reverse)
	if err != nil || p.count == 0 {
		return err
	}
	return rectLaunch(s, name, vol.Ptr, src, &p.rectParams, p.pitchR, p.pitchT, p.offR, p.offT)
}

// Launch enqueues the Copy action a on s, as ExecuteSpiral does.
func (e *SpiralFormatExecutor) Launch(s backend.Stream, vol DeviceVolume, blk DeviceBlock, a Action) error {
	const what = "SpiralFormatExecutor.Launch"
	if err := vol.check(what); err != nil {
		return err
	}
	src, err := rectRecords(what, blk, &a)
	if err != nil {
		return err
	}
	name, err := kernelName(what, famSpiral, blk.DType, vol.DType)
	if err != nil {
		return err
	}
	p, err := e.params(vol.Shape, a.Count, blk.Samples, blk.Channels, a.BufferRecord, a.Reverse)
	if err != nil || p.count == 0 {
		return err
	}
	return rectLaunch(s, name, vol.Ptr, src, &p.rectParams, p.segPitch, p.segOffset, p.radialPitch, p.velocity)
}

// Launch enqueues the Copy action a on s, as ExecutePosition does; target
// and actual have one row per block record.
func (e *PositionFormatExecutor) Launch(s backend.Stream, vol DeviceVolume, blk DeviceBlock, target, actual DevicePositions, a Action) error {
	const what = "PositionFormatExecutor.Launch"
	if err := vol.check(what); err != nil {
		return err
	}
	src, err := rectRecords(what, blk, &a)
	if err != nil {
		return err
	}
	name, err := kernelName(what, famPosition, blk.DType, vol.DType)
	if err != nil {
		return err
	}
	pos := actual
	if e.cfg.UseTargetPosition {
		pos = target
	}
	if pos.Ptr == 0 || pos.Records != blk.Records || pos.Channels <= 0 || pos.Channels > maxShape {
		return backend.Invalidf("%s: positions (%d, %d) at %#x, expected one row per block record (%d)", what, pos.Records, pos.Channels, pos.Ptr, blk.Records)
	}
	p, err := e.params(vol.Shape, a.Count, blk.Samples, blk.Channels, a.Count, pos.Channels)
	if err != nil || p.count == 0 {
		return err
	}
	p.posBase = a.BlockOffset * pos.Channels
	args := []any{vol.Ptr, src, pos.Ptr, int32(p.count), int32(p.samples), int64(p.srcBase), int64(p.srcRecStride),
		int64(p.srcStep), int64(p.posBase), int64(p.posRecStride), int32(p.chX), int32(p.chY), int32(p.x), int32(p.y),
		p.scale, p.offset, p.m[0], p.m[1], p.m[2], p.m[3], p.m[4], p.m[5]}
	return ops.LaunchByName(s, name, [3]uint32{gridOf(p.count, threads), 1, 1}, [3]uint32{threads, 1, 1}, args...)
}

// ---- Go twins of the kernels (CPU backend) ----

// hostSlice views n elements of host memory at ptr. The memory is backend
// memory (never the Go heap), owned by the caller for the launch.
func hostSlice[T Element](ptr uintptr, n int) []T {
	if n <= 0 {
		return nil
	}
	// Read the address through a pointer-to-pointer conversion, as
	// cpu.HostBytes does: vet's uintptr->Pointer rule guards Go heap
	// memory, which this is not.
	p := *(*unsafe.Pointer)(unsafe.Pointer(&ptr))
	return unsafe.Slice((*T)(p), n)
}

func hostFloat64s(ptr uintptr, n int) []float64 {
	if n <= 0 {
		return nil
	}
	p := *(*unsafe.Pointer)(unsafe.Pointer(&ptr))
	return unsafe.Slice((*float64)(p), n)
}

// argDecoder pulls typed kernel arguments in order, remembering the first
// mismatch.
type argDecoder struct {
	args []any
	i    int
	err  error
}

func (d *argDecoder) next() any {
	if d.i >= len(d.args) {
		if d.err == nil {
			d.err = fmt.Errorf("too few arguments (%d)", len(d.args))
		}
		return nil
	}
	v := d.args[d.i]
	d.i++
	return v
}

func (d *argDecoder) ptr() uintptr {
	v, ok := d.next().(uintptr)
	if !ok && d.err == nil {
		d.err = fmt.Errorf("argument %d: expected uintptr", d.i-1)
	}
	return v
}

func (d *argDecoder) i32() int {
	v, ok := d.next().(int32)
	if !ok && d.err == nil {
		d.err = fmt.Errorf("argument %d: expected int32", d.i-1)
	}
	return int(v)
}

func (d *argDecoder) i64() int {
	v, ok := d.next().(int64)
	if !ok && d.err == nil {
		d.err = fmt.Errorf("argument %d: expected int64", d.i-1)
	}
	return int(v)
}

func (d *argDecoder) f32() float32 {
	v, ok := d.next().(float32)
	if !ok && d.err == nil {
		d.err = fmt.Errorf("argument %d: expected float32", d.i-1)
	}
	return v
}

func (d *argDecoder) done(name string) error {
	if d.err == nil && d.i != len(d.args) {
		d.err = fmt.Errorf("%d arguments, expected %d", len(d.args), d.i)
	}
	if d.err != nil {
		return fmt.Errorf("kernel %s: %w: %w", name, d.err, backend.ErrInvalid)
	}
	return nil
}

// rectExtent is one past the largest source index a radial or spiral
// launch reads (record strides may be negative; the base is then the last
// record, so no index is below zero).
func rectExtent(p *rectParams) int {
	if p.count == 0 {
		return 0
	}
	first, last := p.srcBase, p.srcBase+(p.count-1)*p.srcRecStride
	return max(first, last) + (p.samples-1)*p.srcStep + 1
}

// hostRun decodes a kernel's arguments and runs the CPU executor's loop on
// the host memory they point to.
func hostRun[D, S Element](f family, args []any) error {
	d := argDecoder{args: args}
	dst, src := d.ptr(), d.ptr()
	switch f {
	case famStack:
		var p stackParams
		p.count, p.samples, p.channels = d.i32(), d.i32(), d.i32()
		p.srcBase, p.srcRecStride, p.srcSampleStride = d.i64(), d.i64(), d.i64()
		p.dstBase, p.dstRecStride = d.i64(), d.i64()
		p.reverse = d.i32() != 0
		p.scale, p.offset = d.f32(), d.f32()
		if err := d.done("stack"); err != nil || p.count <= 0 {
			return err
		}
		srcN := p.srcBase + (p.count-1)*p.srcRecStride + (p.samples-1)*p.srcSampleStride + p.channels
		dstN := p.dstBase + (p.count-1)*p.dstRecStride + p.samples*p.channels
		runStack(hostSlice[D](dst, dstN), hostSlice[S](src, srcN), &p)
	case famRadial, famSpiral:
		var r rectParams
		r.count, r.samples = d.i32(), d.i32()
		r.srcBase, r.srcRecStride, r.srcStep = d.i64(), d.i64(), d.i64()
		r.x, r.y = d.i32(), d.i32()
		r.scale, r.offset, r.pitchX, r.pitchY, r.offX, r.offY = d.f32(), d.f32(), d.f32(), d.f32(), d.f32(), d.f32()
		g := [4]float32{d.f32(), d.f32(), d.f32(), d.f32()}
		if err := d.done(familyNames[f]); err != nil || r.count <= 0 {
			return err
		}
		out := hostSlice[D](dst, r.x*r.y*r.samples)
		in := hostSlice[S](src, rectExtent(&r))
		if f == famRadial {
			runRadial(out, in, &radialParams{rectParams: r, pitchR: g[0], pitchT: g[1], offR: g[2], offT: g[3]})
		} else {
			runSpiral(out, in, &spiralParams{rectParams: r, segPitch: g[0], segOffset: g[1], radialPitch: g[2], velocity: g[3]})
		}
	case famPosition:
		pos := d.ptr()
		var p positionParams
		p.count, p.samples = d.i32(), d.i32()
		p.srcBase, p.srcRecStride, p.srcStep = d.i64(), d.i64(), d.i64()
		p.posBase, p.posRecStride = d.i64(), d.i64()
		p.chX, p.chY, p.x, p.y = d.i32(), d.i32(), d.i32(), d.i32()
		p.scale, p.offset = d.f32(), d.f32()
		for i := range p.m {
			p.m[i] = d.f32()
		}
		if err := d.done("position"); err != nil || p.count <= 0 {
			return err
		}
		srcN := p.srcBase + (p.count-1)*p.srcRecStride + (p.samples-1)*p.srcStep + 1
		posN := p.posBase + (p.count-1)*p.posRecStride + max(p.chX, p.chY) + 1
		runPosition(hostSlice[D](dst, p.x*p.y*p.samples), hostSlice[S](src, srcN), hostFloat64s(pos, posN), &p)
	}
	return nil
}

// Prepare loads on dev the kernel that exec (a Stack, Radial, Spiral or
// PositionFormatExecutor; nil is a stack copy) launches to format blocks of
// src into volumes of dst, so that its JIT compile happens when the
// endpoint is prepared, not at the first block (ops.Prepare). The pair is
// checked on every backend, as Launch checks it.
func Prepare(dev backend.Device, exec any, src, dst backend.DType) error {
	f := famStack
	switch exec.(type) {
	case nil, *StackFormatExecutor:
	case *RadialFormatExecutor:
		f = famRadial
	case *SpiralFormatExecutor:
		f = famSpiral
	case *PositionFormatExecutor:
		f = famPosition
	default:
		return backend.Invalidf("format.Prepare: executor %T, expected a Stack, Radial, Spiral or PositionFormatExecutor", exec)
	}
	name, err := kernelName("format.Prepare", f, src, dst)
	if err != nil {
		return err
	}
	return ops.Prepare(dev, name)
}
