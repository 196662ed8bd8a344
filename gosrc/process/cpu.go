package process

import (
	"fmt"
	"runtime"
	"sync"
	"unsafe"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/cpu"
	"github.com/vortexgo/vortexgo/gosrc/engine"
)

// minChunk is the fewest records worth a goroutine: below it the
// goroutine's start-up costs more than the records' FFTs.
const minChunk = 8

// CPUProcessor runs the processing chain in Go on the CPU backend: Process
// enqueues it on a backend.HostStream, which runs it before returning, and
// spreads the records of a block over up to GOMAXPROCS goroutines.
//
// Calls for different slots may run concurrently from different goroutines;
// calls for one slot must not (the engine issues them in order on the
// slot's stream).
type CPUProcessor struct {
	cfg     Config
	m       int
	post    postParams
	plan    *fftPlan
	workers int
	slots   [][]*cpuScratch // [slot][worker]
	closed  bool
	claim   engine.Claim // refuses Close while an engine runs the processor
}

// Claims reports the claim an engine takes while it uses the processor
// (engine.Claimer): Close is refused until that engine's run ends.
func (p *CPUProcessor) Claims() []*engine.Claim {
	p.claim.Name("CPUProcessor")
	return []*engine.Claim{&p.claim}
}

// cpuScratch is one goroutine's working memory.
type cpuScratch struct {
	sums []int64     // background window sums, one per raw sample
	spec []float32   // the background-subtracted raw spectrum
	cx   []complex64 // the output spectrum / A-scan
}

// NewCPUProcessor validates cfg and returns a processor; Prepare allocates
// its scratch.
func NewCPUProcessor(cfg Config) (*CPUProcessor, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.clone()
	return &CPUProcessor{cfg: cfg, m: cfg.OutputSamples(), post: newPostParams(&cfg)}, nil
}

// Config returns a copy of the processor's configuration.
func (p *CPUProcessor) Config() Config { return p.cfg.clone() }

// OutputSamples is the length of one processed record.
func (p *CPUProcessor) OutputSamples() int { return p.m }

// Prepare allocates the FFT plan and per-slot, per-goroutine scratch.
// Calling it again does nothing.
func (p *CPUProcessor) Prepare() error {
	if p.closed {
		return errClosed("process: CPUProcessor.Prepare")
	}
	if p.slots != nil {
		return nil
	}
	if p.cfg.EnableIFFT {
		p.plan = newFFTPlan(p.m)
	}
	p.workers = max(1, min(runtime.GOMAXPROCS(0), (p.cfg.AscansPerBlock+minChunk-1)/minChunk))
	p.slots = make([][]*cpuScratch, p.cfg.Slots)
	for i := range p.slots {
		p.slots[i] = make([]*cpuScratch, p.workers)
		for w := range p.slots[i] {
			sc := &cpuScratch{spec: make([]float32, p.cfg.SamplesPerRecord), cx: make([]complex64, p.m)}
			if p.cfg.AverageWindow > 0 {
				sc.sums = make([]int64, p.cfg.SamplesPerRecord)
			}
			p.slots[i][w] = sc
		}
	}
	return nil
}

// Process enqueues the processing of records raw spectra at host address
// in into out (float32) and, when outInt8 != 0, outInt8 (int8), on s,
// which must be a CPU stream (backend.HostStream).
func (p *CPUProcessor) Process(slot int, s backend.Stream, in uintptr, records int, out uintptr, outInt8 uintptr) error {
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
	n, m := p.cfg.SamplesPerRecord, p.m
	raw := hostSlice[uint16](in, records*n)
	dst := hostSlice[float32](out, records*m)
	var dst8 []int8
	if outInt8 != 0 {
		dst8 = hostSlice[int8](outInt8, records*m)
	}
	scratch := p.slots[slot]
	return hs.Enqueue(func() { p.run(scratch, raw, dst, dst8, records) })
}

