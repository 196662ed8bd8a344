package process

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/cpu"
	"github.com/vortexgo/vortexgo/gosrc/cuda"
	"github.com/vortexgo/vortexgo/gosrc/engine"
	"github.com/vortexgo/vortexgo/gosrc/internal/turn"
	"github.com/vortexgo/vortexgo/gosrc/replay"
)

// Launch geometry. 256 threads keep 8 warps per block, enough to hide
// latency on every architecture since Volta while letting many blocks
// share an SM.
const (
	threads = 256
	// postBlocks caps the grid of the grid-stride post kernel at a few
	// waves of an H100/H200 (132 SMs x 8 resident blocks of 256 threads).
	postBlocks = 132 * 8 * 4
	// spectrumRecordsPerThread is how many records one oct_spectrum thread
	// processes: enough to amortise its table reads, few enough that a
	// block of thousands of records still fills the device.
	spectrumRecordsPerThread = 8
	// spectrumFill is how many oct_spectrum threads a block needs before a
	// thread takes more than one record: an H200's 132 SMs x 2048 resident
	// threads. Below, a 256 x 1024 block ran as 128 blocks of 256 threads,
	// each thread 8 records in turn, a fraction of the device (the slots'
	// kernels follow one another on one stream with one slot: issue 29).
	spectrumFill = 132 * 2048
	// meanRows is oct_history_mean's blockDim.y: the rows each of its blocks
	// writes and sums at once (a power of two, at most OCT_MEAN_ROWS).
	meanRows = 32
	// maxGridY is CUDA's limit on gridDim.y.
	maxGridY = 65535
)

// spectrumRecordsPer returns how many records each oct_spectrum thread
// processes for a block of records x m values: one where a thread per
// value fills the device at most (spectrumFill), else up to
// spectrumRecordsPerThread (the per-sample tables read once for them).
// The arithmetic per value is the same whatever the split.
func spectrumRecordsPer(records, m int) int {
	return max(1, min(spectrumRecordsPerThread, records*m/spectrumFill))
}

// Flags of oct_post and the fused kernels; keep in step with
// kernels/oct_value.cuh.
const (
	flagLog10     = 1
	flagSquare    = 2
	flagMagnitude = 4
	flagLevels    = 8
)

// CUDAProcessor runs the processing chain on a CUDA device: the rolling
// average's history and mean, a fused load/average-subtraction/resampling/
// filter kernel into complex64, the inverse FFT (a one-pass kernel of
// kernels/fft.cu for the lengths it covers, such as 1376, else a batched
// cuFFT C2C of any length), and a fused normalise/magnitude/log/levels/int8
// kernel. Every step is enqueued on the caller's stream; Process allocates
// nothing and never waits on the host.
//
// Each slot owns its scratch and its cuFFT plan, so calls for different
// slots may run concurrently on different streams; calls for one slot must
// be issued in order on one stream (the scratch is reused by the next call
// in stream order). The rolling average's history is shared: calls update
// it in the order Process is called, each waiting on the device (an event,
// never the host) for the previous call's update, whatever stream that
// call used. Change swaps the configuration between blocks.
type CUDAProcessor struct {
	dev *cuda.Device

	fnAverage, fnSpectrum, fnPost            *cuda.Function
	fnClockLoad, fnClockWindow, fnClockPhase *cuda.Function

	// swap guards st: Process holds it shared while it enqueues a block
	// (microseconds, never waiting on the device; uncontended but for a
	// Change), Change exclusively while it swaps the state, so no block is
	// enqueued on a state being freed.
	swap sync.RWMutex
	st   *cudaState
	// order keeps the blocks' history updates in ticket order when the
	// engine submits them from several goroutines (OrderedProcessor); a
	// caller waits for its turn before it takes swap, so a Change waiting
	// for swap never waits for a caller that waits for its turn.
	order    *turn.Order
	mu       sync.Mutex // serialises Prepare, Change and Close
	prepared bool
	closed   atomic.Bool
	claim    engine.Claim // refuses Close while an engine runs the processor
	alone    standalone   // vortex's next outside an engine (standalone.go)
	// cuFFTOnly makes every length use cuFFT, for tests and benchmarks
	// that compare the one-pass kernels with it; set before Prepare.
	cuFFTOnly bool
	// unfused keeps the spectrum, FFT and output kernels where a fused
	// kernel covers the length and FusedEnv asks for it, for tests and
	// benchmarks that compare the two; set before Prepare.
	unfused bool
	// noGraphs launches every block's kernels directly instead of
	// replaying the slots' graphs (graphs.go), for tests and benchmarks
	// that compare the two; set before Prepare.
	noGraphs bool
}

