package engine

import (
	"errors"
	"fmt"
	"unsafe"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/format"
	"github.com/vortexgo/vortexgo/gosrc/marker"
)

// Block is one preallocated unit of work travelling through the pipeline:
// acquired into pinned host memory (a host set it holds until its upload is
// queued, pool.go), uploaded and processed on a slot stream, formatted into
// the endpoints, then recycled. Every buffer and event is allocated once by
// Engine.Prepare.
type Block struct {
	// ID counts blocks since the engine started (0, 1, 2, ...).
	ID int64
	// Start is the index (since start) of the block's first record: its
	// scan position, from which formatters derive (volume, bscan, ascan).
	Start int64
	// Records is the number of valid records (the last block may be short).
	Records int
	// Slot is the index of the slot stream that processed the block.
	Slot int
	// remSlot is the slot of the remote processors that process the block
	// when its lane has one of its own (route), else -1 (processRemote
	// takes the device's next).
	remSlot int
	// Last is set on the run's last block: the formatters finish after it.
	Last bool
	// finishOnly marks the block of no records that ends a stopped run:
	// it only finishes the formatters (Engine.sendFinish).
	finishOnly bool

	// Markers are the block's markers from the Generate stage, sorted by
	// sample, all inside the block (capacity reserved at Prepare).
	Markers []marker.Marker
	// galvo holds the generated waveform per IO lead (index as
	// Engine.leads), RecordsPerBlock x output channels each; galvo[0] (lead
	// 0, the acquisition's timing) is a view of targetHost.
	galvo [][]float64
	// Target and actual positions: pinned host (written by the Generate
	// stage and the IOs) and their device copies (uploaded with the block).
	targetHost, actualHost backend.Buffer
	targetDev, actualDev   backend.Buffer
	actual                 []float64 // the IOs' measurements: a view of actualHost unless warped
	// sampleTarget and sampleActual view targetHost and actualHost: with
	// a ScannerWarp, the Generate stage writes the warped galvo[0] and
	// actual there (vortex's sample_target and sample_actual); without,
	// they are galvo[0] and actual themselves.
	sampleTarget, sampleActual []float64
	// strobes holds the digital strobes per IO lead (index as galvo).
	strobes [][]uint32
	io      IOBlock // reused per IO

	// raws holds each acquisition's raw spectra (index as Engine.acqs).
	raws []rawBuf
	// host is the pinned host memory the block's raw spectra are acquired
	// into, from the acquire loop's takeHost until the upload is queued
	// (pool.go); nil outside, and when every acquisition lends.
	host *hostSet
	// active marks the processors that process this block (index as
	// Engine.procs): each acquisition's rotation set for the block's ID.
	active []bool
	// tickets[i] is the block's place in OrderedProcessor i's order while
	// ticketed[i] (taken in block order by the process loop, or by the
	// acquire loop on the direct path; used by the slot's submitter); the
	// submitter closes submitted once it has made the block's driver calls
	// and counted it (nil when the process loop submitted the block
	// itself, or nothing was to be submitted).
	tickets   []uint64
	ticketed  []bool
	submitted chan struct{}
	// Outputs holds one entry per processor (index as Engine.procs).
	Outputs []BlockData
	// rem holds the remote processors' buffers on their devices (index as
	// Engine.procs; zero for the engine's own).
	rem []remoteBuf

	processed []backend.Buffer // float32 outputs, one per processor
	int8s     []backend.Buffer // int8 outputs, one per processor

	// Events, recorded every pass and reused; with timing enabled only on
	// a timed block (timed), which alone records start and feeds
	// Engine.Timings:
	start    backend.Event   // upload stream, before the upload (timed blocks only)
	uploaded backend.Event   // upload stream, after the upload: the slot stream waits on it
	ready    backend.Event   // slot stream, after processing
	epDone   []backend.Event // one per endpoint, after its formatting
	timed    bool            // this block's events keep timestamps (timingEvery)
	acquired float64         // host-clock acquire time, ms
	// times are the host times of the block's stages in its session, ns
	// since Start (Engine.stamp; vortex's JobTiming).
	times [blockMarks]int64
}

// rawBuf is one acquisition's raw spectra in a block.
type rawBuf struct {
	host    []uint16       // pinned, RecordsPerBlock x raw values per record, while the block holds a host set
	hostBuf backend.Buffer // host's memory, the block's host set's (nil without one)
	dev     backend.Buffer // the device copy
	src     uintptr        // the upload's source: hostBuf, or memory lent by a Lender
	stage   backend.Buffer // device staging of a packed frame (DeviceUnpacker), or nil
	values  int            // raw values per record
}

