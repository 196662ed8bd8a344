package pyapi

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/handle"
	"github.com/vortexgo/vortexgo/gosrc/memory"
	"github.com/vortexgo/vortexgo/gosrc/ops"
	"github.com/vortexgo/vortexgo/gosrc/pipeline"
)

// The async toolkit's handles (gosrc/pipeline) for python/vortexgo/toolkit.py.
// Lists cross as comma-separated strings and results as delimited text,
// because gopy passes slices poorly. Python callables never reach Go: a
// callable compute op is bracketed by BeginExternal/EndExternal.

// tagKey marks errors that Python raises as KeyError (unknown op ids);
// toolkit.py recognises the prefix, _errors.translate does not need to.
const tagKey = "KeyError: "

// ptag is tag() plus the pipeline's sentinel errors: unknown ids become
// KeyError, impossible dependencies and short host ranges ValueError, and
// expired waits TimeoutError.
func ptag(err error) error {
	if err == nil {
		return nil
	}
	var be *memory.BudgetError
	switch {
	case errors.As(err, &be), errors.Is(err, backend.ErrClosed):
		return tag(err)
	case errors.Is(err, pipeline.ErrUnknownOp):
		return errors.New(tagKey + err.Error())
	case errors.Is(err, pipeline.ErrFutureOp), errors.Is(err, pipeline.ErrCycle),
		errors.Is(err, pipeline.ErrHostTooSmall), errors.Is(err, pipeline.ErrExternalOpen):
		return errors.New(tagValue + err.Error())
	case errors.Is(err, pipeline.ErrTimeout), errors.Is(err, memory.ErrPoolExhausted):
		return errors.New(tagTimeout + err.Error())
	}
	return tag(err)
}

// tkDevice charges the pipeline package's allocations (triple buffers,
// pipeline buffers, readback buffers) to the process memory budget.
type tkDevice struct {
	backend.Device
	a *memory.Allocator
}

func (d tkDevice) Alloc(n int) (backend.Buffer, error)       { return d.a.Alloc(n) }
func (d tkDevice) AllocPinned(n int) (backend.Buffer, error) { return d.a.AllocPinned(n) }

func chargedDevice(dev *Device, purpose string) (backend.Device, error) {
	if dev == nil {
		return nil, badArg("device=None, expected a Device")
	}
	a, err := allocatorFor(dev.d, purpose)
	if err != nil {
		return nil, err
	}
	return tkDevice{Device: dev.d, a: a}, nil
}

// rawBuffer is memory the caller owns (a vortexgo Array), described by its
// address and size so the coordinator can check copy sizes.
type rawBuffer struct {
	ptr  uintptr
	size int
	dev  backend.Device
}

func (b rawBuffer) Ptr() uintptr           { return b.ptr }
func (b rawBuffer) Size() int              { return b.size }
func (b rawBuffer) Kind() backend.MemKind  { return backend.DeviceMem }
func (b rawBuffer) Device() backend.Device { return b.dev }
func (b rawBuffer) Free() error            { return errors.New("rawBuffer: memory owned by the caller") }
func durationUs(us int) time.Duration {
	if us < 0 {
		return -1
	}
	return time.Duration(us) * time.Microsecond
}

func parseIDs(what, s string) ([]pipeline.OpID, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, nil
	}
	parts := strings.Split(s, ",")
	out := make([]pipeline.OpID, len(parts))
	for i, p := range parts {
		v, err := strconv.ParseUint(strings.TrimSpace(p), 10, 64)
		if err != nil {
			return nil, badArg("%s=%q, expected comma-separated op ids (ints >= 1)", what, s)
		}
		out[i] = pipeline.OpID(v)
	}
	return out, nil
}

func parseInts(what, s string) ([]int, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return []int{}, nil
	}
	parts := strings.Split(s, ",")
	out := make([]int, len(parts))
	for i, p := range parts {
		v, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil {
			return nil, badArg("%s=%q, expected comma-separated ints", what, s)
		}
		out[i] = v
	}
	return out, nil
}

// ---- kernel arguments ----

// KernelArgs collects a kernel's arguments one typed value at a time.
type KernelArgs struct{ args []any }

// NewKernelArgs returns an empty argument list.
func NewKernelArgs() *KernelArgs { return &KernelArgs{} }

// Len is the number of arguments.
func (k *KernelArgs) Len() int { return len(k.args) }

// Ptr appends a device address.
func (k *KernelArgs) Ptr(p int) { k.args = append(k.args, uintptr(p)) }

