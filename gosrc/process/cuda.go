package process

import (
	"errors"
	"fmt"
	"sync"
	"unsafe"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/cpu"
	"github.com/vortexgo/vortexgo/gosrc/cuda"
	"github.com/vortexgo/vortexgo/gosrc/engine"
)

// Launch geometry. 256 threads keep 8 warps per block, enough to hide
// latency on every architecture since Volta while letting many blocks
// share an SM.
const (
	threads = 256
	// postBlocks caps the grid of the grid-stride post kernel at a few
	// waves of an H100/H200 (132 SMs x 8 resident blocks of 256 threads).
	postBlocks = 132 * 8 * 4
)

// Flags of oct_post; keep in step with kernels/oct.cu.
const (
	flagLog10     = 1
	flagSquare    = 2
	flagMagnitude = 4
	flagLevels    = 8
)

// CUDAProcessor runs the processing chain on a CUDA device: the rolling
// average's history and mean, a fused load/average-subtraction/resampling/
// filter kernel into complex64, a batched cuFFT C2C inverse of any length,
// and a fused normalise/magnitude/log/levels/int8 kernel. Every step is
// enqueued on the caller's stream; Process allocates nothing and never
// waits on the host.
//
// Each slot owns its scratch and its cuFFT plan, so calls for different
// slots may run concurrently on different streams; calls for one slot must
// be issued in order on one stream (the scratch is reused by the next call
// in stream order). The rolling average's history is shared: calls update
// it in the order Process is called, each waiting on the device (an event,
// never the host) for the previous call's update, whatever stream that
// call used.
type CUDAProcessor struct {
	cfg  Config
	dev  *cuda.Device
	m    int
	post postParams

	fnHistory, fnMean, fnSpectrum, fnPost *cuda.Function

	// Device addresses of the shared read-only tables, 0 when unused: the
	// kernels skip a step on a null pointer.
	before, after, wBefore, wAfter, filt uintptr
	slots                                []*cudaSlot
	buffers                              []*cuda.Buffer // everything to free on Close
	closed                               bool
	claim                                engine.Claim // refuses Close while an engine runs the processor

	// mu orders the history updates of concurrent Process calls; it is
	// held while two kernel launches and an event record are enqueued,
	// which never block on the device.
	mu           sync.Mutex
	ring         uintptr     // int32 history, AverageWindow x N (AverageWindow > 0)
	index, count int         // the ring's next row and valid rows (host view of the enqueued state)
	prev         *cuda.Event // recorded after the last enqueued history update, nil before the first
}

// cudaSlot is one slot's scratch.
type cudaSlot struct {
	avg      uintptr // float32 average record, N (AverageWindow > 0)
	spectrum uintptr // complex64 spectra / A-scans, AscansPerBlock x M
	plan     *cuda.FFTPlan
	averaged *cuda.Event // recorded after this slot's last history update
}