// cudaState is one configuration's device resources.
type cudaState struct {
	cfg  Config
	m    int
	post postParams
	// Device addresses of the shared read-only tables, 0 when unused: the
	// kernels skip a step on a null pointer.
	before, after, wBefore, wAfter, filt uintptr
	slots                                []*cudaSlot
	buffers                              []*cuda.Buffer // the tables and slot scratch, freed with the state
	fft                                  *onePassKernel // the inverse FFT of length m (fft.go), nil when cuFFT transforms it
	fused                                *fusedKernel   // steps 1-5 in one kernel (fused.go), nil when the chain runs as three
	hist                                 *cudaHistory   // nil without averaging; kept across compatible changes
}

// cudaHistory is the rolling average's device history and the host's view
// of it.
type cudaHistory struct {
	// mu orders the history updates of concurrent Process calls; it is
	// held while two kernel launches and an event record are enqueued,
	// which never block on the device.
	mu           sync.Mutex
	buf          *cuda.Buffer // int32 ring, AverageWindow x N
	index, count int          // the ring's next row and valid rows (as enqueued)
	prev         *cuda.Event  // recorded after the last enqueued update, nil when none is pending
}

// cudaSlot is one slot's scratch.
type cudaSlot struct {
	avg      uintptr                 // float32 average record, N (AverageWindow > 0)
	spectrum uintptr                 // complex64 spectra / A-scans, AscansPerBlock x M; first the clock's analytic signal
	phase    uintptr                 // float32 clock phase, AscansPerBlock x N (ClockChannel)
	phaseMax uintptr                 // float32 maximum phase per record, AscansPerBlock (ClockChannel)
	plan     *cuda.FFTPlan           // length M, AscansPerBlock records: the clock's transforms and the inverse FFT without a one-pass kernel
	averaged *cuda.Event             // recorded after this slot's last history update
	graphs   *replay.Cache[graphKey] // the block work's graphs by address set (graphs.go)
	capture  *cuda.Stream            // where the graphs are captured, nil with noGraphs
}

var _ engine.OrderedProcessor = (*CUDAProcessor)(nil)

// NewCUDAProcessor validates cfg and returns a processor for dev; Prepare
// loads the kernels and allocates.
func NewCUDAProcessor(dev *cuda.Device, cfg Config) (*CUDAProcessor, error) {
	if dev == nil {
		return nil, errors.New("process: NewCUDAProcessor: dev=nil, expected a *cuda.Device")
	}
	st, err := newCUDAState(cfg)
	if err != nil {
		return nil, err
	}
	// VORTEXGO_CUDA_GRAPHS=0 launches every block's kernels one by one, as
	// before the slots' graphs: an escape hatch should a driver replay a
	// graph wrongly, and the baseline a benchmark compares the graphs with.
	// Any other value than 0, 1 or none is refused: a misspelt "off" must
	// not leave graphs on unnoticed.
	graphs, err := replay.Enabled()
	if err != nil {
		return nil, backend.Invalidf("process: NewCUDAProcessor: %v", err)
	}
	noGraphs := !graphs
	// How long a slot's submitter polls for the rolling average's turn
	// before it parks (internal/turn): the environment's window, else none
	// until an engine chooses (SetTurnWindow).
	window, _, err := turn.Configured()
	if err != nil {
		return nil, backend.Invalidf("process: NewCUDAProcessor: %v", err)
	}
	return &CUDAProcessor{dev: dev, st: st, order: turn.New(window), noGraphs: noGraphs}, nil
}

func newCUDAState(cfg Config) (*cudaState, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.clone()
	return &cudaState{cfg: cfg, m: cfg.OutputSamples(), post: newPostParams(&cfg)}, nil
}

// state returns the current configuration state.
func (p *CUDAProcessor) state() *cudaState {
	p.swap.RLock()
	defer p.swap.RUnlock()
	return p.st
}

// Config returns a copy of the processor's configuration.
func (p *CUDAProcessor) Config() Config { return p.state().cfg.clone() }

// OutputSamples is the length of one processed record.
func (p *CUDAProcessor) OutputSamples() int { return p.state().m }

// Device is the GPU the processor runs on (engine.DeviceProcessor).
func (p *CUDAProcessor) Device() backend.Device { return p.dev }

// Float32Optional (engine.Float32Optional): Process takes out=0 when
// only the int8 output is wanted, and the post kernel then writes none.
func (p *CUDAProcessor) Float32Optional() bool { return true }

// InputValues is the number of uint16 values of one raw record that
// Process reads: SamplesPerRecord x ChannelsPerSample. A caller's raw
// buffers must hold that many per record.
func (p *CUDAProcessor) InputValues() int {
	c := &p.state().cfg
	return c.SamplesPerRecord * c.Channels()
}

// Prepare loads the kernels (JIT-compiled once per device), uploads the
// resampling and filter tables, and allocates the history and each slot's
// scratch, event and cuFFT plan. Calling it again does nothing. On error,
// whatever was allocated is released.
func (p *CUDAProcessor) Prepare() error {
	const op = "process: CUDAProcessor.Prepare"
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed.Load() {
		return errClosed(op)
	}
	if p.prepared {
		return nil
	}
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
		{&p.fnAverage, "oct_history_mean"},
		{&p.fnSpectrum, "oct_spectrum"}, {&p.fnPost, "oct_post"},
		{&p.fnClockLoad, "oct_clock_load"}, {&p.fnClockWindow, "oct_clock_window"}, {&p.fnClockPhase, "oct_clock_phase"},
	} {
		if *k.fn, err = mod.Function(k.name); err != nil {
			return fmt.Errorf("%s: %w", op, err)
		}
	}
	if err := p.allocate(p.st, nil); err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	p.prepared = true
	return nil
}

