package pyapi

import (
	"fmt"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/handle"
	"github.com/vortexgo/vortexgo/gosrc/memory"
	"github.com/vortexgo/vortexgo/gosrc/pipeline"
)

// ---- ManagedGpuContext ----

// ManagedContext is one device's coordinator plus the triple buffers and
// pipeline managers it created and closes (pipeline.ManagedGpuContext).
type ManagedContext struct {
	x     *pipeline.ManagedGpuContext
	dev   backend.Device
	coord *AsyncCoordinator
}

// NewManagedContext creates the context; enableStreams false runs all work
// on one stream (the sequential baseline). Its allocations are charged to
// the budget as "managed_context".
func NewManagedContext(dev *Device, enableStreams bool, uploadPriority, computePriority, downloadPriority int) (*ManagedContext, error) {
	d, err := chargedDevice(dev, "managed_context")
	if err != nil {
		return nil, tag(err)
	}
	x, err := pipeline.NewManagedGpuContext(d, enableStreams, pipeline.CoordinatorOptions{
		UploadPriority: uploadPriority, ComputePriority: computePriority, DownloadPriority: downloadPriority})
	if err != nil {
		return nil, ptag(err)
	}
	coord := &AsyncCoordinator{c: x.AsyncCoordinator(), dev: dev.d}
	coord.borrowedStreams()
	return &ManagedContext{x: x, dev: dev.d, coord: coord}, nil
}

// StreamsEnabled reports whether the roles have their own streams.
func (x *ManagedContext) StreamsEnabled() bool { return x.x.StreamsEnabled() }

// Coordinator is the context's coordinator (closed with the context).
func (x *ManagedContext) Coordinator() *AsyncCoordinator { return x.coord }

// CreateTripleBuffer allocates a triple buffer closed with the context.
func (x *ManagedContext) CreateTripleBuffer(size int, dtype string) (*TripleBuffer, error) {
	dt, err := parseDType(dtype)
	if err != nil {
		return nil, tag(err)
	}
	if size <= 0 {
		return nil, tag(badArg("size=%d, expected size > 0 elements", size))
	}
	tb, err := x.x.CreateTripleBuffer(size, dt)
	if err != nil {
		return nil, ptag(err)
	}
	return &TripleBuffer{tb: tb}, nil
}

// CreatePipelineManager creates a manager on the context's streams.
func (x *ManagedContext) CreatePipelineManager() (*PipelineManager, error) {
	m, err := x.x.CreatePipelineManager()
	if err != nil {
		return nil, ptag(err)
	}
	return &PipelineManager{m: m, c: x.x.AsyncCoordinator(), dev: x.dev}, nil
}

// TripleBufferedStep runs one round of tb: upload [srcPtr, +srcLen) (0: no
// input), process the slot uploaded last round with op, download the slot
// processed last round into [dstPtr, +dstLen), advance. n is the bytes per
// transfer (0: the whole buffer). The result is "round,upload,compute,
// download,downloaded_round" (ids 0 where a stage had no buffer).
func (x *ManagedContext) TripleBufferedStep(tb *TripleBuffer, srcPtr, srcLen, dstPtr, dstLen, n int, op *StageOp) (string, error) {
	if tb == nil || op == nil {
		return "", tag(badArg("triple_buffer and op are required"))
	}
	if op.kind == OpKindUpload || op.kind == OpKindDownload {
		return "", tag(badArg("op is a %s op, expected a kernel or spin op", op.name))
	}
	if srcLen < 0 || dstLen < 0 || (srcPtr == 0) != (srcLen == 0) || (dstPtr == 0) != (dstLen == 0) {
		return "", tag(badArg("src=(0x%x, %d) dst=(0x%x, %d), expected address and length both set or both 0", srcPtr, srcLen, dstPtr, dstLen))
	}
	rep, err := x.x.TripleBufferedStep(tb.tb, pipeline.StepIO{
		Src: pipeline.HostMem{Ptr: uintptr(srcPtr), Len: srcLen},
		Dst: pipeline.HostMem{Ptr: uintptr(dstPtr), Len: dstLen},
		N:   n, Op: op.op,
	})
	if err != nil {
		return "", ptag(err)
	}
	return fmt.Sprintf("%d,%d,%d,%d,%d", rep.Round, rep.Upload, rep.Compute, rep.Download, rep.DownloadedRound), nil
}