// NewCUDAProcessor validates cfg and returns a processor for dev; Prepare
// loads the kernels and allocates.
func NewCUDAProcessor(dev *cuda.Device, cfg Config) (*CUDAProcessor, error) {
	if dev == nil {
		return nil, errors.New("process: NewCUDAProcessor: dev=nil, expected a *cuda.Device")
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.clone()
	return &CUDAProcessor{cfg: cfg, dev: dev, m: cfg.OutputSamples(), post: newPostParams(&cfg)}, nil
}

// Config returns a copy of the processor's configuration.
func (p *CUDAProcessor) Config() Config { return p.cfg.clone() }

// OutputSamples is the length of one processed record.
func (p *CUDAProcessor) OutputSamples() int { return p.m }

// Prepare loads the kernels (JIT-compiled once per device), uploads the
// resampling and filter tables, and allocates the history and each slot's
// scratch, event and cuFFT plan. Calling it again does nothing. On error,
// whatever was allocated is released.
func (p *CUDAProcessor) Prepare() (err error) {
	const op = "process: CUDAProcessor.Prepare"
	if p.closed {
		return errClosed(op)
	}
	if p.slots != nil {
		return nil
	}
	defer func() {
		if err != nil {
			p.release()
		}
	}()
	ptx, err := octPTX()
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	mod, err := p.dev.LoadNamedModule("oct", ptx)
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	for _, k := range []struct {
		fn   **cuda.Function
		name string
	}{
		{&p.fnHistory, "oct_history"}, {&p.fnMean, "oct_mean"},
		{&p.fnSpectrum, "oct_spectrum"}, {&p.fnPost, "oct_post"},
	} {
		if *k.fn, err = mod.Function(k.name); err != nil {
			return fmt.Errorf("%s: %w", op, err)
		}
	}

	// Prepare may block: the tables go up through a private stream and a
	// synchronize, so they are in place before any Process call can use
	// them on another stream. This is set-up, not the hot path.
	s, err := p.dev.CreateStream(0)
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	defer s.Close()
	var staging []*cuda.Buffer
	defer func() {
		for _, b := range staging {
			b.Free()
		}
	}()
	upload := func(host []byte) (uintptr, error) {
		d, err := p.alloc(len(host))
		if err != nil {
			return 0, err
		}
		h, err := p.dev.MallocHost(len(host))
		if err != nil {
			return 0, err
		}
		staging = append(staging, h)
		copy(cpu.HostBytes(h.Ptr(), len(host)), host)
		return d, s.CopyHtoD(d, h.Ptr(), len(host))
	}
	if len(p.cfg.ResamplingSamples) > 0 {
		r := newResampling(p.cfg.ResamplingSamples, p.cfg.SamplesPerRecord)
		for _, t := range []struct {
			dst  *uintptr
			data []byte
		}{
			{&p.before, bytesOf(r.before)}, {&p.after, bytesOf(r.after)},
			{&p.wBefore, bytesOf(r.wBefore)}, {&p.wAfter, bytesOf(r.wAfter)},
		} {
			if *t.dst, err = upload(t.data); err != nil {
				return fmt.Errorf("%s: ResamplingSamples: %w", op, err)
			}
		}
	}
	if f := p.cfg.SpectralFilter; len(f) > 0 {
		if p.filt, err = upload(bytesOf(f)); err != nil {
			return fmt.Errorf("%s: SpectralFilter: %w", op, err)
		}
	}

	n, m, R := p.cfg.SamplesPerRecord, p.m, p.cfg.AscansPerBlock
	if p.cfg.AverageWindow > 0 {
		if p.ring, err = p.alloc(p.cfg.AverageWindow * n * 4); err != nil {
			return fmt.Errorf("%s: history: %w", op, err)
		}
	}
	slots := make([]*cudaSlot, p.cfg.Slots)
	for i := range slots {
		sl := &cudaSlot{}
		slots[i] = sl
		p.slots = slots[:i+1] // so release frees the plans and events made so far
		if p.cfg.AverageWindow > 0 {
			if sl.avg, err = p.alloc(n * 4); err != nil {
				return fmt.Errorf("%s: slot %d: %w", op, i, err)
			}
			if sl.averaged, err = p.dev.CreateEvent(false); err != nil {
				return fmt.Errorf("%s: slot %d: %w", op, i, err)
			}
		}
		if sl.spectrum, err = p.alloc(R * m * 8); err != nil {
			return fmt.Errorf("%s: slot %d: %w", op, i, err)
		}
		// The plan always transforms AscansPerBlock records; the rows past
		// a short block's records hold zeros or stale spectra and are never
		// read back. Zero them once so no NaN ever appears there.
		if err = s.Memset(sl.spectrum, 0, R*m*8); err != nil {
			return fmt.Errorf("%s: slot %d: %w", op, i, err)
		}
		if p.cfg.EnableIFFT {
			if sl.plan, err = cuda.NewFFTPlan(p.dev, m, R, cuda.C2C); err != nil {
				return fmt.Errorf("%s: slot %d: %w", op, i, err)
			}
		}
	}
	if err = s.Synchronize(); err != nil {
		return fmt.Errorf("%s: uploading tables: %w", op, err)
	}
	return nil
}

// bytesOf views a slice's memory as bytes.
func bytesOf[T any](v []T) []byte {
	var zero T
	return unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), len(v)*int(unsafe.Sizeof(zero)))
}

