package pyapi

import (
	"errors"
	"sync"
	"time"
	"unsafe"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/handle"
	"github.com/vortexgo/vortexgo/gosrc/memory"
	"github.com/vortexgo/vortexgo/gosrc/pipeline"
)

// The async toolkit (gosrc/pipeline) for python/vortexgo/toolkit/. It
// marshals only: the pipeline package validates and decides. Lists cross
// as (address, count) of a caller's int64 buffer and results as records
// written into a caller's float64 buffer (one format, read by
// toolkit/_records.py), because gopy passes slices poorly and parsing text
// cost more than the calls. Python callables never reach Go: a callable
// compute op is bracketed by BeginExternal/EndExternal.

// tagKey marks errors Python raises as KeyError (unknown op ids).
const tagKey = "KeyError: "

// ptag is tag plus the one toolkit sentinel without a backend counterpart.
func ptag(err error) error {
	if errors.Is(err, pipeline.ErrUnknownOp) {
		return errors.New(tagKey + err.Error())
	}
	return tag(err)
}

// view is n values of T at addr: a buffer the Python caller allocated
// (NumPy or array.array) and keeps alive during the call, outside the Go
// heap; the pointer-to-pointer conversion is the one vet accepts.
func view[T any](addr, n int) []T {
	if addr == 0 || n <= 0 {
		return nil
	}
	p := uintptr(addr)
	return unsafe.Slice((*T)(*(*unsafe.Pointer)(unsafe.Pointer(&p))), n)
}

// record writes vals into the caller's n float64s at dst when they fit and
// returns len(vals), so a caller with too small a buffer retries.
func record(dst, n int, vals ...float64) int {
	if len(vals) <= n {
		copy(view[float64](dst, n), vals)
	}
	return len(vals)
}

func opIDs(addr, n int) []pipeline.OpID {
	ids := make([]pipeline.OpID, 0, n)
	for _, v := range view[int64](addr, n) {
		ids = append(ids, pipeline.OpID(max(v, 0))) // 0: the coordinator's "ids start at 1"
	}
	return ids
}

func intList(addr, n int) []int {
	out := make([]int, 0, n)
	for _, v := range view[int64](addr, n) {
		out = append(out, int(v))
	}
	return out
}

func durationUs(us int) time.Duration {
	if us < 0 {
		return -1
	}
	return time.Duration(us) * time.Microsecond
}

// tkDevice charges the pipeline package's allocations to the process
// memory budget under one purpose.
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

// Lease is one borrower's reference to toolkit memory (a triple buffer
// slot, a pool buffer): the memory stays allocated until Release.
type Lease struct {
	ptr     uintptr
	release func() error
}

// Ptr is the leased memory's address.
func (l *Lease) Ptr() int { return int(l.ptr) }

// Release gives the reference back (idempotent).
func (l *Lease) Release() error { return tag(l.release()) }

// ---- ops ----

// StageOp is Go-side work for a coordinator compute op, a pipeline stage or
// a triple-buffered step (pipeline.StageOp).
type StageOp struct{ op pipeline.StageOp }

func newOp(op pipeline.StageOp, err error) (*StageOp, error) {
	if err != nil {
		return nil, tag(err)
	}
	return &StageOp{op: op}, nil
}

// NewKernelOp is kernel name from kernels/ launched with grid x block
// threads; its arguments are the nargs int64 words at args
// (pipeline.DecodeArgs).
func NewKernelOp(name string, gx, gy, gz, bx, by, bz, args, nargs int) (*StageOp, error) {
	a, err := pipeline.DecodeArgs(view[int64](args, nargs))
	if err != nil {
		return nil, tag(err)
	}
	u := func(v int) uint64 { return uint64(max(v, 0)) }
	return newOp(pipeline.KernelOp(name, [3]uint64{u(gx), u(gy), u(gz)}, [3]uint64{u(bx), u(by), u(bz)}, a))
}

// NewSpinOp keeps its stream busy for us microseconds.
func NewSpinOp(us float64) (*StageOp, error) {
	return newOp(pipeline.SpinOp(time.Duration(min(max(us, -1), 1e12) * 1e3)))
}

