package endpoint

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"unsafe"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/engine"
	"github.com/vortexgo/vortexgo/gosrc/format"
	"github.com/vortexgo/vortexgo/gosrc/guard"
)

// The stream endpoints: vortex's streams_stack_storage (Counter, GalvoTarget,
// SampleTarget, GalvoActual, SampleActual and Strobes StackEndpoint and
// HDF5StackEndpoint) and streams_stack_cuda_host_tensor
// (CounterStackHostTensorEndpoint, GalvoActualStackHostTensorEndpoint).
// The block's streams live in host memory (engine.HostStreams), so, as in
// vortex, they are formatted on the host: no device work, no upload.

// Stream names one of the block's streams (vortex's stream_index_t).
type Stream int

// The streams, in vortex's stream_index_t order.
const (
	StreamCounter Stream = iota
	StreamGalvoTarget
	StreamSampleTarget
	StreamGalvoActual
	StreamSampleActual
	StreamStrobes
)

var streamInfo = [...]struct {
	name, class, dtype string
	size               int
}{
	StreamCounter:      {"counter", "Counter", "uint64", 8},
	StreamGalvoTarget:  {"galvo_target", "GalvoTarget", "float64", 8},
	StreamSampleTarget: {"sample_target", "SampleTarget", "float64", 8},
	StreamGalvoActual:  {"galvo_actual", "GalvoActual", "float64", 8},
	StreamSampleActual: {"sample_actual", "SampleActual", "float64", 8},
	StreamStrobes:      {"strobes", "Strobes", "uint32", 4},
}

// String is vortex's stream name ("galvo_target").
func (s Stream) String() string {
	if s >= 0 && int(s) < len(streamInfo) {
		return streamInfo[s].name
	}
	return fmt.Sprintf("Stream(%d)", int(s))
}

// DTypeName is the NumPy name of the stream's elements (vortex's types:
// counter_t = uint64, analog double, digital uint32).
func (s Stream) DTypeName() string { return streamInfo[s].dtype }

// ParseStream reads a stream by vortex's name ("counter", "galvo_target",
// "sample_target", "galvo_actual", "sample_actual", "strobes").
func ParseStream(name string) (Stream, error) {
	if s, ok := streamNamed(name); ok {
		return s, nil
	}
	return 0, engine.Invalid("stream %q, expected counter, galvo_target, sample_target, galvo_actual, sample_actual or strobes", name)
}

// streamNamed parses a stream name.
func streamNamed(name string) (Stream, bool) {
	for i, in := range streamInfo {
		if in.name == name {
			return Stream(i), true
		}
	}
	return 0, false
}

// BufferStrategy is vortex's buffer_strategy_t: what a stack storage
// endpoint buffers before it writes.
type BufferStrategy int

const (
	// BufferBlock (vortex's BufferStrategy.Block, buffer_strategy_t::none)
	// writes each copy of each block at once (write_partial_bscan).
	BufferBlock BufferStrategy = iota
	// BufferSegment buffers one segment and writes it when it finishes.
	BufferSegment
	// BufferVolume (vortex's default) buffers the volume and writes the
	// segments each block finished at the block's end, then advances at
	// the volume's end.
	BufferVolume
)

var strategyNames = [...]string{"Block", "Segment", "Volume"}

// String is vortex's Python name of the strategy.
func (s BufferStrategy) String() string {
	if s >= 0 && int(s) < len(strategyNames) {
		return strategyNames[s]
	}
	return fmt.Sprintf("BufferStrategy(%d)", int(s))
}

// ParseBufferStrategy reads a strategy by vortex's Python name.
func ParseBufferStrategy(name string) (BufferStrategy, error) {
	for i, n := range strategyNames {
		if strings.EqualFold(n, name) {
			return BufferStrategy(i), nil
		}
	}
	return 0, engine.Invalid("buffer_strategy %q, expected Block, Segment or Volume", name)
}

