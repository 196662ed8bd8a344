package endpoint

import (
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/engine"
	"github.com/vortexgo/vortexgo/gosrc/format/stage"
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

// stagingBuffers is how many completed volumes can wait for the writer:
// two lets the device download one while the writer stores the other.
const stagingBuffers = 2

type staging struct {
	buf   backend.Buffer
	ready backend.Event
}

// StackStorageEndpoint formats into a private device volume and stores
// each completed volume: vortex's AscanStackEndpoint (processed A-scans)
// and SpectraStackEndpoint (raw spectra). Only completed volumes are
// stored, so a stop mid-volume leaves a file of whole volumes.
type StackStorageEndpoint struct {
	name  string
	src   source
	store VolumeWriter
	exec  *stage.StackFormatExecutor // nil: every sample

	f       volumeFormatter
	dev     backend.Device
	stream  backend.Stream
	volume  backend.Buffer // the volume being formatted
	free    chan *staging
	queue   chan *staging
	stages  []*staging
	writer  sync.WaitGroup
	errMu   sync.Mutex
	err     error // first write error
	written int
	fail    func(error) // the engine's EndpointInfo.Fail
	claim   engine.Claim

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
	return &StackStorageEndpoint{name: "AscanStackEndpoint", src: srcProcessed, store: store}, nil
}

// NewSpectraStackEndpoint stores the raw uint16 spectra of each volume.
func NewSpectraStackEndpoint(store VolumeWriter) (*StackStorageEndpoint, error) {
	if store == nil {
		return nil, backend.Invalidf("endpoint.NewSpectraStackEndpoint: store=nil, expected an open storage (storage.SimpleStack)")
	}
	return &StackStorageEndpoint{name: "SpectraStackEndpoint", src: srcRaw, store: store}, nil
}

// SetExecutor sets the stack executor the endpoint formats with (vortex's
// AscanStackEndpoint(executor, storage)); before Prepare. A volume is the
// planner's segments x records x the samples the executor keeps.
func (e *StackStorageEndpoint) SetExecutor(exec *stage.StackFormatExecutor) error {
	if e.stream != nil {
		return fmt.Errorf("%s.SetExecutor: already prepared: %w", e.name, backend.ErrInUse)
	}
	e.exec = exec
	return nil
}

// Prepare checks the store against the volume shape, allocates the
// device volume and the pinned staging buffers, and starts the writer.
func (e *StackStorageEndpoint) Prepare(info engine.EndpointInfo) (err error) {
	if e.stream != nil {
		return fmt.Errorf("%s.Prepare: already prepared, expected one Prepare per endpoint", e.name)
	}
	if e.host != nil {
		defer func() {
			if err != nil {
				err = errors.Join(err, e.release())
			}
		}()
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
		return engine.Invalid("%s.Prepare: storage volume is %d bytes, expected %d (shape %v of %v; is the storage open with that shape?)",
			e.name, got, want, e.f.shape3(), e.f.dtype)
	}
	e.dev, e.fail = info.Device, info.Fail
	defer func() {
		if err != nil {
			err = errors.Join(err, e.release())
		}
	}()
	if e.stream, err = info.Device.NewStream(0); err != nil {
		return fmt.Errorf("%s.Prepare: stream: %w", e.name, err)
	}
	n := e.f.volumeBytes()
	if e.volume, err = info.Device.Alloc(n); err != nil {
		return fmt.Errorf("%s.Prepare: device volume of %d bytes: %w", e.name, n, err)
	}
	e.free = make(chan *staging, stagingBuffers)
	e.queue = make(chan *staging, stagingBuffers)
	for range stagingBuffers {
		st := &staging{}
		e.stages = append(e.stages, st)
		if st.buf, err = info.Device.AllocPinned(n); err != nil {
			return fmt.Errorf("%s.Prepare: pinned staging of %d bytes: %w", e.name, n, err)
		}
		if st.ready, err = info.Device.NewEvent(false); err != nil {
			return fmt.Errorf("%s.Prepare: staging event: %w", e.name, err)
		}
		e.free <- st
	}
	e.writer.Add(1)
	go e.write()
	return nil
}

// write stores queued volumes. Waiting on the staging event is this
// goroutine's purpose: the download was enqueued on the endpoint stream
// and the disk write must not start before it lands.
//
// The first failed write (a full disk, a file size limit, a closed file)
// stops the engine at once through EndpointInfo.Fail: its error event
// fires and Wait returns it. The volumes still queued are not written
// (the store is failing) and not counted as written.
func (e *StackStorageEndpoint) write() {
	defer e.writer.Done()
	for st := range e.queue {
		e.errMu.Lock()
		failed := e.err != nil
		e.errMu.Unlock()
		var err error
		if !failed {
			err = st.ready.Synchronize()
			if err == nil {
				err = e.store.WriteVolume(hostView[byte](st.buf.Ptr(), st.buf.Size()))
			}
		}
		e.errMu.Lock()
		if err != nil && e.err == nil {
			e.err = fmt.Errorf("%s: storing volume %d: %w", e.name, e.written, err)
		} else if !failed {
			e.written++
		}
		reportErr := e.err
		e.errMu.Unlock()
		// Fail before the staging buffer goes back: the engine's Flush
		// waits for every buffer, so the error is posted before the run
		// can end and close its event queue.
		if err != nil && e.fail != nil {
			e.fail(reportErr)
		}
		e.free <- st
	}
}

// Stream is the endpoint's stream.
func (e *StackStorageEndpoint) Stream() backend.Stream { return e.stream }

// Format places the block into the device volume; on each completed
// volume it enqueues the download into a free staging buffer and hands
// it to the writer. Waiting for a free staging buffer is backpressure from
// a slow disk; it is not interrupted by a stop, so no completed volume is
// lost.
func (e *StackStorageEndpoint) Format(b *engine.BlockData, plan *engine.FormatPlan) error {
	if e.host != nil {
		return e.formatHost(b, plan)
	}
	e.errMu.Lock()
	werr := e.err
	e.errMu.Unlock()
	if werr != nil {
		// Also reported through Fail; returning it here keeps the engine
		// from formatting volumes that can no longer be stored.
		return werr
	}
	if err := e.stream.WaitEvent(b.Ready); err != nil {
		return fmt.Errorf("%s.Format: %w", e.name, err)
	}
	// Formatting runs copy by copy so that a volume's download is
	// enqueued between its last copy and the next volume's first.
	for i := range plan.Actions {
		a := &plan.Actions[i]
		switch a.Kind {
		case stage.Copy:
			one := engine.FormatPlan{Actions: plan.Actions[i : i+1]}
			if err := e.f.format(e.stream, e.volume.Ptr(), b, &one); err != nil {
				return fmt.Errorf("%s.Format: %w", e.name, err)
			}
		case stage.FinishVolume:
			st := <-e.free
			if err := e.stream.Copy(st.buf.Ptr(), e.volume.Ptr(), e.f.volumeBytes()); err != nil {
				e.free <- st
				return fmt.Errorf("%s.Format: download of volume %d: %w", e.name, a.VolumeIndex, err)
			}
			if err := e.stream.Record(st.ready); err != nil {
				e.free <- st
				return fmt.Errorf("%s.Format: %w", e.name, err)
			}
			e.queue <- st
		}
	}
	return nil
}

// Flush waits until the writer has stored every queued volume and
// returns the first write error.
func (e *StackStorageEndpoint) Flush() error {
	if e.host != nil {
		if e.host.w == nil {
			return nil
		}
		return e.host.w.flush()
	}
	if e.free == nil {
		return nil
	}
	// Holding every staging buffer means none is queued or being written.
	held := make([]*staging, 0, stagingBuffers)
	for range stagingBuffers {
		held = append(held, <-e.free)
	}
	for _, st := range held {
		e.free <- st
	}
	e.errMu.Lock()
	defer e.errMu.Unlock()
	return e.err
}

// Written returns how many volumes the writer has handled.
func (e *StackStorageEndpoint) Written() int {
	if e.host != nil && e.host.w != nil {
		return e.host.w.volumes()
	}
	e.errMu.Lock()
	defer e.errMu.Unlock()
	return e.written
}

// ReadsPositions (engine.PositionReader): stacks store A-scans, spectra
// or the block's host streams, never the device positions.
func (e *StackStorageEndpoint) ReadsPositions() bool { return false }

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
	if e.host != nil && e.host.w != nil {
		e.host.w.close()
		e.host.w = nil
	}
	if e.queue != nil {
		close(e.queue)
		e.writer.Wait()
		e.queue = nil
	}
	if e.stream != nil {
		// Teardown wait: queued copies read the buffers freed below.
		errs = append(errs, e.stream.Synchronize(), e.stream.Close())
		e.stream = nil
	}
	if e.volume != nil {
		errs = append(errs, e.volume.Free())
		e.volume = nil
	}
	for _, st := range slices.Backward(e.stages) {
		if st.buf != nil {
			errs = append(errs, st.buf.Free())
		}
		if st.ready != nil {
			errs = append(errs, st.ready.Close())
		}
	}
	e.stages, e.free = nil, nil
	return errors.Join(errs...)
}
