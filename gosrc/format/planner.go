package format

import (
	"fmt"
	"math"
	"sync"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/marker"
)

// FormatPlannerConfig is vortex's FormatPlannerConfig.
type FormatPlannerConfig struct {
	// Shape is (segments_per_volume, records_per_segment): the volume the
	// planner fills. vortex's default is unbounded; here both must be set,
	// since an executor has to allocate the volume they describe.
	Shape [2]int
	// Mask filters boundaries and events: a marker whose flags share no bit
	// with it is not formatted (vortex's mask, default all flags).
	Mask marker.Flags
	// FlipReversed loads reversed segments (bidirectional scans) back to
	// front, so every segment reads in the same direction.
	FlipReversed bool
	// StripInactive drops the records between InactiveLines and ActiveLines.
	StripInactive bool
	// AdaptShape grows the shape (emitting Resize) instead of truncating
	// segments or dropping segments beyond it.
	AdaptShape bool
}

// DefaultFormatPlannerConfig is vortex's defaults (mask all flags,
// flip_reversed and strip_inactive on, adapt_shape off) with the given
// shape.
func DefaultFormatPlannerConfig(segmentsPerVolume, recordsPerSegment int) FormatPlannerConfig {
	return FormatPlannerConfig{
		Shape:         [2]int{segmentsPerVolume, recordsPerSegment},
		Mask:          marker.AllFlags,
		FlipReversed:  true,
		StripInactive: true,
	}
}

// SegmentsPerVolume is Shape[0].
func (c FormatPlannerConfig) SegmentsPerVolume() int { return c.Shape[0] }

// RecordsPerSegment is Shape[1].
func (c FormatPlannerConfig) RecordsPerSegment() int { return c.Shape[1] }

// maxShape bounds each dimension so that segment*records products and
// sample arithmetic stay far from int64 overflow.
const maxShape = 1 << 31

// Unbounded is the shape dimension of vortex's "unset" planner size
// (2**64-1 in vortex's FormatPlannerConfig): a volume that never wraps
// (segments) or a segment that is never cut (records), as vortex's planner
// treats the largest size_t. It is the largest dimension Validate accepts.
const Unbounded = maxShape

// Validate checks the config, naming vortex's field.
func (c FormatPlannerConfig) Validate() error {
	if c.Shape[0] <= 0 || c.Shape[0] > maxShape {
		return backend.Invalidf("FormatPlannerConfig.segments_per_volume: %d, expected 1..%d", c.Shape[0], maxShape)
	}
	if c.Shape[1] <= 0 || c.Shape[1] > maxShape {
		return backend.Invalidf("FormatPlannerConfig.records_per_segment: %d, expected 1..%d", c.Shape[1], maxShape)
	}
	return nil
}

// ActionKind says which of vortex's format actions an Action is.
type ActionKind uint8

// The action kinds, as vortex.format names their classes.
const (
	// Copy loads Count records from the block into the volume.
	Copy ActionKind = iota + 1
	// Resize says the planner grew the volume's shape (adapt_shape).
	Resize
	// FinishSegment says a segment of the volume is complete.
	FinishSegment
	// FinishVolume says a volume is complete.
	FinishVolume
	// FinishScan says a scan is complete.
	FinishScan
	// EventAction passes an Event marker through to the endpoints.
	EventAction
)

var actionNames = [...]string{"", "Copy", "Resize", "FinishSegment", "FinishVolume", "FinishScan", "Event"}

// String is the vortex class name.
func (k ActionKind) String() string {
	if k != 0 && int(k) < len(actionNames) {
		return actionNames[k]
	}
	return fmt.Sprintf("ActionKind(%d)", uint8(k))
}

// NoIndex is the scan, volume or segment index of a notification issued
// before any boundary set one (vortex's value_or(-1) on a size_t, which
// Python reads as 2**64-1).
const NoIndex int64 = -1