// allocate uploads st's tables and allocates its slots, and its history or
// prev's when compatible. It may block: the tables go up through a
// private stream and a synchronize, so they are in place before any
// Process call can use them on another stream. This is set-up, not the hot
// path. On error, whatever it allocated is released.
func (p *CUDAProcessor) allocate(st *cudaState, prev *cudaState) (err error) {
	defer func() {
		if err != nil {
			st.release(prev)
		}
	}()
	s, err := p.dev.CreateStream(0)
	if err != nil {
		return err
	}
	defer s.Close()
	var staging []*cuda.Buffer
	defer func() {
		for _, b := range staging {
			b.Free()
		}
	}()
	alloc := func(n int) (uintptr, error) {
		b, err := p.dev.Malloc(n)
		if err != nil {
			return 0, err
		}
		st.buffers = append(st.buffers, b)
		return b.Ptr(), nil
	}
	upload := func(host []byte) (uintptr, error) {
		d, err := alloc(len(host))
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
	if len(st.cfg.ResamplingSamples) > 0 {
		r := newResampling(st.cfg.ResamplingSamples, st.cfg.SamplesPerRecord)
		for _, t := range []struct {
			dst  *uintptr
			data []byte
		}{
			{&st.before, bytesOf(r.before)}, {&st.after, bytesOf(r.after)},
			{&st.wBefore, bytesOf(r.wBefore)}, {&st.wAfter, bytesOf(r.wAfter)},
		} {
			if *t.dst, err = upload(t.data); err != nil {
				return fmt.Errorf("ResamplingSamples: %w", err)
			}
		}
	}
	if f := st.cfg.SpectralFilter; len(f) > 0 {
		if st.filt, err = upload(bytesOf(f)); err != nil {
			return fmt.Errorf("SpectralFilter: %w", err)
		}
	}

	n, m, R := st.cfg.SamplesPerRecord, st.m, st.cfg.AscansPerBlock
	fuse, err := fusedEnabled()
	if err != nil {
		return err
	}
	if fuse && !p.unfused && !p.cuFFTOnly && fusable(&st.cfg, m) {
		k, err := loadFused(p.dev, m)
		if err != nil {
			return fmt.Errorf("fused kernel of %d points: %w", m, err)
		}
		if k.tw, err = upload(bytesOf(rootsOfUnity(m))); err != nil {
			return fmt.Errorf("fused kernel of %d points: %w", m, err)
		}
		st.fused = k
	}
	if st.cfg.EnableIFFT && !p.cuFFTOnly && st.fused == nil {
		k, err := loadOnePassFFT(p.dev, m)
		if err != nil {
			return fmt.Errorf("inverse FFT of %d points: %w", m, err)
		}
		if k != nil {
			if k.tw, err = upload(bytesOf(k.twiddles())); err != nil {
				return fmt.Errorf("inverse FFT of %d points: %w", m, err)
			}
			st.fft = k
		}
	}
	if st.cfg.AverageWindow > 0 {
		if prev != nil && prev.hist != nil && historyCompatible(&prev.cfg, &st.cfg) {
			st.hist = prev.hist
		} else {
			b, err := p.dev.Malloc(st.cfg.AverageWindow * n * 4)
			if err != nil {
				return fmt.Errorf("history: %w", err)
			}
			st.hist = &cudaHistory{buf: b}
		}
	}
	st.slots = make([]*cudaSlot, st.cfg.Slots)
	for i := range st.slots {
		sl := &cudaSlot{graphs: replay.New[graphKey](maxSlotGraphs, maxSlotSeen)}
		st.slots[i] = sl
		if st.cfg.AverageWindow > 0 {
			if sl.avg, err = alloc(n * 4); err != nil {
				return fmt.Errorf("slot %d: %w", i, err)
			}
			if sl.averaged, err = p.dev.CreateEvent(false); err != nil {
				return fmt.Errorf("slot %d: %w", i, err)
			}
		}
		if !p.noGraphs && R*n <= maxGraphBlockSamples { // graphs.go: small blocks only
			if sl.capture, err = p.dev.CreateStream(0); err != nil {
				return fmt.Errorf("slot %d: graph capture stream: %w", i, err)
			}
		}
		// The fused kernel keeps a block's spectra in shared memory: no
		// scratch for them (a 8192 x 2048 block's would be 128 MiB a slot).
		if st.fused == nil {
			if sl.spectrum, err = alloc(R * m * 8); err != nil {
				return fmt.Errorf("slot %d: %w", i, err)
			}
			// The plan always transforms AscansPerBlock records; the rows past
			// a short block's records hold zeros or stale spectra and are never
			// read back. Zero them once so no NaN ever appears there.
			if err = s.Memset(sl.spectrum, 0, R*m*8); err != nil {
				return fmt.Errorf("slot %d: %w", i, err)
			}
		}
		if st.cfg.ClockChannel != nil {
			if sl.phase, err = alloc(R * n * 4); err != nil {
				return fmt.Errorf("slot %d: clock phase: %w", i, err)
			}
			if sl.phaseMax, err = alloc(R * 4); err != nil {
				return fmt.Errorf("slot %d: clock phase: %w", i, err)
			}
		}
		// The clock's Hilbert transform uses the plan too (M = N with a
		// clock), as vortex plans for enable_ifft or clock_channel; the
		// inverse FFT needs none where a one-pass kernel covers M.
		if (st.cfg.EnableIFFT && st.fft == nil && st.fused == nil) || st.cfg.ClockChannel != nil {
			if sl.plan, err = cuda.NewFFTPlan(p.dev, m, R, cuda.C2C); err != nil {
				return fmt.Errorf("slot %d: %w", i, err)
			}
		}
	}
	if err = s.Synchronize(); err != nil {
		return fmt.Errorf("uploading tables: %w", err)
	}
	return nil
}

// Change validates cfg and makes it the configuration of the blocks that
// Process enqueues from now on (vortex's change(config)); blocks already
// enqueued finish with the previous one. The rolling average's history is
// kept when the window, samples and channel are unchanged (vortex's
// CUDAProcessor keeps it over its "lightweight" changes), else it starts
// over. Change allocates the new configuration's resources, then waits for
// the device (cuCtxSynchronize) before freeing the previous ones; graphs
// captured before a Change must not be replayed after it. While an engine
// runs the processor, a change of the block's shape (samples, channels,
// records, output samples, slots) is refused with backend.ErrInUse, as the
// engine's buffers were sized for the old one.
func (p *CUDAProcessor) Change(cfg Config) error {
	const op = "process: CUDAProcessor.Change"
	next, err := newCUDAState(cfg)
	if err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed.Load() {
		return errClosed(op)
	}
	prev := p.st
	if f := shapeChanged(&prev.cfg, &next.cfg); f != "" && p.claim.InUse() {
		return fmt.Errorf("%s: Config.%s changes while an engine runs the processor, expected the same block shape (stop the engine first): %w", op, f, backend.ErrInUse)
	}
	if !p.prepared {
		p.swap.Lock()
		p.st = next
		p.swap.Unlock()
		return nil
	}
	if err := p.allocate(next, prev); err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	p.swap.Lock()
	p.st = next
	p.swap.Unlock()
	// Every block enqueued on prev was enqueued before the swap: once the
	// device is idle, none uses prev, and a kept history has no update
	// pending to wait for (its prev event belongs to prev's slots).
	if err := p.dev.Synchronize(); err != nil {
		return fmt.Errorf("%s: waiting for the blocks of the previous configuration: %w", op, err)
	}
	if h := next.hist; h != nil && h == prev.hist {
		h.mu.Lock()
		for _, sl := range prev.slots {
			if h.prev == sl.averaged {
				h.prev = nil // completed; a block enqueued since may have replaced it
			}
		}
		h.mu.Unlock()
	}
	if err := prev.release(next); err != nil {
		return fmt.Errorf("%s: releasing the previous configuration: %w", op, err)
	}
	return nil
}

// bytesOf views a slice's memory as bytes.
func bytesOf[T any](v []T) []byte {
	var zero T
	return unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), len(v)*int(unsafe.Sizeof(zero)))
}

// Process enqueues the processing of records raw spectra at device address
// in (uint16, records x SamplesPerRecord x ChannelsPerSample) into out
// (float32) and, when outInt8 != 0, outInt8 (int8), each records x
// OutputSamples(), on s, which must be a *cuda.Stream of the processor's
// device. The block's records enter the rolling average's history
// (vortex's append_history=True).
func (p *CUDAProcessor) Process(slot int, s backend.Stream, in uintptr, records int, out uintptr, outInt8 uintptr) error {
	return p.process(p.order.Take(), slot, s, in, records, out, outInt8, true)
}

// ProcessHistory is Process with vortex's append_history: false leaves the
// history as it is and subtracts its current mean (none while it is
// empty).
func (p *CUDAProcessor) ProcessHistory(slot int, s backend.Stream, in uintptr, records int, out uintptr, outInt8 uintptr, appendHistory bool) error {
	return p.process(p.order.Take(), slot, s, in, records, out, outInt8, appendHistory)
}

// Ticket reserves the next place in the processor's block order
// (engine.OrderedProcessor).
func (p *CUDAProcessor) Ticket() uint64 { return p.order.Take() }

// ProcessTicket is Process in the place of ticket: its history update
// waits for those of the earlier tickets; the rest of its work does not.
func (p *CUDAProcessor) ProcessTicket(ticket uint64, slot int, s backend.Stream, in uintptr, records int, out uintptr, outInt8 uintptr) error {
	return p.process(ticket, slot, s, in, records, out, outInt8, true)
}

// SetTurnWindow sets how long a ProcessTicket polls for its turn before
// it parks (engine.OrderedProcessor).
func (p *CUDAProcessor) SetTurnWindow(window time.Duration) { p.order.SetWindow(window) }

// SkipTicket gives up the place of ticket (its block is not processed).
func (p *CUDAProcessor) SkipTicket(ticket uint64) {
	p.order.Wait(ticket)
	p.order.Done(ticket)
}

func (p *CUDAProcessor) process(ticket uint64, slot int, s backend.Stream, in uintptr, records int, out uintptr, outInt8 uintptr, appendHistory bool) error {
	const op = "process: CUDAProcessor.Process"
	p.order.Wait(ticket)
	inTurn := true
	passTurn := func() { // once the history update is enqueued (or there is none)
		if inTurn {
			inTurn = false
			p.order.Done(ticket)
		}
	}
	defer passTurn()
	p.swap.RLock()
	defer p.swap.RUnlock()
	st := p.st
	if err := checkProcess(op, p.closed.Load(), st.slots != nil, &st.cfg, slot, s, in, records, out, outInt8); err != nil {
		return err
	}
	cs, ok := s.(*cuda.Stream)
	if !ok {
		return fmt.Errorf("%s: s is a %T, expected a *cuda.Stream", op, s)
	}
	if records == 0 {
		return nil
	}
	sl := st.slots[slot]

	// Step 1a: the rolling average.
	var avg uintptr
	if st.hist != nil {
		// A graph would replay the history position of its capture: refuse
		// rather than average the wrong records. One driver query per block,
		// only with averaging.
		if cs.Capturing() {
			return fmt.Errorf("%s: AverageWindow=%d cannot be captured into a graph (the rolling average's position advances with every call), expected a stream that is not capturing: %w",
				op, st.cfg.AverageWindow, backend.ErrInvalid)
		}
		if sl.capture != nil {
			// The slot replays graphs: the averaging kernel goes into the
			// block's graph, in the turn (averagedGraph).
			if err := p.averagedGraph(st, cs, sl, in, records, out, outInt8, appendHistory); err != nil {
				return fmt.Errorf("%s: %w", op, err)
			}
			return nil
		}
		subtract, err := p.average(st, cs, sl, in, records, appendHistory)
		if err != nil {
			return fmt.Errorf("%s: %w", op, err)
		}
		if subtract {
			avg = sl.avg
		}
	}
	passTurn()
	k := graphKey{in: in, avg: avg, out: out, outInt8: outInt8, records: records}
	if err := sl.graphs.Run(cs, sl.capture, k, func(s *cuda.Stream) error { return p.enqueue(st, s, sl, k) }); err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	return nil
}

// averagedGraph enqueues a block's whole device work on cs, the rolling
// average included, as one graph of the slot's where it has one (graphs.go),
// with the history's mutex held: the block's history update and mean after
// the previous update (whatever stream it ran on), the slot's averaged
// event recorded right after them, then the rest. The history's ring
// position and counts are part of the graph's key: a slot cycling through
// an engine's buffers sees a few of them again and again (one with a
// window no longer than a block, three with vortex's demos' window of two
// blocks).
//
// Why: a launch costs the submitting thread about 4 us on the GPU VMs, and
// the averaging kernel was one of two per block outside the graph, on the
// slot submitter's turn (issue 29). In the graph the averaged event is an
// external event node: each launch records it when the averaging is done,
// so the next block's update, on another slot's stream, waits for that and
// not for the whole of this block's graph.
func (p *CUDAProcessor) averagedGraph(st *cudaState, cs *cuda.Stream, sl *cudaSlot, in uintptr, records int, out, outInt8 uintptr, appendHistory bool) error {
	h := st.hist
	h.mu.Lock()
	defer h.mu.Unlock()
	k := graphKey{in: in, out: out, outInt8: outInt8, records: records}
	// The wait for the previous update is in the graph too, an external
	// event wait node (the other slot's averaged event, in the key): one
	// driver call a block fewer on the submitting thread (issue 29: -2..-6%
	// a block at 256 and 512 records on the H200, docs/bench.md).
	h.position(sl, &k, st.cfg.AverageWindow, appendHistory)
	if k.avg != 0 {
		k.prev = h.prev
	}
	err := sl.graphs.Run(cs, sl.capture, k, func(s *cuda.Stream) error {
		if k.prev != nil {
			if err := replay.Wait(s, k.prev, s == sl.capture); err != nil {
				return fmt.Errorf("waiting for the history's previous update: %w", err)
			}
		}
		if k.avg != 0 {
			// Into a capture, the averaged event is recorded by each launch.
			if err := p.launchAverage(st, s, sl, k, s == sl.capture); err != nil {
				return err
			}
		}
		return p.enqueue(st, s, sl, k)
	})
	if err != nil || k.avg == 0 {
		return err
	}
	h.advance(k, st.cfg.AverageWindow, sl)
	return nil
}

// launchAverage launches on s the history update and mean of k's block
// (k.histIndex, k.histCnt, k.histCount) into the slot's average record,
// then records the slot's averaged event after them: as an external event
// node when s is capturing a graph (external), else at once.
func (p *CUDAProcessor) launchAverage(st *cudaState, s *cuda.Stream, sl *cudaSlot, k graphKey, external bool) error {
	n := st.cfg.SamplesPerRecord
	ch, channel := int32(st.cfg.Channels()), int32(st.cfg.Channel)
	var signed int32
	if st.cfg.InterpretAsSigned {
		signed = 1
	}
	// 32 samples x meanRows row strides per block (kernels/oct.cu oct_history_mean).
	if err := s.Launch(p.fnAverage, cuda.Dim3{X: uint32(ceilDiv(n, 32)), Y: 1, Z: 1}, cuda.Dim3{X: 32, Y: meanRows, Z: 1}, 0,
		k.in, st.hist.buf.Ptr(), sl.avg, int32(k.records), int32(n), ch, channel, signed, int32(k.histCnt), int32(k.histIndex),
		int32(st.cfg.AverageWindow), int32(k.histCount)); err != nil {
		return fmt.Errorf("oct_history_mean: %w", err)
	}
	if err := replay.Record(s, sl.averaged, external); err != nil {
		return fmt.Errorf("averaged event: %w", err)
	}
	return nil
}

