package engine

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/format"
	"github.com/vortexgo/vortexgo/gosrc/guard"
	"github.com/vortexgo/vortexgo/gosrc/internal/spin"
	"github.com/vortexgo/vortexgo/gosrc/marker"
	"github.com/vortexgo/vortexgo/gosrc/ops"
	"github.com/vortexgo/vortexgo/gosrc/scan"
)

// ErrStopped is returned by Endpoint.Format when it gave up waiting (for a
// user's lock, for a storage queue) because the engine is stopping; the
// block is counted as dropped for that endpoint.
var ErrStopped = errors.New("engine: stopping")

// ownerSeq hands out engine lock tokens. They are negative so they can
// never equal a token chosen by Python (thread ids, positive counters).
var ownerSeq atomic.Int64

// state is the engine's lifecycle.
type state int32

const (
	stateNew state = iota
	statePrepared
	stateRunning
	stateFinished
	stateClosed
)

// Status is a snapshot of the engine's counters.
type Status struct {
	// BlocksAcquired counts blocks filled by the acquisition.
	BlocksAcquired int64
	// BlocksProcessed counts blocks whose upload and processing were
	// dispatched to a slot stream.
	BlocksProcessed int64
	// BlocksFormatted counts blocks whose formatting was dispatched to
	// every endpoint.
	BlocksFormatted int64
	// BlocksDropped counts blocks skipped after an error, or not
	// delivered to every endpoint because a stop interrupted a wait.
	BlocksDropped int64
	// Volumes counts volumes completed by the first formatter.
	Volumes int64
	// CallbackErrors counts Python handler exceptions (set by the Python
	// layer through RecordCallbackErrors).
	CallbackErrors int64
	// EventsDropped counts events not delivered (QueueDrop, or after a
	// stop request while the queue was full).
	EventsDropped int64
	// InFlight is the number of blocks out of the pool.
	InFlight int
	// Running is true between Start and the end of the session.
	Running bool
	// Dispatched counts the session's jobs (blocks) the Generate stage
	// began (vortex's SessionStatus.dispatched).
	Dispatched int64
	// Allocated is the pool's size: Config.BlocksToAllocate, or more on a
	// GPU with small blocks (poolBlocks; the acquisitions' host memory
	// stays BlocksToAllocate blocks).
	Allocated int
	// ProfilerDropped counts profiler marks not written (see profiler.go).
	ProfilerDropped int64
	// Frames sums the FrameCounts of the acquisitions that receive frames
	// (FrameCounter: a camera), for the current or last session.
	Frames FrameCounts
	// Done is true once the run has ended.
	Done bool
	// Prepared is true from a successful Prepare until Close.
	Prepared bool
	// Started is true once a Start has succeeded (and stays true).
	Started bool
	// Active is true from a successful Start until Stop (vortex's
	// active): a session exists, running or ended but not yet stopped.
	Active bool
	// Closed is true once Close was called.
	Closed bool
	// Err is the error that ended the run, or "".
	Err string
}

type epRoute struct {
	ep     Endpoint
	done   DoneFormatter // ep, when it records the done event itself
	id     int
	stream backend.Stream
	// sync: the endpoint's callbacks must run before the engine writes the
	// next volume into it (SetCallbackSync); pendingAck is the Seq of the
	// last volume event posted for it that was not yet waited for.
	sync       bool
	pendingAck uint64
	sub        FormatPlan // a slice of the block's plan (no allocation)
	// skip holds the event kinds nobody handles (SetEventMask): not posted.
	skip [eventKinds]bool
}

type fmtRoute struct {
	fmt  Formatter
	plan *FormatPlan
	fin  *FormatPlan // Finish's notifications, appended to the last block's plan
	eps  []*epRoute
	task int // the formatter's index in AddFormatter order (the profiler's task)
}

// acqRun is one acquisition of the engine.
type acqRun struct {
	acq    Acquisition
	lender Lender // acq, when it lends pinned memory (zero-copy upload)
	poster Poster // acq, when it DMAs into posted blocks (a digitizer)
	raw    int    // raw values per record (SamplesPerRecord)
	// packed is how the engine widens the source's packed blocks on the
	// device (DeviceUnpacker); zero when it uploads uint16 values.
	packed packing
	// rotation: the processor sets (indices of Engine.procs) that process
	// consecutive blocks in turn (Config.Rotations).
	rotation [][]int
}

// packing is a DeviceUnpacker's block layout, as the engine uploads it:
// bytes of packed values from offset of the host block, widened into
// values uint16 values of bits bits each.
type packing struct {
	bits, offset, bytes, values int
}

// leadLine delays the reference waveform for one IO lead (vortex's ring
// buffers): ring holds the last `delay` rows the lead has not yet output,
// tmp is scratch of delay+RecordsPerBlock rows, both allocated at Prepare.
type leadLine struct {
	lead, delay int
	ring, tmp   []float64
	sring, stmp []uint32 // the same for the strobes
}

// Engine runs the pipeline of a Config: acquire into pinned blocks, upload
// and process on slot streams, format into endpoints on their streams,
// recycle blocks once the device is done with them. Each stage is a
// goroutine joined by bounded channels, so a slow stage throttles the ones
// before it instead of growing a queue.
type Engine struct {
	cfg   Config
	dev   backend.Device
	owner int64

	acqs      []acqRun // in AddAcquisition order
	queue     *scan.ScanQueue
	ios       []ioNode
	ioLead    []int      // per IO: its index in leads
	leads     []leadLine // sorted by lead; leads[0] is lead 0
	maxLead   int
	future    []marker.Marker // markers generated past their block
	pending   []*Block        // generated, handed to IOs, not yet acquired
	postScan  int             // post-scan records still wanted
	strobes   *strobeGen      // the strobes of the largest lead
	warped    bool            // ScannerWarp is not NoWarp: positions are mapped into targetHost/actualHost
	queueSeen int64           // the queue's callback count already posted (EventQueue)
	sentLast  bool            // the acquire loop sent a block marked Last
	nextID    int64           // the acquire loop's next block ID and start
	nextStart int64
	ioGiven   []int64     // per IO: the next block ID it is owed
	procs     []Processor // every acquisition's processors, acquisition by acquisition
	procAcq   []int       // per processor: its acquisition (index of acqs)
	procDev   []int       // per processor: its device (index of remote), -1 for the engine's
	remote    []remoteDevice
	// rawOnEngine: an endpoint may read the raw spectra on the engine's
	// device, so they are uploaded there even for blocks only remote
	// processors process.
	rawOnEngine bool
	wantFloat   []bool       // per processor: its float32 output is written (float32Wanted)
	routes      [][]fmtRoute // per processor: its formatters
	eps         []*epRoute   // by endpoint id; shared by the routes of a formatter's processors
	endpoints   []Endpoint   // by endpoint id
	volumeFmt   Formatter    // the formatter whose volumes Status counts

	limit     int64 // records to acquire; 0 = unbounded
	blocks    []*Block
	slots     []backend.Stream
	upload    backend.Stream // every block's upload, in order (see Prepare)
	positions bool           // a PositionFormatExecutor reads positions on the device

	free chan *Block // the pool: every block not in a session's stages
	// poolSize is the blocks the pool holds (poolBlocks: blocks_to_allocate,
	// or more on a GPU with small blocks); set before the endpoints are
	// prepared (EndpointInfo.BlocksPerSlot).
	poolSize int
	// smallBlocks: a block holds less than sharedSlotBytes of raw spectra
	// (set at Prepare; slotSubmitters).
	smallBlocks bool
	// hosts holds the host sets not held by a block (pool.go), hostSets
	// all of them; nil when every acquisition lends its memory.
	hosts    chan *hostSet
	hostSets []*hostSet

	stateMu sync.Mutex
	state   state
	// cur is the current (or last) session (session.go); nil before the
	// first Start.
	cur atomic.Pointer[session]
	// startMono is the current session's base on CLOCK_MONOTONIC (ns):
	// the events' timestamps on Python's time.monotonic_ns clock.
	startMono atomic.Int64
	jobEvents atomic.Bool // SetJobEvents
	active    atomic.Bool // Status.Active: from a successful Start until Stop
	profMu    sync.Mutex
	profLog   string // SetProfilerLog

	// claims are the stages' Claims taken at Prepare and at each Start:
	// their Close refuses (backend.ErrInUse) until the session ends and
	// dropClaims releases them.
	claimMu sync.Mutex
	claims  []*Claim
	// owned is what the engine owns (stageOwners) from Prepare (or Own)
	// until Close; owning tells an empty list from none taken.
	owned  []stageKey
	owning bool

	recMu sync.Mutex // NextRecords: one Go consumer at a time

	acquired, processed, formatted, dropped, volumes, callbackErrs, dispatched atomic.Int64
	timings                                                                    timings
}

