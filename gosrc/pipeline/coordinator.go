package pipeline

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/ops"
)

// OpID identifies an operation queued on an AsyncCoordinator. IDs start at
// 1 and increase in queue order; 0 is never a valid id.
type OpID uint64

// OpType is the kind of an operation, which is also the stream it runs on.
type OpType int

// The operation types. Compute is the zero value so that a
// GpuPipelineStage runs on the compute stream unless told otherwise.
const (
	OpCompute OpType = iota
	OpUpload
	OpDownload
	numRoles
)

// String returns "compute", "upload" or "download".
func (t OpType) String() string {
	switch t {
	case OpCompute:
		return "compute"
	case OpUpload:
		return "upload"
	case OpDownload:
		return "download"
	}
	return fmt.Sprintf("OpType(%d)", int(t))
}

// Errors returned (wrapped) by the coordinator; test with errors.Is.
var (
	// ErrUnknownOp: the id was never issued by this coordinator.
	ErrUnknownOp = errors.New("unknown op")
	// ErrFutureOp: a dependency names an op not queued yet.
	ErrFutureOp = fmt.Errorf("dependency on a future op: %w", backend.ErrInvalid)
	// ErrCycle: a dependency that can never be satisfied in order (an op on
	// itself, on an external op still open, or stages whose buffers form a
	// cycle).
	ErrCycle = fmt.Errorf("dependency cycle: %w", backend.ErrInvalid)
	// ErrHostTooSmall: a host range is shorter than the copy.
	ErrHostTooSmall = fmt.Errorf("host buffer too small: %w", backend.ErrInvalid)
	// ErrExternalOpen: the compute stream is lent to an external op.
	ErrExternalOpen = fmt.Errorf("external op open: %w", backend.ErrInvalid)
)

// KernelLauncher launches a kernel by name on a stream; ops.LaunchByName
// is the default. Tests inject their own to see the resolved arguments.
type KernelLauncher func(s backend.Stream, name string, grid, block [3]uint32, args ...any) error

// HostMem is a range of host memory: a pinned buffer or any host pointer
// with its length. The length lets the coordinator refuse a copy that would
// overrun the range. Copies to or from pageable (non-pinned) memory may
// block the host on CUDA; use pinned memory for asynchronous copies.
type HostMem struct {
	Ptr uintptr
	Len int
}

// HostOf describes a pinned (or any) buffer as host memory.
func HostOf(b backend.Buffer) HostMem { return HostMem{Ptr: b.Ptr(), Len: b.Size()} }

// ComputeOp is the work of a compute operation: a kernel by name (Kernel,
// Grid, Block, Args, launched through the coordinator's KernelLauncher) or a
// Go function that enqueues work on the stream it is given (Func; it takes
// precedence). Python callables use BeginExternal/EndExternal instead.
type ComputeOp struct {
	Kernel      string
	Grid, Block [3]uint32
	Args        []any
	Func        func(s backend.Stream) error
}

// name is how the op is reported.
func (c ComputeOp) name() string {
	if c.Kernel != "" {
		return c.Kernel
	}
	return "func"
}

// OpResult reports one completed operation.
type OpResult struct {
	ID   OpID
	Type OpType
	// Name is the kernel name, "func", "external", "upload" or "download".
	Name string
	// Bytes is the copy size for uploads and downloads, else 0.
	Bytes int
	// GPUMs is the time between the op's start and end events on its
	// stream: its execution time, including any time it spent waiting on
	// its dependencies after reaching the head of the stream.
	GPUMs float32
	// Err is set when the op failed after its events were recorded (a
	// failing Func, a failed timing query).
	Err error
}

// CoordinatorOptions configures NewAsyncCoordinator.
type CoordinatorOptions struct {
	// UploadPriority, ComputePriority and DownloadPriority are passed to
	// Device.NewStream (clamped there; on CUDA smaller is more urgent).
	UploadPriority, ComputePriority, DownloadPriority int
	// Sequential puts all three roles on one stream: the no-overlap
	// baseline (ManagedGpuContext with enableStreams=false).
	Sequential bool
	// Launch launches kernels by name; nil means ops.LaunchByName.
	Launch KernelLauncher
	// MaxReports bounds the completed reports kept for Poll (default
	// 16384); older ones are dropped and counted in Dropped.
	MaxReports int
	// NoTiming skips the per-op GPU timing: ops get one completion event
	// without timestamps instead of a timing pair, and OpResult.GPUMs is
	// -1. Measured on an H200, a timing event record costs 1.23 us and a
	// plain one 0.20 us, so this is the choice for high op rates.
	NoTiming bool
}