// enqueue launches a block's device work after the rolling average on cs
// (steps 2-5), directly or into a capture (graphs.go): its arguments are
// k's and the state's, nothing else.
func (p *CUDAProcessor) enqueue(st *cudaState, cs *cuda.Stream, sl *cudaSlot, k graphKey) error {
	n, m := st.cfg.SamplesPerRecord, st.m
	ch, channel := int32(st.cfg.Channels()), int32(st.cfg.Channel)
	var signed int32
	if st.cfg.InterpretAsSigned {
		signed = 1
	}
	block := cuda.Dim3{X: threads, Y: 1, Z: 1}
	in, records := k.in, k.records

	// Step 2's clock phase, into the slot's phase tables.
	var phase, phaseMax uintptr
	if st.cfg.ClockChannel != nil {
		if err := p.clockPhase(st, cs, sl, in, records, ch, signed); err != nil {
			return err
		}
		phase, phaseMax = sl.phase, sl.phaseMax
	}

	// Steps 1b-5 in one kernel (fused.go) where the length has one: the
	// block's raw records in, its outputs out, nothing in between.
	if st.fused != nil {
		return st.fused.exec(st, cs, k, ch, channel, signed)
	}

	// Steps 1b-3: load, subtract, resample and filter into complex64.
	// x covers the samples, y the records in strides (the kernel reads its
	// per-sample tables once per thread and loops over records).
	grid := cuda.Dim3{X: uint32(ceilDiv(m, threads)), Y: uint32(min(ceilDiv(records, spectrumRecordsPer(records, m)), maxGridY)), Z: 1}
	if err := cs.Launch(p.fnSpectrum, grid, block, 0,
		in, k.avg, st.before, st.after, st.wBefore, st.wAfter, phase, phaseMax, st.filt, sl.spectrum,
		int32(n), int32(m), ch, channel, signed, int32(records)); err != nil {
		return fmt.Errorf("oct_spectrum: %w", err)
	}

	// Step 4: inverse FFT in place, on the caller's stream: the one-pass
	// kernel transforms the block's records, cuFFT its plan's batch.
	if st.cfg.EnableIFFT && st.fft != nil {
		if err := st.fft.exec(cs, sl.spectrum, records); err != nil {
			return err
		}
	} else if st.cfg.EnableIFFT {
		if err := sl.plan.SetStream(cs); err != nil {
			return err
		}
		if err := sl.plan.ExecC2C(sl.spectrum, sl.spectrum, false); err != nil {
			return err
		}
	}

	// Step 5: output values.
	total := records * m
	flags := st.post.flags()
	kp := st.post.kernel()
	grid = cuda.Dim3{X: uint32(min(ceilDiv(total, threads), postBlocks)), Y: 1, Z: 1}
	if err := cs.Launch(p.fnPost, grid, block, 0,
		sl.spectrum, k.out, k.outInt8, int32(total), flags, kp.outMul, kp.outAdd, kp.lvlMul, kp.lvlAdd); err != nil {
		return fmt.Errorf("oct_post: %w", err)
	}
	return nil
}

// clockPhase enqueues on cs the clock's phase of each record (doc.go,
// step 2 with a clock): the demeaned clock into the slot's spectrum
// buffer, vortex's Hilbert transform there (forward FFT, window, inverse
// FFT), and the unwrapped phase and its maximum into the slot's phase
// tables, which oct_spectrum reads. All of it device work on the caller's
// stream: no host wait.
func (p *CUDAProcessor) clockPhase(st *cudaState, cs *cuda.Stream, sl *cudaSlot, in uintptr, records int, ch, signed int32) error {
	n := st.cfg.SamplesPerRecord
	block := cuda.Dim3{X: threads, Y: 1, Z: 1}
	perRecord := cuda.Dim3{X: uint32(records), Y: 1, Z: 1}
	if err := cs.Launch(p.fnClockLoad, perRecord, block, 0,
		in, sl.spectrum, int32(n), ch, int32(*st.cfg.ClockChannel), signed); err != nil {
		return fmt.Errorf("oct_clock_load: %w", err)
	}
	// The plan transforms AscansPerBlock records; the rows past this
	// block's hold zeros or an earlier block's values, finite and never
	// read.
	if err := sl.plan.SetStream(cs); err != nil {
		return err
	}
	if err := sl.plan.ExecC2C(sl.spectrum, sl.spectrum, true); err != nil {
		return fmt.Errorf("clock FFT: %w", err)
	}
	if err := cs.Launch(p.fnClockWindow, cuda.Dim3{X: uint32(ceilDiv(records*n, threads)), Y: 1, Z: 1}, block, 0,
		sl.spectrum, int32(n), int32(records*n)); err != nil {
		return fmt.Errorf("oct_clock_window: %w", err)
	}
	if err := sl.plan.ExecC2C(sl.spectrum, sl.spectrum, false); err != nil {
		return fmt.Errorf("clock inverse FFT: %w", err)
	}
	if err := cs.Launch(p.fnClockPhase, perRecord, block, 0,
		sl.spectrum, sl.phase, sl.phaseMax, int32(n)); err != nil {
		return fmt.Errorf("oct_clock_phase: %w", err)
	}
	return nil
}