// New returns an engine for cfg on dev. Nothing is allocated until
// Prepare.
func New(cfg Config, dev backend.Device) (*Engine, error) {
	if dev == nil {
		return nil, errors.New("engine.New: dev=nil, expected a backend.Device")
	}
	q := cfg.ScanQueue
	if q == nil {
		q = scan.NewScanQueue()
	}
	return &Engine{cfg: cfg, dev: dev, owner: -ownerSeq.Add(1), queue: q}, nil
}

// ScanQueue is the engine's scan queue (vortex's engine.scan_queue): the
// Generate stage plays its scans into every block's waveform and markers.
// Append or interrupt scans on it at any time, also while the engine runs.
func (e *Engine) ScanQueue() *scan.ScanQueue {
	e.stateMu.Lock() // SetScanQueue replaces it between sessions
	defer e.stateMu.Unlock()
	return e.queue
}

// SetScanQueue replaces the scan queue the next session plays (vortex's
// engine.scan_queue = ScanQueue(): its session takes the queue at start).
// It is refused with backend.ErrInUse while a session runs: that session
// plays the current queue to its end, so a new one would be silently
// ignored until the next Start.
func (e *Engine) SetScanQueue(q *scan.ScanQueue) error {
	if q == nil {
		return backend.Invalidf("engine.scan_queue: None, expected a ScanQueue")
	}
	e.stateMu.Lock()
	defer e.stateMu.Unlock()
	switch e.state {
	case stateClosed:
		return fmt.Errorf("engine.scan_queue: the engine is closed: %w", backend.ErrClosed)
	case stateRunning:
		return fmt.Errorf("engine.scan_queue: a session is running and plays the current scan queue to its end; "+
			"stop() the engine before replacing it, or change what it plays with engine.scan_queue.interrupt(scan), "+
			"append(scan), clear() or reset(): %w", backend.ErrInUse)
	}
	e.queue = q
	return nil
}

// Owner is the lock token the engine uses on endpoint tensors.
func (e *Engine) Owner() int64 { return e.owner }

// Device is the engine's device.
func (e *Engine) Device() backend.Device { return e.dev }

// Endpoints returns the endpoints in id order (the Event.Endpoint index).
func (e *Engine) Endpoints() []Endpoint { return e.endpoints }

// Prepare validates the configuration and allocates everything the run
// needs: stage resources, slot streams, the block pool, channels and the
// event queue. Nothing is allocated afterwards.
func (e *Engine) Prepare() (err error) {
	e.stateMu.Lock()
	defer e.stateMu.Unlock()
	if e.state != stateNew {
		return fmt.Errorf("engine.Prepare: engine is %s, expected a new engine", e.stateName())
	}
	if err := e.cfg.Validate(); err != nil {
		return err
	}
	// The environment is read before any stage is touched: a bad value
	// leaves nothing prepared.
	askedStreams, err := slotStreamsAsked()
	if err != nil {
		return fmt.Errorf("engine.Prepare: %w", err)
	}
	askedSlots, err := activeSlotsAsked()
	if err != nil {
		return fmt.Errorf("engine.Prepare: %w", err)
	}
	askedBlocks, err := deviceBlocksAsked()
	if err != nil {
		return fmt.Errorf("engine.Prepare: %w", err)
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, e.release())
			e.dropClaims()
			// A failed Prepare keeps nothing: the stages may go to
			// another engine (or to this one's next try).
			e.disown()
			// The endpoints prepared before the failure hold this
			// engine's token and would refuse its next try as a second
			// Prepare of theirs (a notebook's storage opened after the
			// first try failed on it): the next try comes with a new
			// token, and they start over for it as for a rebuilt engine.
			e.owner = -ownerSeq.Add(1)
		}
	}()
	cfg := &e.cfg
	// Owned first: a stage of another engine is refused before anything
	// here touches it (an acquisition's Prepare re-pins its memory).
	if err := e.own(); err != nil {
		return fmt.Errorf("engine.Prepare: %w", err)
	}
	if err := e.takeClaims(); err != nil {
		return fmt.Errorf("engine.Prepare: %w", err)
	}
	// A prepared engine starts a new stream at sample 0: a planner's
	// segment or volume in progress belongs to the stream of the engine
	// that used it before (a notebook's rebuilt engine got one volume too
	// many, finished from the old stream's state). Between the sessions
	// of one engine the planner keeps its state, as vortex's does.
	for _, fn := range cfg.fmts {
		if r, ok := fn.fmt.(interface{ Reset() }); ok {
			r.Reset()
		}
	}
	if err := e.prepareAcquisitions(); err != nil {
		return err
	}
	if err := e.prepareIOs(); err != nil {
		return err
	}
	outSamples, err := e.prepareProcessors()
	if err != nil {
		return err
	}
	// The slots the blocks cycle through (the length of e.slots), and the
	// streams they run on.
	blockBytes := e.blockRawBytes()
	e.smallBlocks = blockBytes < sharedSlotBytes
	used := activeSlots(askedSlots, e.dev.Kind(), cfg.slots(), blockBytes)
	streams := slotStreams(askedStreams, e.dev.Kind(), used, blockBytes)
	markers := blockMarkers(cfg.RecordsPerBlock)
	e.poolSize = poolBlocks(askedBlocks, e.dev.Kind(), cfg.BlocksToAllocate, blockBytes, e.remoteProcessors())
	if err := e.prepareRoutes(outSamples, markers, used); err != nil {
		return err
	}
	if err := e.prepareDevices(used, streams); err != nil {
		return err
	}
	if err := e.preparePacking(); err != nil {
		return err
	}
	if cfg.BlocksToAcquire > 0 {
		e.limit = int64(cfg.BlocksToAcquire) * int64(cfg.RecordsPerBlock)
	}
	e.future = make([]marker.Marker, 0, markers)
	e.pending = make([]*Block, 0, cfg.preload()+1)

	if e.slots, err = newSlotStreams(e.dev, used, streams); err != nil {
		return fmt.Errorf("engine.Prepare: slot stream: %w", err)
	}
	// One stream carries every upload, in block order: the copy engine then
	// runs them back to back, never two at once. Uploads on the slot streams
	// (before) overlapped one another and the slots' compute, and streamed
	// at 0.83-0.90 of the pinned host-to-device ceiling on an H100 where a
	// single copy stream reaches 0.99 (bench/bench_peers.py, docs/bench.md).
	up, err := e.dev.NewStream(0)
	if err != nil {
		return fmt.Errorf("engine.Prepare: upload stream: %w", err)
	}
	e.upload = up
	e.positions = e.needsPositions()
	raws, lent, packed := make([]int, len(e.acqs)), make([]bool, len(e.acqs)), make([]int, len(e.acqs))
	for i := range e.acqs {
		raws[i], lent[i], packed[i] = e.acqs[i].raw, e.acqs[i].lender != nil, e.acqs[i].packed.bytes
	}
	procRaw := make([]int, len(e.procs))
	for i, a := range e.procAcq {
		procRaw[i] = a
	}
	sh := blockShape{records: cfg.RecordsPerBlock, rawSamples: raws, lent: lent, packed: packed, procAcq: procRaw, outSamples: outSamples, endpoints: len(e.endpoints),
		galvoOut: cfg.outChannels(), galvoIn: cfg.inChannels(), leads: len(e.leads), markers: markers, warped: e.warped}
	least := e.poolSize // asked for: all of it, or prepare() fails
	if askedBlocks < 0 {
		least = cfg.BlocksToAllocate // the engine's own choice: what the user allocated
	}
	if err := e.preparePool(sh, e.poolSize, least); err != nil {
		return fmt.Errorf("engine.Prepare: %w", err)
	}
	e.state = statePrepared
	return nil
}