// NewCopyOp copies between host memory [hostPtr, +hostLen) and a stage's
// buffer 0: upload host -> output 0, download input 0 -> host.
func NewCopyOp(hostPtr, hostLen int, upload bool) (*StageOp, error) {
	dir := pipeline.CopyDownload
	if upload {
		dir = pipeline.CopyUpload
	}
	return newOp(pipeline.HostCopyOp(pipeline.HostMem{Ptr: uintptr(hostPtr), Len: hostLen}, dir))
}

// ---- TripleBuffer ----

// TripleBuffer is three device buffers rotating through upload, process
// and download (pipeline.TripleBuffer).
type TripleBuffer struct{ tb *pipeline.TripleBuffer }

// NewTripleBuffer allocates three buffers of size elements of dtype on
// dev, charged to the memory budget as "triple_buffer".
func NewTripleBuffer(dev *Device, size int, dtype string) (*TripleBuffer, error) {
	dt, err := parseDType(dtype)
	if err != nil {
		return nil, tag(err)
	}
	d, err := chargedDevice(dev, "triple_buffer")
	if err != nil {
		return nil, tag(err)
	}
	tb, err := pipeline.NewTripleBuffer(d, size, dt)
	if err != nil {
		return nil, tag(err)
	}
	return &TripleBuffer{tb: tb}, nil
}

// Claim moves the slot of stage (pipeline.BufferState: 1 upload, 2
// process, 3 download) one state forward: its index, or -1.
func (t *TripleBuffer) Claim(stage int) int { return t.tb.Claim(pipeline.BufferState(stage)) }

// Borrow leases slot i: its memory outlives Close until the lease is released.
func (t *TripleBuffer) Borrow(i int) (*Lease, error) {
	b, err := t.tb.Borrow(i)
	if err != nil {
		return nil, tag(err)
	}
	return &Lease{ptr: b.Ptr(), release: b.Release}, nil
}

// Advance ends the round and returns the new round number.
func (t *TripleBuffer) Advance() int { return int(t.tb.Advance()) }

// Round is the number of Advance calls.
func (t *TripleBuffer) Round() int { return int(t.tb.Round()) }

// Size is the elements per buffer.
func (t *TripleBuffer) Size() int { return t.tb.Size() }

// DType is the NumPy dtype name.
func (t *TripleBuffer) DType() string { return t.tb.DType().String() }

// States writes the three slot states (pipeline.BufferState) as records.
func (t *TripleBuffer) States(dst, n int) int {
	s := t.tb.States()
	return record(dst, n, float64(s[0]), float64(s[1]), float64(s[2]))
}

// Reset returns every slot to Free and the rotation to round 0.
func (t *TripleBuffer) Reset() { t.tb.Reset() }

// Close drops the buffers; leased slots are freed with their last lease.
func (t *TripleBuffer) Close() error { return tag(t.tb.Close()) }

// ---- AsyncCoordinator ----

// AsyncCoordinator queues uploads, compute and downloads on three streams
// ordered by events (pipeline.AsyncCoordinator).
type AsyncCoordinator struct {
	c       *pipeline.AsyncCoordinator
	dev     backend.Device
	streams [3]*Stream // upload, compute, download; borrowed from the coordinator's id
	id      handle.ID
	// mu guards the Poll bookkeeping below: gopy releases the GIL, so two
	// Python threads may poll at once (an uncontended lock, ~20 ns).
	mu      sync.Mutex
	names   map[string]int // op names interned for Poll's records
	nameTab []string
	errs    map[pipeline.OpID]string // errors of polled ops, until OpError fetches them
	rest    []pipeline.OpResult      // polled results that did not fit the caller's buffer
}

// register registers the coordinator and its streams as borrowed from it:
// closing the coordinator makes every stream wrapper and its id stale.
func register(c *pipeline.AsyncCoordinator, dev backend.Device) *AsyncCoordinator {
	a := &AsyncCoordinator{c: c, dev: dev, names: map[string]int{}, errs: map[pipeline.OpID]string{}}
	a.id = handles.Register(a)
	for i, s := range []backend.Stream{c.UploadStream(), c.ComputeStream(), c.DownloadStream()} {
		a.streams[i], _ = borrowStream(a.id, s) // a.id was just registered: cannot be stale
	}
	return a
}

// NewAsyncCoordinator creates the coordinator and its three streams;
// timing=false skips per-op GPU timing (pipeline.CoordinatorOptions.NoTiming).
func NewAsyncCoordinator(dev *Device, uploadPriority, computePriority, downloadPriority int, timing bool) (*AsyncCoordinator, error) {
	// Pipeline managers built on the coordinator allocate through its
	// device, so that device charges the budget.
	d, err := chargedDevice(dev, "pipeline")
	if err != nil {
		return nil, tag(err)
	}
	c, err := pipeline.NewAsyncCoordinator(d, pipeline.CoordinatorOptions{UploadPriority: uploadPriority,
		ComputePriority: computePriority, DownloadPriority: downloadPriority, NoTiming: !timing})
	if err != nil {
		return nil, tag(err)
	}
	return register(c, dev.d), nil
}

// ID is the coordinator's registry id (the fast path's argument).
func (a *AsyncCoordinator) ID() int { return int(a.id) }

// Timing reports whether ops are timed (pipeline.CoordinatorOptions.NoTiming unset).
func (a *AsyncCoordinator) Timing() bool { return a.c.Timing() }

func fastCoordinator(cid int) *pipeline.AsyncCoordinator {
	a, err := handle.Get[*AsyncCoordinator](&handles, handle.ID(cid))
	if err != nil {
		return nil
	}
	return a.c
}

// FastBeginExternal opens an external compute op without dependencies on
// coordinator cid and returns its id, or -1 (the method path then raises
// the full error). A released cid never names another coordinator.
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

// FastExternalDone tracks work already enqueued on coordinator cid's
// compute stream as one op (pipeline.ExternalDone): its id, or -1.
func FastExternalDone(cid int) int {
	c := fastCoordinator(cid)
	if c == nil {
		return -1
	}
	id, err := c.ExternalDone()
	if err != nil {
		return -1
	}
	return int(id)
}

// ExternalDone is FastExternalDone with the full error.
func (a *AsyncCoordinator) ExternalDone() (int, error) {
	id, err := a.c.ExternalDone()
	return int(id), tag(err)
}

// QueueUpload copies n bytes of host [hostPtr, +hostLen) into device
// [devPtr, +devLen) on the upload stream after the ndeps int64 op ids at
// deps, returning the op id.
func (a *AsyncCoordinator) QueueUpload(hostPtr, hostLen, devPtr, devLen, n, deps, ndeps int) (int, error) {
	id, err := a.c.QueueUpload(pipeline.HostMem{Ptr: uintptr(hostPtr), Len: hostLen},
		pipeline.NewSpan(a.dev, uintptr(devPtr), devLen), n, opIDs(deps, ndeps)...)
	return int(id), ptag(err)
}

// QueueDownload copies n bytes of device [devPtr, +devLen) into host
// [hostPtr, +hostLen) on the download stream after deps.
func (a *AsyncCoordinator) QueueDownload(devPtr, devLen, hostPtr, hostLen, n, deps, ndeps int) (int, error) {
	id, err := a.c.QueueDownload(pipeline.NewSpan(a.dev, uintptr(devPtr), devLen),
		pipeline.HostMem{Ptr: uintptr(hostPtr), Len: hostLen}, n, opIDs(deps, ndeps)...)
	return int(id), ptag(err)
}

// QueueCompute enqueues a kernel or spin op on the compute stream after deps.
func (a *AsyncCoordinator) QueueCompute(op *StageOp, deps, ndeps int) (int, error) {
	if op == nil {
		return 0, tag(badArg("op=None, expected a kernel or spin op"))
	}
	cop, err := op.op.Compute()
	if err != nil {
		return 0, tag(err)
	}
	id, err := a.c.QueueCompute(cop, opIDs(deps, ndeps)...)
	return int(id), ptag(err)
}

// BeginExternal makes the compute stream wait on deps and opens an op whose
// work the caller enqueues on the compute stream; EndExternal closes it.
func (a *AsyncCoordinator) BeginExternal(deps, ndeps int) (int, error) {
	id, _, err := a.c.BeginExternal(opIDs(deps, ndeps)...)
	return int(id), ptag(err)
}

// EndExternal records the completion of external op id.
func (a *AsyncCoordinator) EndExternal(id int) error {
	return ptag(a.c.EndExternal(pipeline.OpID(max(id, 0))))
}

// PollFields is the number of values per Poll record.
const PollFields = 4