// op is the coordinator's record of a queued operation.
type op struct {
	id         OpID
	typ        OpType
	name       string
	bytes      int
	lane       int // index into AsyncCoordinator.fifo: the stream it ran on
	start, end backend.Event
	open       bool // external op between Begin and End
	retired    bool
	pins       int // waiters outside the lock; events return when 0
	err        error
}

// AsyncCoordinator queues uploads, compute and downloads on three dedicated
// streams and orders them by events. It is safe for concurrent use; the
// lock guards bookkeeping only and is never held while the host waits.
type AsyncCoordinator struct {
	mu      sync.Mutex
	dev     backend.Device
	streams [numRoles]backend.Stream // by OpType; all equal when sequential
	lanes   [numRoles]int            // OpType -> fifo index
	nlanes  int
	launch  KernelLauncher
	pool    eventPool
	nextID  OpID
	pending map[OpID]*op
	// fifo holds each stream's pending ops in end-event order. Work on a
	// stream completes in order, so only each head needs querying.
	fifo    [numRoles][]*op
	latest  [numRoles]OpID
	open    *op
	reports []OpResult
	maxRep  int
	dropped uint64
	closed  bool
}

// NewAsyncCoordinator creates the three streams on dev.
func NewAsyncCoordinator(dev backend.Device, opts CoordinatorOptions) (*AsyncCoordinator, error) {
	if dev == nil {
		return nil, fmt.Errorf("NewAsyncCoordinator: device is nil, expected a backend.Device: %w", backend.ErrInvalid)
	}
	c := &AsyncCoordinator{dev: dev, launch: opts.Launch, pool: eventPool{dev: dev, noTiming: opts.NoTiming},
		nextID: 1, pending: make(map[OpID]*op), maxRep: opts.MaxReports}
	if c.launch == nil {
		c.launch = ops.LaunchByName
	}
	if c.maxRep <= 0 {
		c.maxRep = 1 << 14
	}
	prio := [numRoles]int{OpCompute: opts.ComputePriority, OpUpload: opts.UploadPriority, OpDownload: opts.DownloadPriority}
	for r := range numRoles {
		if opts.Sequential && r > 0 {
			c.streams[r], c.lanes[r] = c.streams[0], 0
			continue
		}
		s, err := dev.NewStream(prio[r])
		if err != nil {
			for _, prev := range c.streams[:r] {
				_ = prev.Close() // already failing; report the creation error
			}
			return nil, fmt.Errorf("NewAsyncCoordinator: %v stream: %w", r, err)
		}
		c.streams[r], c.lanes[r] = s, c.nlanes
		c.nlanes++
	}
	return c, nil
}

// Device returns the coordinator's device.
func (c *AsyncCoordinator) Device() backend.Device { return c.dev }

// UploadStream is the stream uploads run on.
func (c *AsyncCoordinator) UploadStream() backend.Stream { return c.streams[OpUpload] }

// ComputeStream is the stream compute ops run on.
func (c *AsyncCoordinator) ComputeStream() backend.Stream { return c.streams[OpCompute] }

// DownloadStream is the stream downloads run on.
func (c *AsyncCoordinator) DownloadStream() backend.Stream { return c.streams[OpDownload] }

// Stream returns the stream of an op type.
func (c *AsyncCoordinator) Stream(t OpType) backend.Stream { return c.streams[t] }

// Sequential reports whether all roles share one stream.
func (c *AsyncCoordinator) Sequential() bool { return c.nlanes == 1 }

// QueueUpload copies n bytes from host memory src into dst on the upload
// stream, after deps.
func (c *AsyncCoordinator) QueueUpload(src HostMem, dst backend.Buffer, n int, deps ...OpID) (OpID, error) {
	if err := checkCopy("QueueUpload", src, dst, n); err != nil {
		return 0, err
	}
	return c.queue(OpUpload, "upload", n, deps, func(s backend.Stream) error {
		return s.Copy(dst.Ptr(), src.Ptr, n)
	})
}

// QueueDownload copies n bytes from src into host memory dst on the
// download stream, after deps.
func (c *AsyncCoordinator) QueueDownload(src backend.Buffer, dst HostMem, n int, deps ...OpID) (OpID, error) {
	if err := checkCopy("QueueDownload", dst, src, n); err != nil {
		return 0, err
	}
	return c.queue(OpDownload, "download", n, deps, func(s backend.Stream) error {
		return s.Copy(dst.Ptr, src.Ptr(), n)
	})
}

// QueueCopy is QueueUpload (upload) or QueueDownload of n bytes between
// host and dev.
func (c *AsyncCoordinator) QueueCopy(upload bool, host HostMem, dev backend.Buffer, n int, deps ...OpID) (OpID, error) {
	if upload {
		return c.QueueUpload(host, dev, n, deps...)
	}
	return c.QueueDownload(dev, host, n, deps...)
}

// QueueCompute enqueues op on the compute stream after deps.
func (c *AsyncCoordinator) QueueCompute(cop ComputeOp, deps ...OpID) (OpID, error) {
	work := cop.Func
	if work == nil {
		if cop.Kernel == "" {
			return 0, fmt.Errorf("QueueCompute: op has neither Func nor Kernel, expected one of them: %w", backend.ErrInvalid)
		}
		if err := CheckKernelArgs(cop.Kernel, cop.Args); err != nil {
			return 0, fmt.Errorf("QueueCompute: %w", err)
		}
		work = func(s backend.Stream) error {
			return c.launch(s, cop.Kernel, cop.Grid, cop.Block, cop.Args...)
		}
	}
	return c.queue(OpCompute, cop.name(), 0, deps, work)
}

// BeginExternal opens an external compute op: the compute stream is made to
// wait on deps and is returned for the caller (Python) to enqueue work on.
// EndExternal(id) must follow; until then no other compute op may be queued
// and nothing may depend on id.
func (c *AsyncCoordinator) BeginExternal(deps ...OpID) (OpID, backend.Stream, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.usableLocked("BeginExternal", OpCompute); err != nil {
		return 0, nil, err
	}
	s := c.streams[OpCompute]
	o := &op{id: c.nextID, typ: OpCompute, name: "external", lane: c.lanes[OpCompute], open: true}
	if err := c.waitDepsLocked("BeginExternal", o, deps, s); err != nil {
		return 0, nil, err
	}
	if !c.pool.noTiming {
		start, err := c.pool.get()
		if err != nil {
			return 0, nil, fmt.Errorf("BeginExternal: %w", err)
		}
		if err := s.Record(start); err != nil {
			c.pool.put(start)
			return 0, nil, fmt.Errorf("BeginExternal: recording start: %w", err)
		}
		o.start = start
	}
	c.nextID++
	c.pending[o.id] = o
	c.latest[OpCompute] = o.id
	c.open = o
	return o.id, s, nil
}

// EndExternal closes the external op id by recording its completion event
// after the work the caller enqueued on the compute stream.
func (c *AsyncCoordinator) EndExternal(id OpID) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.open == nil || c.open.id != id {
		if id == 0 || id >= c.nextID {
			return fmt.Errorf("EndExternal: op %d: %w (latest is %d)", id, ErrUnknownOp, c.nextID-1)
		}
		return fmt.Errorf("EndExternal: op %d is not an open external op", id)
	}
	o := c.open
	end, err := c.pool.get()
	if err == nil {
		err = c.streams[OpCompute].Record(end)
	}
	if err != nil {
		// Keep the op open so the caller may retry; nothing was recorded.
		c.pool.put(end)
		return fmt.Errorf("EndExternal: op %d: recording end: %w", id, err)
	}
	o.end, o.open, c.open = end, false, nil
	c.fifo[o.lane] = append(c.fifo[o.lane], o)
	return nil
}

// ExternalDone tracks, as one op, work the caller already enqueued on the
// compute stream: BeginExternal and EndExternal in one call. It serves
// coordinators without timing (no start event has to precede the work)
// and ops without deps (nothing to wait on before it), where it halves the
// calls per op; the caller serialises its compute work meanwhile (the
// Python layer holds its compute lock around the work and this call).
func (c *AsyncCoordinator) ExternalDone() (OpID, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.pool.noTiming {
		return 0, fmt.Errorf("ExternalDone: the coordinator times its ops, expected BeginExternal before the work: %w", backend.ErrInvalid)
	}
	if err := c.usableLocked("ExternalDone", OpCompute); err != nil {
		return 0, err
	}
	end, err := c.pool.get()
	if err != nil {
		return 0, fmt.Errorf("ExternalDone: %w", err)
	}
	if err := c.streams[OpCompute].Record(end); err != nil {
		c.pool.put(end)
		return 0, fmt.Errorf("ExternalDone: recording end: %w", err)
	}
	o := &op{id: c.nextID, typ: OpCompute, name: "external", lane: c.lanes[OpCompute], end: end}
	c.nextID++
	c.pending[o.id] = o
	c.latest[OpCompute] = o.id
	c.fifo[o.lane] = append(c.fifo[o.lane], o)
	c.reapIfLongLocked(o.lane)
	return o.id, nil
}