// MonotonicNs reads CLOCK_MONOTONIC in nanoseconds: the clock behind
// Python's time.monotonic_ns and time.perf_counter_ns on Linux, so values
// from Go and from Python can be subtracted (callback latency). 0 if the
// clock cannot be read.
func MonotonicNs() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return 0
	}
	return ts.Nano()
}

// StartMonotonicNs is the base of the events' timestamps on
// CLOCK_MONOTONIC (MonotonicNs), read just before Start took its start
// time; 0 before a successful Start.
func (e *Engine) StartMonotonicNs() int64 { return e.startMono.Load() }

func (e *Engine) stateName() string {
	return [...]string{"new", "prepared", "running", "finished", "closed"}[e.state]
}

// processLoop is the Process stage between the acquire and format loops
// (all but the direct path): it submits each block on the next slot
// stream itself, or routes it to the slots' submitters.
func (e *Engine) processLoop(s *session) {
	defer s.wg.Done()
	defer close(s.toFmt)
	if s.work != nil {
		defer func() { // after recoverStage: the submitters finish what they hold
			for _, w := range s.work {
				close(w)
			}
		}()
	}
	defer e.recoverStage(s, "process", s.toProc)
	in := spin.NewWaiter(s.spin)
	for {
		b, ok := spin.Recv(in, s.toProc)
		if !ok {
			break
		}
		if s.work != nil {
			e.route(s, b) // its slot's submitter makes the driver calls
			continue
		}
		e.submitInline(s, b)
	}
}

// passThrough readies block b for processing (no stream yet) and reports
// whether it goes to the format stage unprocessed: the block that only
// finishes the formatters, or one acquired after a failed device stage or
// shutdown(interrupt=true), which vortex drops (counted, its records set
// to 0 so that the later stages pass it through).
func (e *Engine) passThrough(s *session, b *Block) bool {
	b.setStream(nil) // set once the block's processing is queued
	b.remSlot = -1   // a remote processor's slot: the device's rotation unless route picks a lane's
	switch {
	case b.finishOnly:
		return true
	case s.broken.Load() || s.interrupt.Load():
		e.dropped.Add(1)
		b.Records = 0
		return true
	}
	return false
}

// takeTickets takes block b's places in the orders of the processors
// that process it (b.active); called in block order.
func (e *Engine) takeTickets(b *Block) {
	e.activeSet(b)
	for i, p := range e.procs {
		if op, ok := p.(OrderedProcessor); ok && b.active[i] {
			b.tickets[i], b.ticketed[i] = op.Ticket(), true
		}
	}
}

// skipTickets gives up every place block b still holds in its
// processors' orders, so that the later blocks' turns come.
func (e *Engine) skipTickets(b *Block) {
	for i, held := range b.ticketed {
		if held {
			b.ticketed[i] = false
			e.procs[i].(OrderedProcessor).SkipTicket(b.tickets[i])
		}
	}
}

// toProcess hands acquired block b on, in block order: on the direct path
// the acquire loop routes it to its slot's submitter itself (route), on the
// inline path it submits it itself (submitInline), else it goes to the
// process loop.
func (e *Engine) toProcess(s *session, b *Block) {
	switch {
	case s.direct:
		e.route(s, b)
	case s.inline:
		e.submitInline(s, b)
	default:
		// Polled while full, for the pool's window: the process loop is
		// the bound here (it makes every block's driver calls), and a
		// parked acquire loop would cost it a wake-up on every block it
		// takes once the acquisition is ahead (a device ring deeper than
		// the channel keeps it ahead).
		spin.Send(s.procWait, s.toProc, b)
	}
}

// submitInline submits block b on the next slot stream from the calling
// goroutine and hands it to the format loop: the acquire loop's on the
// inline path (SlotPathEnv=inline: no goroutine between acquisition and
// formatting), the process loop's without slot submitters. The rolling
// average's order is the call order. A panic in a processor becomes the
// block's error (submit).
//
// Why it exists: with the rolling average in the slots' graphs a block
// makes about 8 driver calls before formatting (one of them a graph launch
// of about 4 us on the GPU VMs), which one goroutine can make within a
// 256-record block's 12 us of bus time, and every goroutine a block passes
// costs its round trip a wake-up: at vortex's 4 blocks the round trip, not
// any goroutine's work, sets the rate (docs/bench.md): the default with few
// blocks a slot (defaultSlotPath).
func (e *Engine) submitInline(s *session, b *Block) {
	if !e.passThrough(s, b) {
		st := e.slots[s.nextSlot]
		b.Slot = s.nextSlot
		s.nextSlot = (s.nextSlot + 1) % len(e.slots)
		e.submitted(s, st, b, e.submit(s, st, b))
	}
	s.toFmt <- b
}

// endAcquire closes what the acquire loop feeds: the slots' submitters on
// the direct path, the format loop on the inline path, the process loop
// otherwise.
func (e *Engine) endAcquire(s *session) {
	if s.inline {
		close(s.toFmt)
		return
	}
	if !s.direct {
		close(s.toProc)
		return
	}
	for _, w := range s.work {
		close(w)
	}
	close(s.toFmt)
}

// route hands block b, in block order, to the next slot's submitter and
// to the format loop, which waits for the submitter (b.submitted), after
// taking its places in its processors' orders; a block that passes
// through unprocessed goes to the format loop alone. The acquire loop
// routes on the direct path, the process loop otherwise.
//
// Why the direct path (issue 29): on the GPU VMs each hand-over to a
// parked goroutine costs several microseconds of scheduler delay, and the
// process loop's was one more on every block's way from the pool and back,
// for a few atomic operations of work. The format loop stays a goroutine of
// its own: its driver calls then run beside the submitters' (measured:
// formatting on the submitters, in block order, made 256-record blocks
// 12-25% slower).
//
// A block that only processors on another device process goes to that
// device's lane (remoteLane): its submitter makes the device's driver calls
// beside the engine's slots' (issue 29: through one goroutine, two GPUs at
// 256-record blocks ran no faster than one).
func (e *Engine) route(s *session, b *Block) {
	if !e.passThrough(s, b) {
		e.takeTickets(b)
		var lane int
		if d := e.remoteDeviceOf(b); d >= 0 {
			l := &s.lanes[d]
			lane = l.first + l.next
			l.next = (l.next + 1) % l.count
			b.Slot = 0 // no processor of the engine's device processes a lane's block
			b.remSlot = s.laneSlots[lane]
		} else {
			b.Slot = s.nextSlot
			s.nextSlot = (s.nextSlot + 1) % len(e.slots)
			lane = b.Slot
		}
		b.submitted = make(chan struct{})
		s.work[lane] <- b // never blocks: a lane has room for every block
	}
	s.toFmt <- b
}

// remoteDeviceOf is the remote device (index of e.remote) whose processors
// alone process block b (b.active set), else -1 (one of the engine's
// device's does, or processors of two devices: singleDeviceBlocks rules
// that out where there are lanes).
func (e *Engine) remoteDeviceOf(b *Block) int {
	dev := -1
	for pi, on := range b.active {
		if !on {
			continue
		}
		d := e.procDev[pi]
		if d < 0 || (dev >= 0 && dev != d) {
			return -1
		}
		dev = d
	}
	return dev
}

// RemoteLanesEnv is the environment variable that chooses how many lanes
// (submitters, route) a remote device's blocks take: "device", one a device,
// which calls the device's processors on its slots in turn; "slot", one per
// processor slot of the device, each calling its own slot (the processors'
// order kept by their tickets, as on the engine's slots). Unset: device.
// Read at each Start from the live environment.
//
// Why a choice: measured on two H200s (docs/bench.md "Session 51"), one lane
// a device bounds 256-record blocks (its driver calls take 17.4 us a block,
// every other block); a lane per slot splits them over two threads but is
// not measured yet.
const RemoteLanesEnv = "VORTEXGO_REMOTE_LANES"

// remoteLanesPerSlot reads RemoteLanesEnv: whether each remote slot gets a
// lane; any other value than the two is an error naming the variable.
func remoteLanesPerSlot() (bool, error) {
	v, err := choiceAsked(RemoteLanesEnv, "device", "device", "slot")
	return v == "slot", err
}