// Poll writes completed ops as records of PollFields values: id, kind,
// gpu_ms, bytes; kind is (name index * 4 + pipeline.OpType) * 2 + 1 when
// OpError holds the op's error, so Python maps it to (type, name) with one
// lookup. It returns the number of records written; results that do not
// fit wait for the next call.
func (a *AsyncCoordinator) Poll(dst, n int) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.rest = append(a.rest, a.c.Poll()...)
	out := view[float64](dst, n)
	k := min(len(a.rest), len(out)/PollFields)
	for i, r := range a.rest[:k] {
		idx, ok := a.names[r.Name]
		if !ok {
			idx = len(a.nameTab)
			a.names[r.Name], a.nameTab = idx, append(a.nameTab, r.Name)
		}
		kind := (idx*4 + int(r.Type)) * 2
		if r.Err != nil {
			a.errs[r.ID], kind = r.Err.Error(), kind+1
		}
		copy(out[i*PollFields:], []float64{float64(r.ID), float64(kind), float64(r.GPUMs), float64(r.Bytes)})
	}
	a.rest = append(a.rest[:0], a.rest[k:]...)
	return k
}

// Name is the op name of Poll's name index i.
func (a *AsyncCoordinator) Name(i int) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	if i < 0 || i >= len(a.nameTab) {
		return ""
	}
	return a.nameTab[i]
}

// OpError returns, once, the error of a polled op that failed.
func (a *AsyncCoordinator) OpError(id int) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	e := a.errs[pipeline.OpID(id)]
	delete(a.errs, pipeline.OpID(id))
	return e
}

// Done reports whether op id completed, without blocking.
func (a *AsyncCoordinator) Done(id int) (bool, error) {
	ok, err := a.c.Done(pipeline.OpID(max(id, 0)))
	return ok, ptag(err)
}

// Wait blocks until op id completes; timeoutUs < 0 waits forever. The GIL
// is released meanwhile.
func (a *AsyncCoordinator) Wait(id, timeoutUs int) error {
	return ptag(a.c.Wait(pipeline.OpID(max(id, 0)), durationUs(timeoutUs)))
}

// SynchronizeAll blocks until the three streams are idle.
func (a *AsyncCoordinator) SynchronizeAll() error { return tag(a.c.SynchronizeAll()) }

// Stream is stream i (0 upload, 1 compute, 2 download), borrowed from the
// coordinator: its methods fail with ClosedError once the coordinator closed.
func (a *AsyncCoordinator) Stream(i int) (*Stream, error) {
	if i < 0 || i > 2 {
		return nil, tag(badArg("stream %d, expected 0 (upload), 1 (compute) or 2 (download)", i))
	}
	return a.streams[i], nil
}

// Info writes pending ops, dropped reports, the last op id and 1 when
// the roles share one stream, as records.
func (a *AsyncCoordinator) Info(dst, n int) int {
	seq := 0.0
	if a.c.Sequential() {
		seq = 1
	}
	return record(dst, n, float64(a.c.Pending()), float64(a.c.Dropped()), float64(a.c.LastID()), seq)
}

// Close waits for the streams and releases them, and the coordinator's
// id with every stream id borrowed from it.
func (a *AsyncCoordinator) Close() error {
	err := a.c.Close()
	if err == nil {
		handles.Release(a.id)
	}
	return tag(err)
}

// CoordinatorBookkeepingNs is pipeline's BookkeepingNs of a's coordinator.
func CoordinatorBookkeepingNs(a *AsyncCoordinator, n int) (float64, error) {
	if a == nil {
		return 0, tag(badArg("coordinator=None, expected an AsyncCoordinator"))
	}
	ns, err := a.c.BookkeepingNs(n)
	return ns, tag(err)
}

// ---- PipelineStageManager ----

// PipelineManager runs named stages in a set order per iteration
// (pipeline.PipelineStageManager).
type PipelineManager struct {
	m   *pipeline.PipelineStageManager
	dev backend.Device
}

// NewPipelineManager creates a manager on coordinator c's streams.
func NewPipelineManager(c *AsyncCoordinator) (*PipelineManager, error) {
	if c == nil {
		return nil, tag(badArg("coordinator=None, expected an AsyncCoordinator"))
	}
	m, err := pipeline.NewPipelineStageManager(c.c)
	if err != nil {
		return nil, tag(err)
	}
	return &PipelineManager{m: m, dev: c.dev}, nil
}