// I32 appends an int32.
func (k *KernelArgs) I32(v int) error {
	if v < math.MinInt32 || v > math.MaxInt32 {
		return tag(badArg("i32 argument %d: %d, expected %d <= v <= %d", len(k.args), v, math.MinInt32, math.MaxInt32))
	}
	k.args = append(k.args, int32(v))
	return nil
}

// U32 appends a uint32.
func (k *KernelArgs) U32(v int) error {
	if v < 0 || v > math.MaxUint32 {
		return tag(badArg("u32 argument %d: %d, expected 0 <= v <= %d", len(k.args), v, uint32(math.MaxUint32)))
	}
	k.args = append(k.args, uint32(v))
	return nil
}

// I64 appends an int64.
func (k *KernelArgs) I64(v int) { k.args = append(k.args, int64(v)) }

// U64 appends a uint64.
func (k *KernelArgs) U64(v int) error {
	if v < 0 {
		return tag(badArg("u64 argument %d: %d, expected v >= 0", len(k.args), v))
	}
	k.args = append(k.args, uint64(v))
	return nil
}

// F32 appends a float32.
func (k *KernelArgs) F32(v float64) { k.args = append(k.args, float32(v)) }

// F64 appends a float64.
func (k *KernelArgs) F64(v float64) { k.args = append(k.args, v) }

// In appends a reference to a pipeline stage's i-th input buffer.
func (k *KernelArgs) In(i int) { k.args = append(k.args, pipeline.In(i)) }

// Out appends a reference to a pipeline stage's i-th output buffer.
func (k *KernelArgs) Out(i int) { k.args = append(k.args, pipeline.Out(i)) }

func (k *KernelArgs) hasRefs() bool {
	for _, a := range k.args {
		if _, ok := a.(pipeline.BufferRef); ok {
			return true
		}
	}
	return false
}

// ---- operations ----

// Op kinds reported by StageOp.Kind.
const (
	OpKindKernel   = 0
	OpKindSpin     = 1
	OpKindUpload   = 2
	OpKindDownload = 3
)

// StageOp is Go-side work for a coordinator compute op, a pipeline stage or
// a triple-buffered step: a kernel by name, a timed spin, or a host copy.
type StageOp struct {
	op   pipeline.StageOp
	kind int
	refs bool
	name string
}

func dim3(x, y, z int) ([3]uint32, error) {
	for _, v := range []int{x, y, z} {
		if v < 1 || v > math.MaxUint32 {
			return [3]uint32{}, badArg("dimension (%d, %d, %d), expected each in 1..%d", x, y, z, uint32(math.MaxUint32))
		}
	}
	return [3]uint32{uint32(x), uint32(y), uint32(z)}, nil
}

// NewKernelOp is kernel name from kernels/ launched with grid x block
// threads and args (nil for none).
func NewKernelOp(name string, gx, gy, gz, bx, by, bz int, args *KernelArgs) (*StageOp, error) {
	if name == "" {
		return nil, tag(badArg("kernel name is empty, expected a kernel of kernels/"))
	}
	grid, err := dim3(gx, gy, gz)
	if err != nil {
		return nil, tag(err)
	}
	block, err := dim3(bx, by, bz)
	if err != nil {
		return nil, tag(err)
	}
	var a []any
	refs := false
	if args != nil {
		a = append([]any(nil), args.args...)
		refs = args.hasRefs()
	}
	return &StageOp{op: pipeline.StageOp{Kernel: name, Grid: grid, Block: block, Args: a}, kind: OpKindKernel, refs: refs, name: name}, nil
}

// NewSpinOp keeps its stream busy for us microseconds (ops.Spin): a stage
// of known duration for tests and benchmarks.
func NewSpinOp(us float64) (*StageOp, error) {
	if !(us >= 0) || us > 1e9 {
		return nil, tag(badArg("ms=%g, expected 0 <= ms <= 1e6", us/1e3))
	}
	d := time.Duration(us * 1e3)
	return &StageOp{op: pipeline.StageOp{Kernel: "spin_ns", Func: func(sc pipeline.StageContext) error {
		return ops.Spin(sc.Stream, d)
	}}, kind: OpKindSpin, name: "spin"}, nil
}