// orderedOn reports whether every processor on remote device d is an
// OrderedProcessor.
func (e *Engine) orderedOn(d int) bool {
	for pi, p := range e.procs {
		if _, ok := p.(OrderedProcessor); !ok && e.procDev[pi] == d {
			return false
		}
	}
	return true
}

// makeLanes lays out session s's submitters: the engine's slots, then each
// remote device's lanes, one a device or, with perSlot, one per slot of it
// where every processor of the device keeps its order across goroutines
// (orderedOn; else one: its lanes would call it at once, out of order).
func (e *Engine) makeLanes(s *session, perSlot bool) {
	s.laneStreams = append([]backend.Stream(nil), e.slots...)
	s.laneSlots = make([]int, len(e.slots))
	for i := range s.laneSlots {
		s.laneSlots[i] = -1
	}
	s.lanes = make([]remoteLanes, len(e.remote))
	for d := range e.remote {
		rd := &e.remote[d]
		s.lanes[d] = remoteLanes{first: len(s.laneStreams), count: 1}
		if !perSlot || !e.orderedOn(d) {
			s.laneStreams = append(s.laneStreams, rd.lanes[0])
			s.laneSlots = append(s.laneSlots, -1)
			continue
		}
		s.lanes[d].count = len(rd.slots)
		for k := range rd.slots {
			s.laneStreams = append(s.laneStreams, rd.lanes[k])
			s.laneSlots = append(s.laneSlots, k)
		}
	}
}

// dispatchTimed is dispatchProcess between the profiler's marks, stamped.
func (e *Engine) dispatchTimed(s *session, st backend.Stream, b *Block) error {
	s.prof.job(ProfJobProcessDispatchBegin, b.ID)
	err := e.dispatchProcess(st, b)
	s.prof.job(ProfJobProcessDispatchEnd, b.ID)
	e.stamp(s, b, markProcess)
	return err
}

// submitted counts block b as processed on slot stream st, or, when its
// submission failed with err, fails the session and passes b through
// empty.
func (e *Engine) submitted(s *session, st backend.Stream, b *Block, err error) {
	if err != nil {
		e.failPipeline(s, err)
		e.dropped.Add(1)
		b.Records = 0
		return
	}
	b.setStream(st)
	e.processed.Add(1)
}

// slotSubmitters reports whether the session submits each slot's blocks
// from a goroutine of its own (submitLoop) instead of the process loop's:
// with more than one slot, when every processor keeps its block order
// across goroutines (OrderedProcessor) and runs on the engine's device,
// and no source's blocks are widened from packed values. Measured on an
// H200 in a VM (issue 29): a kernel launch costs the submitting thread
// about 4 us, and one goroutine submitting 256-record blocks (upload, 4
// launches, events: about 35 us) kept the engine at a third of the copy
// ceiling; launches from 2, 4 and 8 threads on their own streams ran 1.8,
// 2.4 and 3.4 times as many.
//
// With processors on other devices: below sharedSlotBytes of raw spectra a
// block, each such device has a submitter of its own too (a lane, route),
// whatever the slots, where every block is processed on one device
// (singleDeviceBlocks); from sharedSlotBytes the process loop submits every
// block, as it does where blocks span devices. Measured on two H200s
// (issue 29, docs/bench.md "Session 51"): at 8192-record blocks with 32
// blocks, two GPUs ran 1.84-1.90x one with the lanes against 1.93-1.99x
// submitted from one thread (three interleaved runs each); at 256 and 512
// records the lanes (and the device ring) took them from 0.95-1.27x to
// 1.40-1.82x.
func (e *Engine) slotSubmitters() bool {
	if len(e.remote) > 0 {
		return e.smallBlocks && e.submitsOnEngine()
	}
	return len(e.slots) >= 2 && e.submitsOnEngine()
}

// oneSlotInline reports whether a session with one slot has the acquire
// loop submit every block itself (the inline path) instead of the process
// loop: only when SlotPathEnv asks for it (asked), on the conditions of
// slotSubmitters but the slot count. With one slot the process loop makes
// the same calls in the same order, one hand-over further from the
// acquisition; whether the inline path is faster there is still to be
// measured (issue 29: one slot was the slowest configuration at 256 and 512
// records in session 46's sweep, 0.72-0.81 of the ceiling), so the default
// stays the process loop until it is.
func (e *Engine) oneSlotInline(asked string) bool {
	return len(e.slots) == 1 && asked == slotPathInline && e.submitsOnEngine()
}

// submitsOnEngine reports whether blocks can be submitted from a goroutine
// other than the process loop: every processor of the engine's device keeps
// its block order across goroutines (OrderedProcessor; one on another
// device is only ever called from its device's lane), every block is
// processed on one device (singleDeviceBlocks: a device's lane alone calls
// its processors), and no source's blocks are widened from packed values.
func (e *Engine) submitsOnEngine() bool {
	for i, p := range e.procs {
		if _, ok := p.(OrderedProcessor); !ok && e.procDev[i] < 0 {
			return false
		}
	}
	if len(e.remote) > 0 && !e.singleDeviceBlocks() {
		return false
	}
	for _, a := range e.acqs {
		if a.packed.bytes > 0 {
			return false
		}
	}
	return true
}

// turnSpin is how long a slot submitter polls for its processor's turn
// (the rolling average's, OrderedProcessor) before it parks, when the pool
// holds at least turnSpinBlocks blocks per slot. Measured on an H200 VM
// (issue 29, interleaved with parking at once, two runs each): with 32
// blocks and 2 slots, 256 x 1024 blocks took 14.8-15.6 us each against
// 21.1-22.4 and 256 x 2048 22.6-24.5 against 26.0-29.1; with vortex's 4
// blocks the same window made them 2-15% slower: with few blocks in
// flight the turn's holder is often itself waking up, and a virtual CPU
// that polls takes time from the ones that work. VORTEXGO_TURN_SPIN
// (internal/turn) sets the window instead.
const (
	turnSpin       = 30 * time.Microsecond
	turnSpinBlocks = 8
)

// manyBlocks reports whether the pool holds at least turnSpinBlocks
// blocks per slot (enough in flight that the slots' submissions, not a
// block's round trip through the stages, set the rate) and Go has the Ps
// for a submitter per slot beside the other stages (roomFor): the slots'
// submitters and their polling for the turn pay only where both hold.
func (e *Engine) manyBlocks(procs int) bool {
	return e.poolSize >= turnSpinBlocks*len(e.slots) && roomFor(procs, stageGoroutines(len(e.slots), false))
}

// roomFor reports whether procs Ps (GOMAXPROCS) leave two to each of
// goroutines stage goroutines, the most that may poll at once: a goroutine
// that polls holds its P, and one its send readies (the next stage) waits
// in that P's run queue until the poll ends or another P steals it. With
// Ps to spare the others run elsewhere; with fewer, polling and extra
// goroutines cost more than the wake-ups they save. Measured with the fake
// driver on this repository's 2-CPU machine (docs/bench.md "Where a
// block's round trip goes now"): vortex's 4 / 2 at 256 x 1024 took 17-19
// us a block with the recycle loop polling against 2.6-2.8 parking, 32 / 16
// 5.4 us with the submitters' turn polled against 3.0, 2.7 inline; on the
// H200 VM's 16 vCPUs polling and the direct path won where turnSpin,
// defaultSlotPath and recycleSpin say.
func roomFor(procs, goroutines int) bool { return procs >= 2*goroutines }

// turnWindow is the window of the processors' turns without
// VORTEXGO_TURN_SPIN (turnSpin), with procs Ps (GOMAXPROCS).
func (e *Engine) turnWindow(procs int) time.Duration {
	if e.manyBlocks(procs) {
		return turnSpin
	}
	return 0
}

// SlotPathEnv is the environment variable that chooses how a block goes
// from the acquire loop to its slot's stream when slots could have
// submitters of their own (slotSubmitters): "direct" routes it to its
// slot's submitter from the acquire loop (route); "stages" keeps the
// process loop in between, the path before issue 29; "inline" has the
// acquire loop submit every block itself, on the slots' streams in turn,
// with no submitter goroutines (submitInline). Unset, the engine picks
// (defaultSlotPath). With one slot only "inline" changes anything: the
// acquire loop then submits in the process loop's place (oneSlotInline).
// Read at each Start from the live environment.
const SlotPathEnv = "VORTEXGO_SLOT_PATH"

// The values of SlotPathEnv.
const (
	slotPathDirect = "direct"
	slotPathStages = "stages"
	slotPathInline = "inline"
)

// slotPath reads SlotPathEnv ("" when unset: the engine's choice); any
// other value than the three is an error naming the variable.
func slotPath() (string, error) {
	return choiceAsked(SlotPathEnv, "the engine picks", slotPathDirect, slotPathStages, slotPathInline)
}

// defaultSlotPath is the path without SlotPathEnv: inline with fewer than
// turnSpinBlocks blocks per slot, direct with more. Measured on an H200 VM
// (issue 29, two runs of two interleaved rounds, docs/bench.md "The
// acquisition thread submitting"): with vortex's 4 blocks and preload 2 the
// inline path took 2-14% less time a block at 256 and 512 records and 1024
// and 2048 samples, 9-13% with 4 slots, 6-19% with 8 blocks at 256 x 1024,
// and was level from 1024 records up: few blocks in flight make a block's
// round trip the bound, and the submitter's wake-up is one hand-over of it.
// With 32 blocks on 2 slots the direct path's submissions beside the
// acquire loop were 9-19% faster at 256 x 1024 (the acquire loop's own
// work the bound there) and level at 256 x 2048. With too few Ps for a
// submitter per slot beside the other stages (manyBlocks), inline.
func (e *Engine) defaultSlotPath(procs int) string {
	if e.manyBlocks(procs) {
		return slotPathDirect
	}
	return slotPathInline
}

// submitLoop submits the blocks of one slot stream, in the order they
// were handed over, and reports each to the format loop.
func (e *Engine) submitLoop(s *session, slot int, work <-chan *Block) {
	defer s.wg.Done()
	st := s.laneStreams[slot]
	in := spin.NewWaiter(s.spin)
	for {
		b, ok := spin.Recv(in, work)
		if !ok {
			return
		}
		// Not checked here for a failure or an interrupt since the block
		// was handed over: the decision to drop is the router's, made in
		// block order, so that a processor's ordered parts see a run of
		// blocks without gaps (TestSlotSubmitters). The format stage drops
		// what a failure leaves behind.
		e.submitted(s, st, b, e.submit(s, st, b))
		close(b.submitted)
	}
}

// submit is dispatchProcess for a submitter: a panic becomes the block's
// error (the session fails, the other blocks still reach the format
// stage), and every ticket the block still holds is given up, so that
// the later blocks' turns come.
func (e *Engine) submit(s *session, st backend.Stream, b *Block) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = guard.Error("engine: process stage", r)
		}
		e.skipTickets(b)
	}()
	return e.dispatchTimed(s, st, b)
}

// dispatchProcess enqueues the upload and every processor on slot stream
// s; nothing here waits for the device.
func (e *Engine) dispatchProcess(s backend.Stream, b *Block) error {
	e.activeSet(b)
	// remote: a processor on another device uploads the raw spectra from
	// the host set too (processRemote): the set goes back once those
	// uploads are queued as well, on every return (an error leaves none in
	// flight that a later upload of b's would not wait for: giveHost).
	remote := e.remoteActive(b)
	var after backend.Event // b.uploaded when a copy went on the upload stream (queueUpload): it reads the set
	if remote {
		defer func() { e.giveHost(b, after, true) }()
	}
	var err error
	after, err = e.queueUpload(b, remote)
	if err != nil {
		return err
	}
	if after != nil {
		if err := s.WaitEvent(after); err != nil { // a device-side wait
			return fmt.Errorf("engine: block %d: waiting for its upload: %w", b.ID, err)
		}
	}
	for i, p := range e.procs {
		if !b.active[i] {
			continue
		}
		if e.procDev[i] >= 0 {
			if err := e.processRemote(i, b, s); err != nil {
				return err
			}
			continue
		}
		out := b.processed[i].Ptr()
		if !e.wantFloat[i] {
			out = 0 // no endpoint reads it: the processor skips writing it
		}
		var err error
		if b.ticketed[i] {
			b.ticketed[i] = false
			err = p.(OrderedProcessor).ProcessTicket(b.tickets[i], b.Slot, s, b.Outputs[i].Raw, b.Records, out, b.int8s[i].Ptr())
		} else {
			err = p.Process(b.Slot, s, b.Outputs[i].Raw, b.Records, out, b.int8s[i].Ptr())
		}
		if err != nil {
			return fmt.Errorf("engine: block %d: processor #%d: %w", b.ID, i, err)
		}
	}
	if err := s.Record(b.ready); err != nil {
		return fmt.Errorf("engine: block %d: recording ready event: %w", b.ID, err)
	}
	return nil
}

// queueUpload enqueues block b's upload on the engine's upload stream (its
// raw spectra where a processor of the engine's device or an endpoint reads
// them, its positions where a formatter does) and records b.uploaded after
// it. uploaded is b.uploaded once a copy went on the stream (on an error
// too), nil when none did (then no event was recorded). Without remote
// processors for b it gives b's host set back, to be refilled once the
// upload is done. b.active must be set.
func (e *Engine) queueUpload(b *Block, remote bool) (uploaded backend.Event, err error) {
	up := e.upload
	if b.timed {
		if err := up.Record(b.start); err != nil {
			return nil, fmt.Errorf("engine: block %d: recording start event: %w", b.ID, err)
		}
	}
	for a := range b.raws {
		if !e.rawOnEngine && !e.localReader(b, a) {
			continue // only remote processors read it, on their devices
		}
		r := &b.raws[a]
		uploaded = b.uploaded
		if pk := e.acqs[a].packed; pk.bytes > 0 {
			// The packed frame as it landed, then widened on the device:
			// the whole frame, whatever b.Records (a frame is whole).
			if err := up.Copy(r.stage.Ptr(), r.src+uintptr(pk.offset), pk.bytes); err != nil {
				return uploaded, fmt.Errorf("engine: block %d: upload (acquisition #%d): %w", b.ID, a, err)
			}
			if err := ops.UnpackBits(up, r.dev.Ptr(), r.stage.Ptr(), pk.values, pk.bits, pk.bytes); err != nil {
				return uploaded, fmt.Errorf("engine: block %d: widening acquisition #%d's %d-bit values: %w", b.ID, a, pk.bits, err)
			}
			continue
		}
		if err := up.Copy(r.dev.Ptr(), r.src, b.Records*r.values*2); err != nil {
			return uploaded, fmt.Errorf("engine: block %d: upload (acquisition #%d): %w", b.ID, a, err)
		}
	}
	// The positions travel with the block when a PositionFormatExecutor
	// reads them on the device; otherwise the copies would only cost the
	// copy engine time (two 128 KiB copies per 16 MiB block: 2-3%).
	if e.positions {
		uploaded = b.uploaded
		if err := up.Copy(b.targetDev.Ptr(), b.targetHost.Ptr(), b.Records*e.cfg.outChannels()*8); err != nil {
			return uploaded, fmt.Errorf("engine: block %d: target positions upload: %w", b.ID, err)
		}
		if err := up.Copy(b.actualDev.Ptr(), b.actualHost.Ptr(), b.Records*e.cfg.inChannels()*8); err != nil {
			return uploaded, fmt.Errorf("engine: block %d: actual positions upload: %w", b.ID, err)
		}
	}
	// A block that only processors on other devices process has nothing
	// on the upload stream (a cycle over GPUs: every other block): no
	// event to record or wait for, two driver calls fewer on its lane.
	if uploaded != nil {
		if err := up.Record(uploaded); err != nil {
			return uploaded, fmt.Errorf("engine: block %d: recording upload event: %w", b.ID, err)
		}
	}
	if !remote {
		// Nothing on the host reads the acquisition's memory after the
		// upload: the acquire loop may fill it again once the upload is
		// done, while this block is processed and formatted.
		e.giveHost(b, uploaded, false)
	}
	return uploaded, nil
}