// alloc allocates device memory that Close frees.
func (p *CUDAProcessor) alloc(n int) (uintptr, error) {
	b, err := p.dev.Malloc(n)
	if err != nil {
		return 0, err
	}
	p.buffers = append(p.buffers, b)
	return b.Ptr(), nil
}

// Process enqueues the processing of records raw spectra at device address
// in (uint16, records x SamplesPerRecord x ChannelsPerSample) into out
// (float32) and, when outInt8 != 0, outInt8 (int8), each records x
// OutputSamples(), on s, which must be a *cuda.Stream of the processor's
// device.
// The block's records enter the rolling average's history (vortex's
// append_history=True).
func (p *CUDAProcessor) Process(slot int, s backend.Stream, in uintptr, records int, out uintptr, outInt8 uintptr) error {
	return p.ProcessHistory(slot, s, in, records, out, outInt8, true)
}

// ProcessHistory is Process with vortex's append_history: false leaves the
// history as it is and subtracts its current mean (none while it is
// empty).
func (p *CUDAProcessor) ProcessHistory(slot int, s backend.Stream, in uintptr, records int, out uintptr, outInt8 uintptr, appendHistory bool) error {
	const op = "process: CUDAProcessor.Process"
	if err := checkProcess(op, p.closed, p.slots != nil, &p.cfg, slot, s, in, records, out); err != nil {
		return err
	}
	cs, ok := s.(*cuda.Stream)
	if !ok {
		return fmt.Errorf("%s: s is a %T, expected a *cuda.Stream", op, s)
	}
	if records == 0 {
		return nil
	}
	sl := p.slots[slot]
	n, m := p.cfg.SamplesPerRecord, p.m
	ch, channel := int32(p.cfg.Channels()), int32(p.cfg.Channel)
	var signed int32
	if p.cfg.InterpretAsSigned {
		signed = 1
	}
	block := cuda.Dim3{X: threads, Y: 1, Z: 1}

	// Step 1a: the rolling average.
	var avg uintptr
	if p.ring != 0 {
		// A graph would replay the history position of its capture: refuse
		// rather than average the wrong records. One driver query per block,
		// only with averaging.
		if cs.Capturing() {
			return fmt.Errorf("%s: AverageWindow=%d cannot be captured into a graph (the rolling average's position advances with every call), expected a stream that is not capturing: %w",
				op, p.cfg.AverageWindow, backend.ErrInvalid)
		}
		subtract, err := p.average(cs, sl, in, records, ch, channel, signed, appendHistory)
		if err != nil {
			return fmt.Errorf("%s: %w", op, err)
		}
		if subtract {
			avg = sl.avg
		}
	}

	// Steps 1b-3: load, subtract, resample and filter into complex64.
	grid := cuda.Dim3{X: uint32(ceilDiv(m, threads) * records), Y: 1, Z: 1}
	if err := cs.Launch(p.fnSpectrum, grid, block, 0,
		in, avg, p.before, p.after, p.wBefore, p.wAfter, p.filt, sl.spectrum,
		int32(n), int32(m), ch, channel, signed); err != nil {
		return fmt.Errorf("%s: oct_spectrum: %w", op, err)
	}

	// Step 4: inverse FFT in place, bound to the caller's stream.
	if sl.plan != nil {
		if err := sl.plan.SetStream(cs); err != nil {
			return fmt.Errorf("%s: %w", op, err)
		}
		if err := sl.plan.ExecC2C(sl.spectrum, sl.spectrum, false); err != nil {
			return fmt.Errorf("%s: %w", op, err)
		}
	}

	// Step 5: output values.
	total := records * m
	var flags int32
	if p.post.log10 {
		flags |= flagLog10
	}
	if p.post.square {
		flags |= flagSquare
	}
	if p.post.magnitude {
		flags |= flagMagnitude
	}
	if p.post.levels {
		flags |= flagLevels
	}
	k := p.post.kernel()
	grid = cuda.Dim3{X: uint32(min(ceilDiv(total, threads), postBlocks)), Y: 1, Z: 1}
	if err := cs.Launch(p.fnPost, grid, block, 0,
		sl.spectrum, out, outInt8, int32(total), flags, k.outMul, k.outAdd, k.lvlMul, k.lvlAdd); err != nil {
		return fmt.Errorf("%s: oct_post: %w", op, err)
	}
	return nil
}