// NewCopyOp copies between host memory [hostPtr, hostPtr+hostLen) and a
// stage's buffer: upload copies host -> output 0, download input 0 -> host.
// The copy size is the stage buffer's size; the host range must hold it.
func NewCopyOp(hostPtr, hostLen int, upload bool) (*StageOp, error) {
	if hostPtr == 0 || hostLen <= 0 {
		return nil, tag(badArg("host=(0x%x, %d bytes), expected a host address and a length > 0", hostPtr, hostLen))
	}
	host := uintptr(hostPtr)
	kind, name := OpKindDownload, "download"
	if upload {
		kind, name = OpKindUpload, "upload"
	}
	f := func(sc pipeline.StageContext) error {
		var b []backend.Buffer
		if upload {
			b = sc.Outputs
		} else {
			b = sc.Inputs
		}
		if len(b) == 0 {
			return fmt.Errorf("%s op: the stage has no %s buffer, expected one", name, map[bool]string{true: "output", false: "input"}[upload])
		}
		n := b[0].Size()
		if n > hostLen {
			return fmt.Errorf("%s op: host range of %d bytes, expected at least %d (the buffer): %w", name, hostLen, n, pipeline.ErrHostTooSmall)
		}
		if upload {
			return sc.Stream.Copy(b[0].Ptr(), host, n)
		}
		return sc.Stream.Copy(host, b[0].Ptr(), n)
	}
	return &StageOp{op: pipeline.StageOp{Kernel: name, Func: f}, kind: kind, name: name}, nil
}

// Kind is OpKindKernel, OpKindSpin, OpKindUpload or OpKindDownload.
func (o *StageOp) Kind() int { return o.kind }

// Name is the kernel name, "spin", "upload" or "download".
func (o *StageOp) Name() string { return o.name }

// computeOp turns o into a coordinator compute op.
func (o *StageOp) computeOp() (pipeline.ComputeOp, error) {
	switch {
	case o.kind == OpKindUpload || o.kind == OpKindDownload:
		return pipeline.ComputeOp{}, badArg("a %s op is a pipeline stage op, expected a kernel or spin op (use queue_upload/queue_download)", o.name)
	case o.refs:
		return pipeline.ComputeOp{}, badArg("kernel %q has stage buffer references (In/Out), which only pipeline stages resolve; pass arrays instead", o.name)
	case o.op.Func != nil:
		f := o.op.Func
		return pipeline.ComputeOp{Kernel: o.name, Func: func(s backend.Stream) error {
			return f(pipeline.StageContext{Stream: s})
		}}, nil
	}
	return pipeline.ComputeOp{Kernel: o.op.Kernel, Grid: o.op.Grid, Block: o.op.Block, Args: o.op.Args}, nil
}

// ---- TripleBuffer ----

// TripleBuffer is three device buffers rotating through upload, process
// and download (pipeline.TripleBuffer).
type TripleBuffer struct {
	tb    *pipeline.TripleBuffer
	owned bool
}

// NewTripleBuffer allocates three buffers of size elements of dtype on dev,
// charged to the memory budget as "triple_buffer".
func NewTripleBuffer(dev *Device, size int, dtype string) (*TripleBuffer, error) {
	dt, err := parseDType(dtype)
	if err != nil {
		return nil, tag(err)
	}
	if size <= 0 {
		return nil, tag(badArg("size=%d, expected size > 0 elements", size))
	}
	d, err := chargedDevice(dev, "triple_buffer")
	if err != nil {
		return nil, tag(err)
	}
	tb, err := pipeline.NewTripleBuffer(d, size, dt)
	if err != nil {
		return nil, ptag(err)
	}
	return &TripleBuffer{tb: tb, owned: true}, nil
}

func (t *TripleBuffer) slotOf(b backend.Buffer, ok bool) int {
	if !ok {
		return -1
	}
	for i := range 3 {
		if t.tb.Buffer(i) == b {
			return i
		}
	}
	return -1
}

// GetUploadBuffer claims the upload slot (Free -> Uploading): its index,
// or -1 when it is not Free.
func (t *TripleBuffer) GetUploadBuffer() int { return t.slotOf(t.tb.GetUploadBuffer()) }

// GetProcessBuffer claims the process slot (Uploading -> Processing), or -1.
func (t *TripleBuffer) GetProcessBuffer() int { return t.slotOf(t.tb.GetProcessBuffer()) }

// GetDownloadBuffer claims the download slot (Processing -> Downloading), or -1.
func (t *TripleBuffer) GetDownloadBuffer() int { return t.slotOf(t.tb.GetDownloadBuffer()) }

// SlotPtr is slot i's device address.
func (t *TripleBuffer) SlotPtr(i int) (int, error) {
	if i < 0 || i > 2 {
		return 0, tag(badArg("slot=%d, expected 0, 1 or 2", i))
	}
	return int(t.tb.Buffer(i).Ptr()), nil
}

// Advance ends the round and returns the new round number.
func (t *TripleBuffer) Advance() int { return int(t.tb.Advance()) }