func (e *Engine) formatLoop(s *session) {
	defer s.wg.Done()
	defer close(s.toRecycle)
	defer e.recoverStage(s, "format", s.toFmt)
	in, sub := spin.NewWaiter(s.spin), spin.NewWaiter(s.spin)
	for {
		b, ok := spin.Recv(in, s.toFmt)
		if !ok {
			break
		}
		if b.submitted != nil { // its slot's submitter is making its driver calls (closed when done)
			spin.Recv(sub, b.submitted)
			b.submitted = nil
		}
		e.formatBlock(s, b)
		s.toRecycle <- b
	}
}

// formatBlock formats block b into every endpoint and counts it, or drops
// it when it has no records to format or the pipeline broke.
func (e *Engine) formatBlock(s *session, b *Block) {
	if (b.Records == 0 && !b.finishOnly) || s.broken.Load() {
		if b.Records != 0 {
			e.dropped.Add(1)
			b.Records = 0
		}
		return
	}
	complete, err := e.dispatchFormat(s, b)
	e.stamp(s, b, markFormat)
	switch {
	case err != nil:
		e.failPipeline(s, err)
	case b.finishOnly:
	case complete:
		e.formatted.Add(1)
	default:
		e.dropped.Add(1)
	}
}

// dispatchFormat plans the block for each formatter, enqueues the
// endpoints' formatting, then posts the block's events in order. The
// events go out after dispatch, not completion (vortex's contract):
// handlers chain their work on the endpoint's stream. complete is false
// when an endpoint gave up on the block because of a stop.
func (e *Engine) dispatchFormat(s *session, b *Block) (complete bool, err error) {
	complete = true
	if b.finishOnly {
		// No processor ran: finish each formatter once, through the
		// route of its first feeder in the block's rotation set.
		e.activeSet(b)
	}
	for pi := range e.routes {
		if !b.active[pi] {
			continue // another processor of the rotation has this block
		}
		data := &b.Outputs[pi]
		data.Records, data.Sample = b.Records, b.Start
		data.Target.Records, data.Actual.Records = b.Records, b.Records
		for ri := range e.routes[pi] {
			r := &e.routes[pi][ri]
			s.prof.task(ProfTaskFormatBegin, r.task, b.ID)
			if b.finishOnly {
				r.plan.Actions = r.plan.Actions[:0]
			} else if err := r.fmt.Next(r.plan, b.Start, b.Records, b.Markers); err != nil {
				return false, fmt.Errorf("engine: block %d: formatter: %w", b.ID, err)
			}
			if b.Last {
				// vortex finishes the planner with the last block: the
				// segment, volume and scan still open are reported.
				if err := r.fmt.Finish(r.fin); err != nil {
					return false, fmt.Errorf("engine: block %d: formatter: %w", b.ID, err)
				}
				r.plan.Actions = append(r.plan.Actions, r.fin.Actions...)
			}
			s.prof.task(ProfTaskFormatPlan, r.task, b.ID)
			if r.fmt == e.volumeFmt {
				for i := range r.plan.Actions {
					if r.plan.Actions[i].Kind == format.FinishVolume {
						e.volumes.Add(1)
					}
				}
			}
			for _, ep := range r.eps {
				ok, err := e.formatInto(s, ep, b, data, r.plan)
				if err != nil {
					return false, err
				}
				complete = complete && ok
			}
			s.prof.task(ProfTaskFormatEnd, r.task, b.ID)
		}
	}
	return complete, nil
}

// formatInto formats block b's part of plan into one endpoint and posts
// its events. For an endpoint with callback sync, the plan is cut after
// each volume notification: the engine waits until the dispatcher has run
// the callbacks up to that volume before it writes the next volume into
// the endpoint, so a volume_callback sees the volume it is told about
// (vortex runs callbacks inline and gets this for free). Waiting happens
// at volume boundaries only, outside any lock. A plain stop keeps the
// waits (the stop's blocks are delivered with their callbacks); it returns
// false when it gave up because the session was interrupted or broke, or
// the endpoint refused the block because the engine is stopping.
func (e *Engine) formatInto(s *session, ep *epRoute, b *Block, data *BlockData, plan *FormatPlan) (bool, error) {
	acts := plan.Actions
	if !ep.sync {
		acts = acts[len(acts):] // one pass over the whole plan below
	}
	for start := 0; ; {
		part := plan
		end := len(plan.Actions)
		if ep.sync {
			end = start
			for end < len(acts) && acts[end].Kind != format.FinishVolume {
				end++
			}
			if end < len(acts) {
				end++ // include the volume notification
			}
			ep.sub.Actions = plan.Actions[start:end]
			part = &ep.sub
			// A part without copies writes nothing into the volume, so it
			// need not wait: the notifications that end a stopped run (the
			// planner's Finish after the last volume) go out even though a
			// stop ends the waits.
			if ep.pendingAck > 0 && hasCopy(part) {
				if !s.events.waitAcked(ep.pendingAck, s.abandon) {
					return false, nil
				}
				ep.pendingAck = 0
			}
		}
		last := end == len(plan.Actions)
		var err error
		recorded := false
		if ep.done != nil {
			var done backend.Event
			if last {
				done = b.epDone[ep.id]
			}
			recorded, err = ep.done.FormatDone(data, part, done)
		} else {
			err = ep.ep.Format(data, part)
		}
		if errors.Is(err, ErrStopped) {
			return false, nil
		}
		if err != nil {
			return false, fmt.Errorf("engine: block %d: endpoint #%d: %w", b.ID, ep.id, err)
		}
		if last && !recorded {
			if err := ep.stream.Record(b.epDone[ep.id]); err != nil {
				return false, fmt.Errorf("engine: block %d: endpoint #%d: recording done event: %w", b.ID, ep.id, err)
			}
		}
		// The block that only finishes the planner (sendFinish) carries
		// no records: its notifications go out, an update does not (it
		// is not a formatted block either).
		if seq := e.postPlan(s, ep, b, part, last && !b.finishOnly); seq > 0 && ep.sync {
			ep.pendingAck = seq
		}
		if last {
			return true, nil
		}
		start = end
	}
}

// hasCopy reports whether plan writes into the volume.
func hasCopy(plan *FormatPlan) bool {
	for i := range plan.Actions {
		if plan.Actions[i].Kind == format.Copy {
			return true
		}
	}
	return false
}

// postPlan posts one event per notification of the plan for one endpoint,
// then the block's update event when update is set, as one burst (one
// queue item: a spinning dispatcher takes the block's events in one batch,
// and the poster pays one channel send). It returns the Seq of the last
// volume event posted (0 if none).
func (e *Engine) postPlan(s *session, ep *epRoute, b *Block, plan *FormatPlan, update bool) (volumeSeq uint64) {
	ts := e.now(s)
	burst := s.events.newBurst()
	volume := -1
	for i := range plan.Actions {
		a := &plan.Actions[i]
		var k EventKind
		switch a.Kind {
		case format.FinishSegment:
			k = EventSegment
		case format.FinishVolume:
			k = EventVolume
		case format.FinishScan:
			k = EventScan
		case format.EventAction:
			k = EventMarker
		default:
			continue
		}
		// Volume events always go out under sync: they carry its acknowledgement.
		if ep.skip[k] && !(k == EventVolume && ep.sync) {
			continue
		}
		ev := Event{Kind: k, Endpoint: ep.id, Sample: a.Sample, ScanIdx: a.ScanIndex,
			VolumeIdx: a.VolumeIndex, BscanIdx: a.SegmentIndexBuffer, Timestamp: ts}
		if k == EventMarker {
			ev.ScanIdx, ev.VolumeIdx, ev.BscanIdx = int64(a.ID), 0, 0
		}
		if k == EventVolume {
			volume = len(burst.evs)
		}
		burst.evs = append(burst.evs, ev)
	}
	// The update event ends the block's events, as vortex's update_callback
	// comes last: the handlers of aggregated segments know the block ended.
	if update && !ep.skip[EventUpdate] {
		burst.evs = append(burst.evs, Event{Kind: EventUpdate, Endpoint: ep.id, Sample: b.Start + int64(b.Records), Timestamp: ts})
	}
	// Backpressure holds after a plain stop too (abandon, not stopping):
	// the blocks a stop still formats keep their callbacks.
	volumeSeq, _ = s.events.postBurst(burst, volume, s.abandon)
	return volumeSeq
}