// average enqueues on cs the history update for a block (with
// appendHistory, its last min(records, W) records enter the ring) and the
// mean of the ring into the slot's average record, after the previous
// call's update (on whichever stream it ran), then records the slot's
// event for the next. It reports whether there is a mean to subtract (not
// while the history is empty).
func (p *CUDAProcessor) average(st *cudaState, cs *cuda.Stream, sl *cudaSlot, in uintptr, records int, appendHistory bool) (bool, error) {
	h := st.hist
	h.mu.Lock()
	defer h.mu.Unlock()
	k := graphKey{in: in, records: records}
	if err := h.begin(cs, sl, &k, st.cfg.AverageWindow, appendHistory); err != nil || k.avg == 0 {
		return false, err
	}
	if err := p.launchAverage(st, cs, sl, k, false); err != nil {
		return false, err
	}
	h.advance(k, st.cfg.AverageWindow, sl)
	return true, nil
}

// begin makes cs wait for the history's previous update and sets k's
// history fields for a block of k.records records on slot sl: its ring
// position, the records it appends and the valid rows after it, and k.avg
// to the slot's average record; k.avg stays 0 when the history stays
// empty (nothing to update or subtract). h.mu is held.
func (h *cudaHistory) begin(cs *cuda.Stream, sl *cudaSlot, k *graphKey, w int, appendHistory bool) error {
	if h.prev != nil {
		if err := cs.WaitEvent(h.prev); err != nil {
			return err
		}
	}
	h.position(sl, k, w, appendHistory)
	return nil
}

// position sets k's history fields as begin does, without the wait.
func (h *cudaHistory) position(sl *cudaSlot, k *graphKey, w int, appendHistory bool) {
	cnt := 0
	if appendHistory {
		cnt = min(k.records, w)
	}
	if count := min(h.count+cnt, w); count > 0 {
		k.avg, k.histIndex, k.histCnt, k.histCount = sl.avg, h.index, cnt, count
	}
}

// advance moves the history past k's block, whose update was enqueued
// with sl's averaged event after it. h.mu is held.
func (h *cudaHistory) advance(k graphKey, w int, sl *cudaSlot) {
	h.index, h.count, h.prev = (k.histIndex+k.histCnt)%w, k.histCount, sl.averaged
}

// Close frees the scratch, tables and plans. cuMemFree waits for queued
// work that uses the memory, so Close is safe with Process calls still in
// flight on the GPU (it blocks until they finish). Further calls return
// backend.ErrClosed. While an engine uses the processor it refuses with
// backend.ErrInUse: closing it under a run used to break the run with
// "use of closed object".
func (p *CUDAProcessor) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed.Load() {
		return errClosed("process: CUDAProcessor.Close")
	}
	return p.claim.Close(func() error {
		p.swap.Lock()
		defer p.swap.Unlock()
		p.closed.Store(true)
		return errors.Join(p.alone.close(), p.st.release(nil))
	})
}

// Claims reports the claim an engine takes while it uses the processor
// (engine.Claimer): Close is refused until that engine's run ends.
func (p *CUDAProcessor) Claims() []*engine.Claim {
	p.claim.Name("CUDAProcessor")
	return []*engine.Claim{&p.claim}
}

// release frees everything the state allocated, its history unless keep
// (the state that took it over) holds it, and returns the first error.
func (st *cudaState) release(keep *cudaState) error {
	var first error
	note := func(err error) {
		if err != nil && first == nil {
			first = err
		}
	}
	for _, sl := range st.slots {
		if sl != nil {
			note(sl.graphs.Close()) // before the plans and scratch they name
		}
		if sl != nil && sl.capture != nil {
			note(sl.capture.Close())
		}
		if sl != nil && sl.plan != nil {
			note(sl.plan.Close())
		}
		if sl != nil && sl.averaged != nil {
			note(sl.averaged.Close())
		}
	}
	for _, b := range st.buffers {
		note(b.Free())
	}
	if st.hist != nil && (keep == nil || keep.hist != st.hist) {
		note(st.hist.buf.Free())
	}
	st.slots, st.buffers, st.hist = nil, nil, nil
	st.before, st.after, st.wBefore, st.wAfter, st.filt = 0, 0, 0, 0, 0
	st.fft, st.fused = nil, nil
	return first
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }
