package pyapi

import (
	"errors"
	"fmt"
	"time"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/hostmem"
	"github.com/vortexgo/vortexgo/gosrc/memory"
	"github.com/vortexgo/vortexgo/gosrc/pipeline"
)

// The async toolkit (gosrc/pipeline, memory.BufferPool) for
// python/vortexgo/toolkit/. Lists cross as (address, count) of the caller's
// int64 buffer (gopy passes slices poorly); Python callables never reach Go.

// durationUs is a timeout in microseconds; any negative one waits forever.
func durationUs(us int) time.Duration { return time.Duration(max(us, -1)) * time.Microsecond }

// charged is dev charging what the toolkit allocates on it to the process
// budget as purpose (pipeline.Charged).
func charged(dev *Device, purpose string) (backend.Device, error) {
	a, err := memory.AllocatorFor(dev.d, purpose)
	if err != nil {
		return nil, err
	}
	return pipeline.Charged(a), nil
}

// build is newT on dev, charging the process budget as purpose, with its
// options decoded from their JSON record: a toolkit constructor's steps.
func build[C, T any](dev *Device, purpose, options string, newT func(backend.Device, C) (T, error)) (T, error) {
	var c C
	d, err := charged(dev, purpose)
	if err == nil {
		err = decodeRecord(fmt.Sprintf("%T", c), options, &c)
	}
	if err != nil {
		var zero T
		return zero, err
	}
	return newT(d, c)
}

// StageOp is Go-side work for a compute op, a pipeline stage or a
// triple-buffered step (pipeline.StageOp).
type StageOp struct{ op pipeline.StageOp }

// NewStageOp decodes a stage op of kind (pipeline.DecodeOp: 0 kernel name
// with grid, block and arguments, 1 spin for words[0] ns, 2 upload or 3
// download of host range words[0], +words[1]) from the n int64 words at
// words.
func NewStageOp(kind int, name string, words, n int) (*StageOp, error) {
	w, err := hostmem.Span[int64](words, n)
	if err != nil {
		return nil, tag(err)
	}
	op, err := pipeline.DecodeOp(pipeline.StageOpKind(kind), name, w)
	return tagged(&StageOp{op: op}, err)
}

// TripleBuffer is three buffers rotating through upload, process and
// download (pipeline.TripleBuffer); Info writes its TRIPLE_BUFFER record.
type TripleBuffer struct {
	Object
	tb *pipeline.TripleBuffer
}

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
	return tagged(&TripleBuffer{Object: Object{obj: tb}, tb: tb}, err)
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

// Reset returns every slot to Free and the rotation to round 0.
func (t *TripleBuffer) Reset() { t.tb.Reset() }

// tripleBufferRecord is the three slot states (pipeline.BufferState) and
// the round (TRIPLE_BUFFER).
type tripleBufferRecord struct{ Slot0, Slot1, Slot2, Round int64 }

// Info writes the TRIPLE_BUFFER record into the caller's n bytes at dst.
func (t *TripleBuffer) Info(dst, n int) (int, error) {
	s := t.tb.States()
	return putRecord(dst, n, &tripleBufferRecord{int64(s[0]), int64(s[1]), int64(s[2]), int64(t.tb.Round())})
}

// AsyncCoordinator queues uploads, compute and downloads on three streams
// ordered by events (pipeline.AsyncCoordinator). It is registered: closing
// it makes its streams' wrappers and its id stale. Info writes its
// COORDINATOR record.
type AsyncCoordinator struct {
	Object
	c       *pipeline.AsyncCoordinator
	dev     backend.Device
	streams [3]*Stream // upload, compute, download: borrowed from the coordinator's id
	log     pipeline.ReportLog
}

func register(c *pipeline.AsyncCoordinator, dev backend.Device, err error) (*AsyncCoordinator, error) {
	if err != nil {
		return nil, tag(err)
	}
	a := &AsyncCoordinator{c: c, dev: dev}
	a.Object = Object{obj: c, id: handles.Register(a)} // the fast path reads the wrapper's report log
	for i, s := range []backend.Stream{c.UploadStream(), c.ComputeStream(), c.DownloadStream()} {
		a.streams[i], _ = borrowStream(a.id, s) // a.id was just registered: cannot be stale
	}
	return a, nil
}

