package endpoint

import (
	"errors"
	"fmt"
	"slices"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/engine"
	"github.com/vortexgo/vortexgo/gosrc/format"
	"github.com/vortexgo/vortexgo/gosrc/guard"
)

// VolumeWriter is the storage a storage endpoint writes to;
// *storage.SimpleStack implements it. It must be open before Prepare.
type VolumeWriter interface {
	// DType is the element type of the stored volumes.
	DType() backend.DType
	// VolumeBytes is the size of one volume (0 when not open).
	VolumeBytes() int
	// WriteVolume stores one whole volume.
	WriteVolume(data []byte) error
}

// stagingBuffers is how many blocks' writes can wait for the writer: two
// lets the endpoint format one block while the writer stores the other.
const stagingBuffers = 2

// StackStorageEndpoint stores the plan's copies in a stack storage as
// vortex's stack_storage does, by its BufferStrategy: vortex's
// AscanStackEndpoint (processed A-scans), SpectraStackEndpoint (raw
// spectra), their HDF5 and BROCT twins, and the stream stack endpoints
// (NewStreamStackEndpoint, formatted on the host).
//
// The A-scans and spectra are formatted on the endpoint's stream into a
// device buffer shaped by the strategy (a volume, a segment or a block);
// what the strategy writes (the segments a block finished, a finished
// segment, each copy) is downloaded into a pinned job buffer and handed,
// with its storage operations, to a writer goroutine, so disk writes stay
// off the engine's hot path. A volume finished by the plan is advanced
// past (vortex's advance_volume(false)); a stop finishes the planner, so
// the volume open at the stop is stored with what it got.
type StackStorageEndpoint struct {
	name     string
	src      source
	store    VolumeWriter
	exec     *format.StackFormatExecutor // nil: every sample
	strategy BufferStrategy

	f      volumeFormatter
	stream backend.Stream
	buffer backend.Buffer // the device buffer the copies land in
	shape  [4]int         // its shape: the volume's, or one segment or block of it
	vol    [4]int         // the storage's volume as the formatter shapes it
	recB   int            // bytes of one record of the buffer
	w      *opWriter
	jobs   []*stackJob
	segs   []int // vortex's volume_segments of the block being formatted
	fail   func(error)

	writtenAtClose int   // volumes written by the last run, kept after Close
	owner          int64 // the engine that prepared it (EndpointInfo.Owner)
	claim          engine.Claim
	layout         [4]int // the storage's volume at Prepare (storeLayout)

	// host is set for the stream endpoints (NewStreamStackEndpoint),
	// which format on the host into their StackWriter; claimer is their
	// storage's claims.
	host    *hostStack
	claimer engine.Claimer
}

var _ engine.Endpoint = (*StackStorageEndpoint)(nil)

// Claims reports the endpoint's claim and its storage's (when the storage
// is an engine.Claimer, as storage.SimpleStack is): while an engine uses
// the endpoint, neither can be closed.
func (e *StackStorageEndpoint) Claims() []*engine.Claim {
	e.claim.Name(e.name)
	cs := []*engine.Claim{&e.claim}
	if c, ok := e.store.(engine.Claimer); ok {
		cs = append(cs, c.Claims()...)
	} else if e.claimer != nil {
		cs = append(cs, e.claimer.Claims()...)
	}
	return cs
}

// NewAscanStackEndpoint stores processed volumes in store, in the store's
// dtype (int8, uint16 or float32).
func NewAscanStackEndpoint(store VolumeWriter) (*StackStorageEndpoint, error) {
	if store == nil {
		return nil, backend.Invalidf("endpoint.NewAscanStackEndpoint: store=nil, expected an open storage (storage.SimpleStack)")
	}
	return &StackStorageEndpoint{name: "AscanStackEndpoint", src: srcProcessed, store: store, strategy: BufferVolume}, nil
}

// NewSpectraStackEndpoint stores the raw uint16 spectra of each volume.
func NewSpectraStackEndpoint(store VolumeWriter) (*StackStorageEndpoint, error) {
	if store == nil {
		return nil, backend.Invalidf("endpoint.NewSpectraStackEndpoint: store=nil, expected an open storage (storage.SimpleStack)")
	}
	return &StackStorageEndpoint{name: "SpectraStackEndpoint", src: srcRaw, store: store, strategy: BufferVolume}, nil
}

