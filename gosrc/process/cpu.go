package process

import (
	"fmt"
	"math/cmplx"
	"runtime"
	"sync"
	"unsafe"

	"gonum.org/v1/gonum/dsp/fourier"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/cpu"
	"github.com/vortexgo/vortexgo/gosrc/engine"
)

// minChunk is the fewest records worth a goroutine: below it the
// goroutine's start-up costs more than the records' FFTs.
const minChunk = 8

// CPUProcessor runs the processing chain in Go on the CPU backend: Process
// enqueues it on a backend.HostStream, which runs it before returning, and
// spreads the records of a block over up to GOMAXPROCS goroutines. The
// inverse FFT is gonum's (any length, float64), planned once per
// goroutine's scratch.
//
// The rolling average is carried across calls in call order: calls for
// different slots may run concurrently from different goroutines (the
// history update is serialised by a mutex, the rest runs in parallel);
// calls for one slot must not (the engine issues them in order on the
// slot's stream).
type CPUProcessor struct {
	cfg     Config
	m       int
	post    postParams
	res     *resampling
	workers int
	slots   []*cpuSlot
	closed  bool
	claim   engine.Claim // refuses Close while an engine runs the processor

	// histMu orders the rolling-average updates of concurrent calls; it is
	// held while one block's last records enter the history and its mean is
	// taken (O(min(records, W) x N)), never during the FFTs.
	histMu sync.Mutex
	hist   *history
}

// Claims reports the claim an engine takes while it uses the processor
// (engine.Claimer): Close is refused until that engine's run ends.
func (p *CPUProcessor) Claims() []*engine.Claim {
	p.claim.Name("CPUProcessor")
	return []*engine.Claim{&p.claim}
}

// cpuSlot is one slot's working memory.
type cpuSlot struct {
	avg     []float32 // the average record subtracted from this slot's block
	workers []*cpuScratch
}

// cpuScratch is one goroutine's working memory.
type cpuScratch struct {
	spec []float32    // the raw (or background-subtracted) record
	res  []float32    // the resampled record
	cx   []complex128 // the spectrum / A-scan
	fft  *fourier.CmplxFFT
	// A real spectrum (no filter) takes the real FFT, half the work:
	// rfft, its input re and its M/2+1 coefficients half.
	rfft *fourier.FFT
	re   []float64
	half []complex128
}

// NewCPUProcessor validates cfg and returns a processor; Prepare allocates
// its scratch.
func NewCPUProcessor(cfg Config) (*CPUProcessor, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.clone()
	p := &CPUProcessor{cfg: cfg, m: cfg.OutputSamples(), post: newPostParams(&cfg)}
	if len(cfg.ResamplingSamples) > 0 {
		r := newResampling(cfg.ResamplingSamples, cfg.SamplesPerRecord)
		p.res = &r
	}
	return p, nil
}

// Config returns a copy of the processor's configuration.
func (p *CPUProcessor) Config() Config { return p.cfg.clone() }

// OutputSamples is the length of one processed record.
func (p *CPUProcessor) OutputSamples() int { return p.m }

// Prepare allocates the history, the FFT plans and per-slot,
// per-goroutine scratch. Calling it again does nothing.
func (p *CPUProcessor) Prepare() error {
	if p.closed {
		return errClosed("process: CPUProcessor.Prepare")
	}
	if p.slots != nil {
		return nil
	}
	n := p.cfg.SamplesPerRecord
	if p.cfg.AverageWindow > 0 {
		p.hist = newHistory(p.cfg.AverageWindow, n)
	}
	p.workers = max(1, min(runtime.GOMAXPROCS(0), (p.cfg.AscansPerBlock+minChunk-1)/minChunk))
	p.slots = make([]*cpuSlot, p.cfg.Slots)
	for i := range p.slots {
		sl := &cpuSlot{workers: make([]*cpuScratch, p.workers)}
		if p.hist != nil {
			sl.avg = make([]float32, n)
		}
		for w := range sl.workers {
			sc := &cpuScratch{spec: make([]float32, n), res: make([]float32, p.m), cx: make([]complex128, p.m)}
			switch {
			case p.cfg.EnableIFFT && p.cfg.SpectralFilter == nil:
				sc.rfft, sc.re, sc.half = fourier.NewFFT(p.m), make([]float64, p.m), make([]complex128, p.m/2+1)
			case p.cfg.EnableIFFT:
				sc.fft = fourier.NewCmplxFFT(p.m)
			}
			sl.workers[w] = sc
		}
		p.slots[i] = sl
	}
	return nil
}

// Process enqueues the processing of records raw spectra at host address
// in (uint16, records x SamplesPerRecord x ChannelsPerSample) into out
// (float32) and, when outInt8 != 0, outInt8 (int8), each records x
// OutputSamples(), on s, which must be a CPU stream (backend.HostStream).
// The block's records enter the rolling average's history (vortex's
// append_history=True).
func (p *CPUProcessor) Process(slot int, s backend.Stream, in uintptr, records int, out uintptr, outInt8 uintptr) error {
	return p.ProcessHistory(slot, s, in, records, out, outInt8, true)
}

// ProcessHistory is Process with vortex's append_history: false leaves the
// history as it is and subtracts its current mean (none while it is
// empty).
func (p *CPUProcessor) ProcessHistory(slot int, s backend.Stream, in uintptr, records int, out uintptr, outInt8 uintptr, appendHistory bool) error {
	const op = "process: CPUProcessor.Process"
	if err := checkProcess(op, p.closed, p.slots != nil, &p.cfg, slot, s, in, records, out); err != nil {
		return err
	}
	hs, ok := s.(backend.HostStream)
	if !ok {
		return fmt.Errorf("%s: s is a %T, expected a CPU stream (backend.HostStream)", op, s)
	}
	if records == 0 {
		return nil
	}
	raw := hostSlice[uint16](in, records*p.cfg.SamplesPerRecord*p.cfg.Channels())
	dst := hostSlice[float32](out, records*p.m)
	var dst8 []int8
	if outInt8 != 0 {
		dst8 = hostSlice[int8](outInt8, records*p.m)
	}
	sl := p.slots[slot]
	return hs.Enqueue(func() { p.run(sl, raw, dst, dst8, records, appendHistory) })
}

