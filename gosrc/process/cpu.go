package process

import (
	"fmt"
	"math/cmplx"
	"runtime"
	"sync"
	"sync/atomic"
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
// slot's stream). Change swaps the configuration between blocks.
type CPUProcessor struct {
	st       atomic.Pointer[cpuState]
	mu       sync.Mutex // serialises Prepare, Change and Close
	prepared bool
	closed   atomic.Bool
	claim    engine.Claim // refuses Close while an engine runs the processor
	alone    standalone   // vortex's next outside an engine (standalone.go)
}

// cpuState is everything one configuration needs, immutable once built
// (but for the scratch and the history's contents): a block loads it once
// and uses it throughout, so Change takes effect at a block boundary.
type cpuState struct {
	cfg     Config
	m       int
	post    postParams
	res     *resampling
	workers int
	slots   []*cpuSlot
	hist    *history // nil without averaging; kept across compatible changes
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
	// clock is the k-clock's phase scratch (Config.ClockChannel), else nil.
	clock *clockScratch
}

// NewCPUProcessor validates cfg and returns a processor; Prepare allocates
// its scratch.
func NewCPUProcessor(cfg Config) (*CPUProcessor, error) {
	st, err := newCPUState(cfg)
	if err != nil {
		return nil, err
	}
	p := &CPUProcessor{}
	p.st.Store(st)
	return p, nil
}

func newCPUState(cfg Config) (*cpuState, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.clone()
	st := &cpuState{cfg: cfg, m: cfg.OutputSamples(), post: newPostParams(&cfg)}
	if len(cfg.ResamplingSamples) > 0 {
		r := newResampling(cfg.ResamplingSamples, cfg.SamplesPerRecord)
		st.res = &r
	}
	return st, nil
}

// Config returns a copy of the processor's configuration.
func (p *CPUProcessor) Config() Config { return p.st.Load().cfg.clone() }

// OutputSamples is the length of one processed record.
func (p *CPUProcessor) OutputSamples() int { return p.st.Load().m }

// Float32Optional (engine.Float32Optional): Process takes out=0 when
// only the int8 output is wanted.
func (p *CPUProcessor) Float32Optional() bool { return true }

// InputValues is the number of uint16 values of one raw record that
// Process reads: SamplesPerRecord x ChannelsPerSample. A caller's raw
// buffers must hold that many per record.
func (p *CPUProcessor) InputValues() int {
	c := &p.st.Load().cfg
	return c.SamplesPerRecord * c.Channels()
}

// Prepare allocates the history, the FFT plans and per-slot,
// per-goroutine scratch. Calling it again does nothing.
func (p *CPUProcessor) Prepare() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed.Load() {
		return errClosed("process: CPUProcessor.Prepare")
	}
	if p.prepared {
		return nil
	}
	st := p.st.Load()
	st.allocate(nil)
	p.prepared = true
	return nil
}

// allocate makes the state's scratch and plans, and its history, or takes
// prev's when prev is compatible (same window and record layout).
func (st *cpuState) allocate(prev *cpuState) {
	n := st.cfg.SamplesPerRecord
	if st.cfg.AverageWindow > 0 {
		if prev != nil && prev.hist != nil && historyCompatible(&prev.cfg, &st.cfg) {
			st.hist = prev.hist
		} else {
			st.hist = newHistory(st.cfg.AverageWindow, n)
		}
	}
	st.workers = max(1, min(runtime.GOMAXPROCS(0), (st.cfg.AscansPerBlock+minChunk-1)/minChunk))
	st.slots = make([]*cpuSlot, st.cfg.Slots)
	for i := range st.slots {
		sl := &cpuSlot{workers: make([]*cpuScratch, st.workers)}
		if st.hist != nil {
			sl.avg = make([]float32, n)
		}
		for w := range sl.workers {
			sc := &cpuScratch{spec: make([]float32, n), res: make([]float32, st.m), cx: make([]complex128, st.m)}
			if st.cfg.ClockChannel != nil {
				sc.clock = newClockScratch(n)
			}
			switch {
			case st.cfg.EnableIFFT && st.cfg.SpectralFilter == nil:
				sc.rfft, sc.re, sc.half = fourier.NewFFT(st.m), make([]float64, st.m), make([]complex128, st.m/2+1)
			case st.cfg.EnableIFFT:
				sc.fft = fourier.NewCmplxFFT(st.m)
			}
			sl.workers[w] = sc
		}
		st.slots[i] = sl
	}
}

// historyCompatible reports whether the rolling average's history carries
// over from configuration a to b: same window, same samples, same channel
// read the same way. (vortex's CUDAProcessor keeps it over such
// "lightweight" changes; its CPUProcessor always starts over, which its
// documentation allows: "record history ... may be lost".)
func historyCompatible(a, b *Config) bool {
	return a.AverageWindow == b.AverageWindow && a.SamplesPerRecord == b.SamplesPerRecord &&
		a.Channels() == b.Channels() && a.Channel == b.Channel && a.InterpretAsSigned == b.InterpretAsSigned
}