// SetExecutor sets the stack executor the endpoint formats with (vortex's
// AscanStackEndpoint(executor, storage)); before Prepare. A volume is the
// planner's segments x records x the samples the executor keeps.
func (e *StackStorageEndpoint) SetExecutor(exec *format.StackFormatExecutor) error {
	if e.stream != nil {
		return fmt.Errorf("%s.SetExecutor: already prepared: %w", e.name, backend.ErrInUse)
	}
	e.exec = exec
	return nil
}

// SetBufferStrategy sets vortex's buffer_strategy (before Prepare;
// BufferVolume, vortex's default, until then).
func (e *StackStorageEndpoint) SetBufferStrategy(s BufferStrategy) error {
	if e.stream != nil {
		return fmt.Errorf("%s.SetBufferStrategy: already prepared: %w", e.name, backend.ErrInUse)
	}
	if s < BufferBlock || s > BufferVolume {
		return engine.Invalid("%s: buffer_strategy %d, expected Block (0), Segment (1) or Volume (2)", e.name, int(s))
	}
	e.strategy = s
	if e.host != nil {
		e.host.strategy = s
	}
	return nil
}

// BufferStrategy is the endpoint's strategy.
func (e *StackStorageEndpoint) BufferStrategy() BufferStrategy { return e.strategy }

// stackTarget returns the storage operations of store: BROCT's take the
// formatted (ascans, samples) B-scans and transpose them (vortex's
// BroctFormatExecutor transposes on the device instead).
func stackTarget(name string, store any) (target, error) {
	var t target
	if o, ok := store.(interface{ IsOpen() bool }); ok {
		t.open = o.IsOpen
	}
	if a, ok := store.(interface{ AdvanceVolume(bool) error }); ok {
		t.advance = a.AdvanceVolume
	}
	switch w := store.(type) {
	case interface {
		WriteStackBscans(int, []byte) error
		WriteStackAscans(int, int, []byte) error
	}:
		t.multi, t.partial = w.WriteStackBscans, w.WriteStackAscans
	case interface {
		WriteMultiBscan(int, []byte) error
		WritePartialBscan(int, int, []byte) error
	}:
		t.multi, t.partial = w.WriteMultiBscan, w.WritePartialBscan
	}
	if t.open == nil || t.advance == nil || t.multi == nil {
		// A VolumeWriter without stack operations stores whole volumes
		// (and advances by itself): the Volume strategy only.
		v, ok := store.(VolumeWriter)
		if !ok {
			return t, engine.Invalid("%s: storage %T, expected a SimpleStack, HDF5Stack or BroctStorage", name, store)
		}
		return target{open: func() bool { return v.VolumeBytes() > 0 }, volume: v.WriteVolume}, nil
	}
	return t, nil
}

// Executor is the endpoint's stack executor (nil: every sample); an
// engine holds it with the endpoint.
func (e *StackStorageEndpoint) Executor() any {
	if e.exec == nil {
		return nil
	}
	return e.exec
}