// Action is one step of a format plan. A flat struct with a Kind, like
// marker.Marker, so that a plan is a reusable slice of values. Which fields
// mean something depends on Kind:
//
//	Copy:          Count, BlockOffset, BufferSegment, BufferRecord, Reverse
//	Resize:        Shape (segments_per_volume, records_per_segment)
//	FinishSegment: Sample, ScanIndex, VolumeIndex, SegmentIndexBuffer
//	FinishVolume:  Sample, ScanIndex, VolumeIndex
//	FinishScan:    Sample, ScanIndex
//	EventAction:   Sample, ID
type Action struct {
	// Sample is the sample at which a notification or event takes effect.
	Sample int64
	// ScanIndex is the scan's sequence number, or NoIndex.
	ScanIndex int64
	// VolumeIndex is the volume's index in its scan, or NoIndex.
	VolumeIndex int64
	// SegmentIndexBuffer is the segment's index in the volume buffer.
	SegmentIndexBuffer int64
	// ID is an event's id.
	ID uint64
	// Count is the number of records a Copy loads.
	Count int
	// BlockOffset is the Copy's first record within the block.
	BlockOffset int
	// BufferSegment is the volume segment a Copy writes.
	BufferSegment int
	// BufferRecord is the first volume record a Copy writes (the lowest,
	// also when Reverse is set).
	BufferRecord int
	// Shape is a Resize's new (segments_per_volume, records_per_segment).
	Shape [2]int
	// Kind is the action's type.
	Kind ActionKind
	// Reverse loads the Copy's records back to front: block record
	// BlockOffset+i goes to BufferRecord+Count-1-i.
	Reverse bool
}

// String prints the action as vortex's repr does.
func (a Action) String() string {
	switch a.Kind {
	case Copy:
		return fmt.Sprintf("Copy(count=%d, block_offset=%d, buffer_segment=%d, buffer_record=%d, reverse=%t)", a.Count, a.BlockOffset, a.BufferSegment, a.BufferRecord, a.Reverse)
	case Resize:
		return fmt.Sprintf("Resize(segments_per_volume=%d, records_per_segment=%d)", a.Shape[0], a.Shape[1])
	case FinishSegment:
		return fmt.Sprintf("FinishSegment(sample=%d, scan_index=%d, volume_index=%d, segment_index_buffer=%d)", a.Sample, a.ScanIndex, a.VolumeIndex, a.SegmentIndexBuffer)
	case FinishVolume:
		return fmt.Sprintf("FinishVolume(sample=%d, scan_index=%d, volume_index=%d)", a.Sample, a.ScanIndex, a.VolumeIndex)
	case FinishScan:
		return fmt.Sprintf("FinishScan(sample=%d, scan_index=%d)", a.Sample, a.ScanIndex)
	case EventAction:
		return fmt.Sprintf("Event(sample=%d, id=%d)", a.Sample, a.ID)
	}
	return fmt.Sprintf("Action(kind=%s)", a.Kind)
}

// FormatPlan is the list of actions for one block. Reuse one across
// blocks: Next truncates it and appends, so after Reserve it does not
// allocate.
type FormatPlan struct {
	// Actions are the plan's steps in order.
	Actions []Action
}

// ActionsPerMarker bounds the actions one marker can produce: a scan
// boundary finishes the prior load (a resize and a copy), then a segment,
// a volume and a scan.
const ActionsPerMarker = 5

// Reserve gives the plan room for a block of up to maxMarkers markers, so
// that planning such a block does not allocate.
func (p *FormatPlan) Reserve(maxMarkers int) error {
	if maxMarkers < 0 || maxMarkers > math.MaxInt32 {
		return backend.Invalidf("FormatPlan.Reserve: maxMarkers=%d, expected 0..%d", maxMarkers, math.MaxInt32)
	}
	// Each marker yields at most ActionsPerMarker actions; the block's tail
	// adds a resize and a copy.
	need := maxMarkers*ActionsPerMarker + 2
	if cap(p.Actions) < need {
		p.Actions = make([]Action, 0, need)
	}
	p.Actions = p.Actions[:0]
	return nil
}

// FormatPlanner is vortex's FormatPlanner: fed each block's markers in
// order, it plans the copies of the block's records into volume segments
// and the notifications of finished segments, volumes and scans. State
// carries across blocks: a segment may span any number of blocks.
//
// The engine's format stage calls Next and Finish; a user may Reset it
// between sessions (vortex's reset) from another goroutine: mu makes
// every call whole (one uncontended lock per block).
type FormatPlanner struct {
	mu    sync.Mutex
	cfg   FormatPlannerConfig
	shape [2]int

	activeSample    int64
	segmentPosition int
	// recordPosition is signed: a reversed segment counts down from its end.
	recordPosition  int64
	segmentReversed bool
	segmentAccepted bool
	linesActive     bool

	lastScan, lastVolume, lastSegment int64 // NoIndex when unset
	initialized                       bool
}

