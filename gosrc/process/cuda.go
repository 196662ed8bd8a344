package process

import (
	"errors"
	"fmt"
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
	// chunkRecords is how many records one background thread slides over:
	// long enough to amortise the window set-up (at most two partial
	// chunks), short enough for a block of ~1000 records to fill the GPU
	// with N x R/64 threads.
	chunkRecords = 64
	// postBlocks caps the grid of the grid-stride post kernel at a few
	// waves of an H100/H200 (132 SMs x 8 resident blocks of 256 threads).
	postBlocks = 132 * 8 * 4
)

// Flags of oct_post; keep in step with kernels/oct.cu.
const (
	flagMagnitude = 1
	flagSquare    = 2
	flagLog10     = 4
)

// CUDAProcessor runs the processing chain on a CUDA device: background
// subtraction, fused resampling and spectral filter into complex64, a
// batched cuFFT C2C inverse, and a fused scale/magnitude/log/int8 kernel.
// Every step is enqueued on the caller's stream; Process allocates nothing
// and never waits on the host. Each slot owns its scratch and its cuFFT
// plan, so calls for different slots may run concurrently on different
// streams; calls for one slot must be issued in order on one stream (the
// scratch is reused by the next call in stream order).
type CUDAProcessor struct {
	cfg  Config
	dev  *cuda.Device
	m    int
	post postParams

	fnSums, fnBackground, fnResampleU16, fnResampleF32, fnPost *cuda.Function

	// pos and filt are the device addresses of the shared read-only
	// tables, 0 when unused: the kernels skip a step on a null pointer.
	pos, filt uintptr
	slots     []*cudaSlot
	buffers   []*cuda.Buffer // everything to free on Close
	closed    bool
	claim     engine.Claim // refuses Close while an engine runs the processor
}

// cudaSlot is one slot's scratch.
type cudaSlot struct {
	sums       uintptr // uint32 chunk sums, ceil(AscansPerBlock/64) x N (AverageWindow > 0)
	background uintptr // float32 background-subtracted spectra, AscansPerBlock x N (AverageWindow > 0)
	spectrum   uintptr // complex64 spectra / A-scans, AscansPerBlock x M
	plan       *cuda.FFTPlan
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
// resampling and filter tables, and allocates each slot's scratch and cuFFT
// plan. Calling it again does nothing. On error, whatever was allocated is
// released.
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
		{&p.fnSums, "oct_chunk_sums"}, {&p.fnBackground, "oct_background"},
		{&p.fnResampleU16, "oct_resample_u16"}, {&p.fnResampleF32, "oct_resample_f32"},
		{&p.fnPost, "oct_post"},
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
	if rs := p.cfg.ResamplingSamples; len(rs) > 0 {
		if p.pos, err = upload(unsafe.Slice((*byte)(unsafe.Pointer(&rs[0])), len(rs)*4)); err != nil {
			return fmt.Errorf("%s: ResamplingSamples: %w", op, err)
		}
	}
	if f := p.cfg.SpectralFilter; len(f) > 0 {
		if p.filt, err = upload(unsafe.Slice((*byte)(unsafe.Pointer(&f[0])), len(f)*8)); err != nil {
			return fmt.Errorf("%s: SpectralFilter: %w", op, err)
		}
	}

	n, m, R := p.cfg.SamplesPerRecord, p.m, p.cfg.AscansPerBlock
	slots := make([]*cudaSlot, p.cfg.Slots)
	for i := range slots {
		sl := &cudaSlot{}
		if p.cfg.AverageWindow > 0 {
			if sl.sums, err = p.alloc(ceilDiv(R, chunkRecords) * n * 4); err != nil {
				return fmt.Errorf("%s: slot %d: %w", op, i, err)
			}
			if sl.background, err = p.alloc(R * n * 4); err != nil {
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
		slots[i] = sl
		p.slots = slots[:i+1] // so release frees the plans made so far
	}
	if err = s.Synchronize(); err != nil {
		return fmt.Errorf("%s: uploading tables: %w", op, err)
	}
	return nil
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
// in into out (float32) and, when outInt8 != 0, outInt8 (int8), on s,
// which must be a *cuda.Stream of the processor's device.
func (p *CUDAProcessor) Process(slot int, s backend.Stream, in uintptr, records int, out uintptr, outInt8 uintptr) error {
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
	block := cuda.Dim3{X: threads, Y: 1, Z: 1}

	// Step 1: background subtraction into float32, or straight from uint16.
	spectra, resample := in, p.fnResampleU16
	if p.cfg.AverageWindow > 0 {
		chunks := ceilDiv(records, chunkRecords)
		grid := cuda.Dim3{X: uint32(ceilDiv(n, threads) * chunks), Y: 1, Z: 1}
		if err := cs.Launch(p.fnSums, grid, block, 0,
			in, sl.sums, int32(records), int32(n), int32(chunkRecords)); err != nil {
			return fmt.Errorf("%s: oct_chunk_sums: %w", op, err)
		}
		if err := cs.Launch(p.fnBackground, grid, block, 0,
			in, sl.sums, sl.background, int32(records), int32(n), int32(chunkRecords), int32(p.cfg.AverageWindow)); err != nil {
			return fmt.Errorf("%s: oct_background: %w", op, err)
		}
		spectra, resample = sl.background, p.fnResampleF32
	}

	// Steps 2 and 3: resample and filter into complex64.
	grid := cuda.Dim3{X: uint32(ceilDiv(m, threads) * records), Y: 1, Z: 1}
	if err := cs.Launch(resample, grid, block, 0,
		spectra, sl.spectrum, p.pos, p.filt, int32(n), int32(m)); err != nil {
		return fmt.Errorf("%s: oct_resample: %w", op, err)
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
	if p.post.magnitude {
		flags |= flagMagnitude
	}
	if p.post.square {
		flags |= flagSquare
	}
	if p.post.log10 {
		flags |= flagLog10
	}
	grid = cuda.Dim3{X: uint32(min(ceilDiv(total, threads), postBlocks)), Y: 1, Z: 1}
	if err := cs.Launch(p.fnPost, grid, block, 0,
		sl.spectrum, out, outInt8, int32(total), flags, p.post.scale, p.post.lo, p.post.levelStep); err != nil {
		return fmt.Errorf("%s: oct_post: %w", op, err)
	}
	return nil
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
	}
	for _, b := range p.buffers {
		if err := b.Free(); err != nil && first == nil {
			first = err
		}
	}
	p.slots, p.buffers = nil, nil
	p.pos, p.filt = 0, 0
	return first
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }
