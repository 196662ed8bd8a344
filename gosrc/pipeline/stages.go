package pipeline

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"sync"
	"time"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/memory"
)

// BufferRef is a kernel argument that stands for one of the stage's
// buffers; it is replaced by that buffer's pointer in the version the
// current iteration uses.
type BufferRef struct {
	Output bool
	Index  int // into the stage's InputBuffers or OutputBuffers
}

// In refers to the stage's i-th input buffer.
func In(i int) BufferRef { return BufferRef{Index: i} }

// Out refers to the stage's i-th output buffer.
func Out(i int) BufferRef { return BufferRef{Output: true, Index: i} }

// StageContext is what a Func stage gets: its stream, the iteration, and
// this iteration's versions of its buffers.
type StageContext struct {
	Stream    backend.Stream
	Iteration int
	Inputs    []backend.Buffer
	Outputs   []backend.Buffer
}

// StageOp is the work of a stage: a kernel by name (BufferRef arguments
// resolved per iteration) or a Go function (Func; it takes precedence).
type StageOp struct {
	Kernel      string
	Grid, Block [3]uint32
	Args        []any
	Func        func(sc StageContext) error
	// Copy, when set, makes the op a host copy of Host (HostCopyOp).
	Copy CopyDir
	Host HostMem
}

// GpuPipelineStage is one named step of a pipeline iteration.
type GpuPipelineStage struct {
	Name string
	// InputBuffers and OutputBuffers are indices of the manager's logical
	// buffers (AddBuffer/NewBuffer). They define the hazards: a stage runs
	// after the last writer of its inputs, and a writer runs after the
	// earlier readers and writer of the same buffer version.
	InputBuffers, OutputBuffers []int
	// Stream selects the coordinator stream: OpCompute (the zero value),
	// OpUpload or OpDownload.
	Stream OpType
	Op     StageOp
}

// StageStats are one stage's times, from its start and end events.
type StageStats struct {
	Name  string
	Runs  int
	AvgMs float64
	// TotalMs is the sum of its run times.
	TotalMs float64
}

// PipelineStats summarise the iterations whose events have completed.
type PipelineStats struct {
	// Iterations counted, eager and replayed.
	Iterations int
	// AvgIterationMs is the steady-state period: the time between the
	// first and last iteration ends over Iterations-1 (with one iteration,
	// its own span). Overlapped iterations make it smaller than a
	// single iteration's latency.
	AvgIterationMs float64
	// Throughput is iterations per second (1000 / AvgIterationMs).
	Throughput float64
	// GPUUtilization is the fraction of the measured window in which at
	// least one stage ran (0..1).
	GPUUtilization float64
	// Stages lists per-stage times in stage-index order (eager runs only:
	// a replayed graph is timed as a whole).
	Stages []StageStats
	// HostUsPerIteration is host time spent in ExecuteIteration per call:
	// the launch overhead that graph replay removes.
	HostUsPerIteration float64
	// GraphIterations and GraphHostUsPerIteration are the same for
	// iterations run by PipelineGraph.Replay.
	GraphIterations         int
	GraphHostUsPerIteration float64
	// InFlight is the number of issued iterations not yet complete (not in
	// the figures above).
	InFlight int
}

// evRef is a pooled event shared by the hazard table and the timing
// records; it returns to the pool when the last holder lets go.
type evRef struct {
	ev   backend.Event
	lane int
	refs int
}

// verState is the hazard state of one buffer version.
type verState struct {
	write *evRef
	reads []*evRef
}

type stageRun struct {
	stage      int // -1 for a graph replay
	start, end *evRef
}

// iterRec is an issued iteration (or graph replay of graphIters
// iterations) waiting to be harvested into the stats.
type iterRec struct {
	runs       []stageRun
	graphIters int
}

// statsAcc accumulates harvested iterations; times are ms from epoch.
type statsAcc struct {
	iters, graphIters int
	firstStart        float64
	firstEnd, lastEnd float64
	busy              []interval
	busyFolded        float64
	stageRuns         []int
	stageMs           []float64
	hostNs, graphNs   int64
	hostCalls         int
	graphIssued       int
}

type interval struct{ s, e float64 }