// Prepare checks the store against the volume shape, allocates the
// device buffer and the pinned job buffers, and starts the writer.
//
// Another engine may prepare the endpoint again once the engine that
// prepared it was closed (the engine package refuses it before): the
// previous engine's buffers and writer are released and made anew.
func (e *StackStorageEndpoint) Prepare(info engine.EndpointInfo) (err error) {
	if e.stream != nil {
		if info.Owner == e.owner {
			return fmt.Errorf("%s.Prepare: already prepared, expected one Prepare per endpoint", e.name)
		}
		if err := e.release(); err != nil {
			return fmt.Errorf("%s.Prepare: releasing the previous engine's buffers: %w", e.name, err)
		}
	}
	e.owner = info.Owner
	defer func() {
		if err != nil {
			err = errors.Join(err, e.release())
		}
	}()
	if e.host != nil {
		return e.prepareHost(info)
	}
	var exec any
	if e.exec != nil {
		exec = e.exec
	}
	if err := e.f.configure(info, e.src, e.store.DType(), exec, nil); err != nil {
		return fmt.Errorf("%s.Prepare: %w", e.name, err)
	}
	if got, want := e.store.VolumeBytes(), e.f.volumeBytes(); got != want {
		return engine.Invalid("%s.Prepare: the storage's volume is %d bytes (shape %v), expected %d: SimpleStackConfig.shape "+
			"(HDF5StackConfig.shape, BroctStorageConfig.shape) %v of %v, the formatter's volume; open the storage with that shape",
			e.name, got, storeLayout(e.store), want, e.f.shape3(), e.f.dtype)
	}
	t, err := stackTarget(e.name, e.store)
	if err != nil {
		return err
	}
	if t.volume != nil && e.strategy != BufferVolume {
		return engine.Invalid("%s: buffer_strategy %v with a %T, which stores whole volumes only, expected Volume", e.name, e.strategy, e.store)
	}
	volBytes := e.f.volumeBytes()
	e.vol = e.f.shape
	e.recB = volBytes / (e.vol[0] * e.vol[1])
	e.shape = e.vol
	switch e.strategy {
	case BufferSegment:
		e.shape[0] = 1
	case BufferBlock:
		e.shape[0], e.shape[1] = 1, info.RecordsPerBlock
	}
	e.f.shape = e.shape // the copies land in the strategy's buffer
	e.fail = info.Fail
	if e.stream, err = info.Device.NewStream(0); err != nil {
		return fmt.Errorf("%s.Prepare: stream: %w", e.name, err)
	}
	n := e.shape[0] * e.shape[1] * e.recB
	if e.buffer, err = info.Device.Alloc(n); err != nil {
		return fmt.Errorf("%s.Prepare: device buffer of %d bytes: %w", e.name, n, err)
	}
	// Zeroed on every backend (CUDA's memory is not): records a strategy
	// writes before anything was formatted there read as zeros.
	if err := errors.Join(e.stream.Memset(e.buffer.Ptr(), 0, n), e.stream.Synchronize()); err != nil {
		return fmt.Errorf("%s.Prepare: zeroing the buffer: %w", e.name, err)
	}
	// A job holds at most a volume's bytes (Flush sends a fuller one on).
	for range stagingBuffers {
		j := &stackJob{}
		e.jobs = append(e.jobs, j)
		if j.pinned, err = info.Device.AllocPinned(volBytes); err != nil {
			return fmt.Errorf("%s.Prepare: pinned staging of %d bytes: %w", e.name, volBytes, err)
		}
		if j.ready, err = info.Device.NewEvent(false); err != nil {
			return fmt.Errorf("%s.Prepare: staging event: %w", e.name, err)
		}
	}
	e.w = newOpWriter(e.name, t, info.Fail, e.jobs)
	e.layout = storeLayout(e.store)
	return nil
}

// storeLayout is a storage's volume as far as the endpoint can tell: its
// shape (bscans, ascans, samples, channels), or its bytes; zeros when the
// storage is closed.
func storeLayout(store any) [4]int {
	switch s := store.(type) {
	case interface{ VolumeShape() [4]int }:
		return s.VolumeShape()
	case interface{ VolumeBytes() int }:
		return [4]int{s.VolumeBytes()}
	}
	return [4]int{}
}

// layoutChanged is the error of a session whose storage was reopened with
// another volume since Prepare sized the endpoint's buffers for the old
// one: its writes would lay the old volumes out under the new header.
func layoutChanged(name string, prepared, now [4]int) error {
	return engine.Invalid("%s: the storage was reopened with SimpleStackConfig.shape %v (HDF5StackConfig.shape, "+
		"BroctStorageConfig.shape) since Engine.prepare(), which sized the endpoint for %v; expected the prepared shape: "+
		"reopen the storage with it, or prepare a new engine for the new shape", name, now, prepared)
}

// BeginSession starts a new engine session (engine.SessionEndpoint): a
// write error of the previous session was returned by its Flush, so the
// engine reported it; the new session writes again (into a storage the
// user may have reopened), and fails loudly again if the store still does.
//
// A storage reopened with another volume shape since Prepare was refused
// by CheckSession at Start; one reopened between that check and here
// makes the session fail at its first block, before anything is written.
func (e *StackStorageEndpoint) BeginSession(<-chan struct{}) {
	err := e.CheckSession()
	for _, w := range []*opWriter{e.w, e.hostW()} {
		if w != nil {
			w.mu.Lock()
			w.err = err
			w.mu.Unlock()
		}
	}
}

// CheckSession (engine.SessionChecker) refuses a session whose storage was
// reopened with another volume shape since Prepare, naming
// SimpleStackConfig.shape: the endpoint's buffers and plan are the
// prepared shape's, and writing them would lay the old volumes out under
// the new header. A closed storage is skipped, as in vortex.
func (e *StackStorageEndpoint) CheckSession() error {
	store := any(e.store)
	if e.host != nil {
		store = e.host.sw
	}
	if now := storeLayout(store); now != ([4]int{}) && now != e.layout {
		return layoutChanged(e.name, e.layout, now)
	}
	return nil
}

func (e *StackStorageEndpoint) hostW() *opWriter {
	if e.host == nil {
		return nil
	}
	return e.host.w
}

// Stream is the endpoint's stream.
func (e *StackStorageEndpoint) Stream() backend.Stream { return e.stream }

// Format runs the plan as vortex's stack_storage does: each copy is
// formatted into the device buffer (remapped to its one segment or block
// for the Segment and Block strategies); the Block strategy writes each
// copy, the Segment strategy each finished segment, the Volume strategy
// the segments a block finished, at the block's end and before each
// volume's advance. Waiting for a free job is backpressure from a slow
// disk; it is not interrupted by a stop, so nothing formatted is lost.
func (e *StackStorageEndpoint) Format(b *engine.BlockData, plan *engine.FormatPlan) error {
	if e.host != nil {
		return e.formatHost(b, plan)
	}
	if err := e.w.firstErr(); err != nil {
		// Also reported through Fail; returning it here keeps the engine
		// from formatting blocks that can no longer be stored.
		return err
	}
	if err := e.stream.WaitEvent(b.Ready); err != nil {
		return fmt.Errorf("%s.Format: %w", e.name, err)
	}
	open := e.w.t.open()
	j := e.w.take(b.Block.ID)
	e.segs = e.segs[:0]
	segB := e.vol[1] * e.recB
	var err error
	for i := range plan.Actions {
		a := plan.Actions[i]
		switch a.Kind {
		case format.Copy:
			if !open || a.Count == 0 {
				continue
			}
			orig := a
			switch e.strategy {
			case BufferSegment:
				a.BufferSegment = 0
			case BufferBlock:
				a.BufferSegment, a.BufferRecord = 0, 0
			}
			one := engine.FormatPlan{Actions: []format.Action{a}}
			// A panic of the executor is this error, so that the job
			// goes back below (flush waits for every job).
			if err = guard.Call(e.name, func() error { return e.f.format(e.stream, e.buffer.Ptr(), b, &one) }); err != nil {
				err = fmt.Errorf("%s.Format: %w", e.name, err)
				break
			}
			if e.strategy == BufferBlock {
				j, err = e.download(j, opPartial, orig.BufferSegment, orig.BufferRecord, e.buffer.Ptr(), a.Count*e.recB)
			}
		case format.FinishSegment:
			s := int(a.SegmentIndexBuffer)
			if e.strategy == BufferSegment && open && s >= 0 && s < e.vol[0] {
				j, err = e.download(j, opMulti, s, 0, e.buffer.Ptr(), segB)
			}
			e.segs = append(e.segs, s)
		case format.FinishVolume:
			if e.w.t.volume != nil {
				// a store of whole volumes: the volume buffer, then the next
				e.segs = e.segs[:0]
				if open {
					j, err = e.download(j, opVolume, 0, 0, e.buffer.Ptr(), e.vol[0]*segB)
				}
				break
			}
			if e.strategy == BufferVolume {
				j, err = e.transfer(j, segB, open)
			}
			e.segs = e.segs[:0]
			if open && err == nil {
				j.add(opAdvance, 0, 0, nil)
			}
		}
		if err != nil {
			break
		}
	}
	if err == nil && e.strategy == BufferVolume && e.w.t.volume == nil {
		j, err = e.transfer(j, segB, open)
	}
	if err != nil {
		j.ops = j.ops[:0] // what this job downloaded so far is not written
		e.w.send(j, e.stream)
		return err
	}
	return e.w.send(j, e.stream)
}