// StackWriter is the storage a stream stack endpoint writes to, with
// vortex's stack operations; storage.SimpleStack and storage.HDF5Stack
// implement it.
type StackWriter interface {
	// VolumeShape is (bscans, ascans, samples, channels); zeros when closed.
	VolumeShape() [4]int
	// DTypeName is the NumPy name of the elements.
	DTypeName() string
	// IsOpen is vortex's ready().
	IsOpen() bool
	// WriteMultiBscan writes whole B-scans from B-scan index.
	WriteMultiBscan(index int, data []byte) error
	// WritePartialBscan writes whole A-scans into B-scan bscan from A-scan ascan.
	WritePartialBscan(bscan, ascan int, data []byte) error
	// AdvanceVolume moves to the next volume.
	AdvanceVolume(allocate bool) error
}

// streamSource reads one stream of a block as typed host rows.
type streamSource struct {
	s       Stream
	slice   format.SampleSlice
	tf      format.SampleTransform
	counter []uint64 // the counter rows (vortex computes them per block too)

	// the block's rows, one of them set by load
	u64 []uint64
	u32 []uint32
	f64 []float64
	ch  int // columns of the stream
}

// load points the source at block b's rows and checks that the executor
// keeps kept columns of them.
func (r *streamSource) load(name string, b *engine.BlockData, kept int) error {
	h := b.HostStreams()
	n := b.Records
	r.u64, r.u32, r.f64, r.ch = nil, nil, nil, 1
	switch r.s {
	case StreamCounter:
		if cap(r.counter) < n {
			r.counter = make([]uint64, n)
		}
		r.counter = r.counter[:n]
		for i := range r.counter {
			r.counter[i] = uint64(b.Sample) + uint64(i)
		}
		r.u64 = r.counter
	case StreamStrobes:
		r.u32 = h.Strobes
	case StreamGalvoTarget:
		r.f64, r.ch = h.GalvoTarget, h.OutChannels
	case StreamSampleTarget:
		r.f64, r.ch = h.SampleTarget, h.OutChannels
	case StreamGalvoActual:
		r.f64, r.ch = h.GalvoActual, h.InChannels
	case StreamSampleActual:
		r.f64, r.ch = h.SampleActual, h.InChannels
	}
	if n > 0 && len(r.u64)+len(r.u32)+len(r.f64) != n*r.ch {
		return fmt.Errorf("%s.Format: block %d has no %s stream (%d columns), expected an engine with a scan queue (and IO input channels for the actual positions)",
			name, b.Block.ID, r.s, r.ch)
	}
	want := r.ch
	if r.slice.Simple {
		if r.slice.Stop > r.ch {
			return engine.Invalid("%s.Format: the executor's sample_slice %v, expected stop <= the %d columns of the %s stream", name, r.slice, r.ch, r.s)
		}
		want = r.slice.Count()
	}
	if want != kept {
		return engine.Invalid("%s.Format: the %s stream has %d columns (%d kept by the executor's sample_slice), expected %d (the volume's samples); "+
			"size the storage or tensor as (segments, records, %d)", name, r.s, r.ch, want, kept, want)
	}
	return nil
}