// AddBuffer registers a logical buffer whose versions are caller-owned
// device ranges of size bytes at the nptrs int64 addresses at ptrs.
func (p *PipelineManager) AddBuffer(ptrs, nptrs, size int) (int, error) {
	bs := make([]backend.Buffer, 0, nptrs)
	for _, v := range view[int64](ptrs, nptrs) {
		bs = append(bs, pipeline.NewSpan(p.dev, uintptr(v), size))
	}
	i, err := p.m.AddBuffer(bs...)
	return i, tag(err)
}

// NewBuffer allocates a logical buffer of versions device buffers of size
// bytes, freed with the manager and charged to the budget as "pipeline".
func (p *PipelineManager) NewBuffer(size, versions int) (int, error) {
	i, err := p.m.NewBuffer(size, versions)
	return i, tag(err)
}

// BufferPtr is the address of version v of logical buffer i.
func (p *PipelineManager) BufferPtr(i, v int) (int, error) {
	b, err := p.m.Buffer(i, v)
	if err != nil {
		return 0, tag(err)
	}
	return int(b.Ptr()), nil
}

// BufferInfo writes logical buffer i's versions and size in bytes as records.
func (p *PipelineManager) BufferInfo(i, dst, n int) (int, error) {
	v, size, err := p.m.BufferInfo(i)
	if err != nil {
		return 0, tag(err)
	}
	return record(dst, n, float64(v), float64(size)), nil
}

// AddStage appends a stage: inputs and outputs are int64 logical buffer
// indices at (ins, nins) and (outs, nouts); stream 0 compute, 1 upload,
// 2 download.
func (p *PipelineManager) AddStage(name string, ins, nins, outs, nouts, stream int, op *StageOp) (int, error) {
	if op == nil {
		return 0, tag(badArg("stage %q: op=None, expected an op", name))
	}
	i, err := p.m.AddStage(pipeline.GpuPipelineStage{Name: name, InputBuffers: intList(ins, nins),
		OutputBuffers: intList(outs, nouts), Stream: pipeline.OpType(stream), Op: op.op})
	return i, tag(err)
}

// SetOrder sets the stages each iteration runs (n int64 indices at order).
func (p *PipelineManager) SetOrder(order, n int) error { return tag(p.m.SetOrder(intList(order, n))) }

// ExecuteIterations issues n iterations in one call.
func (p *PipelineManager) ExecuteIterations(n int) error { return tag(p.m.ExecuteIterations(n)) }

// Iteration is the number of iterations issued.
func (p *PipelineManager) Iteration() int { return p.m.Iteration() }

// Stats writes the statistics as records: iterations, avg_iteration_ms,
// throughput, gpu_utilization, host_us_per_iteration, graph_iterations,
// graph_host_us_per_iteration, in_flight, then runs, avg_ms and total_ms
// of each stage by index.
func (p *PipelineManager) Stats(dst, n int) int {
	s := p.m.GetStats()
	v := []float64{float64(s.Iterations), s.AvgIterationMs, s.Throughput, s.GPUUtilization, s.HostUsPerIteration,
		float64(s.GraphIterations), s.GraphHostUsPerIteration, float64(s.InFlight)}
	for _, st := range s.Stages {
		v = append(v, float64(st.Runs), st.AvgMs, st.TotalMs)
	}
	return record(dst, n, v...)
}

// ResetStats clears the statistics.
func (p *PipelineManager) ResetStats() { p.m.ResetStats() }

// Capture records n iterations (0: one buffer cycle) into a graph.
func (p *PipelineManager) Capture(n int) (*PipelineGraph, error) {
	g, err := p.m.CaptureIterations(n)
	if err != nil {
		return nil, tag(err)
	}
	return &PipelineGraph{g: g}, nil
}

// Close waits for the streams and frees the buffers NewBuffer made.
func (p *PipelineManager) Close() error { return tag(p.m.Close()) }

// PipelineGraph is a captured cycle of iterations.
type PipelineGraph struct{ g *pipeline.PipelineGraph }

// ReplayN replays the graph n times in one call.
func (g *PipelineGraph) ReplayN(n int) error { return tag(g.g.ReplayN(n)) }

// Iterations is the number of pipeline iterations one replay runs.
func (g *PipelineGraph) Iterations() int { return g.g.Iterations() }

// Nodes is the number of operations in the graph.
func (g *PipelineGraph) Nodes() int { return g.g.Nodes() }

// Close releases the graph.
func (g *PipelineGraph) Close() error { return tag(g.g.Close()) }
