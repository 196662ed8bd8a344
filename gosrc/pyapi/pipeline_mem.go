package pyapi

import (
	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/hostmem"
	"github.com/vortexgo/vortexgo/gosrc/memory"
	"github.com/vortexgo/vortexgo/gosrc/pipeline"
)

// ManagedContext is one device's coordinator plus the triple buffers and
// pipeline managers it created and closes (pipeline.ManagedGpuContext).
// Closing it releases the coordinator's id.
type ManagedContext struct {
	Object
	x     *pipeline.ManagedGpuContext
	coord *AsyncCoordinator
}

// NewManagedContext creates the context (enableStreams false: one stream)
// from a pipeline.CoordinatorOptions record, its allocations charged to the
// budget as "managed_context".
func NewManagedContext(dev *Device, enableStreams bool, options string) (*ManagedContext, error) {
	var o pipeline.CoordinatorOptions
	d, err := charged(dev, "managed_context")
	if err == nil {
		err = backend.DecodeRecord("CoordinatorOptions", options, &o)
	}
	if err != nil {
		return nil, tag(err)
	}
	x, err := pipeline.NewManagedGpuContext(d, enableStreams, o)
	if err != nil {
		return nil, tag(err)
	}
	c := register(x.AsyncCoordinator(), dev.d)
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
// and writes round, upload, compute, download, downloaded_round as a record.
func (x *ManagedContext) TripleBufferedStep(tb *TripleBuffer, srcPtr, srcLen, dstPtr, dstLen, n int, op *StageOp, rec, nrec int) (int, error) {
	r, err := x.x.TripleBufferedStep(tb.tb, pipeline.StepIO{Src: pipeline.HostMem{Ptr: uintptr(srcPtr), Len: srcLen},
		Dst: pipeline.HostMem{Ptr: uintptr(dstPtr), Len: dstLen}, N: n, Op: op.op})
	return hostmem.Record(rec, nrec, r.Record()...), tag(err)
}

// Readback copies device memory into pooled pinned buffers asynchronously
// (pipeline.Readback); its buffers are charged to the budget as "readback".
// Its Record is total, free, held and retiring buffers.
type Readback struct {
	Object // registered when it owns its stream
	r      *pipeline.Readback
	stream *Stream // its own stream, borrowed from its id; nil on the caller's
}

// NewReadback creates a pool of pinned buffers of size bytes (growing to
// maxBuffers, 0: no growth) copying on stream streamID (0: its own).
func NewReadback(dev *Device, size, buffers, maxBuffers, priority, streamID int) (*Readback, error) {
	d, err := charged(dev, "readback")
	if err != nil {
		return nil, tag(err)
	}
	s, err := streamOf(streamID)
	if err != nil {
		return nil, tag(err)
	}
	r, err := pipeline.NewReadback(d, size, pipeline.ReadbackOptions{Buffers: buffers, MaxBuffers: maxBuffers, Priority: priority, Stream: s})
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
// charged to the budget as "buffer_pool"; its Record is allocated, free,
// pending and in-use buffers.
type BufferPool struct {
	Object
	p *memory.BufferPool
}

// NewBufferPool allocates buffers from a memory.PoolConfig record (Policy
// 0 grow, 1 block: Get waits rather than grow; Max 0: no cap).
func NewBufferPool(dev *Device, config string) (*BufferPool, error) {
	var c memory.PoolConfig
	a, err := dev.allocator("buffer_pool")
	if err == nil {
		err = backend.DecodeRecord("BufferPool", config, &c)
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
	return &Lease{ptr: b.b.Ptr(), release: l.Release}, nil // a Lend releases the pool's way
}

// Put returns b, reusable once event eventID completes, or once the work
// queued so far on stream streamID is done (both 0: at once).
func (p *BufferPool) Put(b *Buffer, eventID, streamID int) error {
	e, err := eventOf(eventID)
	if err != nil {
		return tag(err)
	}
	s, err := streamOf(streamID)
	switch {
	case err != nil:
	case s != nil:
		err = p.p.PutStream(b.b, s)
	default:
		err = p.p.Put(b.b, e)
	}
	return tag(err)
}