// NewAsyncCoordinator creates the coordinator and its three streams from a
// pipeline.CoordinatorOptions record.
func NewAsyncCoordinator(dev *Device, options string) (*AsyncCoordinator, error) {
	c, err := build(dev, "pipeline", options, pipeline.NewAsyncCoordinator) // its managers allocate through it
	return register(c, dev.d, err)
}

// external runs step on coordinator cid (see External).
func external(step, cid, id, deps, ndeps int) (int, error) {
	a, err := lookup[*AsyncCoordinator]("coordinator", cid)
	if err != nil {
		return 0, err
	}
	op, err := a.c.External(pipeline.ExternalStep(step), pipeline.OpID(max(id, 0)), hostmem.Ints[pipeline.OpID](deps, ndeps, 0)...)
	return int(op), err
}

// External runs one step of an external compute op on coordinator cid
// (pipeline.ExternalStep: 0 begin after the ndeps op ids at deps, 1 end op
// id, 2 track the work already enqueued): the op id, or 0 for an end.
func External(step, cid, id, deps, ndeps int) (int, error) {
	op, err := external(step, cid, id, deps, ndeps)
	return op, tag(err)
}

// FastExternal is External without deps for the fast path: -1 on failure
// (the Python layer then repeats the call through External for the error).
// A released cid never names another coordinator.
func FastExternal(step, cid, id int) int {
	op, err := external(step, cid, id, 0, 0)
	if err != nil {
		return -1
	}
	return op
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
	id, err := a.c.QueueStageOp(op.op, hostmem.Ints[pipeline.OpID](deps, ndeps, 0)...)
	return int(id), tag(err)
}

// PollFields is the number of values per Poll record.
const PollFields = pipeline.ReportFields