// Round is the number of Advance calls.
func (t *TripleBuffer) Round() int { return int(t.tb.Round()) }

// Size is the elements per buffer.
func (t *TripleBuffer) Size() int { return t.tb.Size() }

// Nbytes is the bytes per buffer.
func (t *TripleBuffer) Nbytes() int { return t.tb.Bytes() }

// DType is the NumPy dtype name.
func (t *TripleBuffer) DType() string { return t.tb.DType().String() }

// States is the three slot states, comma-separated.
func (t *TripleBuffer) States() string {
	s := t.tb.States()
	return s[0].String() + "," + s[1].String() + "," + s[2].String()
}

// Reset returns every slot to Free and the rotation to round 0.
func (t *TripleBuffer) Reset() { t.tb.Reset() }

// Owned reports whether Close frees the buffers (false when a context owns them).
func (t *TripleBuffer) Owned() bool { return t.owned }

// Close frees the buffers.
func (t *TripleBuffer) Close() error {
	if !t.owned {
		return tag(badArg("this TripleBuffer belongs to a ManagedGpuContext, which closes it"))
	}
	return ptag(t.tb.Close())
}

// ---- AsyncCoordinator ----

// AsyncCoordinator queues uploads, compute and downloads on three streams
// ordered by events (pipeline.AsyncCoordinator).
type AsyncCoordinator struct {
	c       *pipeline.AsyncCoordinator
	dev     backend.Device
	owned   bool
	streams [3]*Stream // upload, compute, download; borrowed from the coordinator's id
	id      handle.ID  // registry id (FastBeginExternal/FastEndExternal)
}

// borrowedStreams registers the coordinator, and its streams as borrowed
// from it: closing the coordinator makes every cached stream wrapper stale.
func (a *AsyncCoordinator) borrowedStreams() {
	a.id = handles.Register(a)
	for i, s := range []backend.Stream{a.c.UploadStream(), a.c.ComputeStream(), a.c.DownloadStream()} {
		a.streams[i], _ = borrowStream(a.id, s) // a.id was just registered: cannot be stale
	}
}

// ID is the coordinator's registry id.
func (a *AsyncCoordinator) ID() int { return int(a.id) }

func fastCoordinator(cid int) *pipeline.AsyncCoordinator {
	a, err := handle.Get[*AsyncCoordinator](&handles, handle.ID(cid))
	if err != nil {
		return nil
	}
	return a.c
}

// FastBeginExternal opens an external compute op without dependencies on
// coordinator cid and returns its op id, or -1 (the method path then
// raises the full error). Python calls it once per callable compute op.
func FastBeginExternal(cid int) int {
	c := fastCoordinator(cid)
	if c == nil {
		return -1
	}
	id, _, err := c.BeginExternal()
	if err != nil {
		return -1
	}
	return int(id)
}

// FastEndExternal closes external op id of coordinator cid: 0, or -1.
func FastEndExternal(cid, id int) int {
	c := fastCoordinator(cid)
	if c == nil || id <= 0 {
		return -1
	}
	return status(c.EndExternal(pipeline.OpID(id)))
}

// forgetStreams releases the coordinator's id and with it the ids of its
// streams, which its Close destroys.
func (a *AsyncCoordinator) forgetStreams() { handles.Release(a.id) }

// NewAsyncCoordinator creates the coordinator and its three streams.
// timing=false skips per-op GPU timing (cheaper: see pipeline.CoordinatorOptions.NoTiming).
func NewAsyncCoordinator(dev *Device, uploadPriority, computePriority, downloadPriority int, timing bool) (*AsyncCoordinator, error) {
	// Pipeline managers built on the coordinator allocate through its
	// device, so that device charges the budget.
	d, err := chargedDevice(dev, "pipeline")
	if err != nil {
		return nil, tag(err)
	}
	c, err := pipeline.NewAsyncCoordinator(d, pipeline.CoordinatorOptions{
		UploadPriority: uploadPriority, ComputePriority: computePriority, DownloadPriority: downloadPriority,
		NoTiming: !timing})
	if err != nil {
		return nil, ptag(err)
	}
	a := &AsyncCoordinator{c: c, dev: dev.d, owned: true}
	a.borrowedStreams()
	return a, nil
}

func (a *AsyncCoordinator) buf(ptr, size int) backend.Buffer {
	return rawBuffer{ptr: uintptr(ptr), size: size, dev: a.dev}
}

func checkMem(what string, ptr, size, n int) error {
	switch {
	case size < 0 || n < 0:
		return badArg("%s: size=%d n=%d, expected sizes >= 0", what, size, n)
	case ptr == 0 && size > 0:
		return badArg("%s: address 0, expected an allocated array", what)
	}
	return nil
}

// copyArgs validates the arguments of an upload or download of n bytes
// between host [hostPtr, +hostLen) and device [devPtr, +devLen) and parses
// its dependencies.
func copyArgs(op string, hostPtr, hostLen, devPtr, devLen, n int, deps string) ([]pipeline.OpID, error) {
	d, err := parseIDs("deps", deps)
	if err == nil {
		err = errors.Join(checkMem("host", hostPtr, hostLen, n), checkMem("buffer", devPtr, devLen, n))
	}
	if err == nil && n > devLen {
		err = badArg("%s: buffer of %d bytes, expected at least nbytes=%d", op, devLen, n)
	}
	return d, err
}

// QueueUpload copies n bytes of host memory [hostPtr, +hostLen) into the
// device range [devPtr, +devLen) on the upload stream after deps (ids,
// comma-separated), returning the op id.
func (a *AsyncCoordinator) QueueUpload(hostPtr, hostLen, devPtr, devLen, n int, deps string) (int, error) {
	d, err := copyArgs("QueueUpload", hostPtr, hostLen, devPtr, devLen, n, deps)
	if err != nil {
		return 0, tag(err)
	}
	id, err := a.c.QueueUpload(pipeline.HostMem{Ptr: uintptr(hostPtr), Len: hostLen}, a.buf(devPtr, devLen), n, d...)
	return int(id), ptag(err)
}

// QueueDownload copies n bytes of [devPtr, +devLen) into host memory
// [hostPtr, +hostLen) on the download stream after deps.
func (a *AsyncCoordinator) QueueDownload(devPtr, devLen, hostPtr, hostLen, n int, deps string) (int, error) {
	d, err := copyArgs("QueueDownload", hostPtr, hostLen, devPtr, devLen, n, deps)
	if err != nil {
		return 0, tag(err)
	}
	id, err := a.c.QueueDownload(a.buf(devPtr, devLen), pipeline.HostMem{Ptr: uintptr(hostPtr), Len: hostLen}, n, d...)
	return int(id), ptag(err)
}

// QueueCompute enqueues a kernel or spin op on the compute stream after deps.
func (a *AsyncCoordinator) QueueCompute(op *StageOp, deps string) (int, error) {
	if op == nil {
		return 0, tag(badArg("op=None, expected a kernel or spin op"))
	}
	d, err := parseIDs("deps", deps)
	if err != nil {
		return 0, tag(err)
	}
	cop, err := op.computeOp()
	if err != nil {
		return 0, tag(err)
	}
	id, err := a.c.QueueCompute(cop, d...)
	return int(id), ptag(err)
}

// BeginExternal makes the compute stream wait on deps and opens an op whose
// work the caller (Python) enqueues on ComputeStream; EndExternal closes it.
func (a *AsyncCoordinator) BeginExternal(deps string) (int, error) {
	d, err := parseIDs("deps", deps)
	if err != nil {
		return 0, tag(err)
	}
	id, _, err := a.c.BeginExternal(d...)
	return int(id), ptag(err)
}

// EndExternal records the completion of external op id.
func (a *AsyncCoordinator) EndExternal(id int) error {
	if id <= 0 {
		return ptag(fmt.Errorf("EndExternal: op %d: %w", id, pipeline.ErrUnknownOp))
	}
	return ptag(a.c.EndExternal(pipeline.OpID(id)))
}

// Report field and record separators of Poll's text.
const (
	pollFieldSep  = "\x1f"
	pollRecordSep = "\x1e"
)

// Poll returns the completed ops without blocking, one record per op
// separated by \x1e, fields by \x1f: id, type, name, gpu_ms, bytes, error.
func (a *AsyncCoordinator) Poll() string {
	rs := a.c.Poll()
	if len(rs) == 0 {
		return ""
	}
	var sb strings.Builder
	sb.Grow(len(rs) * 32)
	for i, r := range rs {
		if i > 0 {
			sb.WriteString(pollRecordSep)
		}
		sb.WriteString(strconv.FormatUint(uint64(r.ID), 10))
		sb.WriteString(pollFieldSep)
		sb.WriteString(r.Type.String())
		sb.WriteString(pollFieldSep)
		sb.WriteString(r.Name)
		sb.WriteString(pollFieldSep)
		sb.WriteString(strconv.FormatFloat(float64(r.GPUMs), 'g', 7, 32))
		sb.WriteString(pollFieldSep)
		sb.WriteString(strconv.Itoa(r.Bytes))
		sb.WriteString(pollFieldSep)
		if r.Err != nil {
			e := strings.NewReplacer(pollFieldSep, " ", pollRecordSep, " ").Replace(r.Err.Error())
			sb.WriteString(e)
		}
	}
	return sb.String()
}

// Done reports whether op id completed, without blocking.
func (a *AsyncCoordinator) Done(id int) (bool, error) {
	if id <= 0 {
		return false, ptag(fmt.Errorf("Done: op %d: %w (ids start at 1)", id, pipeline.ErrUnknownOp))
	}
	ok, err := a.c.Done(pipeline.OpID(id))
	return ok, ptag(err)
}

// Wait blocks until op id completes; timeoutUs < 0 waits forever. The GIL
// is released meanwhile.
func (a *AsyncCoordinator) Wait(id, timeoutUs int) error {
	if id <= 0 {
		return ptag(fmt.Errorf("Wait: op %d: %w (ids start at 1)", id, pipeline.ErrUnknownOp))
	}
	return ptag(a.c.Wait(pipeline.OpID(id), durationUs(timeoutUs)))
}

// SynchronizeAll blocks until the three streams are idle.
func (a *AsyncCoordinator) SynchronizeAll() error { return ptag(a.c.SynchronizeAll()) }

// UploadStream is the upload stream (owned by the coordinator: do not Close it).
func (a *AsyncCoordinator) UploadStream() *Stream { return a.streams[0] }

// ComputeStream is the compute stream (owned by the coordinator).
func (a *AsyncCoordinator) ComputeStream() *Stream { return a.streams[1] }

// DownloadStream is the download stream (owned by the coordinator).
func (a *AsyncCoordinator) DownloadStream() *Stream { return a.streams[2] }

// Pending is the number of ops not yet known complete.
func (a *AsyncCoordinator) Pending() int { return a.c.Pending() }

// Dropped is the number of reports lost because Poll was not called.
func (a *AsyncCoordinator) Dropped() int { return int(a.c.Dropped()) }

// LastID is the latest op id issued (0 before the first).
func (a *AsyncCoordinator) LastID() int {
	var last pipeline.OpID
	for _, t := range []pipeline.OpType{pipeline.OpUpload, pipeline.OpCompute, pipeline.OpDownload} {
		if id, ok := a.c.LastOp(t); ok && id > last {
			last = id
		}
	}
	return int(last)
}

// Sequential reports whether the three roles share one stream.
func (a *AsyncCoordinator) Sequential() bool { return a.c.Sequential() }

// Owned reports whether Close releases the coordinator.
func (a *AsyncCoordinator) Owned() bool { return a.owned }

// Close waits for the streams and releases them.
func (a *AsyncCoordinator) Close() error {
	if !a.owned {
		return tag(badArg("this AsyncCoordinator belongs to a ManagedGpuContext, which closes it"))
	}
	err := a.c.Close()
	if err == nil {
		a.forgetStreams()
	}
	return ptag(err)
}

// CoordinatorBookkeepingNs measures the coordinator's own cost per op in
// Go: n empty compute ops queued (two event records each) and polled,
// without any Python in the loop. The result is nanoseconds per op.
func CoordinatorBookkeepingNs(a *AsyncCoordinator, n int) (float64, error) {
	if a == nil || n <= 0 {
		return 0, tag(badArg("coordinator=%v n=%d, expected a coordinator and n > 0", a != nil, n))
	}
	nop := pipeline.ComputeOp{Kernel: "nop", Func: func(backend.Stream) error { return nil }}
	if err := a.c.SynchronizeAll(); err != nil {
		return 0, ptag(err)
	}
	a.c.Poll()
	t0 := time.Now()
	for range n {
		if _, err := a.c.QueueCompute(nop); err != nil {
			return 0, ptag(err)
		}
		a.c.Poll()
	}
	el := time.Since(t0)
	return float64(el.Nanoseconds()) / float64(n), ptag(a.c.SynchronizeAll())
}

// ---- PipelineStageManager ----

// PipelineManager runs named stages in a set order per iteration
// (pipeline.PipelineStageManager).
type PipelineManager struct {
	cycle  int // lcm of the buffers' version counts (0: no buffers yet)
	stages int
	m      *pipeline.PipelineStageManager
	c      *pipeline.AsyncCoordinator
	dev    backend.Device
	owned  bool
}