// queue runs work on t's stream between a start and an end event, after
// the stream has been made to wait on deps.
func (c *AsyncCoordinator) queue(t OpType, name string, bytes int, deps []OpID, work func(backend.Stream) error) (OpID, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	what := queueNames[t]
	if err := c.usableLocked(what, t); err != nil {
		return 0, err
	}
	s := c.streams[t]
	o := &op{id: c.nextID, typ: t, name: name, bytes: bytes, lane: c.lanes[t]}
	if err := c.waitDepsLocked(what, o, deps, s); err != nil {
		return 0, err
	}
	var start backend.Event
	if !c.pool.noTiming {
		var err error
		if start, err = c.pool.get(); err != nil {
			return 0, fmt.Errorf("%s: %w", what, err)
		}
	}
	end, err := c.pool.get()
	if err != nil {
		c.pool.put(start)
		return 0, fmt.Errorf("%s: %w", what, err)
	}
	if start != nil {
		if err := s.Record(start); err != nil {
			c.pool.put(start)
			c.pool.put(end)
			return 0, fmt.Errorf("%s: recording start: %w", what, err)
		}
	}
	workErr := work(s)
	if err := s.Record(end); err != nil {
		// The start event is recorded and may complete; the end never
		// will, so neither can be tracked. Leak both rather than recycle
		// an event the stream may still write.
		return 0, fmt.Errorf("%s: recording end: %w", what, errors.Join(workErr, err))
	}
	// From here the op is tracked even if work failed: its events are
	// recorded and must come back through the FIFO.
	o.start, o.end, o.err = start, end, workErr
	c.nextID++
	c.pending[o.id] = o
	c.fifo[o.lane] = append(c.fifo[o.lane], o)
	c.latest[t] = o.id
	// Retire finished ops of this stream so events recycle even when the
	// caller never polls.
	c.reapIfLongLocked(o.lane)
	if workErr != nil {
		return 0, fmt.Errorf("%s: op %d: %w", what, o.id, workErr)
	}
	return o.id, nil
}

func (c *AsyncCoordinator) usableLocked(what string, t OpType) error {
	if c.closed {
		return fmt.Errorf("%s: coordinator: %w", what, backend.ErrClosed)
	}
	if c.open != nil && c.lanes[t] == c.open.lane && t == OpCompute {
		return fmt.Errorf("%s: op %d holds the compute stream, expected EndExternal(%d) first: %w",
			what, c.open.id, c.open.id, ErrExternalOpen)
	}
	return nil
}

// waitDepsLocked validates deps for the op about to get id o.id and makes s
// wait on the ones still pending on other streams. Ops on s itself are
// ordered by the stream already, and of several deps on one other stream
// only the latest needs a wait (a stream completes in order).
func (c *AsyncCoordinator) waitDepsLocked(what string, o *op, deps []OpID, s backend.Stream) error {
	var last [numRoles]*op
	for _, d := range deps {
		switch {
		case d == 0:
			return fmt.Errorf("%s: dependency 0: %w (ids start at 1)", what, ErrUnknownOp)
		case d == o.id:
			return fmt.Errorf("%s: op %d would depend on itself: %w", what, d, ErrCycle)
		case d > o.id:
			return fmt.Errorf("%s: dependency %d: %w (latest queued is %d)", what, d, ErrFutureOp, o.id-1)
		}
		p, ok := c.pending[d]
		if !ok {
			continue // retired: already complete
		}
		if p.open {
			return fmt.Errorf("%s: dependency %d is an external op still open (EndExternal not called), so the wait could never be ordered: %w", what, d, ErrCycle)
		}
		if p.lane != o.lane && (last[p.lane] == nil || p.id > last[p.lane].id) {
			last[p.lane] = p
		}
	}
	for _, p := range last {
		if p == nil {
			continue
		}
		if err := s.WaitEvent(p.end); err != nil {
			return fmt.Errorf("%s: waiting on op %d: %w", what, p.id, err)
		}
	}
	return nil
}

