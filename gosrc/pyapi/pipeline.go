package pyapi

import (
	"time"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/handle"
	"github.com/vortexgo/vortexgo/gosrc/hostmem"
	"github.com/vortexgo/vortexgo/gosrc/pipeline"
)

// The async toolkit (gosrc/pipeline) for python/vortexgo/toolkit/, marshalled
// only. Lists cross as (address, count) of the caller's int64 buffer and
// results as float64 records written into the caller's buffer (one format,
// read in toolkit/_records.py): gopy passes slices poorly, and text cost
// more than the calls. Python callables never reach Go.

// durationUs is a timeout in microseconds; any negative one waits forever.
func durationUs(us int) time.Duration { return time.Duration(max(us, -1)) * time.Microsecond }

// charged is dev charging what the toolkit allocates on it to the process
// budget as purpose (pipeline.Charged).
func charged(dev *Device, purpose string) (backend.Device, error) {
	a, err := dev.allocator(purpose)
	if err != nil {
		return nil, err
	}
	return pipeline.Charged(a), nil
}

// StageOp is Go-side work for a compute op, a pipeline stage or a
// triple-buffered step (pipeline.StageOp).
type StageOp struct{ op pipeline.StageOp }

func newOp(op pipeline.StageOp, err error) (*StageOp, error) {
	if err != nil {
		return nil, tag(err)
	}
	return &StageOp{op: op}, nil
}

// NewKernelOp is kernel name with grid, block and arguments in the n
// int64 words at words (pipeline.DecodeKernel).
func NewKernelOp(name string, words, n int) (*StageOp, error) {
	w, err := hostmem.Span[int64](words, n)
	if err != nil {
		return nil, tag(err)
	}
	return newOp(pipeline.DecodeKernel(name, w))
}

// NewSpinOp keeps its stream busy for us microseconds.
func NewSpinOp(us float64) (*StageOp, error) {
	return newOp(pipeline.SpinOp(time.Duration(min(max(us, -1), 1e12) * 1e3)))
}

// NewCopyOp copies host [hostPtr, +hostLen) to a stage's buffer 0 or back
// (dir: pipeline.CopyDir).
func NewCopyOp(hostPtr, hostLen, dir int) (*StageOp, error) {
	return newOp(pipeline.HostCopyOp(pipeline.HostMem{Ptr: uintptr(hostPtr), Len: hostLen}, pipeline.CopyDir(dir)))
}

// TripleBuffer is three buffers rotating through upload, process and
// download (pipeline.TripleBuffer).
type TripleBuffer struct{ tb *pipeline.TripleBuffer }

// NewTripleBuffer allocates three buffers of size elements of dtype,
// charged to the memory budget as "triple_buffer".
func NewTripleBuffer(dev *Device, size int, dtype string) (*TripleBuffer, error) {
	dt, err := backend.ParseDType(dtype)
	if err != nil {
		return nil, tag(err)
	}
	d, err := charged(dev, "triple_buffer")
	if err != nil {
		return nil, tag(err)
	}
	return tripleBuffer(pipeline.NewTripleBuffer(d, size, dt))
}

func tripleBuffer(tb *pipeline.TripleBuffer, err error) (*TripleBuffer, error) {
	if err != nil {
		return nil, tag(err)
	}
	return &TripleBuffer{tb: tb}, nil
}

// Claim moves the slot of stage (a pipeline.BufferState: 1 upload, 2
// process, 3 download) one state forward: its index, or -1.
func (t *TripleBuffer) Claim(stage int) int { return t.tb.Claim(pipeline.BufferState(stage)) }

// Borrow leases slot i: its memory outlives Close until the lease is released.
func (t *TripleBuffer) Borrow(i int) (*Lease, error) {
	b, err := t.tb.Borrow(i)
	return newLease(b, err, "")
}

// Advance ends the round and returns the new round number.
func (t *TripleBuffer) Advance() int { return int(t.tb.Advance()) }