// place formats copy a of the loaded block into vol (shape [S, R, K] of
// the stream's elements, as bytes) at segment seg, record rec: vortex's
// stack executor on a (records, columns) block, the columns being the
// samples (sliced and transformed as the executor says).
func (r *streamSource) place(vol []byte, shape [3]int, a *format.Action, seg, rec int) error {
	if seg < 0 || seg >= shape[0] || rec < 0 || rec+a.Count > shape[1] {
		return engine.Invalid("copy of %d records to segment %d, record %d, expected inside the volume's (%d, %d) segments x records",
			a.Count, seg, rec, shape[0], shape[1])
	}
	if a.BlockOffset < 0 || (a.BlockOffset+a.Count)*r.ch > len(r.u64)+len(r.u32)+len(r.f64) {
		return engine.Invalid("copy of records [%d, %d), expected inside the block", a.BlockOffset, a.BlockOffset+a.Count)
	}
	start, step := 0, 1
	if r.slice.Simple {
		start, step = r.slice.Start, r.slice.Step
	}
	g := placement{shape: shape, ch: r.ch, a: a, seg: seg, rec: rec, start: start, step: step}
	switch {
	case r.u64 != nil:
		placeRows(viewAs[uint64](vol), r.u64, &g, r.tf, castUnsigned[uint64])
	case r.u32 != nil:
		placeRows(viewAs[uint32](vol), r.u32, &g, r.tf, castUnsigned[uint32])
	default:
		placeRows(viewAs[float64](vol), r.f64, &g, r.tf, func(x float64) float64 { return x })
	}
	return nil
}

type placement struct {
	shape                 [3]int
	ch                    int
	a                     *format.Action
	seg, rec, start, step int
}

// placeRows is the stack executor's copy for one element type: block row
// BlockOffset+i goes to record rec+i (rec+Count-1-i when reversed).
func placeRows[T uint64 | uint32 | float64](dst, src []T, g *placement, tf format.SampleTransform, cast func(float64) T) {
	k := g.shape[2]
	for i := range g.a.Count {
		d := g.rec + i
		if g.a.Reverse {
			d = g.rec + g.a.Count - 1 - i
		}
		out := dst[(g.seg*g.shape[1]+d)*k : (g.seg*g.shape[1]+d+1)*k]
		row := src[(g.a.BlockOffset+i)*g.ch : (g.a.BlockOffset+i+1)*g.ch]
		for j := range out {
			v := row[g.start+j*g.step]
			if tf.Linear {
				v = cast(tf.Scale*float64(v) + tf.Offset)
			}
			out[j] = v
		}
	}
}

// castUnsigned converts a transformed sample to an unsigned stream type:
// truncated toward zero as C++'s cast, saturated (NaN and negatives give
// 0) where vortex's cast would be undefined.
func castUnsigned[T uint64 | uint32](x float64) T {
	limit := float64(^T(0))
	switch {
	case x != x || x <= 0:
		return 0
	case x >= limit:
		return ^T(0)
	}
	return T(math.Trunc(x))
}

// viewAs views a byte slice (allocated by newElems, so aligned) as T.
func viewAs[T any](b []byte) []T {
	var z T
	n := len(b) / int(unsafe.Sizeof(z))
	if n == 0 {
		return nil
	}
	return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(b))), n)
}

// newElems allocates n bytes aligned for any stream element.
func newElems(n int) []byte {
	w := make([]uint64, (n+7)/8)
	if len(w) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(w))), n)
}

// --- the stack storage writer -------------------------------------------------

type opKind uint8

const (
	opPartial opKind = iota // WritePartialBscan(bscan, ascan)
	opMulti                 // WriteMultiBscan(bscan)
	opAdvance               // AdvanceVolume(false)
	opVolume                // WriteVolume: a whole volume, then the next (VolumeWriter)
)

type stackOp struct {
	kind         opKind
	bscan, ascan int
	off, n       int // the op's bytes in the job's data
}

// stackJob is one block's storage operations with their data: copied out
// of the endpoint's buffer (host streams, into data) or downloaded from
// the device buffer (into pinned, complete at ready), so that the writer
// never reads what the next block formats.
type stackJob struct {
	ops    []stackOp
	data   []byte         // host jobs
	pinned backend.Buffer // device jobs
	ready  backend.Event  // device jobs: the downloads are done
	used   int            // bytes of pinned in use
	block  int64
}

func (j *stackJob) add(kind opKind, bscan, ascan int, data []byte) {
	j.ops = append(j.ops, stackOp{kind: kind, bscan: bscan, ascan: ascan, off: len(j.data), n: len(data)})
	j.data = append(j.data, data...)
}