// sample reads record r's sample i of the processed channel.
func (p *CPUProcessor) sample(raw []uint16, r, i int) int32 {
	v := raw[(r*p.cfg.SamplesPerRecord+i)*p.cfg.Channels()+p.cfg.Channel]
	if p.cfg.InterpretAsSigned {
		return int32(int16(v))
	}
	return int32(v)
}

// run processes a block: the history update and mean first (in call
// order), then the records in contiguous chunks, one per goroutine, and
// waits for them: the CPU stream's contract is that work is done when
// Enqueue returns.
func (p *CPUProcessor) run(sl *cpuSlot, raw []uint16, dst []float32, dst8 []int8, records int, appendHistory bool) {
	var avg []float32
	if p.hist != nil {
		p.histMu.Lock()
		if appendHistory {
			p.hist.append(records, func(r, i int) int32 { return p.sample(raw, r, i) })
		}
		if p.hist.count > 0 {
			p.hist.mean(sl.avg)
			avg = sl.avg
		}
		p.histMu.Unlock()
	}
	chunks := min(len(sl.workers), (records+minChunk-1)/minChunk)
	size := (records + chunks - 1) / chunks
	var wg sync.WaitGroup
	for c := 1; c < chunks; c++ {
		lo, hi := c*size, min((c+1)*size, records)
		if lo >= hi {
			break
		}
		wg.Go(func() { p.chunk(sl.workers[c], avg, raw, dst, dst8, lo, hi) })
	}
	p.chunk(sl.workers[0], avg, raw, dst, dst8, 0, min(size, records))
	wg.Wait()
}

// chunk processes records [lo, hi) of a block; avg is the block's average
// record, nil without averaging.
func (p *CPUProcessor) chunk(sc *cpuScratch, avg []float32, raw []uint16, dst []float32, dst8 []int8, lo, hi int) {
	m := p.m
	complexSpectrum := p.cfg.SpectralFilter != nil || p.cfg.EnableIFFT
	for r := lo; r < hi; r++ {
		// Step 1: the record as float32, minus the average record.
		for i := range sc.spec {
			v := float32(p.sample(raw, r, i))
			if avg != nil {
				v -= avg[i]
			}
			sc.spec[i] = v
		}
		// Step 2: resampling.
		x := sc.spec
		if p.res != nil {
			for j := range sc.res {
				sc.res[j] = p.res.interpolate(sc.spec, j)
			}
			x = sc.res
		}
		out := dst[r*m : (r+1)*m]
		var out8 []int8
		if dst8 != nil {
			out8 = dst8[r*m : (r+1)*m]
		}
		if !complexSpectrum {
			// Step 5 straight from the real spectrum.
			for j, v := range x[:m] {
				y := p.post.value(float64(v), 0)
				out[j] = float32(y)
				if out8 != nil {
					out8[j] = p.post.level(y)
				}
			}
			continue
		}
		if sc.rfft != nil {
			// Step 4 of a real spectrum: the inverse DFT is the conjugate of
			// the forward one, whose upper half mirrors the lower:
			// y[k] = conj(C[k]) for k <= M/2, C[M-k] above.
			for j, v := range x[:m] {
				sc.re[j] = float64(v)
			}
			sc.rfft.Coefficients(sc.half, sc.re)
			for k := range sc.cx {
				if k < len(sc.half) {
					sc.cx[k] = cmplx.Conj(sc.half[k])
				} else {
					sc.cx[k] = sc.half[m-k]
				}
			}
		} else {
			p.filter(sc, x)
		}
		// Step 5.
		for j, c := range sc.cx {
			y := p.post.value(real(c), imag(c))
			out[j] = float32(y)
			if out8 != nil {
				out8[j] = p.post.level(y)
			}
		}
	}
}

// filter is steps 3 and 4 of a complex spectrum: the spectral filter
// (float32 products, as vortex's) and the unnormalised inverse FFT (the
// 1/M is step 5's), into sc.cx.
func (p *CPUProcessor) filter(sc *cpuScratch, x []float32) {
	filt := p.cfg.SpectralFilter
	for j, v := range x[:p.m] {
		if filt != nil {
			sc.cx[j] = complex(float64(v*real(filt[j])), float64(v*imag(filt[j])))
		} else {
			sc.cx[j] = complex(float64(v), 0)
		}
	}
	if sc.fft != nil {
		sc.fft.Sequence(sc.cx, sc.cx)
	}
}

// Close releases the scratch; while an engine uses the processor it
// refuses with backend.ErrInUse. Further calls return backend.ErrClosed.
func (p *CPUProcessor) Close() error {
	if p.closed {
		return errClosed("process: CPUProcessor.Close")
	}
	return p.claim.Close(func() error {
		p.closed = true
		p.slots, p.hist = nil, nil
		return nil
	})
}

// hostSlice views n values of type T at host address ptr (memory outside
// the Go heap, as every backend buffer is).
func hostSlice[T any](ptr uintptr, n int) []T {
	var zero T
	b := cpu.HostBytes(ptr, n*int(unsafe.Sizeof(zero)))
	if b == nil {
		return nil
	}
	return unsafe.Slice((*T)(unsafe.Pointer(&b[0])), n)
}