// PipelineStageManager runs named stages in a set order, once per
// ExecuteIteration, on the coordinator's streams. Hazards are resolved with
// events, so with buffers of several versions consecutive iterations
// overlap: the upload of iteration k+1 runs while k computes and k-1
// downloads. It is safe for concurrent use, though iterations are
// naturally issued from one goroutine.
type PipelineStageManager struct {
	mu       sync.Mutex
	c        *AsyncCoordinator
	stages   []GpuPipelineStage
	order    []int
	orderSet bool
	bufs     [][]backend.Buffer
	owned    map[backend.Buffer]*memory.Shared // NewBuffer's buffers, freed with their last borrow after Close
	ver      [][]verState
	iter     int
	inflight []*iterRec
	epoch    *evRef
	acc      statsAcc
	closed   bool
}

// NewPipelineStageManager creates a manager on c's streams.
func NewPipelineStageManager(c *AsyncCoordinator) (*PipelineStageManager, error) {
	if c == nil {
		return nil, fmt.Errorf("NewPipelineStageManager: coordinator is nil, expected an *AsyncCoordinator: %w", backend.ErrInvalid)
	}
	return &PipelineStageManager{c: c}, nil
}

// Coordinator returns the coordinator the stages run on.
func (m *PipelineStageManager) Coordinator() *AsyncCoordinator { return m.c }

// AddBuffer registers a logical buffer with its physical versions;
// iteration k uses version k % len(versions). One version serialises
// iterations on that buffer; three let upload, compute and download of
// consecutive iterations overlap. The manager does not free them.
func (m *PipelineStageManager) AddBuffer(versions ...backend.Buffer) (int, error) {
	if len(versions) == 0 {
		return 0, fmt.Errorf("AddBuffer: no versions, expected at least one backend.Buffer: %w", backend.ErrInvalid)
	}
	for i, b := range versions {
		if b == nil {
			return 0, fmt.Errorf("AddBuffer: version %d is nil, expected a backend.Buffer: %w", i, backend.ErrInvalid)
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.bufs = append(m.bufs, append([]backend.Buffer(nil), versions...))
	m.ver = append(m.ver, make([]verState, len(versions)))
	return len(m.bufs) - 1, nil
}

// NewBuffer allocates a logical buffer of versions device buffers of size
// bytes each, freed by Close.
func (m *PipelineStageManager) NewBuffer(size, versions int) (int, error) {
	if versions < 1 {
		return 0, fmt.Errorf("NewBuffer: versions=%d, expected versions >= 1: %w", versions, backend.ErrInvalid)
	}
	if _, err := checkBytes("NewBuffer", "nbytes", size, 1, "versions", versions); err != nil {
		return 0, err
	}
	bs := make([]backend.Buffer, 0, versions)
	for i := range versions {
		b, err := m.c.dev.Alloc(size)
		if err != nil {
			for _, prev := range bs {
				_ = prev.Free() // already failing; report the allocation error
			}
			return 0, fmt.Errorf("NewBuffer: version %d of %d bytes: %w", i, size, err)
		}
		bs = append(bs, b)
	}
	idx, err := m.AddBuffer(bs...)
	if err != nil {
		return 0, err
	}
	m.mu.Lock()
	if m.owned == nil {
		m.owned = map[backend.Buffer]*memory.Shared{}
	}
	for _, b := range bs {
		m.owned[b] = memory.NewShared(b)
	}
	m.mu.Unlock()
	return idx, nil
}

// Buffer returns version v of logical buffer i; ErrInvalid names the
// indices when there is no such buffer.
func (m *PipelineStageManager) Buffer(i, v int) (backend.Buffer, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if i < 0 || i >= len(m.bufs) {
		return nil, fmt.Errorf("buffer %d does not exist, expected 0 <= buffer < %d: %w", i, len(m.bufs), backend.ErrInvalid)
	}
	if v < 0 || v >= len(m.bufs[i]) {
		return nil, fmt.Errorf("buffer %d version %d does not exist, expected 0 <= version < %d: %w", i, v, len(m.bufs[i]), backend.ErrInvalid)
	}
	return m.bufs[i][v], nil
}

// Borrow takes a reference to version v of logical buffer i, one that
// NewBuffer allocated: it stays allocated until released, even after
// Close. Caller-owned versions (AddBuffer) fail with ErrInvalid.
func (m *PipelineStageManager) Borrow(i, v int) (*memory.Borrow, error) {
	b, err := m.Buffer(i, v)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, fmt.Errorf("PipelineStageManager.Borrow: %w", backend.ErrClosed)
	}
	sh, ok := m.owned[b]
	if !ok {
		return nil, fmt.Errorf("buffer %d version %d is the caller's (AddBuffer), expected one of NewBuffer's: %w", i, v, backend.ErrInvalid)
	}
	return sh.Borrow()
}

// BufferInfo returns the number of versions of logical buffer i and the
// size in bytes of each (the first version's; AddBuffer takes equal ones
// from Python), or ErrInvalid when there is no buffer i.
func (m *PipelineStageManager) BufferInfo(i int) (versions, size int, err error) {
	b, err := m.Buffer(i, 0)
	if err != nil {
		return 0, 0, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.bufs[i]), b.Size(), nil
}

// Stages is the number of stages added.
func (m *PipelineStageManager) Stages() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.stages)
}