func (j *stackJob) bytes(op stackOp) []byte {
	if j.pinned != nil {
		return hostView[byte](j.pinned.Ptr()+uintptr(op.off), op.n)
	}
	return j.data[op.off : op.off+op.n]
}

// target is the storage operations a job runs (stackTarget).
type target struct {
	open    func() bool
	advance func(bool) error
	multi   func(int, []byte) error
	partial func(int, int, []byte) error
	volume  func([]byte) error // a VolumeWriter's, set alone
}

// opWriter runs the jobs' operations on its own goroutine, off the
// engine's hot path.
type opWriter struct {
	name   string
	t      target
	free   chan *stackJob
	queue  chan *stackJob
	wg     sync.WaitGroup
	fail   func(error)
	mu     sync.Mutex
	err    error
	volume int // volumes advanced past
}

// newOpWriter starts the writer with jobs (new host jobs when nil).
func newOpWriter(name string, t target, fail func(error), jobs []*stackJob) *opWriter {
	if jobs == nil {
		for range stagingBuffers {
			jobs = append(jobs, &stackJob{})
		}
	}
	o := &opWriter{name: name, t: t, fail: fail, free: make(chan *stackJob, len(jobs)), queue: make(chan *stackJob, len(jobs))}
	for _, j := range jobs {
		o.free <- j
	}
	o.wg.Add(1)
	go o.run()
	return o
}

// take waits for a free job (backpressure from a slow disk) and empties it.
func (o *opWriter) take(block int64) *stackJob {
	j := <-o.free
	j.ops, j.data, j.used, j.block = j.ops[:0], j.data[:0], 0, block
	return j
}

// send hands j to the writer (after its downloads on s), or back to the
// free jobs when it has nothing to write.
func (o *opWriter) send(j *stackJob, s backend.Stream) error {
	if len(j.ops) == 0 {
		o.free <- j
		return nil
	}
	if j.ready != nil {
		if err := s.Record(j.ready); err != nil {
			j.ops = j.ops[:0]
			o.free <- j
			return fmt.Errorf("%s.Format: %w", o.name, err)
		}
	}
	o.queue <- j
	return nil
}

func (o *opWriter) firstErr() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.err
}

// run stores the queued jobs. Waiting on a job's event is this
// goroutine's purpose: its downloads were enqueued on the endpoint's
// stream and the disk writes must not start before they land.
func (o *opWriter) run() {
	defer o.wg.Done()
	for j := range o.queue {
		var err error
		advanced := 0
		if o.firstErr() == nil {
			advanced, err = o.store(j)
		}
		o.mu.Lock()
		o.volume += advanced
		if err != nil && o.err == nil {
			o.err = fmt.Errorf("%s: storing block %d: %w", o.name, j.block, err)
		}
		report := o.err
		o.mu.Unlock()
		// Fail before the job goes back: Flush waits for every job, so
		// the error is posted before the run ends.
		if err != nil && o.fail != nil {
			o.fail(report)
		}
		o.free <- j
	}
}

// store runs job j's operations; advanced counts the volumes it moved
// past. A panic becomes its error (the writer's sticky error, which stops
// the engine), so that run still returns the job: flush waits for every
// job, and a lost one would hang it.
func (o *opWriter) store(j *stackJob) (advanced int, err error) {
	defer guard.Recover(&err, o.name+": writer")
	if j.ready != nil {
		err = j.ready.Synchronize()
	}
	for _, op := range j.ops {
		if err != nil {
			break
		}
		switch op.kind {
		case opPartial:
			err = o.t.partial(op.bscan, op.ascan, j.bytes(op))
		case opMulti:
			err = o.t.multi(op.bscan, j.bytes(op))
		case opAdvance:
			// vortex's endpoint advances without allocating.
			if err = o.t.advance(false); err == nil {
				advanced++
			}
		case opVolume:
			if err = o.t.volume(j.bytes(op)); err == nil {
				advanced++
			}
		}
	}
	return advanced, err
}