// average enqueues on cs the history update for a block (with
// appendHistory, its last min(records, W) records enter the ring) and the
// mean of the ring into the slot's average record, after the previous
// call's update (on whichever stream it ran), then records the slot's
// event for the next. It reports whether there is a mean to subtract (not
// while the history is empty).
func (p *CUDAProcessor) average(cs *cuda.Stream, sl *cudaSlot, in uintptr, records int, ch, channel, signed int32, appendHistory bool) (bool, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	n, w := p.cfg.SamplesPerRecord, p.cfg.AverageWindow
	if p.prev != nil {
		if err := cs.WaitEvent(p.prev); err != nil {
			return false, err
		}
	}
	cnt := 0
	if appendHistory {
		cnt = min(records, w)
	}
	block := cuda.Dim3{X: threads, Y: 1, Z: 1}
	if cnt > 0 {
		if err := cs.Launch(p.fnHistory, cuda.Dim3{X: uint32(ceilDiv(cnt*n, threads)), Y: 1, Z: 1}, block, 0,
			in, p.ring, int32(records), int32(n), ch, channel, signed, int32(cnt), int32(p.index), int32(w)); err != nil {
			return false, fmt.Errorf("oct_history: %w", err)
		}
	}
	count := min(p.count+cnt, w)
	if count == 0 {
		return false, nil
	}
	if err := cs.Launch(p.fnMean, cuda.Dim3{X: uint32(ceilDiv(n, threads)), Y: 1, Z: 1}, block, 0,
		p.ring, sl.avg, int32(n), int32(count)); err != nil {
		return false, fmt.Errorf("oct_mean: %w", err)
	}
	if err := cs.Record(sl.averaged); err != nil {
		return false, err
	}
	p.index, p.count, p.prev = (p.index+cnt)%w, count, sl.averaged
	return true, nil
}

// Close frees the scratch, tables and plans. cuMemFree waits for queued
// work that uses the memory, so Close is safe with Process calls still in
// flight on the GPU (it blocks until they finish). Further calls return
// backend.ErrClosed. While an engine uses the processor it refuses with
// backend.ErrInUse: closing it under a run used to break the run with
// "use of closed object".
func (p *CUDAProcessor) Close() error {
	if p.closed {
		return errClosed("process: CUDAProcessor.Close")
	}
	return p.claim.Close(func() error {
		p.closed = true
		return p.release()
	})
}

// Claims reports the claim an engine takes while it uses the processor
// (engine.Claimer): Close is refused until that engine's run ends.
func (p *CUDAProcessor) Claims() []*engine.Claim {
	p.claim.Name("CUDAProcessor")
	return []*engine.Claim{&p.claim}
}

// release frees everything allocated so far and returns the first error.
func (p *CUDAProcessor) release() error {
	var first error
	for _, sl := range p.slots {
		if sl != nil && sl.plan != nil {
			if err := sl.plan.Close(); err != nil && first == nil {
				first = err
			}
		}
		if sl != nil && sl.averaged != nil {
			if err := sl.averaged.Close(); err != nil && first == nil {
				first = err
			}
		}
	}
	for _, b := range p.buffers {
		if err := b.Free(); err != nil && first == nil {
			first = err
		}
	}
	p.slots, p.buffers = nil, nil
	p.before, p.after, p.wBefore, p.wAfter, p.filt, p.ring, p.prev = 0, 0, 0, 0, 0, 0, nil
	return first
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }
