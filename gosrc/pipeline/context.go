package pipeline

import (
	"errors"
	"fmt"
	"sync"

	"github.com/vortexgo/vortexgo/gosrc/backend"
)

// ManagedGpuContext bundles one device's AsyncCoordinator with factories
// for triple buffers and pipeline managers, which it owns and closes.
type ManagedGpuContext struct {
	dev     backend.Device
	streams bool
	coord   *AsyncCoordinator

	mu       sync.Mutex
	tbs      []*TripleBuffer
	managers []*PipelineStageManager
	slots    map[*TripleBuffer]*[numSlots]slotOps
	closed   bool
}

// slotOps are the last ops that touched a triple-buffer slot, so the next
// stage on that slot waits on them.
type slotOps struct{ upload, compute, download OpID }

// NewManagedGpuContext creates the context and its coordinator. With
// enableStreams false all work runs on one stream: the same API with no
// overlap, the sequential baseline. opts (at most one) sets priorities and
// the kernel launcher; its Sequential field is replaced by !enableStreams.
func NewManagedGpuContext(dev backend.Device, enableStreams bool, opts ...CoordinatorOptions) (*ManagedGpuContext, error) {
	if len(opts) > 1 {
		return nil, fmt.Errorf("NewManagedGpuContext: %d options, expected at most one CoordinatorOptions", len(opts))
	}
	var o CoordinatorOptions
	if len(opts) == 1 {
		o = opts[0]
	}
	o.Sequential = !enableStreams
	c, err := NewAsyncCoordinator(dev, o)
	if err != nil {
		return nil, fmt.Errorf("NewManagedGpuContext: %w", err)
	}
	return &ManagedGpuContext{dev: dev, streams: enableStreams, coord: c, slots: map[*TripleBuffer]*[numSlots]slotOps{}}, nil
}

// Device is the context's device.
func (x *ManagedGpuContext) Device() backend.Device { return x.dev }

// StreamsEnabled reports whether upload, compute and download have their
// own streams.
func (x *ManagedGpuContext) StreamsEnabled() bool { return x.streams }

// AsyncCoordinator is the context's coordinator.
func (x *ManagedGpuContext) AsyncCoordinator() *AsyncCoordinator { return x.coord }

// CreateTripleBuffer allocates a TripleBuffer of size elements of dtype,
// closed with the context.
func (x *ManagedGpuContext) CreateTripleBuffer(size int, dtype backend.DType) (*TripleBuffer, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.closed {
		return nil, fmt.Errorf("CreateTripleBuffer: context: %w", backend.ErrClosed)
	}
	tb, err := NewTripleBuffer(x.dev, size, dtype)
	if err != nil {
		return nil, err
	}
	x.tbs = append(x.tbs, tb)
	return tb, nil
}

// CreatePipelineManager creates a PipelineStageManager on the context's
// coordinator, closed with the context.
func (x *ManagedGpuContext) CreatePipelineManager() (*PipelineStageManager, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.closed {
		return nil, fmt.Errorf("CreatePipelineManager: context: %w", backend.ErrClosed)
	}
	m, err := NewPipelineStageManager(x.coord)
	if err != nil {
		return nil, err
	}
	x.managers = append(x.managers, m)
	return m, nil
}

// StepIO is one TripleBufferedStep's host side.
type StepIO struct {
	// Src is this step's input. A zero Src uploads nothing: use it to
	// drain the last two results.
	Src HostMem
	// Dst receives the result of the input uploaded two steps earlier;
	// required whenever such a result is ready.
	Dst HostMem
	// N is the bytes per transfer; 0 means the whole buffer.
	N int
	// Op processes the slot in place: its Inputs and Outputs are both the
	// process buffer (In(0)/Out(0) for kernels); Iteration is the round.
	Op StageOp
}

// StepReport says what one TripleBufferedStep queued.
type StepReport struct {
	// Round is the TripleBuffer round the step ran in.
	Round uint64
	// Upload, Compute and Download are the queued ops, 0 where the stage
	// had no buffer ready.
	Upload, Compute, Download OpID
	// DownloadedRound is the round whose input lands in Dst when Download
	// is not 0.
	DownloadedRound uint64
}