// flush waits until every queued job is written.
func (o *opWriter) flush() error {
	held := make([]*stackJob, 0, cap(o.free))
	for range cap(o.free) {
		held = append(held, <-o.free)
	}
	for _, j := range held {
		o.free <- j
	}
	return o.firstErr()
}

func (o *opWriter) close() {
	close(o.queue)
	o.wg.Wait()
}

func (o *opWriter) volumes() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.volume
}

// segmentRuns sorts the finished segments below n and merges them into
// [first, end) runs of consecutive B-scans (vortex's detail::combine).
func segmentRuns(segs []int, n int) [][2]int {
	s := slices.DeleteFunc(slices.Clone(segs), func(v int) bool { return v < 0 || v >= n })
	slices.Sort(s)
	var runs [][2]int
	for _, v := range s {
		if k := len(runs); k > 0 && runs[k-1][1] == v {
			runs[k-1][1]++
		} else {
			runs = append(runs, [2]int{v, v + 1})
		}
	}
	return runs
}

// --- the stream stack storage endpoint ------------------------------------------

// hostStack is the host side of a stream stack storage endpoint: vortex's
// stack_storage with its buffer strategy, on the host.
type hostStack struct {
	src      streamSource
	strategy BufferStrategy
	sw       StackWriter
	vol      [4]int // the storage's volume shape
	shape    [3]int // the buffer's (segments, records, samples): by strategy
	recBytes int    // one record of the buffer
	buf      []byte
	w        *opWriter
	segs     []int // vortex's volume_segments of the block being formatted
}

// NewStreamStackEndpoint returns vortex's <Stream>StackEndpoint (a
// storage.SimpleStack) or <Stream>HDF5StackEndpoint (a storage.HDF5Stack):
// the stream's records, formatted by a stack executor (SetExecutor; by
// default every column), written with the buffer strategy.
func NewStreamStackEndpoint(s Stream, store any, strategy BufferStrategy) (*StackStorageEndpoint, error) {
	if s < 0 || int(s) >= len(streamInfo) {
		return nil, engine.Invalid("endpoint.NewStreamStackEndpoint: stream %d, expected 0 (counter) to 5 (strobes)", int(s))
	}
	name := streamInfo[s].class + "StackEndpoint"
	sw, ok := store.(StackWriter)
	if !ok || store == nil {
		return nil, engine.Invalid("%s: storage %T, expected a SimpleStack or HDF5Stack", name, store)
	}
	if got := sw.DTypeName(); got != s.DTypeName() {
		return nil, engine.Invalid("%s: storage of %s, expected %s (the %s stream's type)", name, got, s.DTypeName(), s)
	}
	if strategy < BufferBlock || strategy > BufferVolume {
		return nil, engine.Invalid("%s: buffer_strategy %d, expected Block (0), Segment (1) or Volume (2)", name, int(strategy))
	}
	e := &StackStorageEndpoint{name: name, strategy: strategy,
		host: &hostStack{src: streamSource{s: s, slice: format.NullSlice()}, strategy: strategy, sw: sw}}
	if c, ok := store.(engine.Claimer); ok {
		e.claimer = c
	}
	return e, nil
}

