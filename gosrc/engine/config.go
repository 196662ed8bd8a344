package engine

import (
	"math"
	"slices"
	"time"

	"github.com/vortexgo/vortexgo/gosrc/marker"
	"github.com/vortexgo/vortexgo/gosrc/scan"
)

// QueuePolicy says what the engine does when the event queue is full.
type QueuePolicy int

const (
	// QueueBlock makes the engine wait for the Python dispatcher
	// (backpressure): no event is lost. The default.
	QueueBlock QueuePolicy = iota
	// QueueDrop drops the event and counts it in Status.EventsDropped.
	QueueDrop
)

// Config is vortex's EngineConfig: block geometry, pool sizes and the
// wiring acquisition -> processors -> formatters -> endpoints.
type Config struct {
	// RecordsPerBlock is the number of A-scans per block.
	RecordsPerBlock int
	// BlocksToAllocate is the size of the block pool: how many blocks can
	// be in flight at once, and how many blocks of pinned host memory the
	// acquisitions fill. On a GPU with small blocks the engine cycles more
	// blocks on the device behind them (poolBlocks, pool.go).
	BlocksToAllocate int
	// PreloadCount is how many acquired blocks may wait for processing:
	// how far the acquisition may run ahead of the GPU. 0 means 1.
	PreloadCount int
	// BlocksToAcquire stops the engine after that many blocks; 0 runs
	// until the scan ends (or forever for a scan that repeats forever, or
	// until the acquisition reports io.EOF).
	BlocksToAcquire int
	// Slots is the number of processing streams (0 means 2): consecutive
	// blocks are processed on different streams so uploads overlap work.
	Slots int
	// EventQueueSize bounds the queue of events for Python (0 means 4096),
	// counted in events. A block's events for an endpoint enter as one
	// burst, which is queued whole when the queue has room for one more
	// event, so the queue may exceed the bound by a block's events.
	EventQueueSize int
	// EventPolicy chooses backpressure (default) or drop-and-count.
	EventPolicy QueuePolicy
	// DispatchSpin is how long the dispatcher's wait for the next event
	// polls before it parks: 0 adapts (it spins through the gaps between
	// arriving events while they come at most 10 ms apart, 200 us
	// otherwise), NoSpin never spins, positive spins that long. Waking a
	// parked dispatcher costs tens of microseconds (measured p50 50 us on an
	// H200 host); spinning through the gap between blocks buys lower
	// callback latency with up to one core of CPU while events stream.
	// With a positive spin the Python dispatcher spins in C on the queue's
	// ring (EventRing), not in Go. NoSpin is the one negative value; at
	// most MaxDispatchSpin.
	DispatchSpin time.Duration
	// DeviceTimings times one block of the pool in four on a CUDA device
	// with timestamped events (Engine.Timings' upload, process and format
	// times). Off by default there: a timestamped event on the copy stream
	// costs copy-engine time, 1-3.5% of the end-to-end throughput on an
	// H100 at 1376 and 2048 samples (bench/probe_upload.py, its timings variant). The
	// CPU backend's events read the host clock for free and time every
	// block either way.
	DeviceTimings bool

	// GalvoOutputChannels is the channels of the generated waveform (the
	// scans' channels_per_sample); 0 means vortex's default, 2.
	GalvoOutputChannels int
	// GalvoInputChannels is the channels of measured positions IOs write;
	// 0 means vortex's default, 2.
	GalvoInputChannels int
	// PostScanRecords is how many records past the end of the scan queue
	// the engine still acquires before it stops (vortex's
	// post_scan_records).
	PostScanRecords int
	// LeadMarker is the marker placed at sample 0, before the scan queue's
	// first (vortex's lead_marker); nil means vortex's default, a
	// ScanBoundary(0, 0, 0) without flags, which no planner mask matches.
	LeadMarker *marker.Marker
	// Strobes are the digital strobes the Generate stage writes per block
	// for the IOs (vortex's strobes); nil: none. DefaultStrobes is
	// vortex's default list, which the Python EngineConfig starts with.
	Strobes []Strobe
	// LeadStrobes is the word the strobe delay lines of the smaller
	// leads start with (vortex's lead_strobes, default 0).
	LeadStrobes uint32
	// ScannerWarp maps the galvo positions to sample positions (vortex's
	// scanner_warp): the target and measured positions that travel with
	// each block (PositionFormatExecutor's sample_target and
	// sample_actual) are the lead-0 waveform and the IOs' measurements
	// through its Forward. The zero value is NoWarp.
	ScannerWarp scan.Warp
	// IOWiring is the IOConfig of each IO linked with LinkIO, in link
	// order (bindings set it in the config record; an IO beyond it gets
	// vortex's add_io defaults: lead 0, preload, not master).
	IOWiring []IOConfig
	// ScanQueue is the queue the Generate stage plays (vortex's
	// engine.scan_queue); nil: the engine makes its own (Engine.ScanQueue).
	ScanQueue *scan.ScanQueue `json:"-"`
	// AcquisitionMasters is, per acquisition (in AddAcquisition order),
	// vortex's add_acquisition master flag: masters start after the
	// others. Missing entries are true (vortex's default).
	AcquisitionMasters []bool
	// Rotations is, per acquisition (in AddAcquisition order), vortex's
	// expanded processor graph: the processor sets that process
	// consecutive blocks in turn (block i goes to set i mod len), each a
	// list of indices into that acquisition's processors. Empty (or
	// missing for an acquisition) means one set of every processor:
	// vortex's divide, every processor gets every block. cycle([A, B])
	// is [[A], [B]]: blocks alternate (ping-pong). Bindings compute it
	// from vortex's divide / cycle nodes; SetRotation is the Go form.
	Rotations [][][]int

	ios   []ioNode
	acqs  []acqNode
	procs []procNode
	fmts  []fmtNode
	errs  []error // wiring mistakes, reported by Validate
}