// NewPipelineManager creates a manager on coordinator c's streams. The
// caller keeps c open while the manager is in use.
func NewPipelineManager(c *AsyncCoordinator) (*PipelineManager, error) {
	if c == nil {
		return nil, tag(badArg("coordinator=None, expected an AsyncCoordinator"))
	}
	m, err := pipeline.NewPipelineStageManager(c.c)
	if err != nil {
		return nil, ptag(err)
	}
	return &PipelineManager{m: m, c: c.c, dev: c.dev, owned: true}, nil
}

// AddBuffer registers a logical buffer whose versions are caller-owned
// device ranges of size bytes at the comma-separated addresses ptrs.
func (p *PipelineManager) AddBuffer(ptrs string, size int) (int, error) {
	ps, err := parseInts("ptrs", ptrs)
	if err != nil {
		return 0, tag(err)
	}
	if len(ps) == 0 || size <= 0 {
		return 0, tag(badArg("AddBuffer: %d versions of %d bytes, expected at least one version and size > 0", len(ps), size))
	}
	bs := make([]backend.Buffer, len(ps))
	for i, v := range ps {
		if v == 0 {
			return 0, tag(badArg("AddBuffer: version %d has address 0, expected an allocated array", i))
		}
		bs[i] = rawBuffer{ptr: uintptr(v), size: size, dev: p.dev}
	}
	idx, err := p.m.AddBuffer(bs...)
	if err == nil {
		p.cycle = lcmInt(p.cycle, len(bs))
	}
	return idx, ptag(err)
}

// NewBuffer allocates a logical buffer of versions device buffers of size
// bytes, freed with the manager and charged to the budget as "pipeline".
func (p *PipelineManager) NewBuffer(size, versions int) (int, error) {
	if size <= 0 || versions < 1 {
		return 0, tag(badArg("NewBuffer: nbytes=%d versions=%d, expected nbytes > 0 and versions >= 1", size, versions))
	}
	idx, err := p.m.NewBuffer(size, versions)
	if err == nil {
		p.cycle = lcmInt(p.cycle, versions)
	}
	return idx, ptag(err)
}

// BufferPtr is the address of version v of logical buffer i.
func (p *PipelineManager) BufferPtr(i, v int) (int, error) {
	b, err := p.bufferAt(i, v)
	if err != nil {
		return 0, tag(err)
	}
	return int(b.Ptr()), nil
}

func (p *PipelineManager) bufferAt(i, v int) (b backend.Buffer, err error) {
	defer func() {
		if recover() != nil {
			b, err = nil, badArg("buffer %d version %d does not exist", i, v)
		}
	}()
	return p.m.Buffer(i, v), nil
}

// BufferVersions is the number of versions of logical buffer i (0 if none).
func (p *PipelineManager) BufferVersions(i int) int {
	n := 0
	for v := 0; ; v++ {
		if _, err := p.bufferAt(i, v); err != nil {
			return n
		}
		n++
	}
}

// BufferSize is the size in bytes of logical buffer i (0 if none).
func (p *PipelineManager) BufferSize(i int) int {
	b, err := p.bufferAt(i, 0)
	if err != nil {
		return 0
	}
	return b.Size()
}

// AddStage appends a stage: inputs and outputs are comma-separated
// logical buffer indices, stream 0 compute, 1 upload, 2 download.
func (p *PipelineManager) AddStage(name, inputs, outputs string, stream int, op *StageOp) (int, error) {
	if op == nil {
		return 0, tag(badArg("stage %q: op=None, expected an op", name))
	}
	if strings.ContainsAny(name, "\n=") {
		return 0, tag(badArg("stage name %q, expected no newline or '='", name))
	}
	if stream < 0 || stream > 2 {
		return 0, tag(badArg("stage %q: stream=%d, expected 0 (compute), 1 (upload) or 2 (download)", name, stream))
	}
	ins, err := parseInts("input_buffers", inputs)
	if err != nil {
		return 0, tag(err)
	}
	outs, err := parseInts("output_buffers", outputs)
	if err != nil {
		return 0, tag(err)
	}
	if op.kind == OpKindUpload && len(outs) == 0 {
		return 0, tag(badArg("stage %q: an upload op writes output buffer 0, expected output_buffers", name))
	}
	if op.kind == OpKindDownload && len(ins) == 0 {
		return 0, tag(badArg("stage %q: a download op reads input buffer 0, expected input_buffers", name))
	}
	i, err := p.m.AddStage(pipeline.GpuPipelineStage{Name: name, InputBuffers: ins, OutputBuffers: outs,
		Stream: pipeline.OpType(stream), Op: op.op})
	if err != nil {
		return 0, tag(badArg("%v", err))
	}
	p.stages++
	return i, nil
}