// SetEventMask limits the events posted for endpoint id to the kinds
// someone handles (the Python layer passes the callbacks set at start), so
// the dispatcher never wakes for an event it would discard. Call before
// Start.
func (e *Engine) SetEventMask(id int, kinds ...EventKind) error {
	return e.withRoute("engine.SetEventMask", id, func(ep *epRoute) {
		for k := range ep.skip {
			ep.skip[k] = true
		}
		for _, k := range kinds {
			if int(k) < len(ep.skip) {
				ep.skip[k] = false
			}
		}
	})
}

// withRoute runs fn on endpoint id's route while the engine is prepared
// and not started.
func (e *Engine) withRoute(op string, id int, fn func(*epRoute)) error {
	e.stateMu.Lock()
	defer e.stateMu.Unlock()
	if e.state != statePrepared && e.state != stateFinished {
		return fmt.Errorf("%s: engine is %s, expected prepared and not running (between sessions)", op, e.stateName())
	}
	if id < 0 || id >= len(e.eps) {
		return fmt.Errorf("%s: endpoint %d, expected 0 <= id < %d", op, id, len(e.endpoints))
	}
	fn(e.eps[id])
	return nil
}

// SetCallbackSync makes the engine wait, before writing the next volume
// into endpoint id, until the event consumer has handled the events up to
// the previous volume's notification (see formatInto). The Python layer
// turns it on for endpoints with callbacks. Call before Start; ignored
// under QueueDrop, where events may never arrive.
func (e *Engine) SetCallbackSync(id int, on bool) error {
	return e.withRoute("engine.SetCallbackSync", id, func(ep *epRoute) {
		ep.sync = on && e.cfg.EventPolicy != QueueDrop
	})
}

// recycleSpin is how long the recycle loop polls for its next block
// before it parks, on a CUDA device without VORTEXGO_RECYCLE_SPIN or
// VORTEXGO_STAGE_SPIN, where Go has Ps to spare (pollWindow). Why it
// costs no CPU: once it has the block the loop waits for the device in
// cuEventSynchronize, which spins (the primary context's automatic
// scheduling spins where the process has fewer contexts than cores), so
// polling the channel first only moves where the thread spins, and the
// format loop's send no longer wakes a parked goroutine. Measured on an
// H200 VM with 16 vCPUs (issue 29, docs/bench.md "Where a block's round
// trip goes now", two device calls): at vortex's 4 / 2 a 256-record block
// took 7-12% less time, 512 records 4%, and none of the configurations
// slowed by more than 2% (1024-8192 records level). A stage that waits
// longer than the window for its blocks (a scanner's milliseconds) parks
// at once (spin.Waiter).
const recycleSpin = 100 * time.Microsecond

// poolSpin is how long the acquire loop polls the pool for a free block
// before it parks, on a CUDA device without VORTEXGO_POOL_SPIN or
// VORTEXGO_STAGE_SPIN, where Go has Ps to spare (pollWindow). The recycle
// loop, which returns the blocks, polls its own input afterwards and so
// keeps its P: the acquire loop its send readied waited in that P's run
// queue until another P stole it, a wake-up of microseconds to tens of
// them on the GPU VMs, once a block at vortex's 4 blocks, whose round
// trip sets the rate. Measured on the H200 VM, interleaved with the pool
// parking (issue 29, docs/bench.md "Timer slack, the pool polled"): 1024
// x 256 blocks 5-6% less time at 4 / 2 and 8 / 4, 1024 x 512 1%, 32 / 16
// level, 2048 samples within 2%. It costs the acquire loop's thread the
// window's CPU at most, only while the device is behind: with a scanner's
// blocks milliseconds apart the pool is not empty, and a wait longer than
// the window parks at once next time (spin.Waiter).
const poolSpin = 30 * time.Microsecond

// pollWindow is the window of a stage that polls for def on a device of
// kind (recycleSpin, poolSpin) without its own variable: the stages'
// window when VORTEXGO_STAGE_SPIN sets one; else def on CUDA when procs Ps
// leave room for the session's goroutines stage goroutines (roomFor: with
// fewer, a goroutine a poller readies waits behind its polling), and none
// otherwise. The CPU backend's event waits park, so there polling would be
// CPU spent.
func pollWindow(def time.Duration, kind backend.Kind, stages time.Duration, procs, goroutines int) time.Duration {
	switch {
	case stages > 0:
		return stages
	case kind == backend.CUDA && roomFor(procs, goroutines):
		return def
	}
	return 0
}

// recycleLoop is the recycle stage: it waits, in block order, until the
// device is done with each formatted block, then returns it to the pool
// (and posts its job event).
func (e *Engine) recycleLoop(s *session) {
	defer s.wg.Done()
	defer e.recoverStage(s, "recycle", s.toRecycle)
	in := spin.NewWaiter(s.recycleSpin)
	for {
		b, ok := spin.Recv(in, s.toRecycle)
		if !ok {
			break
		}
		formatted := b.Records != 0
		// The host waits here on purpose: this goroutine exists only to
		// learn when the device has finished with a block so that its
		// buffers can be reused. The dispatching stages never wait on it;
		// a slow device shows up as an empty pool, which throttles the
		// acquisition (backpressure), not as a stall of dispatch. An event
		// not recorded this pass is complete (older work, or never
		// recorded), so syncing every event is always safe.
		// uploaded first: a block whose processing failed to dispatch has
		// no ready event this pass, but its upload may still read the
		// acquisition's memory.
		err := errors.Join(b.uploaded.Synchronize(), b.ready.Synchronize())
		if s.prof != nil && formatted {
			// The host learns here that the block's processing is done.
			for pi, on := range b.active {
				if on {
					s.prof.task(ProfTaskProcessComplete, pi, b.ID)
				}
			}
		}
		for _, ev := range b.epDone {
			err = errors.Join(err, ev.Synchronize())
		}
		if err != nil {
			e.failPipeline(s, fmt.Errorf("engine: block %d: waiting for the device: %w", b.ID, err))
		} else if formatted && b.timed {
			e.timings.add(e.jobTiming(b))
		}
		s.prof.job(ProfJobFormatJoin, b.ID)
		e.stamp(s, b, markRecycle)
		// Read before the block goes back: the acquire loop reuses it.
		id, times, job := b.ID, b.times, s.jobs && formatted && !b.finishOnly
		e.toPool(b)
		s.prof.job(ProfJobRecycle, id)
		if job {
			e.jobEvent(s, id, times)
		}
	}
}

// jobTiming reads a finished block's timing events.
func (e *Engine) jobTiming(b *Block) JobTiming {
	j := JobTiming{Block: b.ID, Acquire: b.acquired}
	if ms, err := b.start.ElapsedTime(b.ready); err == nil {
		j.Process = float64(ms)
	}
	start, uploaded := b.start, b.uploaded
	if r := e.remoteUpload(b); r != nil {
		start, uploaded = r.start, r.uploaded
	}
	if ms, err := start.ElapsedTime(uploaded); err == nil {
		j.Upload = float64(ms)
	}
	for _, ev := range b.epDone {
		if ms, err := b.ready.ElapsedTime(ev); err == nil && float64(ms) > j.Format {
			j.Format = float64(ms)
		}
	}
	return j
}

// remoteUpload is the remote buffer whose upload carried block b's raw
// spectra when no copy went over the engine's upload stream (only remote
// processors read them: a cycle over devices), else nil. The engine's
// upload stream then recorded its events around no copy at all, and the
// block's Upload is the remote device's.
func (e *Engine) remoteUpload(b *Block) *remoteBuf {
	if e.rawOnEngine {
		return nil
	}
	for a := range b.raws {
		if e.localReader(b, a) {
			return nil
		}
	}
	for pi, on := range b.active {
		if on && e.procDev[pi] >= 0 && pi < len(b.rem) && b.rem[pi].start != nil {
			return &b.rem[pi]
		}
	}
	return nil
}

// stages lists every stage of the configuration: IOs, acquisitions,
// processors, formatters and endpoints (a stage wired twice is listed
// twice).
func (c *Config) stages() []any {
	var stages []any
	for _, n := range c.ios {
		stages = append(stages, n.io)
	}
	for _, an := range c.acqs {
		stages = append(stages, an.acq)
		for _, p := range an.procs {
			stages = append(stages, p)
		}
	}
	for _, pn := range c.procs {
		stages = append(stages, pn.proc)
		for _, f := range pn.fmts {
			stages = append(stages, f)
		}
	}
	for _, fn := range c.fmts {
		stages = append(stages, fn.fmt)
		for _, ep := range fn.eps {
			stages = append(stages, ep)
		}
	}
	return stages
}

// Own makes the engine the owner of every stage of its configuration (see
// stageOwners): another engine's Prepare or Own is then refused with
// backend.ErrInUse until this engine is closed. Prepare owns them too; a
// binding calls Own first when it readies stages itself before Prepare
// (Python prepares the acquisitions to check its processors against
// them), so that a stage of another engine is refused before it is
// touched. Owning again is a no-op.
func (e *Engine) Own() error {
	e.stateMu.Lock()
	defer e.stateMu.Unlock()
	if e.state == stateClosed {
		return fmt.Errorf("engine.Own: the engine is closed: %w", backend.ErrClosed)
	}
	if err := e.own(); err != nil {
		return fmt.Errorf("engine.Own: %w", err)
	}
	return nil
}

// own takes the stages for e once (stageOwners.take).
func (e *Engine) own() error {
	e.claimMu.Lock()
	defer e.claimMu.Unlock()
	if e.owning {
		return nil
	}
	keys := stageKeys(e.cfg.stages())
	if err := stageOwners.take(e.owner, keys); err != nil {
		return err
	}
	e.owned, e.owning = keys, true
	return nil
}

// disown gives the stages up (Close, or a failed Prepare); a no-op when
// the engine owns nothing.
func (e *Engine) disown() {
	e.claimMu.Lock()
	defer e.claimMu.Unlock()
	stageOwners.release(e.owner, e.owned)
	e.owned, e.owning = nil, false
}

// takeClaims claims every stage of the configuration (see Claim), so that
// closing one while this engine may use it is refused.
func (e *Engine) takeClaims() error {
	stages := e.cfg.stages()
	e.claimMu.Lock()
	defer e.claimMu.Unlock()
	for _, st := range stages {
		c, ok := st.(Claimer)
		if !ok {
			continue
		}
		for _, cl := range c.Claims() {
			if err := cl.Take(); err != nil {
				return err
			}
			e.claims = append(e.claims, cl)
		}
	}
	return nil
}

// dropClaims releases the claims once (the run ended, Prepare failed, or
// the engine is closed without having run).
func (e *Engine) dropClaims() {
	e.claimMu.Lock()
	defer e.claimMu.Unlock()
	for _, c := range e.claims {
		c.Drop()
	}
	e.claims = nil
}

// RecordCallbackErrors adds n to the callback error count; the Python
// dispatcher calls it when a handler raises.
func (e *Engine) RecordCallbackErrors(n int) { e.callbackErrs.Add(int64(n)) }

// Status returns a snapshot of the counters and of the engine's state.
func (e *Engine) Status() Status {
	e.stateMu.Lock()
	st := e.state
	// Read under stateMu, which Prepare holds while it sets poolSize.
	inFlight, allocated := 0, max(e.poolSize, e.cfg.BlocksToAllocate)
	if e.free != nil && st != stateClosed { // Close frees the blocks
		inFlight = len(e.blocks) - len(e.free)
	}
	var frames FrameCounts
	for _, a := range e.acqs { // appended by Prepare, under stateMu
		if fc, ok := a.acq.(FrameCounter); ok {
			c := fc.FrameCounts()
			frames.Received += c.Received
			frames.Dropped += c.Dropped
			frames.Incomplete += c.Incomplete
		}
	}
	e.stateMu.Unlock()
	s := Status{
		BlocksAcquired: e.acquired.Load(), BlocksProcessed: e.processed.Load(),
		BlocksFormatted: e.formatted.Load(), BlocksDropped: e.dropped.Load(),
		Volumes: e.volumes.Load(), CallbackErrors: e.callbackErrs.Load(), InFlight: inFlight,
		Running: st == stateRunning, Done: e.Done(), Dispatched: e.dispatched.Load(),
		Allocated: allocated,
		Prepared:  st == statePrepared || st == stateRunning || st == stateFinished,
		Started:   e.startMono.Load() != 0, Active: e.active.Load(), Closed: st == stateClosed,
		Frames: frames,
	}
	if ss := e.sess(); ss != nil {
		s.EventsDropped = ss.events.dropped.Load()
		s.ProfilerDropped = ss.prof.droppedMarks()
	}
	if err := e.Err(); err != nil {
		s.Err = err.Error()
	}
	return s
}

// The engine's events are taken one of two ways, both without allocating:
// as Events (NextEventsInto, for Go callers) or as flat records
// (NextRecords, the form the Python dispatcher and its C loop read). Each
// waits up to timeout for the first event (negative: until one arrives,
// 0: a poll); after the run ends and the queue drains they return one
// EventDone, then 0.

// NextRecords takes up to len(dst)/EventFields events as records,
// EventFields int64 each (Event.Record), copied from the queue's ring.
// Entering it acknowledges the previous batch; spin unset skips the spin
// before parking (a C consumer spun on the event ring already). Safe for
// one consumer at a time. The Python dispatcher thread calls it with the
// GIL released.
func (e *Engine) NextRecords(dst []int64, timeout time.Duration, spin bool) int {
	s := e.sess()
	if s == nil {
		return 0
	}
	e.recMu.Lock()
	defer e.recMu.Unlock()
	return s.events.nextRecords(dst, timeout, spin)
}

// NextEventsInto takes up to len(dst) events into dst.
func (e *Engine) NextEventsInto(dst []Event, timeout time.Duration) int {
	s := e.sess()
	if s == nil {
		return 0
	}
	return s.events.next(dst, timeout)
}

// Timings summarises the per-block stage timings so far: every block on
// the CPU backend; on a CUDA device one block of the pool in four
// (timingEvery) with Config.DeviceTimings, none without.
func (e *Engine) Timings() TimingSummary { return e.timings.summary() }

// Close stops the run if needed and frees what Prepare allocated (blocks,
// slot streams). Endpoints, processors and the acquisition belong to the
// caller and stay open: their tensors outlive the engine. The engine
// stops owning them (Own), so a new engine may prepare them.
func (e *Engine) Close() error {
	// The run's own error is reported by Wait and Err; Close reports only
	// failures to free.
	_ = e.Stop()
	e.stateMu.Lock()
	defer e.stateMu.Unlock()
	switch e.state {
	case stateClosed:
		return nil
	case statePrepared:
		// Never started: the claims taken at Prepare are still held.
		e.dropClaims()
	}
	e.state = stateClosed
	err := e.release()
	// After release: nothing of this engine touches the stages any more,
	// so a new engine (a notebook's rebuilt one) may prepare them.
	e.disown()
	return err
}

func (e *Engine) release() error {
	var errs []error
	for _, b := range e.blocks {
		errs = append(errs, b.free(), b.freeRemote())
	}
	errs = append(errs, e.releaseRemote(), e.releaseHosts())
	e.blocks = nil
	errs = append(errs, closeSlotStreams(e.slots))
	e.slots = nil
	if e.upload != nil {
		errs = append(errs, e.upload.Close())
		e.upload = nil
	}
	return errors.Join(errs...)
}

// PositionReader is implemented by endpoints that know whether they read
// the block's device positions (BlockData.Target and Actual). The engine
// uploads the positions with each block unless every endpoint says it
// does not read them; an endpoint without the method is assumed to.
type PositionReader interface {
	ReadsPositions() bool
}

// needsPositions reports whether some endpoint may read the positions on
// the device: only then do they travel with each block.
func (e *Engine) needsPositions() bool {
	return mayRead(e.endpoints, PositionReader.ReadsPositions)
}

// mayRead reports whether some endpoint of eps may read what reads asks
// about (PositionReader, RawReader, ProcessedReader): an endpoint that
// does not implement R is assumed to, so the engine only skips work every
// endpoint said it does not need.
func mayRead[R any](eps []Endpoint, reads func(R) bool) bool {
	for _, ep := range eps {
		if r, ok := ep.(R); !ok || reads(r) {
			return true
		}
	}
	return false
}