type ioNode struct {
	io  IO
	cfg IOConfig
}

type acqNode struct {
	acq      Acquisition
	procs    []Processor
	rotation [][]Processor // SetRotation's; nil: Rotations or every processor
}

type procNode struct {
	proc Processor
	fmts []Formatter
}

type fmtNode struct {
	fmt Formatter
	eps []Endpoint
}

// AddAcquisition adds an acquisition feeding the given processors.
func (c *Config) AddAcquisition(acq Acquisition, processors ...Processor) {
	if acq == nil {
		c.errs = append(c.errs, Invalid("Config.AddAcquisition: acq=nil, expected an Acquisition"))
		return
	}
	for i, p := range processors {
		if p == nil {
			c.errs = append(c.errs, Invalid("Config.AddAcquisition: processors[%d]=nil, expected a Processor", i))
			return
		}
	}
	c.acqs = append(c.acqs, acqNode{acq: acq, procs: processors})
}

// acqMaster is acquisition i's master flag (AcquisitionMasters).
func (c *Config) acqMaster(i int) bool {
	return i >= len(c.AcquisitionMasters) || c.AcquisitionMasters[i]
}

// SetRotation sets the latest acquisition's processor rotation (see
// Config.Rotations): block i is processed by sets[i mod len(sets)]; every
// processor of a set must be one of the acquisition's.
func (c *Config) SetRotation(sets ...[]Processor) {
	if len(c.acqs) == 0 {
		c.errs = append(c.errs, Invalid("Config.SetRotation: no acquisition, expected AddAcquisition first"))
		return
	}
	c.acqs[len(c.acqs)-1].rotation = sets
}

// rotation is acquisition i's rotation as indices into its processors
// (validated by Validate).
func (c *Config) rotation(i int) ([][]int, error) {
	n := c.acqs[i]
	if n.rotation != nil {
		index := map[Processor]int{}
		for k, p := range n.procs {
			index[p] = k
		}
		out := make([][]int, len(n.rotation))
		for s, set := range n.rotation {
			for _, p := range set {
				k, ok := index[p]
				if !ok {
					return nil, Invalid("Config.SetRotation: acquisition #%d: set %d lists a processor the acquisition does not feed, expected one of its processors", i, s)
				}
				out[s] = append(out[s], k)
			}
		}
		return out, nil
	}
	if i < len(c.Rotations) && len(c.Rotations[i]) > 0 {
		return c.Rotations[i], nil
	}
	all := make([]int, len(n.procs))
	for k := range all {
		all[k] = k
	}
	return [][]int{all}, nil
}

// checkRotation validates acquisition i's rotation: sets not empty, each
// index a processor of the acquisition and at most once per set, every
// processor in some set. The sets are returned with duplicates removed.
func (c *Config) checkRotation(i int) ([][]int, error) {
	rot, err := c.rotation(i)
	if err != nil {
		return nil, err
	}
	if len(rot) > MaxBlocks {
		return nil, Invalid("add_acquisition: the processor graph of acquisition #%d expands to %d sets, expected at most %d", i, len(rot), MaxBlocks)
	}
	np := len(c.acqs[i].procs)
	used := make([]bool, np)
	out := make([][]int, len(rot))
	for s, set := range rot {
		if len(set) == 0 {
			return nil, Invalid("Config.Rotations[%d][%d]: an empty set, expected at least one processor", i, s)
		}
		seen := make([]bool, np)
		for _, k := range set {
			if k < 0 || k >= np {
				return nil, Invalid("Config.Rotations[%d][%d]: processor index %d, expected 0 <= index < %d (the acquisition's processors)", i, s, k, np)
			}
			if !seen[k] { // vortex's cycle may repeat a processor in a set; it processes once
				out[s] = append(out[s], k)
			}
			seen[k], used[k] = true, true
		}
	}
	for k, u := range used {
		if !u {
			return nil, Invalid("Config.Rotations[%d]: processor #%d of the acquisition is in no set, expected every processor in the rotation", i, k)
		}
	}
	return out, nil
}

// AddIO adds an IO that receives the generated waveforms (vortex's
// add_io(io, lead_samples, preload, master)).
func (c *Config) AddIO(io IO, cfg IOConfig) {
	switch {
	case io == nil:
		c.errs = append(c.errs, Invalid("Config.AddIO: io=nil, expected an IO"))
	case cfg.LeadSamples < 0 || cfg.LeadSamples > MaxRecordsPerBlock:
		c.errs = append(c.errs, Invalid("Config.AddIO: lead_samples=%d, expected 0 <= lead_samples <= %d", cfg.LeadSamples, MaxRecordsPerBlock))
	default:
		c.ios = append(c.ios, ioNode{io: io, cfg: cfg})
	}
}

func (c *Config) outChannels() int {
	if c.GalvoOutputChannels == 0 {
		return 2
	}
	return c.GalvoOutputChannels
}

func (c *Config) inChannels() int {
	if c.GalvoInputChannels == 0 {
		return 2
	}
	return c.GalvoInputChannels
}

func (c *Config) leadMarker() marker.Marker {
	if c.LeadMarker == nil {
		m := marker.NewScanBoundary(0, 0, 0)
		m.Flags = marker.NoFlags
		return m
	}
	return *c.LeadMarker
}

// AddProcessor routes a processor's output to the given formatters.
func (c *Config) AddProcessor(proc Processor, formatters ...Formatter) {
	if proc == nil {
		c.errs = append(c.errs, Invalid("Config.AddProcessor: proc=nil, expected a Processor"))
		return
	}
	for i, f := range formatters {
		if f == nil {
			c.errs = append(c.errs, Invalid("Config.AddProcessor: formatters[%d]=nil, expected a Formatter", i))
			return
		}
	}
	c.procs = append(c.procs, procNode{proc: proc, fmts: formatters})
}

// AddFormatter routes a formatter's plans to the given endpoints.
func (c *Config) AddFormatter(f Formatter, endpoints ...Endpoint) {
	if f == nil {
		c.errs = append(c.errs, Invalid("Config.AddFormatter: fmt=nil, expected a Formatter"))
		return
	}
	for i, e := range endpoints {
		if e == nil {
			c.errs = append(c.errs, Invalid("Config.AddFormatter: endpoints[%d]=nil, expected an Endpoint", i))
			return
		}
	}
	c.fmts = append(c.fmts, fmtNode{fmt: f, eps: endpoints})
}

// AppendProcessor appends proc to the processors of the latest
// AddAcquisition, for bindings that build the wiring one link at a time.
func (c *Config) AppendProcessor(proc Processor) {
	if len(c.acqs) == 0 || proc == nil {
		c.errs = append(c.errs, Invalid("Config.AddAcquisition: processors must be processors, after an acquisition"))
		return
	}
	n := &c.acqs[len(c.acqs)-1]
	n.procs = append(n.procs, proc)
}

// AppendFormatter appends f to the formatters of the latest AddProcessor.
func (c *Config) AppendFormatter(f Formatter) {
	if len(c.procs) == 0 || f == nil {
		c.errs = append(c.errs, Invalid("Config.AddProcessor: formatters must be formatters, after a processor"))
		return
	}
	n := &c.procs[len(c.procs)-1]
	n.fmts = append(n.fmts, f)
}

// AppendEndpoint appends e to the endpoints of the latest AddFormatter.
func (c *Config) AppendEndpoint(e Endpoint) {
	if len(c.fmts) == 0 || e == nil {
		c.errs = append(c.errs, Invalid("Config.AddFormatter: endpoints must be endpoints, after a formatter"))
		return
	}
	n := &c.fmts[len(c.fmts)-1]
	n.eps = append(n.eps, e)
}

func (c *Config) slots() int {
	if c.Slots == 0 {
		return 2
	}
	return c.Slots
}

func (c *Config) preload() int {
	if c.PreloadCount == 0 {
		return 1
	}
	return c.PreloadCount
}

func (c *Config) queueSize() int {
	if c.EventQueueSize == 0 {
		return 4096
	}
	return c.EventQueueSize
}

// Validate checks the configuration and the wiring, naming the first
// offending field.
func (c *Config) Validate() error {
	if len(c.errs) > 0 {
		return c.errs[0]
	}
	switch {
	case c.RecordsPerBlock <= 0 || c.RecordsPerBlock > MaxRecordsPerBlock:
		return Invalid("EngineConfig.records_per_block=%d, expected 1 <= records_per_block <= %d", c.RecordsPerBlock, MaxRecordsPerBlock)
	case c.BlocksToAllocate <= 0 || c.BlocksToAllocate > MaxBlocks:
		return Invalid("EngineConfig.blocks_to_allocate=%d, expected 1 <= blocks_to_allocate <= %d", c.BlocksToAllocate, MaxBlocks)
	case c.PreloadCount < 0 || c.PreloadCount > c.BlocksToAllocate:
		return Invalid("EngineConfig.preload_count=%d, expected 0 <= preload_count <= blocks_to_allocate (%d)", c.PreloadCount, c.BlocksToAllocate)
	case c.BlocksToAcquire < 0:
		return Invalid("EngineConfig.blocks_to_acquire=%d, expected >= 0 (0 = until the scan ends)", c.BlocksToAcquire)
	case c.Slots < 0 || c.Slots > MaxSlots:
		return Invalid("Config.Slots: %d, expected 0 <= Slots <= %d (0 = 2)", c.Slots, MaxSlots)
	case c.EventQueueSize < 0 || c.EventQueueSize > MaxEventQueue:
		return Invalid("EngineConfig.event_queue_size=%d, expected 0 <= event_queue_size <= %d (0 = 4096)", c.EventQueueSize, MaxEventQueue)
	case c.EventPolicy != QueueBlock && c.EventPolicy != QueueDrop:
		return Invalid("EngineConfig.event_policy=%d, expected QueueBlock or QueueDrop", int(c.EventPolicy))
	case c.DispatchSpin < NoSpin || c.DispatchSpin > MaxDispatchSpin:
		return Invalid("EngineConfig.dispatch_spin=%v, expected 0 <= dispatch_spin <= %v", c.DispatchSpin, MaxDispatchSpin)
	case c.GalvoOutputChannels < 0 || c.GalvoOutputChannels > MaxGalvoChannels:
		return Invalid("EngineConfig.galvo_output_channels=%d, expected 0 <= galvo_output_channels <= %d (0 = 2)", c.GalvoOutputChannels, MaxGalvoChannels)
	case c.GalvoInputChannels < 0 || c.GalvoInputChannels > MaxGalvoChannels:
		return Invalid("EngineConfig.galvo_input_channels=%d, expected 0 <= galvo_input_channels <= %d (0 = 2)", c.GalvoInputChannels, MaxGalvoChannels)
	case c.PostScanRecords < 0:
		return Invalid("EngineConfig.post_scan_records=%d, expected >= 0", c.PostScanRecords)
	case c.LeadMarker != nil && c.LeadMarker.Sample != 0:
		return Invalid("EngineConfig.lead_marker.sample=%d, expected 0 (it leads the first block)", c.LeadMarker.Sample)
	case c.LeadMarker != nil && c.LeadMarker.Kind != marker.ScanBoundary:
		return Invalid("Config.LeadMarker: a %v, expected a ScanBoundary (vortex's lead_marker)", c.LeadMarker.Kind)
	}
	if err := validateStrobes(c.Strobes); err != nil {
		return err
	}
	if err := c.ScannerWarp.Validate("Config.ScannerWarp"); err != nil {
		return err
	}
	seenIO := map[IO]bool{}
	for i, n := range c.ios {
		if seenIO[n.io] {
			return Invalid("Config.AddIO: io #%d is added twice, expected once", i)
		}
		seenIO[n.io] = true
	}
	if len(c.acqs) == 0 {
		return Invalid("EngineConfig.add_acquisition: no acquisition, expected at least 1")
	}
	if len(c.acqs) > MaxAcquisitions {
		return Invalid("Config.AddAcquisition: %d acquisitions, expected at most %d", len(c.acqs), MaxAcquisitions)
	}
	owner := map[Processor]int{} // processor -> its acquisition
	seenAcq := map[Acquisition]bool{}
	for a, an := range c.acqs {
		if seenAcq[an.acq] {
			return Invalid("Config.AddAcquisition: acquisition #%d is added twice, expected once", a)
		}
		seenAcq[an.acq] = true
		if len(an.procs) == 0 {
			return Invalid("Config.AddAcquisition: acquisition #%d has no processors, expected at least 1", a)
		}
		for _, p := range an.procs {
			if _, dup := owner[p]; dup {
				return Invalid("Config.AddAcquisition: a processor is listed twice, expected each once under one acquisition")
			}
			owner[p] = a
		}
		if _, err := c.checkRotation(a); err != nil {
			return err
		}
	}
	feeders := map[Formatter][]Processor{}
	seenProc := map[Processor]bool{}
	for i, pn := range c.procs {
		if _, ok := owner[pn.proc]; !ok {
			return Invalid("Config.AddProcessor: processor #%d is not fed by an acquisition, expected it in AddAcquisition's processors", i)
		}
		if seenProc[pn.proc] {
			return Invalid("Config.AddProcessor: processor #%d is added twice, expected once", i)
		}
		seenProc[pn.proc] = true
		for _, f := range pn.fmts {
			if slices.Contains(feeders[f], pn.proc) {
				return Invalid("Config.AddProcessor: processor #%d lists a formatter twice, expected each once", i)
			}
			feeders[f] = append(feeders[f], pn.proc)
		}
	}
	if err := c.checkFeeders(feeders, owner); err != nil {
		return err
	}
	fmtOwned := map[Formatter]bool{}
	for f := range feeders {
		fmtOwned[f] = true
	}
	seenFmt := map[Formatter]bool{}
	seenEp := map[Endpoint]bool{}
	for i, fn := range c.fmts {
		if !fmtOwned[fn.fmt] {
			return Invalid("Config.AddFormatter: formatter #%d is not fed by a processor, expected it in AddProcessor's formatters", i)
		}
		if seenFmt[fn.fmt] {
			return Invalid("Config.AddFormatter: formatter #%d is added twice, expected once", i)
		}
		seenFmt[fn.fmt] = true
		for _, e := range fn.eps {
			if seenEp[e] {
				return Invalid("Config.AddFormatter: formatter #%d lists an endpoint already used, expected each endpoint once", i)
			}
			seenEp[e] = true
		}
	}
	return nil
}

// checkFeeders: a formatter's planner must see every block of its
// acquisition exactly once, so the processors feeding it all belong to one
// acquisition and exactly one of them is in each set of its rotation
// (vortex's ping-pong: cycle([A, B]) with both A and B feeding the
// formatter).
func (c *Config) checkFeeders(feeders map[Formatter][]Processor, owner map[Processor]int) error {
	for fi, fn := range c.fmts {
		ps := feeders[fn.fmt]
		if len(ps) == 0 {
			continue // reported below as not fed
		}
		a := owner[ps[0]]
		for _, p := range ps[1:] {
			if owner[p] != a {
				return Invalid("Config.AddProcessor: formatter #%d is fed by processors of different acquisitions, expected processors of one acquisition", fi)
			}
		}
		rot, _ := c.checkRotation(a)
		for s, set := range rot {
			n := 0
			for _, k := range set {
				if slices.Contains(ps, c.acqs[a].procs[k]) {
					n++
				}
			}
			if n != 1 {
				return Invalid("Config.AddProcessor: formatter #%d: %d of its processors process the blocks of rotation set %d of acquisition #%d, expected exactly 1 (its planner must see every block once: feed it from each processor of a cycle, or from one processor of a divide)", fi, n, s, a)
			}
		}
	}
	return nil
}