// FastPoll writes coordinator cid's completed ops as records
// (pipeline.ReportLog.Fill) and returns how many, or -1 for a closed cid.
// A package function over the registry id: gopy's method call resolves
// its handle through a locked map and reflection, which cost more than
// the poll itself.
func FastPoll(cid, dst, n int) int {
	a, err := lookup[*AsyncCoordinator]("coordinator", cid)
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
	return tagged(a.c.Done(pipeline.OpID(max(id, 0))))
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

// BookkeepingNs is the per-op cost in Go alone (pipeline.BookkeepingNs).
func (a *AsyncCoordinator) BookkeepingNs(n int) (float64, error) { return tagged(a.c.BookkeepingNs(n)) }

// coordinatorRecord is pending ops, dropped reports, the last op id and 1
// when the roles share one stream (COORDINATOR).
type coordinatorRecord struct{ Pending, Dropped, LastID, Sequential int64 }

// Info writes the COORDINATOR record into the caller's n bytes at dst.
func (a *AsyncCoordinator) Info(dst, n int) (int, error) {
	var seq int64
	if a.c.Sequential() {
		seq = 1
	}
	return putRecord(dst, n, &coordinatorRecord{int64(a.c.Pending()), int64(a.c.Dropped()), int64(a.c.LastID()), seq})
}

// PipelineManager runs named stages in a set order per iteration
// (pipeline.PipelineStageManager); Stats and StageStats write its
// statistics (PIPELINE_STATS, STAGE_STATS).
type PipelineManager struct {
	Object
	m   *pipeline.PipelineStageManager
	dev backend.Device
}

func pipelineManager(m *pipeline.PipelineStageManager, dev backend.Device, err error) (*PipelineManager, error) {
	return tagged(&PipelineManager{Object: Object{obj: m}, m: m, dev: dev}, err)
}

// NewPipelineManager creates a manager on coordinator c's streams.
func NewPipelineManager(c *AsyncCoordinator) (*PipelineManager, error) {
	m, err := pipeline.NewPipelineStageManager(c.c)
	return pipelineManager(m, c.dev, err)
}

// AddBuffer registers a logical buffer whose versions are the caller's
// device ranges of size bytes at the nptrs int64 addresses at ptrs.
func (p *PipelineManager) AddBuffer(ptrs, nptrs, size int) (int, error) {
	return tagged(p.m.AddBufferAt(p.dev, size, hostmem.Ints[uintptr](ptrs, nptrs, 0)...))
}

// NewBuffer allocates a logical buffer of versions buffers of size bytes,
// freed with the manager and charged to the budget as "pipeline".
func (p *PipelineManager) NewBuffer(size, versions int) (int, error) {
	return tagged(p.m.NewBuffer(size, versions))
}

// pipelineBufferRecord is one version of a logical buffer: its address,
// its size in bytes and the buffer's number of versions (PIPELINE_BUFFER).
type pipelineBufferRecord struct{ Ptr, Size, Versions int64 }

// Buffer writes version v of logical buffer i as a PIPELINE_BUFFER record.
func (p *PipelineManager) Buffer(i, v, dst, n int) (int, error) {
	b, err := p.m.Buffer(i, v)
	if err != nil {
		return 0, tag(err)
	}
	versions, _, _ := p.m.BufferInfo(i)
	return putRecord(dst, n, &pipelineBufferRecord{int64(b.Ptr()), int64(b.Size()), int64(versions)})
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
	return tagged(p.m.AddStage(pipeline.GpuPipelineStage{Name: name, InputBuffers: hostmem.Ints[int](ins, nins, -1),
		OutputBuffers: hostmem.Ints[int](outs, nouts, -1), Stream: pipeline.OpType(stream), Op: op.op}))
}

// SetOrder sets the stages each iteration runs (n int64 indices at order).
func (p *PipelineManager) SetOrder(order, n int) error {
	return tag(p.m.SetOrder(hostmem.Ints[int](order, n, -1)))
}

// ExecuteIterations issues n iterations.
func (p *PipelineManager) ExecuteIterations(n int) error { return tag(p.m.ExecuteIterations(n)) }

// ResetStats clears the statistics.
func (p *PipelineManager) ResetStats() { p.m.ResetStats() }

// pipelineStatsRecord is pipeline.PipelineStats after the iterations
// issued so far, without its stages (PIPELINE_STATS).
type pipelineStatsRecord struct {
	Issued, Iterations                                             int64
	AvgIterationMs, Throughput, GPUUtilization, HostUsPerIteration float64
	GraphIterations                                                int64
	GraphHostUsPerIteration                                        float64
	InFlight, Stages                                               int64
}

// stageStatsRecord is one stage's pipeline.StageStats (STAGE_STATS).
type stageStatsRecord struct {
	Runs           int64
	AvgMs, TotalMs float64
}

// Stats writes the PIPELINE_STATS record into the caller's n bytes at dst.
func (p *PipelineManager) Stats(dst, n int) (int, error) {
	issued, s := p.m.Iteration(), p.m.GetStats()
	return putRecord(dst, n, &pipelineStatsRecord{int64(issued), int64(s.Iterations), s.AvgIterationMs, s.Throughput,
		s.GPUUtilization, s.HostUsPerIteration, int64(s.GraphIterations), s.GraphHostUsPerIteration, int64(s.InFlight),
		int64(len(s.Stages))})
}

// StageStats writes one STAGE_STATS record per stage, in stage order,
// into the caller's n bytes at dst (putRecords).
func (p *PipelineManager) StageStats(dst, n int) (int, error) {
	st := p.m.GetStats().Stages
	rows := make([]stageStatsRecord, len(st))
	for i, s := range st {
		rows[i] = stageStatsRecord{int64(s.Runs), s.AvgMs, s.TotalMs}
	}
	return putRecords(dst, n, rows)
}

// Capture records n iterations (0: one buffer cycle) into a graph.
func (p *PipelineManager) Capture(n int) (*PipelineGraph, error) {
	g, err := p.m.CaptureIterations(n)
	return tagged(&PipelineGraph{Object: Object{obj: g}, g: g}, err)
}

// PipelineGraph is a captured cycle of iterations; Info writes its
// PIPELINE_GRAPH record.
type PipelineGraph struct {
	Object
	g *pipeline.PipelineGraph
}

// ReplayN replays the graph n times.
func (g *PipelineGraph) ReplayN(n int) error { return tag(g.g.ReplayN(n)) }

// pipelineGraphRecord is the iterations one replay runs and the graph's
// nodes (PIPELINE_GRAPH).
type pipelineGraphRecord struct{ Iterations, Nodes int64 }

// Info writes the PIPELINE_GRAPH record into the caller's n bytes at dst.
func (g *PipelineGraph) Info(dst, n int) (int, error) {
	return putRecord(dst, n, &pipelineGraphRecord{int64(g.g.Iterations()), int64(g.g.Nodes())})
}

// stepReportRecord is pipeline.StepReport (STEP_REPORT).
type stepReportRecord struct{ Round, Upload, Compute, Download, DownloadedRound int64 }

// readbackStatsRecord is pipeline.ReadbackStats (READBACK_STATS).
type readbackStatsRecord struct{ Total, Free, Held, Retiring int64 }

// Stats writes the READBACK_STATS record into the caller's n bytes at dst.
func (r *Readback) Stats(dst, n int) (int, error) {
	s := r.r.Stats()
	return putRecord(dst, n, &readbackStatsRecord{int64(s.Total), int64(s.Free), int64(s.Held), int64(s.Retiring)})
}

// ManagedContext is one device's coordinator plus the triple buffers and
// pipeline managers it created and closes (pipeline.ManagedGpuContext).
// Closing it releases the coordinator's id.
type ManagedContext struct {
	Object
	x     *pipeline.ManagedGpuContext
	coord *AsyncCoordinator
}

// NewManagedContext creates the context from a pipeline.CoordinatorOptions
// record (Sequential: one stream), its allocations charged to the budget
// as "managed_context".
func NewManagedContext(dev *Device, options string) (*ManagedContext, error) {
	x, err := build(dev, "managed_context", options, func(d backend.Device, o pipeline.CoordinatorOptions) (*pipeline.ManagedGpuContext, error) {
		return pipeline.NewManagedGpuContext(d, !o.Sequential, o)
	})
	if err != nil {
		return nil, tag(err)
	}
	c, _ := register(x.AsyncCoordinator(), dev.d, nil)
	return &ManagedContext{Object: Object{obj: x, id: c.id}, x: x, coord: c}, nil
}

// Coordinator is the context's coordinator (closed with the context).
func (x *ManagedContext) Coordinator() *AsyncCoordinator { return x.coord }

// CreateTripleBuffer allocates a triple buffer closed with the context.
func (x *ManagedContext) CreateTripleBuffer(size int, dtype string) (*TripleBuffer, error) {
	dt, err := backend.ParseDType(dtype)
	if err != nil {
		return nil, tag(err)
	}
	return tripleBuffer(x.x.CreateTripleBuffer(size, dt))
}

// CreatePipelineManager creates a manager on the context's streams.
func (x *ManagedContext) CreatePipelineManager() (*PipelineManager, error) {
	m, err := x.x.CreatePipelineManager()
	return pipelineManager(m, x.coord.dev, err)
}

// TripleBufferedStep runs one round of tb (pipeline.TripleBufferedStep)
// and writes its STEP_REPORT record into the caller's nrec bytes at rec.
func (x *ManagedContext) TripleBufferedStep(tb *TripleBuffer, srcPtr, srcLen, dstPtr, dstLen, n int, op *StageOp, rec, nrec int) (int, error) {
	r, err := x.x.TripleBufferedStep(tb.tb, pipeline.StepIO{Src: pipeline.HostMem{Ptr: uintptr(srcPtr), Len: srcLen},
		Dst: pipeline.HostMem{Ptr: uintptr(dstPtr), Len: dstLen}, N: n, Op: op.op})
	if err != nil {
		return 0, tag(err)
	}
	return putRecord(rec, nrec, &stepReportRecord{int64(r.Round), int64(r.Upload), int64(r.Compute), int64(r.Download),
		int64(r.DownloadedRound)})
}

// Readback copies device memory into pooled pinned buffers asynchronously
// (pipeline.Readback); its buffers are charged to the budget as "readback".
// Stats writes its READBACK_STATS record.
type Readback struct {
	Object // registered when it owns its stream
	r      *pipeline.Readback
	stream *Stream // its own stream, borrowed from its id; nil on the caller's
}

// NewReadback creates a pool of pinned buffers of size bytes from a
// pipeline.ReadbackOptions record, copying on stream streamID (0: its own).
func NewReadback(dev *Device, size int, options string, streamID int) (*Readback, error) {
	s, err := streamOf(streamID)
	if err != nil {
		return nil, tag(err)
	}
	r, err := build(dev, "readback", options, func(d backend.Device, o pipeline.ReadbackOptions) (*pipeline.Readback, error) {
		o.Stream = s
		return pipeline.NewReadback(d, size, o)
	})
	if err != nil {
		return nil, tag(err)
	}
	if s != nil {
		return &Readback{Object: Object{obj: r}, r: r}, nil
	}
	rb := &Readback{Object: owner(r), r: r}
	rb.stream, _ = borrowStream(rb.id, r.Stream()) // rb.id was just registered: cannot be stale
	return rb, nil
}

// Start copies n bytes at device address src into a pooled pinned buffer
// after the work queued so far on stream producerID; it returns at once.
func (r *Readback) Start(src, n, producerID int) (*ReadbackHandle, error) {
	p, err := streamOf(producerID)
	if err != nil {
		return nil, tag(err)
	}
	h, err := r.r.ReadbackAsync(uintptr(src), n, p)
	return tagged(&ReadbackHandle{Object{obj: h}, h}, err)
}

// Stream is the readback's own stream (nil when it copies on the caller's).
func (r *Readback) Stream() *Stream { return r.stream }

// ReadbackHandle is one readback; it holds its buffer until Object.Close
// (pipeline.ReadbackHandle.Release).
type ReadbackHandle struct {
	Object
	h *pipeline.ReadbackHandle
}

// Done reports whether the copy completed, without blocking.
func (h *ReadbackHandle) Done() (bool, error) { return tagged(h.h.Done()) }

// Wait blocks until the copy completes (timeoutUs < 0: no limit).
func (h *ReadbackHandle) Wait(timeoutUs int) error { return tag(h.h.Wait(durationUs(timeoutUs))) }

// StreamWait makes stream streamID wait for the copy on the device.
func (h *ReadbackHandle) StreamWait(streamID int) error {
	s, err := streamOf(streamID)
	if err == nil {
		err = h.h.StreamWait(s)
	}
	return tag(err)
}

// Ptr is the pinned address of the copied bytes.
func (h *ReadbackHandle) Ptr() int { return int(h.h.Ptr()) }

// BufferPool recycles pinned buffers of one size (memory.BufferPool),
// charged to the budget as "buffer_pool"; Stats writes its POOL_STATS
// record.
type BufferPool struct {
	Object
	p *memory.BufferPool
}

// NewBufferPool allocates buffers from a memory.PoolConfig record (Policy
// 0 grow, 1 block: Get waits rather than grow; Max 0: no cap).
func NewBufferPool(dev *Device, config string) (*BufferPool, error) {
	var c memory.PoolConfig
	a, err := memory.AllocatorFor(dev.d, "buffer_pool")
	if err == nil {
		err = decodeRecord("BufferPool", config, &c)
	}
	if err != nil {
		return nil, tag(err)
	}
	p, err := memory.NewBufferPool(a, c)
	return tagged(&BufferPool{Object: Object{obj: p}, p: p}, err)
}

// Get returns a buffer, waiting at most timeoutUs (< 0: forever, 0: not at
// all) when the pool is empty and may not grow. The GIL is released.
func (p *BufferPool) Get(timeoutUs int) (*Buffer, error) {
	b, err := p.p.GetTimeout(durationUs(timeoutUs))
	return tagged(&Buffer{b: b}, err)
}

// Lend leases b (in use from this pool) for a view: it stays allocated and
// out of the pool until the lease is released.
func (p *BufferPool) Lend(b *Buffer) (*Lease, error) {
	l, err := p.p.Lend(b.b)
	if err != nil {
		return nil, tag(err)
	}
	return &Lease{ptr: b.b.Ptr(), release: l.Release}, nil // released the pool's way
}

// Put returns b, reusable once event eventID completes, or once the work
// queued so far on stream streamID is done (both 0: at once).
func (p *BufferPool) Put(b *Buffer, eventID, streamID int) error {
	e, err := eventOf(eventID)
	s, serr := streamOf(streamID)
	if err = errors.Join(err, serr); err == nil {
		err = p.p.PutAfter(b.b, e, s)
	}
	return tag(err)
}

// poolStatsRecord is memory.PoolStats as a record (POOL_STATS).
type poolStatsRecord struct{ Allocated, Free, Pending, InUse int64 }

// Stats writes the pool's POOL_STATS record (memory.PoolStats) into the
// caller's n bytes at dst (putRecord).
func (p *BufferPool) Stats(dst, n int) (int, error) {
	s := p.p.Stats()
	return putRecord(dst, n, &poolStatsRecord{int64(s.Allocated), int64(s.Free), int64(s.Pending), int64(s.InUse)})
}
