package endpoint

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/engine"
	"github.com/vortexgo/vortexgo/gosrc/format"
	"github.com/vortexgo/vortexgo/gosrc/guard"
	"github.com/vortexgo/vortexgo/gosrc/internal/dl"
	"github.com/vortexgo/vortexgo/gosrc/memory"
)

// stopContext returns a context cancelled when stopping closes or when
// cancel is called (at Close), so a lock wait can be interrupted by a stop.
func stopContext(stopping <-chan struct{}) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		select {
		case <-stopping:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

// StackTensorEndpoint keeps the latest volume in a locked tensor, formatted
// by its executor: vortex's StackDeviceTensorEndpoint{Int8,UInt16,Float32}
// (device memory; shape (segments, records, samples)),
// StackHostTensorEndpoint* (pinned host memory),
// SpectraStackDeviceTensorEndpointUInt16 (raw spectra), and the radial,
// spiral and position device tensor endpoints (shape (x, y, samples)).
type StackTensorEndpoint struct {
	name  string
	kind  backend.MemKind
	dtype backend.DType
	src   source
	// Allocator, if set before Prepare, allocates the tensor (and charges
	// its budget); otherwise the process's allocator on the engine's device
	// does, charging the process budget as "endpoint volume".
	Allocator *memory.Allocator

	exec   any   // the executor (nil: a stack executor with the formatter's slice)
	shape3 []int // the volume's shape (nil: from the planner, stack only)
	f      volumeFormatter
	stream backend.Stream
	// formatted is recorded after a block's formatting on a processing
	// stream; the endpoint's stream waits on it (see Format).
	formatted backend.Event
	// chained is recorded on the endpoint's stream before a block is
	// formatted on its processing stream, which waits on it: the work users
	// chained on the endpoint's stream (a handler's reduction of the last
	// volume) reads the tensor before the next block writes it.
	chained backend.Event
	tensor  *memory.DeviceTensor
	dev     backend.Device // the tensor's (a new engine on another keeps none of it)
	owner   int64
	ctx     context.Context
	cancel  context.CancelFunc
	claim   engine.Claim // refuses Close while an engine formats into it

	hostSrc *streamSource // a stream endpoint's source (NewStreamHostTensorEndpoint)

	// ownStream formats every block on the endpoint's stream (small blocks,
	// see formatOnOwnStream).
	ownStream bool
	// graphs replays small blocks' formatting (replay.go); nil without.
	// fewBlocks: the engine cycles few blocks per slot (fewBlocksPerSlot).
	graphs    *formatGraphs
	fewBlocks bool
}

var _ engine.Endpoint = (*StackTensorEndpoint)(nil)

// Claims reports the claim an engine takes while it formats into the
// endpoint (engine.Claimer): Close is refused until that run ends.
func (e *StackTensorEndpoint) Claims() []*engine.Claim {
	e.claim.Name(e.name)
	return []*engine.Claim{&e.claim}
}

func newStackTensor(name string, kind backend.MemKind, dtype backend.DType, src source) (*StackTensorEndpoint, error) {
	switch dtype {
	case backend.Int8, backend.Uint16, backend.Float32:
	default:
		return nil, fmt.Errorf("endpoint.New%s: dtype=%v, expected int8, uint16 or float32", name, dtype)
	}
	return &StackTensorEndpoint{name: name, kind: kind, dtype: dtype, src: src}, nil
}

// SetExecutor sets the executor and the volume shape before Prepare, as
// vortex's constructors take them (StackDeviceTensorEndpointInt8(executor,
// shape)). A nil shape sizes a stack volume from the planner's shape and
// the executor's sample slice.
func (e *StackTensorEndpoint) SetExecutor(exec any, shape []int) error {
	if e.tensor != nil {
		return fmt.Errorf("%s.SetExecutor: already prepared, expected before Engine.prepare(): %w", e.name, backend.ErrInUse)
	}
	if err := checkExecutor(exec); err != nil {
		return err
	}
	if shape != nil && len(shape) != 3 {
		return engine.Invalid("%s: shape %v, expected 3 dimensions", e.name, shape)
	}
	e.exec, e.shape3 = exec, append([]int(nil), shape...)
	if shape == nil {
		e.shape3 = nil
	}
	return nil
}

// Executor is the endpoint's executor (nil until SetExecutor).
func (e *StackTensorEndpoint) Executor() any { return e.exec }

// ReadsRaw (engine.RawReader): the spectra endpoints.
func (e *StackTensorEndpoint) ReadsRaw() bool { return e.src == srcRaw }

// ReadsProcessed (engine.ProcessedReader): the float32 and uint16
// A-scan volumes are made from the float32 output; int8 ones from the
// int8 output.
func (e *StackTensorEndpoint) ReadsProcessed() bool {
	return e.src != srcRaw && e.dtype != backend.Int8
}

// ReadsPositions (engine.PositionReader): only a PositionFormatExecutor
// places A-scans by the device positions.
func (e *StackTensorEndpoint) ReadsPositions() bool {
	_, ok := e.exec.(*format.PositionFormatExecutor)
	return ok
}

// ReadsStrobes (engine.StrobeReader): none of vortex's tensor endpoints.
func (e *StackTensorEndpoint) ReadsStrobes() bool {
	return e.hostSrc != nil && e.hostSrc.s == StreamStrobes
}

// NewGeometryTensorEndpoint returns vortex's radial, spiral or position
// device tensor endpoint for exec (a Radial, Spiral or
// PositionFormatExecutor) with volume shape (x, y, samples), of processed
// A-scans of dtype, or raw spectra (spectra, uint16).
func NewGeometryTensorEndpoint(exec any, shape []int, dtype backend.DType, spectra bool) (*StackTensorEndpoint, error) {
	var name string
	switch exec.(type) {
	case *format.RadialFormatExecutor:
		name = "RadialDeviceTensorEndpoint"
	case *format.SpiralFormatExecutor:
		name = "SpiralDeviceTensorEndpoint"
	case *format.PositionFormatExecutor:
		name = "PositionDeviceTensorEndpoint"
	default:
		return nil, engine.Invalid("executor: a %T, expected a Radial, Spiral or PositionFormatExecutor", exec)
	}
	src := srcProcessed
	if spectra {
		name, src = "Spectra"+name, srcRaw
		if dtype != backend.Uint16 {
			return nil, engine.Invalid("%s: dtype %v, expected uint16 (raw spectra)", name, dtype)
		}
	}
	e, err := newStackTensor(name, backend.DeviceMem, dtype, src)
	if err != nil {
		return nil, engine.Invalid("%v", err)
	}
	if shape == nil {
		return nil, engine.Invalid("%s: shape=None, expected the volume's (x, y, samples)", name)
	}
	if err := e.SetExecutor(exec, shape); err != nil {
		return nil, err
	}
	return e, nil
}

// NewStackDeviceTensorEndpoint returns an endpoint keeping processed
// volumes of dtype (int8, uint16 or float32) in device memory.
func NewStackDeviceTensorEndpoint(dtype backend.DType) (*StackTensorEndpoint, error) {
	return newStackTensor("StackDeviceTensorEndpoint", backend.DeviceMem, dtype, srcProcessed)
}

// NewStackHostTensorEndpoint returns an endpoint keeping processed volumes
// of dtype in pinned host memory (NumPy-readable without a copy).
func NewStackHostTensorEndpoint(dtype backend.DType) (*StackTensorEndpoint, error) {
	return newStackTensor("StackHostTensorEndpoint", backend.PinnedMem, dtype, srcProcessed)
}

// NewSpectraStackDeviceTensorEndpoint returns an endpoint keeping the raw
// uint16 spectra of each volume, uncropped, in device memory.
func NewSpectraStackDeviceTensorEndpoint() (*StackTensorEndpoint, error) {
	return newStackTensor("SpectraStackDeviceTensorEndpoint", backend.DeviceMem, backend.Uint16, srcRaw)
}

// NewSpectraStackHostTensorEndpoint returns an endpoint keeping the raw
// uint16 spectra of each volume in pinned host memory (vortex's
// SpectraStackHostTensorEndpointUInt16; its CPU SpectraStackTensorEndpoint
// too).
func NewSpectraStackHostTensorEndpoint() (*StackTensorEndpoint, error) {
	return newStackTensor("SpectraStackHostTensorEndpoint", backend.PinnedMem, backend.Uint16, srcRaw)
}

// Prepare creates the stream and the tensor. An endpoint an engine
// prepared before is prepared again by another engine (the engine package
// lets one do so only once the first was closed: a notebook's rebuilt
// engine): it keeps its tensor, which users may still hold, when the new
// volume has the same shape on the same device, and replaces it otherwise.
func (e *StackTensorEndpoint) Prepare(info engine.EndpointInfo) error {
	if e.tensor != nil && info.Owner == e.owner {
		return fmt.Errorf("%s.Prepare: already prepared, expected one Prepare per endpoint", e.name)
	}
	if e.hostSrc == nil {
		if err := e.f.configure(info, e.src, e.dtype, e.exec, e.shape3); err != nil {
			return fmt.Errorf("%s.Prepare: %w", e.name, err)
		}
	}
	e.fewBlocks = fewBlocksPerSlot(info.BlocksPerSlot)
	own, err := formatOnOwnStream(info.RecordsPerBlock, info.RawSamples, e.fewBlocks, info.Slots == 1)
	if err != nil {
		return fmt.Errorf("%s.Prepare: %w", e.name, err)
	}
	e.ownStream = own
	if e.tensor != nil {
		shape := e.shape3
		if e.hostSrc == nil {
			shape = e.f.shape3()
		}
		if e.dev == info.Device && slices.Equal(e.tensor.Info().Shape, shape) {
			e.owner = info.Owner
			e.ctx, e.cancel = stopContext(info.Stopping)
			return e.resetGraphs() // the new engine's events and buffers
		}
		if err := e.free(); err != nil {
			return fmt.Errorf("%s.Prepare: freeing the previous engine's volume: %w", e.name, err)
		}
	}
	alloc := e.Allocator
	if alloc == nil {
		a, err := memory.AllocatorFor(info.Device, "endpoint volume")
		if err != nil {
			return fmt.Errorf("%s.Prepare: %w", e.name, err)
		}
		alloc = a
	}
	s, err := info.Device.NewStream(0)
	if err != nil {
		return fmt.Errorf("%s.Prepare: stream: %w", e.name, err)
	}
	shape := e.shape3
	if e.hostSrc == nil {
		shape = e.f.shape3()
	}
	t, err := memory.NewDeviceTensor(alloc, e.kind, shape, e.dtype)
	if err != nil {
		return errors.Join(fmt.Errorf("%s.Prepare: tensor: %w", e.name, err), s.Close())
	}
	// The volume starts zeroed on every backend (the CPU's memory is; CUDA's
	// is not): radial, spiral and position volumes leave cells no A-scan
	// reaches. Prepare is not the hot path: the host waits for the memset
	// here so that a user reading the tensor before the first volume sees
	// zeros.
	if n := t.Size(); n > 0 {
		if err := errors.Join(s.Memset(t.Ptr(), 0, n), s.Synchronize()); err != nil {
			return errors.Join(fmt.Errorf("%s.Prepare: zeroing the volume: %w", e.name, err), t.Close(), s.Close())
		}
	}
	ev, err := info.Device.NewEvent(false)
	if err != nil {
		return errors.Join(fmt.Errorf("%s.Prepare: event: %w", e.name, err), t.Close(), s.Close())
	}
	chained, err := info.Device.NewEvent(false)
	if err != nil {
		return errors.Join(fmt.Errorf("%s.Prepare: event: %w", e.name, err), ev.Close(), t.Close(), s.Close())
	}
	e.stream, e.tensor, e.owner, e.formatted, e.chained, e.dev = s, t, info.Owner, ev, chained, info.Device
	e.ctx, e.cancel = stopContext(info.Stopping)
	return e.resetGraphs()
}

// BeginSession takes a new engine session's stop signal
// (engine.SessionEndpoint): a stop of that session ends a wait on the
// tensor's lock. The engine calls it at Start, while no Format runs.
func (e *StackTensorEndpoint) BeginSession(stopping <-chan struct{}) {
	if e.cancel != nil {
		e.cancel()
	}
	e.ctx, e.cancel = stopContext(stopping)
}

// Stream is the stream formatting runs on; chain work on it.
func (e *StackTensorEndpoint) Stream() backend.Stream { return e.stream }

// Tensor is the volume; nil before Prepare. Take its lock to read it.
func (e *StackTensorEndpoint) Tensor() *memory.DeviceTensor { return e.tensor }

// DType is the tensor's element type.
func (e *StackTensorEndpoint) DType() backend.DType { return e.dtype }

// Format writes block b into the tensor under its exclusive lock, after
// the block's ready event, the previous block's formatting and the work
// users chained on the endpoint's stream; on a GPU on the stream the block
// was processed on (raw blocks of ownStreamBelow samples or more), on the
// CPU backend and for smaller blocks on the endpoint's stream. The endpoint's
// stream follows the formatting either way.
func (e *StackTensorEndpoint) Format(b *engine.BlockData, plan *engine.FormatPlan) error {
	if e.hostSrc != nil {
		return e.formatHost(b, plan)
	}
	// The kernels run on the stream the block was processed on, in its
	// order after the processing, not on the endpoint's own stream: a
	// fourth stream of kernels beside the copy stream and two processing
	// slots slowed the uploads by 4-8% on an H100 (the expert pipeline
	// with its formatting moved to a third stream lost as much; with the
	// kernels on its compute streams, none: bench/probe_format.py). The
	// endpoint's stream waits on the formatting instead, so work users
	// chain there, and the tensor's ready event, still follow it.
	//
	// Small blocks are the exception (ownStream): there the host's driver
	// calls per block, not the GPU, set the pace (issue 29), and the
	// endpoint's own stream needs three (wait for the block, the kernel,
	// the engine's done event) where a slot stream needs six (the chained
	// and formatted events' records and waits); the tensor's ready event is
	// recorded only when a reader asks (publish).
	s := b.Stream
	if _, host := s.(backend.HostStream); host || e.ownStream {
		// The CPU backend runs a stream's work under its lock as it is
		// queued: on the slot stream, this block's formatting would wait
		// for the processing of a later block on the same slot, where the
		// endpoint's own stream lets the two goroutines overlap. There is
		// no copy engine to spare there.
		s = nil
	}
	if s == nil {
		s = e.stream // small blocks, no processing queued (a block that only finishes the planner), or a CPU stream
		if err := s.WaitEvent(b.Ready); err != nil {
			return fmt.Errorf("%s.Format: %w", e.name, err)
		}
	}
	// Blocks processed on different slots must still write the volume in
	// block order (a later block's A-scans overwrite an earlier one's
	// where both reach a cell): the previous block's formatting comes
	// first. On the endpoint's own stream that is stream order. On a slot
	// stream, the chained event below, recorded on the endpoint's stream
	// after the previous Format's wait on (or record of) that formatting,
	// completes only after it: its wait orders this block too, so a second
	// wait would be a driver call per block for nothing (issue 29). A
	// block formatted on a slot stream is followed on the endpoint's
	// stream by a wait on its formatted event (below), so stream order
	// covers a block on the endpoint's stream after one on a slot stream.
	//
	// Waiting here while a user holds the lock is the backpressure the
	// contract asks for; a stop cancels the wait so Stop cannot hang.
	if err := lockFormat(e.ctx, e.name, e.tensor, e.owner); err != nil {
		return err
	}
	var err error
	if s != e.stream {
		// What users chained on the endpoint's stream reads the tensor
		// (vortex's contract: a volume_callback's work there sees its
		// volume): the formatting follows it, as it did when it ran on that
		// stream. Recorded under the lock, so that work queued by a user
		// who held the lock until now is included. Without such work the
		// event completes with the previous block's formatting (the
		// endpoint's stream waited for it), which s thereby follows.
		if err = e.stream.Record(e.chained); err == nil {
			err = s.WaitEvent(e.chained)
		}
	}
	if err == nil {
		err = e.format(s, b, plan)
	}
	// Recorded and waited for even when formatting failed part way: the
	// endpoint's stream must follow whatever kernels were queued, since
	// Close synchronizes that stream before it frees the tensor they write.
	// On the endpoint's stream itself, stream order does both.
	if s != e.stream {
		if rerr := s.Record(e.formatted); rerr != nil {
			err = errors.Join(err, rerr)
		} else {
			err = errors.Join(err, e.stream.WaitEvent(e.formatted))
		}
	}
	return publish(e.name, e.tensor, e.stream, e.owner, err)
}

// ownStreamBelow is the raw block size, in samples (records x samples per
// record), under which formatting runs on the endpoint's stream
// (formatOnOwnStream's "auto"): 2^19 samples, a 1 MiB block of uint16.
// Measured on an H200 (docs/bench.md, "Formatting on the endpoint's
// stream"), interleaved: 1024 x 256 blocks (512 KiB, 11 us of copy) ran
// 8% faster at vortex's 4 blocks / preload 2 and 12% at 32 / 16 with three
// driver calls fewer a block, where the host's calls set the pace; 2048 x
// 256 blocks (1 MiB, 22 us of copy) ran 4% faster at 4 / 2 but 5% slower at
// 32 / 16, which reached 0.99 of the copy ceiling with formatting on the
// slot streams: there a fourth stream of kernels beside the copy stream
// costs the uploads (4-8% on an H100, bench/probe_format.py).
//
// With few blocks per slot (fewBlocksPerSlot) the bound is twice that,
// 2^20 samples: where a block's round trip sets the pace, 1024 x 512 and
// 2048 x 256 blocks took 9% and 7% less time at 4 / 2 on the endpoint's
// stream, 10% and 9% with its graphs (interleaved on the H200, docs/bench.md
// "Formatting as a graph"); 2048 x 512 was level.
const ownStreamBelow = 1 << 19

// oneSlotOwnStreamUpTo is the largest raw block, in samples, formatted on
// the endpoint's stream when the engine has one processor slot: 2^21, 4
// MiB of uint16. With one slot every block is processed on the one slot
// stream, and its formatting there holds the next block's processing
// behind it. Measured on an H200 (docs/bench.md "One slot: formatting on
// the endpoint's stream", 4 / 2, two interleaved rounds): 1024 x 512
// blocks took 23% less time a block on the endpoint's stream (22.0 against
// 28.6 us, at the copy ceiling), 1024 x 1024 3%, 2048 x 512 2%, 2048 x 1024
// 1%. Larger blocks were at the ceiling on the slot stream already (1.00 at
// 8192 records in the sweeps) and keep it.
const oneSlotOwnStreamUpTo = 1 << 21

// fewBlocksPerSlot reports whether an engine cycling blocksPerSlot blocks
// on each processing stream has few: at most 2, vortex's defaults (4
// blocks on 2 slots) as the user allocated them (on a GPU below 2 MiB a
// block the engine cycles 32, engine.DeviceBlocksEnv). 0, not known, is
// not few.
func fewBlocksPerSlot(blocksPerSlot int) bool { return blocksPerSlot > 0 && blocksPerSlot <= 2 }

// formatOnOwnStream reports whether blocks of recordsPerBlock raw spectra of
// rawSamples are formatted on the endpoint's stream: VORTEXGO_FORMAT_STREAM
// (read live, see dl.Getenv) is "auto" (or unset: below ownStreamBelow, or
// twice that with few blocks per slot, up to oneSlotOwnStreamUpTo with one
// slot), "endpoint" or "slot"; the last two are for measurements.
func formatOnOwnStream(recordsPerBlock, rawSamples int, fewBlocks, oneSlot bool) (bool, error) {
	v, _ := dl.Getenv("VORTEXGO_FORMAT_STREAM")
	switch v {
	case "", "auto":
		size := recordsPerBlock * rawSamples
		if oneSlot && size <= oneSlotOwnStreamUpTo {
			return true, nil
		}
		below := ownStreamBelow
		if fewBlocks {
			below *= 2
		}
		return size < below, nil
	case "endpoint":
		return true, nil
	case "slot":
		return false, nil
	}
	return false, backend.Invalidf("VORTEXGO_FORMAT_STREAM=%q in the environment, expected auto (the default), endpoint or slot", v)
}

// format runs the executor on s under the engine's lock. A panic is its
// error, so that publish still releases the lock: one left held would hang
// the user's next lock and the next session's Format.
func (e *StackTensorEndpoint) format(s backend.Stream, b *engine.BlockData, plan *engine.FormatPlan) (err error) {
	defer guard.Recover(&err, e.name)
	return e.f.format(s, e.tensor.Ptr(), b, plan)
}

// publish ends a tensor endpoint's Format: unless formatting failed (err),
// the tensor's new content is marked written on stream s, its ready event
// recorded there when a reader asks (memory.DeviceTensor.Written: one
// driver call a block fewer where no one does, issue 29); the engine's lock
// is released either way.
func publish(name string, t *memory.DeviceTensor, s backend.Stream, owner int64, err error) error {
	if err == nil {
		err = t.Written(s)
	}
	return unlockFormat(name, t, owner, err)
}

// lockFormat begins a tensor endpoint's Format: it takes the engine's
// exclusive lock on the tensor. Waiting here while a user holds the lock
// is the backpressure the contract asks for; a stop (ctx) cancels the wait
// so Stop cannot hang, and the error is then ErrStopped's.
func lockFormat(ctx context.Context, name string, t *memory.DeviceTensor, owner int64) error {
	if err := t.LockContext(ctx, owner, true); err != nil {
		if ctx.Err() != nil {
			return errStopped(err)
		}
		return fmt.Errorf("%s.Format: %w", name, err)
	}
	return nil
}

// unlockFormat releases the engine's lock taken by lockFormat and names
// the endpoint in err, formatting's or the unlock's.
func unlockFormat(name string, t *memory.DeviceTensor, owner int64, err error) error {
	if uerr := t.Unlock(owner, true); uerr != nil {
		err = errors.Join(err, uerr)
	}
	if err != nil {
		return fmt.Errorf("%s.Format: %w", name, err)
	}
	return nil
}

// Flush has nothing off the hot path to wait for.
func (e *StackTensorEndpoint) Flush() error { return nil }

// Close releases the tensor and the stream (after their work completes).
// While an engine that prepared the endpoint has not finished its run, it
// refuses with backend.ErrInUse: the engine formats into the tensor.
func (e *StackTensorEndpoint) Close() error {
	return e.claim.Close(e.free)
}

// free releases what Prepare made (Close, or a new engine's Prepare that
// needs another volume).
func (e *StackTensorEndpoint) free() error {
	if e.stream == nil {
		return nil
	}
	e.cancel()
	// A host wait at teardown: the stream's queued copies write into the
	// tensor about to be freed.
	err := e.stream.Synchronize()
	err = errors.Join(err, e.closeGraphs(), e.tensor.Close(), e.stream.Close())
	for _, ev := range []backend.Event{e.formatted, e.chained} {
		if ev != nil {
			err = errors.Join(err, ev.Close())
		}
	}
	e.stream, e.tensor, e.formatted, e.chained, e.dev = nil, nil, nil, nil, nil
	return err
}

// NullEndpoint receives blocks and discards them; its events still fire,
// which makes it the endpoint for callbacks-only and throughput tests.
type NullEndpoint struct {
	stream backend.Stream
	dev    backend.Device // the stream's
	owner  int64          // the engine that prepared it (EndpointInfo.Owner)
	claim  engine.Claim
}

var _ engine.Endpoint = (*NullEndpoint)(nil)

// Claims reports the claim an engine takes while it uses the endpoint.
func (e *NullEndpoint) Claims() []*engine.Claim {
	e.claim.Name("NullEndpoint")
	return []*engine.Claim{&e.claim}
}

// NewNullEndpoint returns a NullEndpoint.
func NewNullEndpoint() *NullEndpoint { return &NullEndpoint{} }

// Prepare creates the stream. Another engine may prepare the endpoint
// again once the first was closed (see StackTensorEndpoint.Prepare).
func (e *NullEndpoint) Prepare(info engine.EndpointInfo) error {
	if e.stream != nil {
		if info.Owner == e.owner {
			return errors.New("NullEndpoint.Prepare: already prepared, expected one Prepare per endpoint")
		}
		if e.dev == info.Device {
			e.owner = info.Owner
			return nil
		}
		if err := e.stream.Close(); err != nil {
			return fmt.Errorf("NullEndpoint.Prepare: closing the previous engine's stream: %w", err)
		}
		e.stream = nil
	}
	s, err := info.Device.NewStream(0)
	if err != nil {
		return fmt.Errorf("NullEndpoint.Prepare: stream: %w", err)
	}
	e.stream, e.dev, e.owner = s, info.Device, info.Owner
	return nil
}

// Stream is the endpoint's stream.
func (e *NullEndpoint) Stream() backend.Stream { return e.stream }

// Format orders the stream after the block, so work a handler chains on
// the stream sees the processed block.
func (e *NullEndpoint) Format(b *engine.BlockData, _ *engine.FormatPlan) error {
	return e.stream.WaitEvent(b.Ready)
}

// Flush does nothing.
func (e *NullEndpoint) Flush() error { return nil }

// Close releases the stream (refused with backend.ErrInUse while an
// engine uses the endpoint).
// ReadsPositions (engine.PositionReader): never.
func (e *NullEndpoint) ReadsPositions() bool { return false }

// ReadsRaw (engine.RawReader): never.
func (e *NullEndpoint) ReadsRaw() bool { return false }

// ReadsProcessed (engine.ProcessedReader): never.
func (e *NullEndpoint) ReadsProcessed() bool { return false }

func (e *NullEndpoint) Close() error {
	return e.claim.Close(func() error {
		if e.stream == nil {
			return nil
		}
		err := e.stream.Close()
		e.stream = nil
		return err
	})
}

// NewStackTensor returns vortex's StackDeviceTensorEndpoint* (mem
// DeviceMem) or StackHostTensorEndpoint* (PinnedMem) of dtype, or, for
// spectra, SpectraStack{Device,Host}TensorEndpointUInt16 (dtype uint16),
// with a stack executor (nil: every sample) and volume shape (nil: a stack
// volume sized from the planner and the executor's slice).
func NewStackTensor(mem backend.MemKind, spectra bool, dtype backend.DType, exec any, shape []int) (*StackTensorEndpoint, error) {
	var e *StackTensorEndpoint
	var err error
	switch {
	case spectra && dtype != backend.Uint16:
		return nil, engine.Invalid("spectra endpoint of dtype %v, expected uint16 (raw spectra)", dtype)
	case spectra && mem == backend.DeviceMem:
		e, err = NewSpectraStackDeviceTensorEndpoint()
	case spectra:
		e, err = NewSpectraStackHostTensorEndpoint()
	case mem == backend.DeviceMem:
		e, err = NewStackDeviceTensorEndpoint(dtype)
	default:
		e, err = NewStackHostTensorEndpoint(dtype)
	}
	if err != nil {
		return nil, engine.Invalid("%v", err)
	}
	if _, ok := exec.(*format.StackFormatExecutor); !ok && exec != nil {
		return nil, engine.Invalid("%s: executor %T, expected a StackFormatExecutor", e.name, exec)
	}
	return e, e.SetExecutor(exec, shape)
}

// TensorOf is a tensor endpoint's volume, or an error naming why there is
// none: e keeps no tensor, or no engine has prepared it yet.
func TensorOf(e engine.Endpoint) (*memory.DeviceTensor, error) {
	te, ok := e.(*StackTensorEndpoint)
	switch {
	case !ok:
		return nil, backend.Invalidf("%T has no tensor, expected a Stack*TensorEndpoint", e)
	case te.Tensor() == nil:
		return nil, backend.Invalidf("%s.tensor does not exist yet, expected Engine.prepare() first", te.name)
	}
	return te.Tensor(), nil
}