// NewFormatPlanner validates cfg and returns an initialized planner.
func NewFormatPlanner(cfg FormatPlannerConfig) (*FormatPlanner, error) {
	p := &FormatPlanner{}
	if err := p.Initialize(cfg); err != nil {
		return nil, err
	}
	return p, nil
}

// Initialize adopts cfg and resets the planner. On error the planner is
// unchanged. It is refused (backend.ErrInUse) while an engine that is not
// closed holds the planner (see the package doc, "Initialize in place").
func (p *FormatPlanner) Initialize(cfg FormatPlannerConfig) error {
	if err := notHeld("FormatPlanner", p); err != nil {
		return err
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cfg = cfg
	p.shape = cfg.Shape
	p.initialized = true
	p.reset()
	return nil
}

// Config is the config given to Initialize.
func (p *FormatPlanner) Config() FormatPlannerConfig { return p.cfg }

// SegmentsPerVolume is the current shape's segment count (grown by
// adapt_shape).
func (p *FormatPlanner) SegmentsPerVolume() int { return p.shape[0] }

// RecordsPerSegment is the current shape's record count (grown by
// adapt_shape).
func (p *FormatPlanner) RecordsPerSegment() int { return p.shape[1] }

// Reset forgets all state, as at the start of a stream. The shape keeps any
// growth, as vortex's reset does.
func (p *FormatPlanner) Reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.reset()
}

func (p *FormatPlanner) reset() {
	p.activeSample = 0
	p.segmentPosition = 0
	p.recordPosition = 0
	p.segmentReversed = false
	p.segmentAccepted = true
	p.linesActive = false
	p.lastScan, p.lastVolume, p.lastSegment = NoIndex, NoIndex, NoIndex
}

// checkBlock validates a block before any state changes, so a bad block
// leaves the planner as it was.
func (p *FormatPlanner) checkBlock(blockSample int64, blockLength int, markers []marker.Marker) error {
	if !p.initialized {
		return fmt.Errorf("FormatPlanner.Next: planner not initialized (call Initialize): %w", backend.ErrInvalid)
	}
	if blockSample < 0 {
		return backend.Invalidf("FormatPlanner.Next: block_sample=%d, expected >= 0", blockSample)
	}
	if blockLength < 0 {
		return backend.Invalidf("FormatPlanner.Next: block_length=%d, expected >= 0", blockLength)
	}
	end := blockSample + int64(blockLength)
	prev := blockSample
	for i := range markers {
		m := &markers[i]
		if m.Kind < marker.ScanBoundary || m.Kind > marker.Event {
			return backend.Invalidf("FormatPlanner.Next: markers[%d].kind=%d, expected a vortex marker kind (ScanBoundary..Event)", i, m.Kind)
		}
		// vortex raises for a marker past the block; one before the block
		// or out of order would make its unsigned record counts wrap.
		if m.Sample >= end {
			return backend.Invalidf("FormatPlanner.Next: markers[%d].sample=%d is after the end of the block, expected < %d", i, m.Sample, end)
		}
		if m.Sample < prev {
			return backend.Invalidf("FormatPlanner.Next: markers[%d].sample=%d, expected >= %d (the block's first sample and the prior marker's)", i, m.Sample, prev)
		}
		prev = m.Sample
		if (m.Kind == marker.VolumeBoundary || m.Kind == marker.SegmentBoundary) && m.Index < 0 {
			return backend.Invalidf("FormatPlanner.Next: markers[%d] (%s) index=%d, expected >= 0", i, m.Kind, m.Index)
		}
		if m.CountHint < 0 {
			return backend.Invalidf("FormatPlanner.Next: markers[%d] (%s) count hint=%d, expected >= 0", i, m.Kind, m.CountHint)
		}
	}
	return nil
}