// download enqueues the copy of n bytes of the device buffer at src into
// job j with its operation, sending j on first when it is full.
func (e *StackStorageEndpoint) download(j *stackJob, kind opKind, bscan, ascan int, src uintptr, n int) (*stackJob, error) {
	if j.used+n > j.pinned.Size() {
		if err := e.w.send(j, e.stream); err != nil {
			return j, err
		}
		j = e.w.take(j.block)
	}
	if err := e.stream.Copy(j.pinned.Ptr()+uintptr(j.used), src, n); err != nil {
		return j, fmt.Errorf("%s.Format: download of block %d: %w", e.name, j.block, err)
	}
	j.ops = append(j.ops, stackOp{kind: kind, bscan: bscan, ascan: ascan, off: j.used, n: n})
	j.used += n
	return j, nil
}

// transfer downloads the finished segments of the volume buffer, merged
// into runs of consecutive B-scans (vortex's _transfer).
func (e *StackStorageEndpoint) transfer(j *stackJob, segB int, open bool) (*stackJob, error) {
	if !open {
		return j, nil
	}
	var err error
	for _, r := range segmentRuns(e.segs, e.vol[0]) {
		if j, err = e.download(j, opMulti, r[0], 0, e.buffer.Ptr()+uintptr(r[0]*segB), (r[1]-r[0])*segB); err != nil {
			return j, err
		}
	}
	return j, nil
}

// Flush waits until the writer has stored every queued job and returns
// the first write error.
func (e *StackStorageEndpoint) Flush() error {
	w := e.w
	if e.host != nil {
		w = e.host.w
	}
	if w == nil {
		return nil
	}
	return w.flush()
}

// Written returns how many volumes the writer has advanced past.
func (e *StackStorageEndpoint) Written() int {
	w := e.w
	if e.host != nil {
		w = e.host.w
	}
	if w == nil {
		return e.writtenAtClose
	}
	return w.volumes()
}

// ReadsPositions (engine.PositionReader): stacks store A-scans, spectra
// or the block's host streams, never the device positions.
func (e *StackStorageEndpoint) ReadsPositions() bool { return false }

// ReadsRaw (engine.RawReader): the spectra stacks.
func (e *StackStorageEndpoint) ReadsRaw() bool { return e.host == nil && e.src == srcRaw }

// ReadsProcessed (engine.ProcessedReader): A-scan stacks of another type
// than int8 store the float32 output; the stream stacks (host) store the
// block's streams, never it.
func (e *StackStorageEndpoint) ReadsProcessed() bool {
	if e.host != nil || e.store == nil {
		return false
	}
	return e.src != srcRaw && e.store.DType() != backend.Int8
}

// ReadsStrobes (engine.StrobeReader): the strobes stack does.
func (e *StackStorageEndpoint) ReadsStrobes() bool {
	return e.host != nil && e.host.src.s == StreamStrobes
}

// Close flushes, stops the writer and frees the buffers. The storage
// itself stays open: it belongs to the caller. While an engine uses the
// endpoint it refuses with backend.ErrInUse.
func (e *StackStorageEndpoint) Close() error {
	return e.claim.Close(func() error {
		if e.stream == nil {
			return nil
		}
		return errors.Join(e.Flush(), e.release())
	})
}

func (e *StackStorageEndpoint) release() error {
	var errs []error
	for _, w := range []**opWriter{&e.w, hostWriter(e.host)} {
		if w != nil && *w != nil {
			(*w).close()
			e.writtenAtClose = (*w).volumes()
			*w = nil
		}
	}
	if e.stream != nil {
		// Teardown wait: queued copies read the buffers freed below.
		errs = append(errs, e.stream.Synchronize(), e.stream.Close())
		e.stream = nil
	}
	if e.buffer != nil {
		errs = append(errs, e.buffer.Free())
		e.buffer = nil
	}
	for _, j := range slices.Backward(e.jobs) {
		if j.pinned != nil {
			errs = append(errs, j.pinned.Free())
		}
		if j.ready != nil {
			errs = append(errs, j.ready.Close())
		}
	}
	e.jobs = nil
	return errors.Join(errs...)
}

func hostWriter(h *hostStack) **opWriter {
	if h == nil {
		return nil
	}
	return &h.w
}