// SetOrder sets the stages each iteration runs (comma-separated indices).
func (p *PipelineManager) SetOrder(order string) error {
	o, err := parseInts("order", order)
	if err != nil {
		return tag(err)
	}
	if err := p.m.SetOrder(o); err != nil {
		return tag(badArg("%v", err))
	}
	return nil
}

// ExecuteIteration issues one iteration without waiting for the device.
func (p *PipelineManager) ExecuteIteration() error {
	if p.stages == 0 {
		return tag(badArg("ExecuteIteration: no stages, expected add_stage first"))
	}
	return ptag(p.m.ExecuteIteration())
}

// ExecuteIterations issues n iterations in one call.
func (p *PipelineManager) ExecuteIterations(n int) error {
	if p.stages == 0 {
		return tag(badArg("ExecuteIterations: no stages, expected add_stage first"))
	}
	for range n {
		if err := p.m.ExecuteIteration(); err != nil {
			return ptag(err)
		}
	}
	return nil
}

// Iteration is the number of iterations issued.
func (p *PipelineManager) Iteration() int { return p.m.Iteration() }

// Stats returns the statistics as key=value lines (see toolkit.py).
func (p *PipelineManager) Stats() string {
	s := p.m.GetStats()
	var sb strings.Builder
	f := func(k string, v float64) { fmt.Fprintf(&sb, "%s=%s\n", k, strconv.FormatFloat(v, 'g', 10, 64)) }
	f("iterations", float64(s.Iterations))
	f("avg_iteration_ms", s.AvgIterationMs)
	f("throughput", s.Throughput)
	f("gpu_utilization", s.GPUUtilization)
	f("host_us_per_iteration", s.HostUsPerIteration)
	f("graph_iterations", float64(s.GraphIterations))
	f("graph_host_us_per_iteration", s.GraphHostUsPerIteration)
	f("in_flight", float64(s.InFlight))
	for i, st := range s.Stages {
		fmt.Fprintf(&sb, "stage.%d.name=%s\n", i, st.Name)
		f(fmt.Sprintf("stage.%d.runs", i), float64(st.Runs))
		f(fmt.Sprintf("stage.%d.avg_ms", i), st.AvgMs)
		f(fmt.Sprintf("stage.%d.total_ms", i), st.TotalMs)
	}
	return sb.String()
}

// ResetStats clears the statistics.
func (p *PipelineManager) ResetStats() { p.m.ResetStats() }

// Capture records n iterations (0: one buffer cycle) into a graph.
func (p *PipelineManager) Capture(n int) (*PipelineGraph, error) {
	if p.stages == 0 {
		return nil, tag(badArg("Capture: no stages, expected add_stage first"))
	}
	if c := max(p.cycle, 1); n < 0 || n%c != 0 || n > 1024 {
		return nil, tag(badArg("iterations=%d, expected 0 or a positive multiple of the buffer cycle %d (the lcm of the buffers' versions), at most 1024", n, c))
	}
	g, err := p.m.CaptureIterations(n)
	if err != nil {
		return nil, ptag(err)
	}
	return &PipelineGraph{g: g}, nil
}

// Owned reports whether Close releases the manager.
func (p *PipelineManager) Owned() bool { return p.owned }

// Close waits for the streams and frees the buffers NewBuffer made.
func (p *PipelineManager) Close() error {
	if !p.owned {
		return tag(badArg("this pipeline manager belongs to a ManagedGpuContext, which closes it"))
	}
	return ptag(p.m.Close())
}

// PipelineGraph is a captured cycle of iterations.
type PipelineGraph struct{ g *pipeline.PipelineGraph }

// Replay launches the graph after all work issued so far.
func (g *PipelineGraph) Replay() error { return ptag(g.g.Replay()) }

// ReplayN replays the graph n times in one call.
func (g *PipelineGraph) ReplayN(n int) error {
	for range n {
		if err := g.g.Replay(); err != nil {
			return ptag(err)
		}
	}
	return nil
}

// Iterations is the number of pipeline iterations one replay runs.
func (g *PipelineGraph) Iterations() int { return g.g.Iterations() }

// Nodes is the number of operations in the graph.
func (g *PipelineGraph) Nodes() int { return g.g.Nodes() }

// Close releases the graph.
func (g *PipelineGraph) Close() error { return ptag(g.g.Close()) }

func lcmInt(a, b int) int {
	if a == 0 {
		return b
	}
	x, y := a, b
	for y != 0 {
		x, y = y, x%y
	}
	return a / x * b
}