// hostUint16 views n uint16 values of memory that is not on the Go heap
// (pinned or mmap'd) as a slice.
func hostUint16(ptr uintptr, n int) []uint16 {
	if n == 0 || ptr == 0 {
		return nil
	}
	// Through a pointer-to-pointer conversion: the memory belongs to the
	// backend, never to the Go heap, so vet's uintptr->Pointer concern (the
	// collector moving or freeing it) does not apply.
	p := *(*unsafe.Pointer)(unsafe.Pointer(&ptr))
	return unsafe.Slice((*uint16)(p), n)
}

// hostFloat64 views n float64 values of backend host memory as a slice.
func hostFloat64(ptr uintptr, n int) []float64 {
	if n == 0 || ptr == 0 {
		return nil
	}
	p := *(*unsafe.Pointer)(unsafe.Pointer(&ptr)) // backend memory, see hostUint16
	return unsafe.Slice((*float64)(p), n)
}

// blockShape is what newBlock needs to size a block.
type blockShape struct {
	records    int
	rawSamples []int  // per acquisition
	lent       []bool // per acquisition: it lends pinned memory (Lender), no host buffer needed
	packed     []int  // per acquisition: bytes of its packed frame staged on the device (DeviceUnpacker), 0 for none
	procAcq    []int  // per processor: its acquisition
	outSamples []int  // per processor
	endpoints  int
	galvoOut   int // output channels
	galvoIn    int // input channels
	leads      int // distinct IO leads (lead 0 included)
	markers    int // marker capacity
	warped     bool
}

// MaxPoolBytes bounds the memory of the block pool (host and device
// together): 1 TiB, above any real configuration, and a bound that keeps
// every size below it representable.
const MaxPoolBytes = 1 << 40

// check bounds the pool's bytes before anything is allocated: per block,
// 2 B per raw sample twice (pinned host and device) and 5 B per output
// sample (float32 and int8) per processor.
func (sh blockShape) check(blocks int) error {
	// positions: 16 B per channel (pinned + device), plus 8 B per lead
	// and output channel for the waveforms of the other leads
	// and 4 B per lead for the strobes (and 8 B per channel more when
	// warped)
	per, ok0 := MulSize(sh.records, 24*(sh.galvoOut+sh.galvoIn)+8*sh.galvoOut*max(sh.leads-1, 0)+4*max(sh.leads, 1))
	raw, ok := 0, ok0
	for _, rs := range sh.rawSamples {
		n, ok1 := MulSize(sh.records, rs, 4)
		ok = ok && ok1 && n <= MaxPoolBytes
		raw += n
	}
	for _, out := range sh.outSamples {
		n, ok2 := MulSize(sh.records, out, 5)
		ok = ok && ok2 && n <= MaxPoolBytes
		per += n
	}
	total, ok3 := MulSize(raw+per, blocks)
	if !ok || !ok3 || raw > MaxPoolBytes || total > MaxPoolBytes {
		return TooLarge("block pool of %d blocks x %d records x %d raw samples (+ outputs %v): more than %d bytes, "+
			"expected smaller EngineConfig.records_per_block, blocks_to_allocate or samples_per_record",
			blocks, sh.records, sh.rawSamples, sh.outSamples, MaxPoolBytes)
	}
	return nil
}

// timingEvery is how often a block of the pool is timed on a CUDA device
// with Config.DeviceTimings: one in four. Why not every block: a
// timestamped event between two uploads on the copy stream costs
// copy-engine time (an expert pipeline lost 3-9 points of the H2D ceiling
// at 1376 samples in two runs when it recorded one before each copy, H100,
// bench/probe_expert_events.py; even one block in four cost the engine
// 1-3.5%, hence off by default), and the statistics of Engine.Timings need
// a sample, not every block. The CPU backend's events read the host clock
// for free: every block there.
const timingEvery = 4