// Link is one link of the wiring, for bindings that build it one call at
// a time (Config.Link): a node, or a stage appended to the latest node.
type Link int

const (
	// LinkAcquisition starts an acquisition node (AddAcquisition).
	LinkAcquisition Link = iota
	// LinkAcquisitionProcessor feeds the latest acquisition to a processor.
	LinkAcquisitionProcessor
	// LinkProcessor starts a processor node (AddProcessor).
	LinkProcessor
	// LinkProcessorFormatter routes the latest processor to a formatter.
	LinkProcessorFormatter
	// LinkFormatter starts a formatter node (AddFormatter).
	LinkFormatter
	// LinkFormatterEndpoint routes the latest formatter to an endpoint.
	LinkFormatterEndpoint
	// LinkIO adds an IO (AddIO) with the next IOWiring entry.
	LinkIO
	// LinkScanQueue sets Config.ScanQueue from a stage that has the queue
	// (a binding's queue object: Queue() *scan.ScanQueue).
	LinkScanQueue
)

// Link adds stage to the wiring as link l. A stage of the wrong kind (nil
// included) or an unknown link is a wiring error that Validate reports.
func (c *Config) Link(l Link, stage any) {
	ok := false
	switch l {
	case LinkAcquisition:
		var a Acquisition
		if a, ok = stage.(Acquisition); ok {
			c.AddAcquisition(a)
		}
	case LinkAcquisitionProcessor, LinkProcessor:
		var p Processor
		if p, ok = stage.(Processor); ok && l == LinkProcessor {
			c.AddProcessor(p)
		} else if ok {
			c.AppendProcessor(p)
		}
	case LinkProcessorFormatter, LinkFormatter:
		var f Formatter
		if f, ok = stage.(Formatter); ok && l == LinkFormatter {
			c.AddFormatter(f)
		} else if ok {
			c.AppendFormatter(f)
		}
	case LinkFormatterEndpoint:
		var e Endpoint
		if e, ok = stage.(Endpoint); ok {
			c.AppendEndpoint(e)
		}
	case LinkIO:
		var io IO
		if io, ok = stage.(IO); ok {
			w := IOConfig{Preload: true}
			if len(c.ios) < len(c.IOWiring) {
				w = c.IOWiring[len(c.ios)]
			}
			c.AddIO(io, w)
		}
	case LinkScanQueue:
		var q interface{ Queue() *scan.ScanQueue }
		if q, ok = stage.(interface{ Queue() *scan.ScanQueue }); ok {
			c.ScanQueue = q.Queue()
		}
	}
	if !ok {
		c.errs = append(c.errs, Invalid("Config.Link: link %d with a %T, expected a stage of that link's kind", l, stage))
	}
}

// SpinSeconds is the Config.DispatchSpin of a spin of s seconds, as vortex
// and Python give it: 0 never spins (NoSpin); more than MaxDispatchSpin,
// a negative or a NaN s is refused naming the field.
func SpinSeconds(s float64) (time.Duration, error) {
	if !(s >= 0 && s <= MaxDispatchSpin.Seconds()) {
		return 0, Invalid("EngineConfig.dispatch_spin=%g, expected 0 <= dispatch_spin <= %g (seconds)", s, MaxDispatchSpin.Seconds())
	}
	if d := time.Duration(math.Round(s * 1e9)); d > 0 {
		return d, nil
	}
	return NoSpin, nil
}