// Next plans block [blockSample, blockSample+blockLength) with its markers
// (sorted by sample, none past the block), replacing plan's actions. It
// returns an error, and changes nothing, for a malformed block.
func (p *FormatPlanner) Next(plan *FormatPlan, blockSample int64, blockLength int, markers []marker.Marker) error {
	if plan == nil {
		return backend.Invalidf("FormatPlanner.Next: plan is nil, expected a *FormatPlan")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.checkBlock(blockSample, blockLength, markers); err != nil {
		return err
	}
	plan.Actions = plan.Actions[:0]
	p.activeSample = blockSample
	for i := range markers {
		p.step(plan, blockSample, &markers[i])
	}
	// Load what remains of the block.
	if blockLength > 0 && (p.linesActive || !p.cfg.StripInactive) {
		// The returned sample is dropped, as vortex does: the next block
		// restarts from its own first sample.
		p.load(plan, blockSample, p.activeSample, blockSample+int64(blockLength))
	}
	return nil
}

// Finish appends the notifications still pending at the end of the
// stream (the last segment, volume and scan), replacing plan's actions.
func (p *FormatPlanner) Finish(plan *FormatPlan) error {
	if plan == nil {
		return backend.Invalidf("FormatPlanner.Finish: plan is nil, expected a *FormatPlan")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	plan.Actions = plan.Actions[:0]
	if p.lastSegment != NoIndex {
		p.finishSegment(plan, p.lastSegment)
	}
	if p.lastVolume != NoIndex {
		p.finishVolume(plan, p.lastVolume)
	}
	if p.lastScan != NoIndex {
		p.finishScan(plan, p.lastScan)
	}
	return nil
}

func (p *FormatPlanner) step(plan *FormatPlan, blockSample int64, m *marker.Marker) {
	switch m.Kind {
	case marker.ActiveLines:
		p.linesActive = true
		p.activeSample = m.Sample
	case marker.InactiveLines:
		if p.linesActive && p.cfg.StripInactive {
			p.activeSample = p.load(plan, blockSample, p.activeSample, m.Sample)
		}
		p.linesActive = false
	case marker.ScanBoundary:
		p.finishPrior(plan, blockSample, m.Sample)
		// A scan boundary ends the open segment and volume whatever the mask.
		if p.lastSegment != NoIndex {
			p.finishSegment(plan, p.lastSegment)
			p.lastSegment = NoIndex
		}
		if p.lastVolume != NoIndex {
			p.finishVolume(plan, p.lastVolume)
			p.lastVolume = NoIndex
		}
		if m.Flags.Matches(p.cfg.Mask) {
			if p.lastScan != NoIndex {
				p.finishScan(plan, p.lastScan)
			}
			p.lastScan = m.Sequence
		}
	case marker.VolumeBoundary:
		p.finishPrior(plan, blockSample, m.Sample)
		if p.lastSegment != NoIndex {
			p.finishSegment(plan, p.lastSegment)
			p.lastSegment = NoIndex
		}
		if m.Flags.Matches(p.cfg.Mask) {
			if p.lastVolume != NoIndex {
				p.finishVolume(plan, p.lastVolume)
			}
			p.lastVolume = m.Index
		}
	case marker.SegmentBoundary:
		p.segmentBoundary(plan, blockSample, m)
	case marker.Event:
		if m.Flags.Matches(p.cfg.Mask) {
			plan.Actions = append(plan.Actions, Action{Kind: EventAction, Sample: m.Sample, ID: m.ID,
				ScanIndex: NoIndex, VolumeIndex: NoIndex, SegmentIndexBuffer: NoIndex})
		}
	}
}

func (p *FormatPlanner) segmentBoundary(plan *FormatPlan, blockSample int64, m *marker.Marker) {
	p.finishPrior(plan, blockSample, m.Sample)
	if p.lastSegment != NoIndex {
		p.finishSegment(plan, p.lastSegment)
		p.lastSegment = NoIndex
	}
	p.segmentAccepted = m.Flags.Matches(p.cfg.Mask)
	if !p.segmentAccepted {
		return
	}
	p.segmentReversed = p.cfg.FlipReversed && m.Reversed
	switch {
	case !p.segmentReversed:
		p.recordPosition = 0
	case m.CountHint > 0:
		// A reversed segment fills from its end, which the hint gives.
		p.recordPosition = int64(m.CountHint)
	default:
		p.recordPosition = int64(p.shape[1])
	}
	// Index is bounded by checkBlock (>= 0); clamp to int for the shape.
	p.segmentPosition = int(min(m.Index, maxShape))
	if p.segmentPosition >= p.shape[0] && p.cfg.AdaptShape {
		p.shape[0] = p.segmentPosition + 1
		p.resize(plan)
	}
	if p.segmentPosition < p.shape[0] {
		p.lastSegment = int64(p.segmentPosition)
	}
}

func (p *FormatPlanner) resize(plan *FormatPlan) {
	plan.Actions = append(plan.Actions, Action{Kind: Resize, Shape: p.shape,
		ScanIndex: NoIndex, VolumeIndex: NoIndex, SegmentIndexBuffer: NoIndex})
}

// finishPrior loads the records before a boundary marker when they are
// wanted.
func (p *FormatPlanner) finishPrior(plan *FormatPlan, blockSample, sample int64) {
	if p.linesActive || !p.cfg.StripInactive {
		p.activeSample = p.load(plan, blockSample, p.activeSample, sample)
	}
}

// load plans the copy of samples [start, end) of the block into the
// current segment and returns end.
func (p *FormatPlanner) load(plan *FormatPlan, blockSample, start, end int64) int64 {
	count := end - start
	if p.segmentAccepted && count > 0 && p.segmentPosition < p.shape[0] {
		rps := int64(p.shape[1])
		need := rps
		if p.segmentReversed {
			// vortex means to truncate (or grow) a reversed segment that
			// would underflow, but its check compares an unsigned
			// difference with zero and never fires; we do what it means,
			// since the alternative writes before the segment.
			if p.recordPosition-count < 0 {
				if p.cfg.AdaptShape {
					need += count - p.recordPosition
					p.recordPosition = count
				} else {
					count = p.recordPosition
				}
			}
			// A record_count_hint above the shape starts past the end.
			if p.cfg.AdaptShape && p.recordPosition > need {
				need = p.recordPosition
			}
		} else if p.recordPosition+count > rps {
			if p.cfg.AdaptShape {
				need = p.recordPosition + count
			} else {
				count = rps - p.recordPosition
			}
		}
		if need > rps {
			p.shape[1] = int(need)
			p.resize(plan)
			rps = need
		}
		if count > 0 {
			a := Action{Kind: Copy, Count: int(count), BlockOffset: int(start - blockSample),
				BufferSegment: p.segmentPosition, Reverse: p.segmentReversed,
				ScanIndex: NoIndex, VolumeIndex: NoIndex, SegmentIndexBuffer: NoIndex}
			if p.segmentReversed {
				lo, hi := p.recordPosition-count, p.recordPosition
				// Drop the records a too-large hint puts past the segment:
				// they are the first ones loaded (block order runs from the
				// segment's end).
				if skip := hi - rps; skip > 0 {
					a.BlockOffset += int(min(skip, count))
					a.Count -= int(min(skip, count))
				}
				a.BufferRecord = int(lo)
			} else {
				a.BufferRecord = int(p.recordPosition)
			}
			if a.Count > 0 {
				plan.Actions = append(plan.Actions, a)
			}
		}
	}
	if p.segmentReversed {
		p.recordPosition -= count
	} else {
		p.recordPosition += count
	}
	return end
}

func (p *FormatPlanner) finishScan(plan *FormatPlan, index int64) {
	plan.Actions = append(plan.Actions, Action{Kind: FinishScan, Sample: p.activeSample, ScanIndex: index,
		VolumeIndex: NoIndex, SegmentIndexBuffer: NoIndex})
}

func (p *FormatPlanner) finishVolume(plan *FormatPlan, index int64) {
	plan.Actions = append(plan.Actions, Action{Kind: FinishVolume, Sample: p.activeSample, ScanIndex: p.lastScan,
		VolumeIndex: index, SegmentIndexBuffer: NoIndex})
}

func (p *FormatPlanner) finishSegment(plan *FormatPlan, index int64) {
	plan.Actions = append(plan.Actions, Action{Kind: FinishSegment, Sample: p.activeSample, ScanIndex: p.lastScan,
		VolumeIndex: p.lastVolume, SegmentIndexBuffer: index})
}