// AddStage validates and appends a stage, returning its index. Until
// SetOrder is called, stages run in the order they were added.
func (m *PipelineStageManager) AddStage(st GpuPipelineStage) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if st.Name == "" {
		return 0, fmt.Errorf("AddStage: empty Name, expected a stage name: %w", backend.ErrInvalid)
	}
	if st.Stream < 0 || st.Stream >= numRoles {
		return 0, fmt.Errorf("AddStage %q: Stream=%v, expected OpCompute, OpUpload or OpDownload: %w", st.Name, st.Stream, backend.ErrInvalid)
	}
	if st.Op.Copy == CopyUpload && len(st.OutputBuffers) == 0 || st.Op.Copy == CopyDownload && len(st.InputBuffers) == 0 {
		return 0, fmt.Errorf("AddStage %q: an %s op copies buffer 0 of the stage, expected output_buffers (upload) or input_buffers (download): %w",
			st.Name, st.Op.Kernel, backend.ErrInvalid)
	}
	if st.Op.Func == nil && st.Op.Kernel == "" {
		return 0, fmt.Errorf("AddStage %q: op has neither Func nor Kernel, expected one of them: %w", st.Name, backend.ErrInvalid)
	}
	for _, list := range [][]int{st.InputBuffers, st.OutputBuffers} {
		for _, b := range list {
			if b < 0 || b >= len(m.bufs) {
				return 0, fmt.Errorf("AddStage %q: buffer %d, expected 0 <= buffer < %d (AddBuffer first): %w", st.Name, b, len(m.bufs), backend.ErrInvalid)
			}
		}
	}
	for _, a := range st.Op.Args {
		if r, ok := a.(BufferRef); ok {
			n := len(st.InputBuffers)
			if r.Output {
				n = len(st.OutputBuffers)
			}
			if r.Index < 0 || r.Index >= n {
				return 0, fmt.Errorf("AddStage %q: %+v, expected 0 <= Index < %d: %w", st.Name, r, n, backend.ErrInvalid)
			}
		}
	}
	st.InputBuffers = append([]int(nil), st.InputBuffers...)
	st.OutputBuffers = append([]int(nil), st.OutputBuffers...)
	m.stages = append(m.stages, st)
	i := len(m.stages) - 1
	if !m.orderSet {
		m.order = append(m.order, i)
	}
	m.acc.stageRuns = append(m.acc.stageRuns, 0)
	m.acc.stageMs = append(m.acc.stageMs, 0)
	return i, nil
}

// SetOrder sets the stages run by each iteration, in order. A stage that
// reads a buffer written by a later stage sees the previous iteration's
// data (a feedback loop), which the hazard tracking orders correctly.
func (m *PipelineStageManager) SetOrder(order []int) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(order) == 0 {
		return fmt.Errorf("SetOrder: empty order, expected at least one stage index: %w", backend.ErrInvalid)
	}
	seen := make(map[int]bool, len(order))
	for _, i := range order {
		if i < 0 || i >= len(m.stages) {
			return fmt.Errorf("SetOrder: stage %d, expected 0 <= stage < %d: %w", i, len(m.stages), backend.ErrInvalid)
		}
		if seen[i] {
			return fmt.Errorf("SetOrder: stage %d (%q) appears twice, expected each stage at most once: %w", i, m.stages[i].Name, backend.ErrInvalid)
		}
		seen[i] = true
	}
	m.order, m.orderSet = append([]int(nil), order...), true
	return nil
}

// ExecuteIteration issues one iteration of every ordered stage and returns
// without waiting for the device. Completed iterations are folded into the
// stats on the way (event queries only).
func (m *PipelineStageManager) ExecuteIteration() error {
	t0 := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return fmt.Errorf("ExecuteIteration: pipeline manager: %w", backend.ErrClosed)
	}
	if len(m.order) == 0 {
		return fmt.Errorf("ExecuteIteration: no stages, expected AddStage first: %w", backend.ErrInvalid)
	}
	m.harvestLocked()
	rec := &iterRec{runs: make([]stageRun, 0, len(m.order))}
	var err error
	for _, si := range m.order {
		if err = m.runStageLocked(si, m.iter, m.c.streams, m.c.lanes, m.ver, rec, nil); err != nil {
			break
		}
	}
	// A partly issued iteration is still tracked so its events come back.
	if len(rec.runs) > 0 {
		m.inflight = append(m.inflight, rec)
	}
	m.iter++
	m.acc.hostNs += time.Since(t0).Nanoseconds()
	m.acc.hostCalls++
	if err != nil {
		return fmt.Errorf("ExecuteIteration %d: %w", m.iter-1, err)
	}
	return nil
}

// runStageLocked issues stage si for iteration k on streams, resolving
// hazards against state. rec receives the timing events (eager runs);
// during capture rec is nil and every event is appended to *captured
// instead, to be returned after the capture ends.
func (m *PipelineStageManager) runStageLocked(si, k int, streams [numRoles]backend.Stream, lanes [numRoles]int,
	state [][]verState, rec *iterRec, captured *[]backend.Event) error {
	st := &m.stages[si]
	s, lane := streams[st.Stream], lanes[st.Stream]
	ins := make([]backend.Buffer, len(st.InputBuffers))
	outs := make([]backend.Buffer, len(st.OutputBuffers))
	var deps []*evRef
	addDep := func(r *evRef) {
		if r == nil || r.lane == lane {
			return // same stream: ordered already
		}
		for _, d := range deps {
			if d == r {
				return
			}
		}
		deps = append(deps, r)
	}
	for i, b := range st.InputBuffers {
		v := k % len(m.bufs[b])
		ins[i] = m.bufs[b][v]
		addDep(state[b][v].write)
	}
	for i, b := range st.OutputBuffers {
		v := k % len(m.bufs[b])
		outs[i] = m.bufs[b][v]
		addDep(state[b][v].write)
		for _, r := range state[b][v].reads {
			addDep(r)
		}
	}
	for _, d := range deps {
		if err := s.WaitEvent(d.ev); err != nil {
			return fmt.Errorf("stage %q: waiting on a dependency: %w", st.Name, err)
		}
	}
	start, err := m.c.getEvent()
	if err != nil {
		return fmt.Errorf("stage %q: %w", st.Name, err)
	}
	end, err := m.c.getEvent()
	if err != nil {
		m.c.putEvent(start)
		return fmt.Errorf("stage %q: %w", st.Name, err)
	}
	if err := s.Record(start); err != nil {
		m.c.putEvent(start, end)
		return fmt.Errorf("stage %q: recording start: %w", st.Name, err)
	}
	workErr := m.runOpLocked(st, StageContext{Stream: s, Iteration: k, Inputs: ins, Outputs: outs})
	if err := s.Record(end); err != nil {
		// start may still be recorded on the device: leak both rather than
		// recycle an event the stream may write.
		return fmt.Errorf("stage %q: recording end: %w", st.Name, errors.Join(workErr, err))
	}
	sr, er := &evRef{ev: start, lane: lane}, &evRef{ev: end, lane: lane}
	if captured != nil {
		*captured = append(*captured, start, end)
	} else {
		sr.refs, er.refs = 1, 1
		rec.runs = append(rec.runs, stageRun{stage: si, start: sr, end: er})
	}
	for _, b := range st.InputBuffers {
		v := k % len(m.bufs[b])
		state[b][v].reads = append(state[b][v].reads, er)
		m.hold(er, captured)
	}
	for _, b := range st.OutputBuffers {
		v := k % len(m.bufs[b])
		vs := &state[b][v]
		m.release(vs.write, captured)
		for _, r := range vs.reads {
			m.release(r, captured)
		}
		vs.write, vs.reads = er, vs.reads[:0]
		m.hold(er, captured)
	}
	if workErr != nil {
		return fmt.Errorf("stage %q: %w", st.Name, workErr)
	}
	return nil
}

func (m *PipelineStageManager) runOpLocked(st *GpuPipelineStage, sc StageContext) error {
	return runStageOp(m.c.launch, st.Op, sc)
}

// runStageOp runs op with its BufferRef arguments resolved against sc.
func runStageOp(launch KernelLauncher, op StageOp, sc StageContext) error {
	if op.Copy != NoCopy {
		return runCopy(op, sc)
	}
	if op.Func != nil {
		return op.Func(sc)
	}
	if launch == nil {
		return fmt.Errorf("kernel %q needs a launcher, expected CoordinatorOptions.Launch to be set", op.Kernel)
	}
	args := op.Args
	copied := false
	for i, a := range op.Args {
		r, ok := a.(BufferRef)
		if !ok {
			continue
		}
		if !copied { // keep the caller's Args intact
			args, copied = append([]any(nil), op.Args...), true
		}
		b := sc.Inputs
		if r.Output {
			b = sc.Outputs
		}
		if r.Index < 0 || r.Index >= len(b) {
			return fmt.Errorf("kernel %q: argument %d is %+v, expected 0 <= Index < %d: %w", op.Kernel, i, r, len(b), backend.ErrInvalid)
		}
		args[i] = b[r.Index] // a Buffer, so CheckKernelArgs sees its size
	}
	if err := CheckKernelArgs(op.Kernel, args); err != nil {
		return err
	}
	return launch(sc.Stream, op.Kernel, op.Grid, op.Block, args...)
}

// hold and release count evRef holders; during capture the events are
// returned wholesale afterwards, so counting is skipped.
func (m *PipelineStageManager) hold(r *evRef, captured *[]backend.Event) {
	if captured == nil && r != nil {
		r.refs++
	}
}

func (m *PipelineStageManager) release(r *evRef, captured *[]backend.Event) {
	if captured != nil || r == nil {
		return
	}
	r.refs--
	if r.refs == 0 {
		m.c.putEvent(r.ev)
	}
}

// harvestLocked folds completed iterations, oldest first, into the stats.
// A stream completes in order, so the first incomplete record ends it.
func (m *PipelineStageManager) harvestLocked() {
	n := 0
	for _, rec := range m.inflight {
		if !recDone(rec) {
			break
		}
		m.foldLocked(rec)
		n++
	}
	if n > 0 {
		clear(m.inflight[:n])
		m.inflight = m.inflight[n:]
	}
}

func recDone(rec *iterRec) bool {
	for _, r := range rec.runs {
		if done, err := r.end.ev.Query(); err == nil && !done {
			return false
		}
	}
	return true
}

func (m *PipelineStageManager) foldLocked(rec *iterRec) {
	a := &m.acc
	if m.epoch == nil {
		m.epoch = rec.runs[0].start
		m.epoch.refs++
	}
	ms := func(r *evRef) float64 {
		v, err := m.epoch.ev.ElapsedTime(r.ev)
		if err != nil {
			return math.NaN()
		}
		return float64(v)
	}
	start, end := math.Inf(1), math.Inf(-1)
	for _, r := range rec.runs {
		s, e := ms(r.start), ms(r.end)
		if !math.IsNaN(s) && !math.IsNaN(e) {
			start, end = min(start, s), max(end, e)
			if r.stage >= 0 {
				a.stageRuns[r.stage]++
				a.stageMs[r.stage] += e - s
			}
			a.addBusy(s, e)
		}
		m.release(r.start, nil)
		m.release(r.end, nil)
	}
	if math.IsInf(start, 0) {
		return // no usable timing
	}
	n := max(rec.graphIters, 1)
	if a.iters == 0 {
		a.firstStart = start
		a.firstEnd = start + (end-start)/float64(n)
	}
	a.iters += n
	a.graphIters += rec.graphIters
	a.lastEnd = end
}

// addBusy merges [s, e] into the busy set. Intervals far in the past are
// folded into a total to bound memory (iterations arrive roughly in
// time order, so the oldest ones no longer overlap new ones).
func (a *statsAcc) addBusy(s, e float64) {
	i := sort.Search(len(a.busy), func(i int) bool { return a.busy[i].e >= s })
	j := i
	for j < len(a.busy) && a.busy[j].s <= e {
		s, e = min(s, a.busy[j].s), max(e, a.busy[j].e)
		j++
	}
	a.busy = append(a.busy[:i], append([]interval{{s, e}}, a.busy[j:]...)...)
	if len(a.busy) > 256 {
		for _, iv := range a.busy[:128] {
			a.busyFolded += iv.e - iv.s
		}
		a.busy = append(a.busy[:0], a.busy[128:]...)
	}
}

// GetStats folds in the iterations complete so far (event queries only, no
// host wait) and summarises them. Call SynchronizeAll on the coordinator
// first to include everything issued.
func (m *PipelineStageManager) GetStats() PipelineStats {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.harvestLocked()
	a := &m.acc
	st := PipelineStats{Iterations: a.iters, GraphIterations: a.graphIters, InFlight: len(m.inflight)}
	if a.hostCalls > 0 {
		st.HostUsPerIteration = float64(a.hostNs) / 1e3 / float64(a.hostCalls)
	}
	if a.graphIssued > 0 {
		st.GraphHostUsPerIteration = float64(a.graphNs) / 1e3 / float64(a.graphIssued)
	}
	if a.iters > 1 {
		st.AvgIterationMs = (a.lastEnd - a.firstEnd) / float64(a.iters-1)
	} else if a.iters == 1 {
		st.AvgIterationMs = a.lastEnd - a.firstStart
	}
	if st.AvgIterationMs > 0 {
		st.Throughput = 1e3 / st.AvgIterationMs
	}
	if window := a.lastEnd - a.firstStart; window > 0 {
		busy := a.busyFolded
		for _, iv := range a.busy {
			busy += iv.e - iv.s
		}
		st.GPUUtilization = min(1, busy/window)
	}
	for i, s := range m.stages {
		ss := StageStats{Name: s.Name, Runs: a.stageRuns[i], TotalMs: a.stageMs[i]}
		if ss.Runs > 0 {
			ss.AvgMs = ss.TotalMs / float64(ss.Runs)
		}
		st.Stages = append(st.Stages, ss)
	}
	return st
}

// ResetStats clears the figures. Iterations still in flight are counted in
// the new window when they complete.
func (m *PipelineStageManager) ResetStats() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.release(m.epoch, nil)
	m.epoch = nil
	n := len(m.stages)
	m.acc = statsAcc{stageRuns: make([]int, n), stageMs: make([]float64, n)}
}

// Iteration is the number of iterations issued (eager and replayed).
func (m *PipelineStageManager) Iteration() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.iter
}

// Close waits for the coordinator's streams (buffers cannot be freed under
// running work), releases the events and frees the buffers NewBuffer made.
func (m *PipelineStageManager) Close() error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return fmt.Errorf("PipelineStageManager.Close: %w", backend.ErrClosed)
	}
	m.closed = true
	m.mu.Unlock()
	err := m.c.SynchronizeAll()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.harvestLocked()
	for b := range m.ver {
		for v := range m.ver[b] {
			vs := &m.ver[b][v]
			m.release(vs.write, nil)
			for _, r := range vs.reads {
				m.release(r, nil)
			}
			*vs = verState{}
		}
	}
	m.release(m.epoch, nil)
	m.epoch = nil
	errs := []error{err}
	// Each buffer is freed now, or by the release of its last borrow (a
	// view); SynchronizeAll above waited for the work using them.
	for _, sh := range m.owned {
		errs = append(errs, sh.Close())
	}
	m.owned = nil
	return errors.Join(errs...)
}