// States writes the three slot states (pipeline.BufferState) and the round.
func (t *TripleBuffer) States(dst, n int) int { return hostmem.Record(dst, n, t.tb.Record()...) }

// Reset returns every slot to Free and the rotation to round 0.
func (t *TripleBuffer) Reset() { t.tb.Reset() }

// Close drops the buffers; leased slots are freed with their last lease.
func (t *TripleBuffer) Close() error { return tag(t.tb.Close()) }

// AsyncCoordinator queues uploads, compute and downloads on three streams
// ordered by events (pipeline.AsyncCoordinator).
type AsyncCoordinator struct {
	c       *pipeline.AsyncCoordinator
	dev     backend.Device
	streams [3]*Stream // upload, compute, download: borrowed from the coordinator's id
	id      handle.ID
	log     pipeline.ReportLog
}

// register registers the coordinator, and its streams as borrowed from it:
// closing it makes every stream wrapper and its ids stale.
func register(c *pipeline.AsyncCoordinator, dev backend.Device) *AsyncCoordinator {
	a := &AsyncCoordinator{c: c, dev: dev}
	a.id = handles.Register(a)
	for i, s := range []backend.Stream{c.UploadStream(), c.ComputeStream(), c.DownloadStream()} {
		a.streams[i], _ = borrowStream(a.id, s) // a.id was just registered: cannot be stale
	}
	return a
}