// prepareHost sizes the buffer from the storage's shape and starts the
// writer.
func (e *StackStorageEndpoint) prepareHost(info engine.EndpointInfo) (err error) {
	h := e.host
	if e.exec != nil {
		c := e.exec.Config()
		h.src.slice, h.src.tf = c.SampleSlice, c.SampleTransform
	}
	if !h.sw.IsOpen() {
		return engine.Invalid("%s.Prepare: the storage is not open, expected open(config) before Engine.prepare()", e.name)
	}
	h.vol = h.sw.VolumeShape()
	// A planner size left unset (vortex's unbounded) takes the storage's.
	if (h.vol[0] != info.SegmentsPerVolume && info.SegmentsPerVolume != format.Unbounded) ||
		(h.vol[1] != info.RecordsPerSegment && info.RecordsPerSegment != format.Unbounded) || h.vol[3] != 1 {
		return engine.Invalid("%s.Prepare: SimpleStackConfig.shape (HDF5StackConfig.shape) %v, expected (%d, %d, columns, 1): the formatter's segments x records, "+
			"the stream's columns (after the executor's sample_slice) and one channel",
			e.name, h.vol, info.SegmentsPerVolume, info.RecordsPerSegment)
	}
	h.shape = [3]int{h.vol[0], h.vol[1], h.vol[2]}
	switch h.strategy {
	case BufferSegment:
		h.shape[0] = 1
	case BufferBlock:
		h.shape[0], h.shape[1] = 1, info.RecordsPerBlock
	}
	size := streamInfo[h.src.s].size
	n, ok := engine.MulSize(h.shape[0], h.shape[1], h.shape[2], size)
	if !ok {
		return engine.TooLarge("%s.Prepare: buffer %v of %s, expected a smaller volume", e.name, h.shape, h.src.s.DTypeName())
	}
	h.recBytes = h.shape[2] * size
	h.buf = newElems(n)
	if e.stream, err = info.Device.NewStream(0); err != nil {
		return fmt.Errorf("%s.Prepare: stream: %w", e.name, err)
	}
	e.fail = info.Fail
	h.w = newOpWriter(e.name, target{open: h.sw.IsOpen, advance: h.sw.AdvanceVolume, multi: h.sw.WriteMultiBscan,
		partial: h.sw.WritePartialBscan}, info.Fail, nil)
	e.layout = h.vol
	return nil
}

// formatHost runs the plan on the host as vortex's stack_storage does for
// a host source, handing the block's writes to the writer in one job.
func (e *StackStorageEndpoint) formatHost(b *engine.BlockData, plan *engine.FormatPlan) error {
	h := e.host
	if err := h.w.firstErr(); err != nil {
		return err // also reported through Fail
	}
	open := h.sw.IsOpen()
	if open {
		if err := h.src.load(e.name, b, h.shape[2]); err != nil {
			return err
		}
	}
	j := h.w.take(b.Block.ID)                  // backpressure from a slow disk
	defer guard.Undo(func() { h.w.free <- j }) // flush waits for every job
	h.segs = h.segs[:0]
	segBytes := h.shape[1] * h.recBytes
	for i := range plan.Actions {
		a := &plan.Actions[i]
		switch a.Kind {
		case format.Copy:
			if !open || a.Count == 0 {
				continue
			}
			seg, rec := a.BufferSegment, a.BufferRecord
			switch h.strategy {
			case BufferSegment:
				seg = 0
			case BufferBlock:
				seg, rec = 0, 0
			}
			if err := h.src.place(h.buf, h.shape, a, seg, rec); err != nil {
				h.w.free <- j
				return fmt.Errorf("%s.Format: %w", e.name, err)
			}
			if h.strategy == BufferBlock {
				j.add(opPartial, a.BufferSegment, a.BufferRecord, h.buf[:a.Count*h.recBytes])
			}
		case format.FinishSegment:
			s := int(a.SegmentIndexBuffer)
			if h.strategy == BufferSegment && open && s >= 0 && s < h.vol[0] {
				j.add(opMulti, s, 0, h.buf[:segBytes])
			}
			h.segs = append(h.segs, s)
		case format.FinishVolume:
			if h.strategy == BufferVolume {
				h.transfer(j, segBytes, open)
			}
			h.segs = h.segs[:0]
			if open {
				j.add(opAdvance, 0, 0, nil)
			}
		}
	}
	if h.strategy == BufferVolume {
		h.transfer(j, segBytes, open)
	}
	return h.w.send(j, nil)
}