// newBlock allocates one block; on error it frees what it allocated.
// timed says whether its events keep timestamps (Engine.Timings).
func newBlock(dev backend.Device, sh blockShape, timed bool) (b *Block, err error) {
	b = &Block{timed: timed, remSlot: -1}
	defer func() {
		if err != nil {
			err = errors.Join(err, b.free())
			b = nil
		}
	}()
	for a, rs := range sh.rawSamples {
		rawBytes := sh.records * rs * 2
		b.raws = append(b.raws, rawBuf{values: rs}) // freed with the block from here on
		if b.raws[a].dev, err = dev.Alloc(rawBytes); err != nil {
			return b, fmt.Errorf("engine: block raw device buffer of %d bytes (acquisition #%d): %w", rawBytes, a, err)
		}
		if a < len(sh.packed) && sh.packed[a] > 0 {
			// Not widened in place: the kernel's threads would overwrite
			// packed bytes other threads have yet to read.
			if b.raws[a].stage, err = dev.Alloc(sh.packed[a]); err != nil {
				return b, fmt.Errorf("engine: block packed staging of %d bytes (acquisition #%d): %w", sh.packed[a], a, err)
			}
		}
	}
	b.active = make([]bool, len(sh.outSamples))
	b.tickets = make([]uint64, len(sh.outSamples))
	b.ticketed = make([]bool, len(sh.outSamples))
	for _, out := range sh.outSamples {
		n := sh.records * out
		p, err := dev.Alloc(n * 4)
		if err != nil {
			return b, fmt.Errorf("engine: block float32 output of %d bytes: %w", n*4, err)
		}
		b.processed = append(b.processed, p)
		i8, err := dev.Alloc(n)
		if err != nil {
			return b, fmt.Errorf("engine: block int8 output of %d bytes: %w", n, err)
		}
		b.int8s = append(b.int8s, i8)
	}
	if b.start, err = dev.NewEvent(timed); err != nil {
		return b, fmt.Errorf("engine: block event: %w", err)
	}
	if b.ready, err = dev.NewEvent(timed); err != nil {
		return b, fmt.Errorf("engine: block event: %w", err)
	}
	if b.uploaded, err = dev.NewEvent(timed); err != nil { // timing: JobTiming.Upload
		return b, fmt.Errorf("engine: block event: %w", err)
	}
	for range sh.endpoints {
		ev, err := dev.NewEvent(timed)
		if err != nil {
			return b, fmt.Errorf("engine: block endpoint event: %w", err)
		}
		b.epDone = append(b.epDone, ev)
	}
	tBytes, aBytes := sh.records*sh.galvoOut*8, sh.records*sh.galvoIn*8
	if b.targetHost, err = dev.AllocPinned(tBytes); err != nil {
		return b, fmt.Errorf("engine: block target positions of %d bytes: %w", tBytes, err)
	}
	if b.targetDev, err = dev.Alloc(tBytes); err != nil {
		return b, fmt.Errorf("engine: block target positions of %d bytes: %w", tBytes, err)
	}
	if b.actualHost, err = dev.AllocPinned(aBytes); err != nil {
		return b, fmt.Errorf("engine: block actual positions of %d bytes: %w", aBytes, err)
	}
	if b.actualDev, err = dev.Alloc(aBytes); err != nil {
		return b, fmt.Errorf("engine: block actual positions of %d bytes: %w", aBytes, err)
	}
	b.galvo = make([][]float64, max(sh.leads, 1))
	b.sampleTarget = hostFloat64(b.targetHost.Ptr(), sh.records*sh.galvoOut)
	b.sampleActual = hostFloat64(b.actualHost.Ptr(), sh.records*sh.galvoIn)
	b.galvo[0], b.actual = b.sampleTarget, b.sampleActual
	if sh.warped {
		b.galvo[0] = make([]float64, sh.records*sh.galvoOut)
		b.actual = make([]float64, sh.records*sh.galvoIn)
	}
	for i := 1; i < len(b.galvo); i++ {
		b.galvo[i] = make([]float64, sh.records*sh.galvoOut)
	}
	b.strobes = make([][]uint32, len(b.galvo))
	for i := range b.strobes {
		b.strobes[i] = make([]uint32, sh.records)
	}
	b.Markers = make([]marker.Marker, 0, sh.markers)
	b.Outputs = make([]BlockData, len(sh.outSamples))
	for i, out := range sh.outSamples {
		r := b.raws[sh.procAcq[i]]
		b.Outputs[i] = BlockData{
			Block: b, Raw: r.dev.Ptr(), RawSamples: r.values,
			Processed: b.processed[i].Ptr(), Int8: b.int8s[i].Ptr(), OutputSamples: out,
			Ready:  b.ready,
			Target: format.DevicePositions{Ptr: b.targetDev.Ptr(), Channels: sh.galvoOut},
			Actual: format.DevicePositions{Ptr: b.actualDev.Ptr(), Channels: sh.galvoIn},
		}
	}
	return b, nil
}

// setStream tells the endpoints which stream the block was processed on
// (BlockData.Stream); nil when no processing was queued for it.
func (b *Block) setStream(s backend.Stream) {
	for i := range b.Outputs {
		b.Outputs[i].Stream = s
	}
}

// free releases everything the block holds, joining the errors.
func (b *Block) free() error {
	var errs []error
	bufs := []backend.Buffer{b.targetHost, b.targetDev, b.actualHost, b.actualDev}
	for _, r := range b.raws {
		bufs = append(bufs, r.dev, r.stage) // hostBuf is its host set's
	}
	for _, buf := range append(append(bufs, b.processed...), b.int8s...) {
		if buf != nil {
			errs = append(errs, buf.Free())
		}
	}
	for _, ev := range append([]backend.Event{b.start, b.ready, b.uploaded}, b.epDone...) {
		if ev != nil {
			errs = append(errs, ev.Close())
		}
	}
	b.raws = nil
	return errors.Join(errs...)
}