// Close closes the managers, the coordinator and the triple buffers.
func (x *ManagedContext) Close() error {
	err := x.x.Close()
	if err == nil {
		x.coord.forgetStreams()
	}
	return ptag(err)
}

// ---- Readback ----

// Readback copies device memory into pooled pinned buffers asynchronously
// (pipeline.Readback); its buffers are charged to the budget as "readback".
type Readback struct {
	r      *pipeline.Readback
	stream *Stream
	owns   bool
	id     handle.ID // registered when it owns its stream, which is borrowed from it
}

// NewReadback creates a pool of buffers pinned buffers of size bytes
// (growing to maxBuffers, 0: no growth) copying on a stream of its own.
func NewReadback(dev *Device, size, buffers, maxBuffers, priority int) (*Readback, error) {
	return newReadback(dev, size, buffers, maxBuffers, nil, priority)
}

// NewReadbackOn is NewReadback copying on the caller's stream.
func NewReadbackOn(dev *Device, size, buffers, maxBuffers int, stream *Stream) (*Readback, error) {
	if stream == nil {
		return nil, tag(badArg("stream=None, expected a Stream"))
	}
	return newReadback(dev, size, buffers, maxBuffers, stream, 0)
}

func newReadback(dev *Device, size, buffers, maxBuffers int, stream *Stream, priority int) (*Readback, error) {
	if size <= 0 || buffers < 1 || (maxBuffers != 0 && maxBuffers < buffers) {
		return nil, tag(badArg("buffer_size=%d buffers=%d max_buffers=%d, expected buffer_size > 0, buffers >= 1 and max_buffers 0 or >= buffers",
			size, buffers, maxBuffers))
	}
	d, err := chargedDevice(dev, "readback")
	if err != nil {
		return nil, tag(err)
	}
	opts := pipeline.ReadbackOptions{Buffers: buffers, MaxBuffers: maxBuffers, Priority: priority}
	if stream != nil {
		opts.Stream = stream.s
	}
	r, err := pipeline.NewReadback(d, size, opts)
	if err != nil {
		return nil, ptag(err)
	}
	rb := &Readback{r: r, stream: stream, owns: stream == nil}
	if stream == nil {
		// The readback's own stream is borrowed from the readback: closing
		// it makes a cached wrapper stale.
		rb.id = handles.Register(rb)
		rb.stream, _ = borrowStream(rb.id, r.Stream())
	}
	return rb, nil
}

// Start copies n bytes at device address src into a pooled pinned buffer
// after the work queued so far on producer, and returns at once.
func (r *Readback) Start(src, n int, producer *Stream) (*ReadbackHandle, error) {
	if producer == nil {
		return nil, tag(badArg("stream=None, expected the producer stream"))
	}
	if n < 0 || n > r.r.BufferSize() {
		return nil, tag(badArg("readback of %d bytes, expected 0 <= nbytes <= %d (the pool's buffer size)", n, r.r.BufferSize()))
	}
	h, err := r.r.ReadbackAsync(uintptr(src), n, producer.s)
	if err != nil {
		return nil, ptag(err)
	}
	return &ReadbackHandle{h: h}, nil
}

// Stream is the stream the copies run on.
func (r *Readback) Stream() *Stream { return r.stream }

// BufferSize is each pinned buffer's size in bytes.
func (r *Readback) BufferSize() int { return r.r.BufferSize() }

// Stats is "total,free,held,retiring".
func (r *Readback) Stats() string {
	t, f, h, rt := r.r.Stats()
	return fmt.Sprintf("%d,%d,%d,%d", t, f, h, rt)
}

// Close waits for the copies and frees every buffer.
func (r *Readback) Close() error {
	err := r.r.Close()
	if err == nil && r.owns {
		handles.Release(r.id)
	}
	return ptag(err)
}

// ReadbackHandle is one readback in flight or done.
type ReadbackHandle struct{ h *pipeline.ReadbackHandle }

// Done reports whether the copy completed, without blocking.
func (h *ReadbackHandle) Done() (bool, error) {
	ok, err := h.h.Done()
	return ok, ptag(err)
}

// Wait blocks until the copy completes; timeoutUs < 0 waits forever.
func (h *ReadbackHandle) Wait(timeoutUs int) error { return ptag(h.h.Wait(durationUs(timeoutUs))) }

// StreamWait makes s wait for the copy on the device (no host wait).
func (h *ReadbackHandle) StreamWait(s *Stream) error {
	if s == nil {
		return tag(badArg("stream=None, expected a Stream"))
	}
	return ptag(h.h.StreamWait(s.s))
}