// Poll retires every completed op and returns the reports gathered since
// the last Poll, in completion-detection order. It never blocks: one event
// query per stream plus one per completed op.
func (c *AsyncCoordinator) Poll() []OpResult {
	c.mu.Lock()
	defer c.mu.Unlock()
	for l := range c.nlanes {
		c.reapLaneLocked(l)
	}
	r := c.reports
	c.reports = nil
	return r
}

// Dropped is the number of reports discarded because Poll was not called
// often enough (see CoordinatorOptions.MaxReports).
func (c *AsyncCoordinator) Dropped() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.dropped
}

// Pending is the number of ops queued and not yet known complete.
func (c *AsyncCoordinator) Pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.pending)
}

// LastOp returns the latest op queued of type t, if any.
func (c *AsyncCoordinator) LastOp(t OpType) (OpID, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.latest[t], c.latest[t] != 0
}

// Done reports whether op id has completed, without blocking.
func (c *AsyncCoordinator) Done(id OpID) (bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return false, fmt.Errorf("Done: op %d: coordinator: %w", id, backend.ErrClosed)
	}
	if id == 0 || id >= c.nextID {
		return false, fmt.Errorf("Done: op %d: %w (latest is %d)", id, ErrUnknownOp, c.nextID-1)
	}
	o, ok := c.pending[id]
	if !ok {
		return true, nil
	}
	if o.open {
		return false, nil
	}
	c.reapLaneLocked(o.lane)
	return o.retired, nil
}

// Wait blocks the host until op id completes, or until timeout passes
// (negative: no limit; zero: just check). This is the explicit host wait
// of the API; the lock is not held while waiting.
func (c *AsyncCoordinator) Wait(id OpID, timeout time.Duration) error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return fmt.Errorf("Wait: op %d: coordinator: %w", id, backend.ErrClosed)
	}
	if id == 0 || id >= c.nextID {
		c.mu.Unlock()
		return fmt.Errorf("Wait: op %d: %w (latest is %d)", id, ErrUnknownOp, c.nextID-1)
	}
	o, ok := c.pending[id]
	if !ok {
		c.mu.Unlock()
		return nil
	}
	if o.open {
		c.mu.Unlock()
		return fmt.Errorf("Wait: op %d is an open external op, expected EndExternal(%d) first: %w", id, id, ErrExternalOpen)
	}
	o.pins++ // keeps o.end out of the pool while we wait on it
	ev := o.end
	c.mu.Unlock()

	err := waitEvent(ev, timeout)

	c.mu.Lock()
	defer c.mu.Unlock()
	o.pins--
	if c.closed {
		// Closed while we waited: Close left o's events to the last of
		// its waiters, since the pool that took the others is gone.
		if o.pins == 0 && o.end != nil {
			err = errors.Join(err, o.end.Close())
			if o.start != nil {
				err = errors.Join(err, o.start.Close())
			}
			o.start, o.end = nil, nil
		}
		return fmt.Errorf("Wait: op %d: coordinator closed while waiting: %w", id, errors.Join(backend.ErrClosed, err))
	}
	if err == nil {
		c.reapLaneLocked(o.lane)
	}
	if o.retired && o.pins == 0 && o.end != nil {
		c.recycleLocked(o)
	}
	if err != nil {
		return fmt.Errorf("Wait: op %d: %w", id, err)
	}
	return nil
}

// SynchronizeAll blocks the host until every stream is idle (the explicit
// full barrier), then retires everything.
func (c *AsyncCoordinator) SynchronizeAll() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return fmt.Errorf("SynchronizeAll: coordinator: %w", backend.ErrClosed)
	}
	streams := c.streams
	c.mu.Unlock()
	var errs []error
	for r, s := range streams {
		if r > 0 && c.nlanes == 1 {
			break
		}
		if err := s.Synchronize(); err != nil {
			errs = append(errs, fmt.Errorf("SynchronizeAll: %v stream: %w", OpType(r), err))
		}
	}
	c.mu.Lock()
	for l := range c.nlanes {
		c.reapLaneLocked(l)
	}
	c.mu.Unlock()
	return errors.Join(errs...)
}

// reapLaneLocked retires lane l's completed ops from the head of its FIFO.
// reapEvery is how many ops a lane may hold before queueing reaps it. An
// event query costs 0.2-1.4 us (H200, H100): reaping on every queue made it
// the largest part of an op's bookkeeping; every 32 ops bounds the pending
// list and the events out of the pool just as well.
const reapEvery = 32

func (c *AsyncCoordinator) reapIfLongLocked(l int) {
	if len(c.fifo[l]) >= reapEvery {
		c.reapLaneLocked(l)
	}
}