// TripleBufferedStep runs one round of tb: it uploads io.Src into the
// upload slot, processes the slot uploaded last round, downloads the slot
// processed last round into io.Dst, and advances tb. Every stage waits on
// its slot's previous stage through events (and an upload on the slot's
// last download), so nothing blocks the host and, from the third round on,
// the three stages run at once. Steps on one context are serialised.
func (x *ManagedGpuContext) TripleBufferedStep(tb *TripleBuffer, io StepIO) (StepReport, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.closed {
		return StepReport{}, fmt.Errorf("TripleBufferedStep: context: %w", backend.ErrClosed)
	}
	if tb == nil {
		return StepReport{}, fmt.Errorf("TripleBufferedStep: triple buffer is nil, expected a *TripleBuffer: %w", backend.ErrInvalid)
	}
	// The step's references keep the slots alive should the triple buffer
	// be closed while its copies are queued.
	release, err := tb.borrowAll()
	if err != nil {
		return StepReport{}, fmt.Errorf("TripleBufferedStep: %w", err)
	}
	defer release()
	if io.Src.Ptr == 0 && io.Src.Len != 0 || io.Dst.Ptr == 0 && io.Dst.Len != 0 || io.Src.Len < 0 || io.Dst.Len < 0 {
		return StepReport{}, fmt.Errorf("TripleBufferedStep: src=(%#x, %d) dst=(%#x, %d), expected an address and a length >= 0, "+
			"or both 0: %w", io.Src.Ptr, io.Src.Len, io.Dst.Ptr, io.Dst.Len, backend.ErrInvalid)
	}
	n := io.N
	if n == 0 {
		n = tb.Bytes()
	}
	if n < 0 || n > tb.Bytes() {
		return StepReport{}, fmt.Errorf("TripleBufferedStep: nbytes=%d, expected 0 <= nbytes <= %d (buffer bytes): %w", io.N, tb.Bytes(), backend.ErrInvalid)
	}
	if io.Op.Func == nil && io.Op.Kernel == "" || io.Op.Copy != NoCopy {
		return StepReport{}, fmt.Errorf("TripleBufferedStep: Op is no kernel or spin op (a copy, or neither Func nor Kernel), expected one: %w", backend.ErrInvalid)
	}
	slots := x.slots[tb]
	if slots == nil {
		slots = new([numSlots]slotOps)
		x.slots[tb] = slots
	}
	round := tb.Round()
	rep := StepReport{Round: round}
	// Check before claiming, so a missing Dst leaves tb untouched.
	if tb.States()[(round+downloadOffset)%numSlots] == Processing && io.Dst.Ptr == 0 {
		return rep, fmt.Errorf("TripleBufferedStep: round %d has the result of round %d to download, expected dst: %w", round, round-2, backend.ErrInvalid)
	}
	c := x.coord

	if buf, ok := tb.GetDownloadBuffer(); ok {
		so := &slots[tb.slotIndex(buf)]
		id, err := c.QueueDownload(buf, io.Dst, n, nonZero(so.compute)...)
		if err != nil {
			return rep, fmt.Errorf("TripleBufferedStep: %w", err)
		}
		so.download, rep.Download, rep.DownloadedRound = id, id, round-2
	}
	if buf, ok := tb.GetProcessBuffer(); ok {
		so := &slots[tb.slotIndex(buf)]
		bufs := []backend.Buffer{buf}
		id, err := c.QueueCompute(ComputeOp{Kernel: io.Op.Kernel, Func: func(s backend.Stream) error {
			return runStageOp(c.launch, io.Op, StageContext{Stream: s, Iteration: int(round), Inputs: bufs, Outputs: bufs})
		}}, nonZero(so.upload)...)
		if err != nil {
			return rep, fmt.Errorf("TripleBufferedStep: %w", err)
		}
		so.compute, rep.Compute = id, id
	}
	if io.Src.Ptr != 0 {
		if buf, ok := tb.GetUploadBuffer(); ok {
			so := &slots[tb.slotIndex(buf)]
			id, err := c.QueueUpload(io.Src, buf, n, nonZero(so.download)...)
			if err != nil {
				return rep, fmt.Errorf("TripleBufferedStep: %w", err)
			}
			so.upload, rep.Upload = id, id
		}
	}
	tb.Advance()
	return rep, nil
}

func nonZero(id OpID) []OpID {
	if id == 0 {
		return nil
	}
	return []OpID{id}
}

// Close closes the pipeline managers, the coordinator (waiting for its
// streams) and then the triple buffers. Closing twice is an error.
func (x *ManagedGpuContext) Close() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.closed {
		return fmt.Errorf("ManagedGpuContext.Close: %w", backend.ErrClosed)
	}
	x.closed = true
	var errs []error
	for _, m := range x.managers {
		if err := m.Close(); err != nil && !errors.Is(err, backend.ErrClosed) {
			errs = append(errs, err)
		}
	}
	errs = append(errs, x.coord.Close())
	for _, tb := range x.tbs {
		if err := tb.Close(); err != nil && !errors.Is(err, backend.ErrClosed) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