// Ptr is the pinned address of the copied bytes.
func (h *ReadbackHandle) Ptr() int { return int(h.h.Ptr()) }

// Len is the number of bytes copied.
func (h *ReadbackHandle) Len() int { return h.h.Len() }

// Release gives the buffer back to the pool once its copy completed.
func (h *ReadbackHandle) Release() error { return ptag(h.h.Release()) }

// ---- BufferPool ----

// BufferPool recycles pinned buffers of one size, each reused only after
// the event it was returned with completes (memory.BufferPool). Its
// buffers are charged to the budget as "buffer_pool".
type BufferPool struct {
	p *memory.BufferPool
}

// NewBufferPool allocates initial buffers of size bytes; block makes Get
// wait rather than grow; max caps growth (0: no cap).
func NewBufferPool(dev *Device, size, initial, max int, block bool) (*BufferPool, error) {
	if dev == nil {
		return nil, tag(badArg("device=None, expected a Device"))
	}
	if size <= 0 || initial < 0 || max < 0 || (max > 0 && initial > max) || (block && initial == 0) {
		return nil, tag(badArg("buffer_size=%d pool_size=%d max_size=%d policy=%s, expected buffer_size > 0, pool_size >= 0 (> 0 for 'block') and max_size 0 or >= pool_size",
			size, initial, max, map[bool]string{true: "block", false: "grow"}[block]))
	}
	a, err := allocatorFor(dev.d, "buffer_pool")
	if err != nil {
		return nil, tag(err)
	}
	pol := memory.Grow
	if block {
		pol = memory.Block
	}
	p, err := memory.NewBufferPool(a, memory.PoolConfig{Size: size, Initial: initial, Max: max, Policy: pol})
	if err != nil {
		return nil, ptag(err)
	}
	return &BufferPool{p: p}, nil
}

// Get returns a buffer, waiting at most timeoutUs (< 0: forever, 0: not at
// all) when the pool is empty and may not grow. The GIL is released.
func (p *BufferPool) Get(timeoutUs int) (*Buffer, error) {
	b, err := p.p.GetTimeout(durationUs(timeoutUs))
	if err != nil {
		return nil, ptag(err)
	}
	return &Buffer{b: b}, nil
}

// Put returns b, reusable once after completes. The caller keeps after
// unchanged until the pool hands b out again.
func (p *BufferPool) Put(b *Buffer, after *Event) error {
	if b == nil || after == nil {
		return tag(badArg("buffer and event are required"))
	}
	return p.put(b, after.e)
}

// PutNow returns b, reusable at once.
func (p *BufferPool) PutNow(b *Buffer) error {
	if b == nil {
		return tag(badArg("buffer=None, expected a buffer from this pool"))
	}
	return p.put(b, nil)
}

func (p *BufferPool) put(b *Buffer, ev backend.Event) error {
	if err := p.p.Put(b.b, ev); err != nil {
		return ptag(asValue(err))
	}
	return nil
}

// PutStream returns b, reusable once the work queued so far on s is done.
func (p *BufferPool) PutStream(b *Buffer, s *Stream) error {
	if b == nil || s == nil {
		return tag(badArg("buffer and stream are required"))
	}
	if err := p.p.PutStream(b.b, s.s); err != nil {
		return ptag(asValue(err))
	}
	return nil
}

// Stats is "allocated,free,pending,in_use".
func (p *BufferPool) Stats() string {
	s := p.p.Stats()
	return fmt.Sprintf("%d,%d,%d,%d", s.Allocated, s.Free, s.Pending, s.InUse)
}

// BufferSize is each buffer's size in bytes.
func (p *BufferPool) BufferSize() int { return p.p.Config().Size }

// Close frees the pool's buffers (in-use ones when they are put back).
func (p *BufferPool) Close() error { return ptag(p.p.Close()) }

// asValue marks a "not from this pool" error as the caller's bad argument,
// leaving closed-pool and driver errors as they are.
func asValue(err error) error {
	if err == nil || isClosedOrDriver(err) {
		return err
	}
	return badArg("%v", err)
}

func isClosedOrDriver(err error) bool {
	t := tag(err).Error()
	return len(t) > 0 && (hasPrefix(t, tagClosed) || hasPrefix(t, tagCuda) || hasPrefix(t, tagBudget))
}

func hasPrefix(s, p string) bool { return len(s) >= len(p) && s[:len(p)] == p }