func (c *AsyncCoordinator) reapLaneLocked(l int) {
	if c.closed {
		// Close synchronised the streams and took the ops' events back:
		// an op queued while it did has no end event left to query.
		return
	}
	q := c.fifo[l]
	// A lane is one stream, so its ops complete in queue order: once the
	// newest op's end event is done, every older one is. One query then
	// retires a whole batch (a poll after 64 queued ops costs one driver
	// call, not 64).
	if n := len(q); n > 1 {
		if done, err := q[n-1].end.Query(); err == nil && done {
			for i, o := range q {
				q[i] = nil
				c.retireLocked(o)
			}
			c.fifo[l] = q[:0]
			return
		}
	}
	for len(q) > 0 {
		o := q[0]
		done, err := o.end.Query()
		if err != nil {
			o.err = errors.Join(o.err, err)
		} else if !done {
			break
		}
		q[0] = nil
		q = q[1:]
		c.retireLocked(o)
	}
	if len(q) == 0 {
		q = c.fifo[l][:0] // reuse the backing array
	}
	c.fifo[l] = q
}

func (c *AsyncCoordinator) retireLocked(o *op) {
	ms := float32(-1) // no timing
	if o.start != nil {
		var err error
		if ms, err = o.start.ElapsedTime(o.end); err != nil {
			ms, o.err = -1, errors.Join(o.err, err)
		}
	}
	o.retired = true
	delete(c.pending, o.id)
	if len(c.reports) >= c.maxRep {
		n := len(c.reports) - c.maxRep + 1
		c.reports = append(c.reports[:0], c.reports[n:]...)
		c.dropped += uint64(n)
	}
	c.reports = append(c.reports, OpResult{ID: o.id, Type: o.typ, Name: o.name, Bytes: o.bytes, GPUMs: ms, Err: o.err})
	if o.pins == 0 {
		c.recycleLocked(o)
	}
}

func (c *AsyncCoordinator) recycleLocked(o *op) {
	c.pool.put(o.start)
	c.pool.put(o.end)
	o.start, o.end = nil, nil
}

// Close waits for all streams (teardown is a legitimate host barrier),
// then releases events and the streams. An open external op is ended
// first. Closing twice is an error.
func (c *AsyncCoordinator) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return fmt.Errorf("AsyncCoordinator.Close: %w", backend.ErrClosed)
	}
	open := c.open
	c.mu.Unlock()
	var errs []error
	if open != nil {
		errs = append(errs, c.EndExternal(open.id))
	}
	errs = append(errs, c.SynchronizeAll())
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	for _, o := range c.pending {
		if o.pins == 0 {
			c.recycleLocked(o)
		}
	}
	errs = append(errs, c.pool.close())
	for r := range c.nlanes {
		errs = append(errs, c.streams[r].Close())
	}
	return errors.Join(errs...)
}

// getEvent and putEvent lend the coordinator's event pool to the pipeline
// manager, which shares the streams.
func (c *AsyncCoordinator) getEvent() (backend.Event, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.pool.get()
}

func (c *AsyncCoordinator) putEvent(evs ...backend.Event) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, ev := range evs {
		c.pool.put(ev)
	}
}

func checkCopy(what string, host HostMem, dev backend.Buffer, n int) error {
	switch {
	case n < 0:
		return fmt.Errorf("%s: nbytes=%d, expected nbytes >= 0: %w", what, n, backend.ErrInvalid)
	case dev == nil || dev.Ptr() == 0 && n > 0:
		return fmt.Errorf("%s: no device buffer, expected an allocated array: %w", what, backend.ErrInvalid)
	case host.Ptr == 0 && n > 0 || host.Len < 0:
		return fmt.Errorf("%s: host=(%#x, %d bytes), expected a host address and a length >= 0: %w", what, host.Ptr, host.Len, backend.ErrInvalid)
	case n > host.Len:
		return fmt.Errorf("%s: host range of %d bytes, expected at least n=%d (nbytes): %w", what, host.Len, n, ErrHostTooSmall)
	case n > dev.Size():
		return fmt.Errorf("%s: device buffer of %d bytes, expected at least nbytes=%d: %w", what, dev.Size(), n, backend.ErrInvalid)
	}
	return nil
}

// queueNames names the public entry point of each op type in errors,
// precomputed to keep the hot path free of allocations.
var queueNames = [numRoles]string{OpCompute: "QueueCompute", OpUpload: "QueueUpload", OpDownload: "QueueDownload"}
