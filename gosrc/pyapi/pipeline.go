package pyapi

import (
	"time"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/hostmem"
	"github.com/vortexgo/vortexgo/gosrc/pipeline"
)

// The async toolkit (gosrc/pipeline) for python/vortexgo/toolkit/, marshalled
// only. Lists cross as (address, count) of the caller's int64 buffer, state
// as Object.Record's float64 records (read in toolkit/_records.py), options
// as one JSON record: gopy passes slices poorly, and text cost more than the
// calls. Python callables never reach Go.

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
// download (pipeline.TripleBuffer); its Record is the three slot states
// and the round.
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

// AsyncCoordinator queues uploads, compute and downloads on three streams
// ordered by events (pipeline.AsyncCoordinator). It is registered: closing
// it makes its streams' wrappers and its id stale. Its Record is pending
// ops, dropped reports, the last op id and 1 when the roles share a stream.
type AsyncCoordinator struct {
	Object
	c       *pipeline.AsyncCoordinator
	dev     backend.Device
	streams [3]*Stream // upload, compute, download: borrowed from the coordinator's id
	log     pipeline.ReportLog
}

func register(c *pipeline.AsyncCoordinator, dev backend.Device) *AsyncCoordinator {
	a := &AsyncCoordinator{c: c, dev: dev}
	a.Object = Object{obj: c, id: handles.Register(a)} // the fast path reads the wrapper's report log
	for i, s := range []backend.Stream{c.UploadStream(), c.ComputeStream(), c.DownloadStream()} {
		a.streams[i], _ = borrowStream(a.id, s) // a.id was just registered: cannot be stale
	}
	return a
}

// NewAsyncCoordinator creates the coordinator and its three streams from a
// pipeline.CoordinatorOptions record.
func NewAsyncCoordinator(dev *Device, options string) (*AsyncCoordinator, error) {
	var o pipeline.CoordinatorOptions
	d, err := charged(dev, "pipeline") // the managers built on it allocate through it
	if err == nil {
		err = backend.DecodeRecord("CoordinatorOptions", options, &o)
	}
	if err != nil {
		return nil, tag(err)
	}
	c, err := pipeline.NewAsyncCoordinator(d, o)
	if err != nil {
		return nil, tag(err)
	}
	return register(c, dev.d), nil
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
	cop, err := op.op.Compute()
	if err != nil {
		return 0, tag(err)
	}
	id, err := a.c.QueueCompute(cop, hostmem.Ints[pipeline.OpID](deps, ndeps, 0)...)
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

// PipelineManager runs named stages in a set order per iteration
// (pipeline.PipelineStageManager); its Record is the statistics
// (pipeline.PipelineStageManager.Record).
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

// Buffer writes version v of logical buffer i as a record
// (pipeline.PipelineStageManager.BufferRecord).
func (p *PipelineManager) Buffer(i, v, dst, n int) (int, error) {
	rec, err := p.m.BufferRecord(i, v)
	return hostmem.Record(dst, n, rec...), tag(err)
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

// Capture records n iterations (0: one buffer cycle) into a graph.
func (p *PipelineManager) Capture(n int) (*PipelineGraph, error) {
	g, err := p.m.CaptureIterations(n)
	return tagged(&PipelineGraph{Object: Object{obj: g}, g: g}, err)
}

// PipelineGraph is a captured cycle of iterations; its Record is the
// iterations one replay runs and the graph's nodes.
type PipelineGraph struct {
	Object
	g *pipeline.PipelineGraph
}

// ReplayN replays the graph n times.
func (g *PipelineGraph) ReplayN(n int) error { return tag(g.g.ReplayN(n)) }