// run processes a block, splitting its records into contiguous chunks, one
// per goroutine, and waits for them: the CPU stream's contract is that work
// is done when Enqueue returns.
func (p *CPUProcessor) run(scratch []*cpuScratch, raw []uint16, dst []float32, dst8 []int8, records int) {
	chunks := min(len(scratch), (records+minChunk-1)/minChunk)
	size := (records + chunks - 1) / chunks
	var wg sync.WaitGroup
	for c := 1; c < chunks; c++ {
		lo, hi := c*size, min((c+1)*size, records)
		if lo >= hi {
			break
		}
		wg.Go(func() { p.chunk(scratch[c], raw, dst, dst8, records, lo, hi) })
	}
	p.chunk(scratch[0], raw, dst, dst8, records, 0, min(size, records))
	wg.Wait()
}

// chunk processes records [lo, hi) of a block of R records.
func (p *CPUProcessor) chunk(sc *cpuScratch, raw []uint16, dst []float32, dst8 []int8, R, lo, hi int) {
	n, m := p.cfg.SamplesPerRecord, p.m
	w := min(p.cfg.AverageWindow, R)
	var cur int // first record of the window summed in sc.sums
	if w > 0 {
		cur = windowStart(lo, w, R)
		clear(sc.sums)
		for r := cur; r < cur+w; r++ {
			for i, v := range raw[r*n : (r+1)*n] {
				sc.sums[i] += int64(v)
			}
		}
	}
	pos, filt := p.cfg.ResamplingSamples, p.cfg.SpectralFilter
	for r := lo; r < hi; r++ {
		rec := raw[r*n : (r+1)*n]
		// Step 1: background subtraction (or plain conversion).
		if w > 0 {
			// Slide the window forward; it moves at most one record per
			// record, and the integer sums stay exact.
			for s := windowStart(r, w, R); cur < s; cur++ {
				add, drop := raw[(cur+w)*n:(cur+w+1)*n], raw[cur*n:(cur+1)*n]
				for i := range sc.sums {
					sc.sums[i] += int64(add[i]) - int64(drop[i])
				}
			}
			fw := float32(w)
			for i, v := range rec {
				sc.spec[i] = float32(v) - float32(sc.sums[i])/fw
			}
		} else {
			for i, v := range rec {
				sc.spec[i] = float32(v)
			}
		}
		// Steps 2 and 3: resampling and spectral filter, into complex.
		for j := range sc.cx {
			var v float32
			if pos != nil {
				v = interpolate(sc.spec, pos[j])
			} else {
				v = sc.spec[j]
			}
			if filt != nil {
				sc.cx[j] = complex(v*real(filt[j]), v*imag(filt[j]))
			} else {
				sc.cx[j] = complex(v, 0)
			}
		}
		// Step 4: inverse FFT.
		if p.plan != nil {
			p.plan.inverse(sc.cx)
		}
		// Step 5: output values.
		out := dst[r*m : (r+1)*m]
		for j, c := range sc.cx {
			out[j] = p.post.value(c)
		}
		if dst8 != nil {
			out8 := dst8[r*m : (r+1)*m]
			for j, v := range out {
				out8[j] = p.post.level(v)
			}
		}
	}
}

// interpolate is step 2 for one position: x[i] + f*(x[i+1]-x[i]), with the
// float32 roundings spelled out (no fused multiply-add) as in the kernel.
func interpolate(x []float32, pos float32) float32 {
	i := min(int(pos), len(x)-2)
	f := pos - float32(i)
	a, b := x[i], x[i+1]
	return a + float32(f*(b-a))
}

// Close releases the scratch; while an engine uses the processor it
// refuses with backend.ErrInUse. Further calls return backend.ErrClosed.
func (p *CPUProcessor) Close() error {
	if p.closed {
		return errClosed("process: CPUProcessor.Close")
	}
	return p.claim.Close(func() error {
		p.closed = true
		p.slots, p.plan = nil, nil
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