// shapeChanged names the first field of the block shape that differs
// between a and b: an engine sized its buffers for a.
func shapeChanged(a, b *Config) string {
	switch {
	case a.SamplesPerRecord != b.SamplesPerRecord:
		return "SamplesPerRecord"
	case a.Channels() != b.Channels():
		return "ChannelsPerSample"
	case a.AscansPerBlock != b.AscansPerBlock:
		return "AscansPerBlock"
	case a.OutputSamples() != b.OutputSamples():
		return "OutputSamples()"
	case a.Slots != b.Slots:
		return "Slots"
	}
	return ""
}

// Change validates cfg and makes it the configuration of the blocks that
// Process starts from now on (vortex's change(config)); blocks already
// started finish with the previous one. The rolling average's history is
// kept when the window, samples and channel are unchanged, else it starts
// over. While an engine runs the processor, a change of the block's shape
// (samples, channels, records, output samples, slots) is refused with
// backend.ErrInUse, as the engine's buffers were sized for the old one.
func (p *CPUProcessor) Change(cfg Config) error {
	const op = "process: CPUProcessor.Change"
	next, err := newCPUState(cfg)
	if err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed.Load() {
		return errClosed(op)
	}
	prev := p.st.Load()
	if f := shapeChanged(&prev.cfg, &next.cfg); f != "" && p.claim.InUse() {
		return fmt.Errorf("%s: Config.%s changes while an engine runs the processor, expected the same block shape (stop the engine first): %w", op, f, backend.ErrInUse)
	}
	if p.prepared {
		next.allocate(prev)
	}
	p.st.Store(next)
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
	st := p.st.Load()
	if err := checkProcess(op, p.closed.Load(), st.slots != nil, &st.cfg, slot, s, in, records, out, outInt8); err != nil {
		return err
	}
	hs, ok := s.(backend.HostStream)
	if !ok {
		return fmt.Errorf("%s: s is a %T, expected a CPU stream (backend.HostStream)", op, s)
	}
	if records == 0 {
		return nil
	}
	raw := hostSlice[uint16](in, records*st.cfg.SamplesPerRecord*st.cfg.Channels())
	var dst []float32 // nil when no float32 output is wanted (engine.Float32Optional)
	if out != 0 {
		dst = hostSlice[float32](out, records*st.m)
	}
	var dst8 []int8
	if outInt8 != 0 {
		dst8 = hostSlice[int8](outInt8, records*st.m)
	}
	sl := st.slots[slot]
	return hs.Enqueue(func() { st.run(sl, raw, dst, dst8, records, appendHistory) })
}

// sample reads record r's sample i of the processed channel.
func (p *cpuState) sample(raw []uint16, r, i int) int32 { return p.sampleOf(raw, r, i, p.cfg.Channel) }

// sampleOf reads record r's sample i of channel ch.
func (p *cpuState) sampleOf(raw []uint16, r, i, ch int) int32 {
	v := raw[(r*p.cfg.SamplesPerRecord+i)*p.cfg.Channels()+ch]
	if p.cfg.InterpretAsSigned {
		return int32(int16(v))
	}
	return int32(v)
}

// run processes a block: the history update and mean first (in call
// order), then the records in contiguous chunks, one per goroutine, and
// waits for them: the CPU stream's contract is that work is done when
// Enqueue returns.
func (p *cpuState) run(sl *cpuSlot, raw []uint16, dst []float32, dst8 []int8, records int, appendHistory bool) {
	var avg []float32
	if h := p.hist; h != nil {
		h.mu.Lock()
		if appendHistory {
			h.append(records, func(r, i int) int32 { return p.sample(raw, r, i) })
		}
		if h.count > 0 {
			h.mean(sl.avg)
			avg = sl.avg
		}
		h.mu.Unlock()
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
func (p *cpuState) chunk(sc *cpuScratch, avg []float32, raw []uint16, dst []float32, dst8 []int8, lo, hi int) {
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
		// Step 2: resampling, by the configuration's tables or by the
		// record's own from its clock.
		x := sc.spec
		res := p.res
		if sc.clock != nil {
			ch := *p.cfg.ClockChannel
			for i := range sc.clock.clock {
				sc.clock.clock[i] = p.sampleOf(raw, r, i, ch)
			}
			res = sc.clock.tables(nil)
		}
		if res != nil {
			for j := range sc.res {
				sc.res[j] = res.interpolate(sc.spec, j)
			}
			x = sc.res
		}
		var out []float32
		if dst != nil {
			out = dst[r*m : (r+1)*m]
		}
		var out8 []int8
		if dst8 != nil {
			out8 = dst8[r*m : (r+1)*m]
		}
		if !complexSpectrum {
			// Step 5 straight from the real spectrum.
			for j, v := range x[:m] {
				y := p.post.value(float64(v), 0)
				if out != nil {
					out[j] = float32(y)
				}
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
			if out != nil {
				out[j] = float32(y)
			}
			if out8 != nil {
				out8[j] = p.post.level(y)
			}
		}
	}
}

// filter is steps 3 and 4 of a complex spectrum: the spectral filter
// (float32 products, as vortex's) and the unnormalised inverse FFT (the
// 1/M is step 5's), into sc.cx.
func (p *cpuState) filter(sc *cpuScratch, x []float32) {
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
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed.Load() {
		return errClosed("process: CPUProcessor.Close")
	}
	return p.claim.Close(func() error {
		p.closed.Store(true)
		return p.alone.close()
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