// NewAsyncCoordinator creates the coordinator and its three streams;
// timing=false skips per-op GPU timing.
func NewAsyncCoordinator(dev *Device, uploadPriority, computePriority, downloadPriority int, timing bool) (*AsyncCoordinator, error) {
	d, err := charged(dev, "pipeline") // the managers built on it allocate through it
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

func fast(cid int, f func(c *pipeline.AsyncCoordinator) (pipeline.OpID, error)) int {
	a, err := handle.Get[*AsyncCoordinator](&handles, handle.ID(cid))
	if err != nil {
		return -1
	}
	id, err := f(a.c)
	if err != nil {
		return -1
	}
	return int(id)
}

// FastBeginExternal opens an external compute op without deps on
// coordinator cid: its id, or -1 (the method path then raises the error).
// A released cid never names another coordinator.
func FastBeginExternal(cid int) int {
	return fast(cid, func(c *pipeline.AsyncCoordinator) (pipeline.OpID, error) {
		id, _, err := c.BeginExternal()
		return id, err
	})
}

// FastEndExternal closes external op id of coordinator cid: 0, or -1.
func FastEndExternal(cid, id int) int {
	return fast(cid, func(c *pipeline.AsyncCoordinator) (pipeline.OpID, error) {
		return 0, c.EndExternal(pipeline.OpID(max(id, 0)))
	})
}

// FastExternalDone tracks work already enqueued on coordinator cid's
// compute stream as one op (pipeline.ExternalDone): its id, or -1.
func FastExternalDone(cid int) int {
	return fast(cid, func(c *pipeline.AsyncCoordinator) (pipeline.OpID, error) { return c.ExternalDone() })
}

// ExternalDone is FastExternalDone with the full error.
func (a *AsyncCoordinator) ExternalDone() (int, error) {
	id, err := a.c.ExternalDone()
	return int(id), tag(err)
}

// QueueCopy copies n bytes from host [hostPtr, +hostLen) to device
// [devPtr, +devLen) (upload) or back, after the ndeps op ids at deps.
func (a *AsyncCoordinator) QueueCopy(upload bool, hostPtr, hostLen, devPtr, devLen, n, deps, ndeps int) (int, error) {
	id, err := a.c.QueueCopy(upload, pipeline.HostMem{Ptr: uintptr(hostPtr), Len: hostLen},
		pipeline.NewSpan(a.dev, uintptr(devPtr), devLen), n, hostmem.Ints[pipeline.OpID](deps, ndeps, 0)...)
	return int(id), tag(err)
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
	id, err := a.c.QueueCompute(cop, hostmem.Ints[pipeline.OpID](deps, ndeps, 0)...)
	return int(id), tag(err)
}

// BeginExternal makes the compute stream wait on deps and opens an op
// whose work the caller enqueues; EndExternal closes it.
func (a *AsyncCoordinator) BeginExternal(deps, ndeps int) (int, error) {
	id, _, err := a.c.BeginExternal(hostmem.Ints[pipeline.OpID](deps, ndeps, 0)...)
	return int(id), tag(err)
}

// EndExternal records the completion of external op id.
func (a *AsyncCoordinator) EndExternal(id int) error {
	return tag(a.c.EndExternal(pipeline.OpID(max(id, 0))))
}

// PollFields is the number of values per Poll record.
const PollFields = pipeline.ReportFields

// FastPoll writes coordinator cid's completed ops as records
// (pipeline.ReportLog.Fill) and returns how many, or -1 for a closed cid.
// A package function over the registry id: gopy's method call resolves
// its handle through a locked map and reflection, which cost more than
// the poll itself.
func FastPoll(cid, dst, n int) int {
	a, err := handle.Get[*AsyncCoordinator](&handles, handle.ID(cid))
	if err != nil {
		return -1
	}
	buf, _ := hostmem.Span[float64](dst, max(n, 0)) // dst 0: nothing to fill
	return a.log.Fill(a.c, buf)
}

// Name is the op name of Poll's name index i.
func (a *AsyncCoordinator) Name(i int) string { return a.log.Name(i) }

// OpError returns, once, the error of a polled op that failed.
func (a *AsyncCoordinator) OpError(id int) string { return a.log.Err(pipeline.OpID(max(id, 0))) }

// Done reports whether op id completed, without blocking.
func (a *AsyncCoordinator) Done(id int) (bool, error) {
	ok, err := a.c.Done(pipeline.OpID(max(id, 0)))
	return ok, tag(err)
}

// Wait blocks until op id completes (timeoutUs < 0: no limit), GIL released.
func (a *AsyncCoordinator) Wait(id, timeoutUs int) error {
	return tag(a.c.Wait(pipeline.OpID(max(id, 0)), durationUs(timeoutUs)))
}

// SynchronizeAll blocks until the three streams are idle.
func (a *AsyncCoordinator) SynchronizeAll() error { return tag(a.c.SynchronizeAll()) }

// Stream is stream i (0 upload, 1 compute, 2 download); its methods fail
// with ClosedError once the coordinator closed.
func (a *AsyncCoordinator) Stream(i int) (*Stream, error) {
	if i < 0 || i > 2 {
		return nil, tag(badArg("stream %d, expected 0 (upload), 1 (compute) or 2 (download)", i))
	}
	return a.streams[i], nil
}

// Info writes pending ops, dropped reports, the last op id and 1 when the
// roles share one stream.
func (a *AsyncCoordinator) Info(dst, n int) int { return hostmem.Record(dst, n, a.c.Info()...) }

// Close waits for the streams and releases them, the coordinator's id and
// every stream id borrowed from it.
func (a *AsyncCoordinator) Close() error { return released(a.id, a.c.Close()) }

// released releases id (and the ids borrowed from it) once its object's
// Close succeeded: a refused Close leaves every name of it working.
func released(id handle.ID, err error) error {
	if err == nil {
		handles.Release(id) // 0 (nothing registered) is a no-op
	}
	return tag(err)
}

// BookkeepingNs is the per-op cost in Go alone (pipeline.BookkeepingNs).
func (a *AsyncCoordinator) BookkeepingNs(n int) (float64, error) { return tagged(a.c.BookkeepingNs(n)) }

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
	return tagged(&PipelineManager{m: m, dev: c.dev}, err)
}

// AddBuffer registers a logical buffer whose versions are the caller's
// device ranges of size bytes at the nptrs int64 addresses at ptrs.
func (p *PipelineManager) AddBuffer(ptrs, nptrs, size int) (int, error) {
	var bs []backend.Buffer
	for _, v := range hostmem.Ints[uintptr](ptrs, nptrs, 0) {
		bs = append(bs, pipeline.NewSpan(p.dev, v, size))
	}
	return tagged(p.m.AddBuffer(bs...))
}

// NewBuffer allocates a logical buffer of versions buffers of size bytes,
// freed with the manager and charged to the budget as "pipeline".
func (p *PipelineManager) NewBuffer(size, versions int) (int, error) {
	return tagged(p.m.NewBuffer(size, versions))
}

// Buffer writes version v of logical buffer i as a record: address, size
// in bytes, number of versions.
func (p *PipelineManager) Buffer(i, v, dst, n int) (int, error) {
	b, err := p.m.Buffer(i, v)
	if err != nil {
		return 0, tag(err)
	}
	versions, _, _ := p.m.BufferInfo(i)
	return hostmem.Record(dst, n, float64(b.Ptr()), float64(b.Size()), float64(versions)), nil
}

// Borrow leases version v of logical buffer i (one NewBuffer allocated):
// its memory outlives Close until the lease is released.
func (p *PipelineManager) Borrow(i, v int) (*Lease, error) {
	b, err := p.m.Borrow(i, v)
	return newLease(b, err, "")
}

// AddStage appends a stage reading the nins int64 buffer indices at ins
// and writing those at outs, on stream 0 compute, 1 upload or 2 download.
func (p *PipelineManager) AddStage(name string, ins, nins, outs, nouts, stream int, op *StageOp) (int, error) {
	if op == nil {
		return 0, tag(badArg("stage %q: op=None, expected an op", name))
	}
	return tagged(p.m.AddStage(pipeline.GpuPipelineStage{Name: name, InputBuffers: hostmem.Ints[int](ins, nins, -1),
		OutputBuffers: hostmem.Ints[int](outs, nouts, -1), Stream: pipeline.OpType(stream), Op: op.op}))
}

// SetOrder sets the stages each iteration runs (n int64 indices at order).
func (p *PipelineManager) SetOrder(order, n int) error {
	return tag(p.m.SetOrder(hostmem.Ints[int](order, n, -1)))
}

// ExecuteIterations issues n iterations.
func (p *PipelineManager) ExecuteIterations(n int) error { return tag(p.m.ExecuteIterations(n)) }

// Stats writes the iterations issued and the statistics (pipeline.PipelineStats.Record).
func (p *PipelineManager) Stats(dst, n int) int {
	return hostmem.Record(dst, n, p.m.GetStats().Record(p.m.Iteration())...)
}

// ResetStats clears the statistics.
func (p *PipelineManager) ResetStats() { p.m.ResetStats() }

// Capture records n iterations (0: one buffer cycle) into a graph.
func (p *PipelineManager) Capture(n int) (*PipelineGraph, error) {
	g, err := p.m.CaptureIterations(n)
	return tagged(&PipelineGraph{g: g}, err)
}

// Close waits for the streams and frees the buffers NewBuffer made.
func (p *PipelineManager) Close() error { return tag(p.m.Close()) }

// PipelineGraph is a captured cycle of iterations.
type PipelineGraph struct{ g *pipeline.PipelineGraph }

// ReplayN replays the graph n times.
func (g *PipelineGraph) ReplayN(n int) error { return tag(g.g.ReplayN(n)) }

// Info writes the iterations one replay runs and the graph's nodes.
func (g *PipelineGraph) Info(dst, n int) int { return hostmem.Record(dst, n, g.g.Info()...) }

// Close releases the graph.
func (g *PipelineGraph) Close() error { return tag(g.g.Close()) }