// transfer writes the finished segments of the volume buffer, merged into
// runs of consecutive B-scans (vortex's _transfer).
func (h *hostStack) transfer(j *stackJob, segBytes int, open bool) {
	if !open {
		return
	}
	for _, r := range segmentRuns(h.segs, h.vol[0]) {
		j.add(opMulti, r[0], 0, h.buf[r[0]*segBytes:r[1]*segBytes])
	}
}

// --- the stream host tensor endpoints ----------------------------------------------

// NewStreamHostTensorEndpoint returns vortex's CounterStackHostTensorEndpoint
// (s = StreamCounter) or GalvoActualStackHostTensorEndpoint
// (StreamGalvoActual): the latest volume of the stream's records, formatted
// by exec (a stack executor, nil for every column) into a pinned host tensor
// of shape (segments, records, columns). The tensor's elements are float64;
// the counter's are uint64 values stored in them bit for bit (the bindings
// view them as uint64).
func NewStreamHostTensorEndpoint(s Stream, exec any, shape []int) (*StackTensorEndpoint, error) {
	if s != StreamCounter && s != StreamGalvoActual {
		return nil, engine.Invalid("endpoint.NewStreamHostTensorEndpoint: stream %v, expected counter or galvo_actual (vortex's two)", s)
	}
	name := streamInfo[s].class + "StackHostTensorEndpoint"
	if len(shape) != 3 {
		return nil, engine.Invalid("%s: shape %v, expected (segments, records, columns)", name, shape)
	}
	for i, d := range shape {
		if d <= 0 {
			return nil, engine.Invalid("%s: shape[%d]=%d, expected > 0", name, i, d)
		}
	}
	if _, ok := engine.MulSize(shape[0], shape[1], shape[2], 8); !ok {
		return nil, engine.TooLarge("%s: shape %v is too large", name, shape)
	}
	e := &StackTensorEndpoint{name: name, kind: backend.PinnedMem, dtype: backend.Float64, hostSrc: &streamSource{s: s, slice: format.NullSlice()}}
	switch x := exec.(type) {
	case nil:
	case *format.StackFormatExecutor:
		c := x.Config()
		e.hostSrc.slice, e.hostSrc.tf = c.SampleSlice, c.SampleTransform
	default:
		return nil, engine.Invalid("%s: executor %T, expected a StackFormatExecutor", name, exec)
	}
	e.exec, e.shape3 = exec, slices.Clone(shape)
	return e, nil
}

// formatHost formats the block's stream into the tensor on the host,
// under the tensor's exclusive lock (vortex's host tensor endpoint with a
// host source).
func (e *StackTensorEndpoint) formatHost(b *engine.BlockData, plan *engine.FormatPlan) error {
	shape := [3]int{e.shape3[0], e.shape3[1], e.shape3[2]}
	if err := e.hostSrc.load(e.name, b, shape[2]); err != nil {
		return err
	}
	if err := lockFormat(e.ctx, e.name, e.tensor, e.owner); err != nil {
		return err
	}
	return publish(e.name, e.tensor, e.stream, e.owner, e.placeHost(plan, shape))
}

// placeHost writes the plan's copies into the tensor under the engine's
// lock. A panic is its error, so that publish still releases the lock
// (see format).
func (e *StackTensorEndpoint) placeHost(plan *engine.FormatPlan, shape [3]int) (err error) {
	defer guard.Recover(&err, e.name)
	// The host writes below must not race with work a user chained on the
	// endpoint's stream to read the tensor: wait for it. Only user work is
	// ever queued there (this endpoint formats on the host), so this wait
	// is empty unless a user chains work, which then holds the formatting
	// back as a held lock does.
	err = e.stream.Synchronize()
	vol := hostView[byte](e.tensor.Ptr(), e.tensor.Size())
	for i := range plan.Actions {
		a := &plan.Actions[i]
		if err != nil || a.Kind != format.Copy || a.Count == 0 {
			continue
		}
		err = e.hostSrc.place(vol, shape, a, a.BufferSegment, a.BufferRecord)
	}
	return err
}
