package scan

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"sync"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/marker"
	"github.com/vortexgo/vortexgo/gosrc/motion"
)

// ErrNotInitialized is returned (wrapped, with ErrInvalid) by a scan used
// before Initialize.
var ErrNotInitialized = errors.New("scan not initialized")

type stateKind uint8

const (
	// postScan: nothing left to buffer (the zero state, as vortex's).
	postScan stateKind = iota
	// preScan: plan from pos/vel into segment index.
	preScan
	// preSegment: buffer segment index (after an inactive path when inactive).
	preSegment
	// postSegment: buffer the inactive path after segment index.
	postSegment
)

// state is vortex's segmented_scan_t::state_t, one struct for its four
// alternatives.
type state struct {
	kind         stateKind
	index        int
	pos, vel     []float64
	includeStart bool
	inactive     bool
}

// SegmentedScan streams a list of active segments joined by inactive paths,
// vortex's segmented_scan_t. The scan types embed it; it is built and
// changed through them.
//
// Samples go out in two parts, as vortex's do: the stream holds ephemeral
// samples (the path in from a restart or change, and the rest of an
// interrupted scan), played once; the scan buffer holds one whole pass of
// the pattern, played after the stream and again on every loop. Both are
// flat row-major arrays; marker samples count from the stream's start
// (Restart's sample).
type SegmentedScan struct {
	// mu serialises Next (the engine's Generate goroutine) with Change,
	// Restart and Prepare (the user's): uncontended on the hot path.
	mu sync.Mutex

	cfg         SegmentedConfig
	ch          int
	initialized bool

	segments []Segment
	post     [][]float64 // inactive path after each segment
	planned  []bool      // post[i] computed

	st          state
	interrupted bool // new samples go to the stream, not the scan buffer
	hasEvent    bool // a change event is still to be emitted
	eventID     uint64

	stream, scan               []float64
	streamMarkers, scanMarkers []marker.Marker

	base   int64 // sample of the stream's first row (of the scan's when the stream is empty)
	active int64 // next sample Next releases

	scansCompleted int64

	lastPos, lastPrev []float64 // the last two released samples
	lastN             int       // how many of them are valid (0..2)
}

func notInitialized() error {
	return fmt.Errorf("scan: call initialize(config) first: %w: %w", ErrNotInitialized, backend.ErrInvalid)
}

func (s *SegmentedScan) rows(b []float64) int64 { return int64(len(b) / s.ch) }

func (s *SegmentedScan) scanInitial() int64    { return s.base + s.rows(s.stream) }
func (s *SegmentedScan) nextUnbuffered() int64 { return s.scanInitial() + s.rows(s.scan) }

// fullyBuffered reports whether the scan buffer holds the whole pass (or,
// without loop, nothing is left to buffer).
func (s *SegmentedScan) fullyBuffered() bool {
	return (!s.interrupted || !s.cfg.Loop) && s.st.kind == postScan
}

// initialize replaces the config and segments (validated by the caller)
// and restarts at the origin at rest.
func (s *SegmentedScan) initialize(cfg SegmentedConfig, segments []Segment) error {
	s.cfg = cfg
	s.ch = cfg.ChannelsPerSample
	s.lastPos, s.lastPrev = make([]float64, s.ch), make([]float64, s.ch)
	s.initialized = true
	zero := make([]float64, s.ch)
	s.restart(0, zero, zero, true)
	return s.changeSegments(segments, false, false, 0)
}

// Restart is vortex's restart(): the scan starts again at sample 0 from
// the origin at rest, entering the pattern through an inactive path.
func (s *SegmentedScan) Restart() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.initialized {
		return notInitialized()
	}
	zero := make([]float64, s.ch)
	s.restart(0, zero, zero, true)
	return nil
}

// RestartAt is vortex's restart(sample, position, velocity, include_start):
// the scan continues at sample from that state (emitting the state's own
// sample first when includeStart).
func (s *SegmentedScan) RestartAt(sample int64, position, velocity []float64, includeStart bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.initialized {
		return notInitialized()
	}
	if len(position) != s.ch || len(velocity) != s.ch {
		return backend.Invalidf("restart: position and velocity have %d and %d values, expected channels_per_sample (%d)", len(position), len(velocity), s.ch)
	}
	s.restart(sample, append([]float64(nil), position...), append([]float64(nil), velocity...), includeStart)
	return nil
}

func (s *SegmentedScan) restart(sample int64, pos, vel []float64, includeStart bool) {
	s.st = state{kind: preScan, pos: pos, vel: vel, includeStart: includeStart}
	s.interrupted = true
	s.discardScan()
	s.stream, s.streamMarkers = s.stream[:0], s.streamMarkers[:0]
	s.base, s.active = sample, sample
	s.lastN = 0
}

func (s *SegmentedScan) discardScan() {
	s.scan, s.scanMarkers = s.scan[:0], s.scanMarkers[:0]
}

// Prepare buffers the whole pass of the pattern (vortex's prepare()), so
// that Next allocates nothing afterwards.
func (s *SegmentedScan) Prepare() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.initialized {
		return notInitialized()
	}
	return s.prepareAll()
}

// PrepareCount buffers at least count samples ahead of the next one
// (vortex's prepare(count)).
func (s *SegmentedScan) PrepareCount(count int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.initialized {
		return notInitialized()
	}
	if count < 0 {
		return backend.Invalidf("prepare: count %d, expected >= 0", count)
	}
	return s.prepareCount(int64(count))
}

func (s *SegmentedScan) prepareAll() error {
	for !s.fullyBuffered() {
		if err := s.step(); err != nil {
			return err
		}
	}
	return nil
}

func (s *SegmentedScan) prepareCount(count int64) error {
	for !s.fullyBuffered() && s.nextUnbuffered()-s.active < count {
		if err := s.step(); err != nil {
			return err
		}
	}
	return nil
}

// step buffers the next chunk: vortex's _prepare_next_chunk. On error the
// state is left where it was, so that a retry plans the same path again.
func (s *SegmentedScan) step() error {
	markers, buf := &s.scanMarkers, &s.scan
	if s.interrupted {
		markers, buf = &s.streamMarkers, &s.stream
	}
	sps := float64(s.cfg.SamplesPerSecond)
	st := s.st
	switch st.kind {
	case preScan:
		seg := &s.segments[st.index]
		pos, _ := seg.EntryPosition() // segments are validated: never fails
		vel, _ := seg.EntryVelocity(sps)
		if !s.cfg.InactivePolicy.compatible(st.pos, st.vel, pos, vel) {
			r, err := s.cfg.InactivePolicy.generate(false, s.cfg.SamplingInterval(),
				motion.State{Position: st.pos, Velocity: st.vel}, motion.State{Position: pos, Velocity: vel},
				s.cfg.Limits, motion.Options{IncludeInitial: st.includeStart, BypassLimitsCheck: s.cfg.BypassLimitsCheck})
			if err != nil {
				return fmt.Errorf("scan: planning the path into segment %d: %w", st.index, err)
			}
			if len(r) > 0 {
				s.streamMarkers = append(s.streamMarkers, marker.NewInactiveLines(s.scanInitial()))
				s.stream = append(s.stream, r...)
				// vortex puts the change event on the path's last sample,
				// after the InactiveLines marker.
				if s.hasEvent {
					s.streamMarkers = append(s.streamMarkers, marker.NewEvent(s.scanInitial()-1, s.eventID))
					s.hasEvent = false
				}
			}
		}
		// the interrupt ends once the change event is out, so that it is
		// not buffered into the looping scan and replayed
		if st.index == 0 && !s.hasEvent {
			s.interrupted = false
		}
		s.st = state{kind: preSegment, index: st.index, inactive: true}
	case preSegment:
		at := s.nextUnbuffered()
		if s.hasEvent {
			*markers = append(*markers, marker.NewEvent(at, s.eventID))
			s.hasEvent = false
		}
		for _, m := range s.segments[st.index].Markers {
			m.Sample += at
			*markers = append(*markers, m)
		}
		if st.inactive {
			*markers = append(*markers, marker.NewActiveLines(at))
		}
		*buf = append(*buf, s.segments[st.index].Position...)
		s.st = state{kind: postSegment, index: st.index}
	case postSegment:
		i := st.index
		next := -1
		if i+1 < len(s.segments) {
			next = i + 1
		} else if s.cfg.Loop {
			next = 0
		}
		inactive := false
		if next >= 0 {
			if !s.planned[i] {
				from, to := &s.segments[i], &s.segments[next]
				p0, _ := from.ExitPosition()
				v0, _ := from.ExitVelocity(sps)
				p1, _ := to.EntryPosition()
				v1, _ := to.EntryVelocity(sps)
				r, err := s.cfg.InactivePolicy.generate(true, s.cfg.SamplingInterval(),
					motion.State{Position: p0, Velocity: v0}, motion.State{Position: p1, Velocity: v1},
					s.cfg.Limits, motion.Options{BypassLimitsCheck: s.cfg.BypassLimitsCheck})
				if err != nil {
					return fmt.Errorf("scan: planning the path from segment %d to segment %d: %w", i, next, err)
				}
				s.post[i], s.planned[i] = r, true
			}
			if len(s.post[i]) > 0 {
				*markers = append(*markers, marker.NewInactiveLines(s.nextUnbuffered()))
				*buf = append(*buf, s.post[i]...)
				inactive = true
			}
		}
		switch {
		case next < 0:
			s.st = state{kind: postScan}
		case next == 0 && !s.interrupted:
			s.st = state{kind: postScan}
		default:
			if next == 0 {
				s.interrupted = false
			}
			s.st = state{kind: preSegment, index: next, inactive: inactive}
		}
	case postScan:
	}
	return nil
}

// Next fills buf with the next n samples (n rows of channels_per_sample
// values, row-major) and appends their markers to *markers, vortex's next.
// It returns the number of samples written: n, or fewer when a scan
// without loop has ended. After Prepare it allocates nothing (but for
// growing *markers when its capacity is short).
func (s *SegmentedScan) Next(markers *[]marker.Marker, buf []float64, n int) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.initialized {
		return 0, notInitialized()
	}
	if n < 0 || len(buf) < n*s.ch {
		return 0, backend.Invalidf("next: buffer of %d values for %d samples, expected at least %d (samples x channels_per_sample %d)", len(buf), n, max(n, 0)*s.ch, s.ch)
	}
	if err := s.prepareCount(int64(n)); err != nil {
		return 0, err
	}
	released, needed := 0, n
	if len(s.stream) > 0 {
		s.release(markers, buf, s.stream, s.streamMarkers, &released, &needed)
		// drop what has been played: the stream is ephemeral
		played := s.active + int64(released) - s.base
		if played > s.rows(s.stream) {
			played = s.rows(s.stream)
		}
		s.stream = s.stream[played*int64(s.ch):]
		s.base += played
		k := sort.Search(len(s.streamMarkers), func(j int) bool { return s.streamMarkers[j].Sample >= s.active+int64(released) })
		s.streamMarkers = s.streamMarkers[k:]
		if len(s.stream) == 0 {
			s.stream, s.streamMarkers = s.stream[:0:0], s.streamMarkers[:0:0]
		}
	}
	for needed > 0 && len(s.stream) == 0 {
		s.release(markers, buf, s.scan, s.scanMarkers, &released, &needed)
		if needed == 0 {
			break
		}
		size := s.rows(s.scan)
		if !s.cfg.Loop || size == 0 {
			break
		}
		s.scansCompleted++
		s.base += size
		for j := range s.scanMarkers {
			s.scanMarkers[j].Sample += size
		}
	}
	s.active += int64(released)
	s.recordLast(buf, released)
	return released, nil
}

// release copies from b (whose first row is sample s.base) the samples
// from s.active+released on, and the markers of those samples.
func (s *SegmentedScan) release(out *[]marker.Marker, buf, b []float64, ms []marker.Marker, released, needed *int) {
	from := s.active + int64(*released)
	idx := from - s.base
	if rows := s.rows(b); idx >= 0 && idx < rows && *needed > 0 {
		count := min(rows-idx, int64(*needed))
		copy(buf[*released*s.ch:], b[idx*int64(s.ch):(idx+count)*int64(s.ch)])
		*needed -= int(count)
		*released += int(count)
	}
	end := s.active + int64(*released)
	// markers are sorted by sample; a marker before s.active has gone out
	k := sort.Search(len(ms), func(j int) bool { return ms[j].Sample >= s.active })
	for ; k < len(ms) && ms[k].Sample < end; k++ {
		if ms[k].Sample >= from {
			*out = append(*out, ms[k])
		}
	}
}

func (s *SegmentedScan) recordLast(buf []float64, released int) {
	switch {
	case released >= 2:
		copy(s.lastPrev, buf[(released-2)*s.ch:(released-1)*s.ch])
		copy(s.lastPos, buf[(released-1)*s.ch:released*s.ch])
		s.lastN = 2
	case released == 1:
		s.lastPos, s.lastPrev = s.lastPrev, s.lastPos
		copy(s.lastPos, buf[:s.ch])
		s.lastN = min(s.lastN+1, 2)
	}
}

// Last is the last released position and its velocity (from the last two
// samples), vortex's last(); ok flags say which are known.
func (s *SegmentedScan) Last() (position, velocity []float64, posOK, velOK bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lastN >= 1 {
		position, posOK = append([]float64(nil), s.lastPos...), true
	}
	if s.lastN >= 2 {
		velocity, velOK = diffScaled(s.lastPos, s.lastPrev, float64(s.cfg.SamplesPerSecond)), true
	}
	return position, velocity, posOK, velOK
}

// LastInto is Last writing into pos and vel (each Channels() long) instead
// of new slices: the scan queue asks for it with every block it generates,
// and the Generate stage allocates nothing per block.
func (s *SegmentedScan) LastInto(pos, vel []float64) (posOK, velOK bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lastN >= 1 && len(pos) == len(s.lastPos) {
		copy(pos, s.lastPos)
		posOK = true
	}
	if s.lastN >= 2 && len(vel) == len(s.lastPos) {
		k := float64(s.cfg.SamplesPerSecond)
		for i := range vel {
			vel[i] = (s.lastPos[i] - s.lastPrev[i]) * k
		}
		velOK = true
	}
	return posOK, velOK
}

// ScanBuffer prepares the scan and returns a copy of one whole pass of the
// pattern (samples x channels, row-major), vortex's scan_buffer().
func (s *SegmentedScan) ScanBuffer() ([]float64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.initialized {
		return nil, notInitialized()
	}
	if err := s.prepareAll(); err != nil {
		return nil, err
	}
	if len(s.scan) == 0 {
		return nil, backend.Invalidf("scan_buffer: empty scan pattern")
	}
	return append([]float64(nil), s.scan...), nil
}

// ScanMarkers prepares the scan and returns the markers of one pass, their
// samples counted from the pass's first sample (vortex's scan_markers()).
func (s *SegmentedScan) ScanMarkers() ([]marker.Marker, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.initialized {
		return nil, notInitialized()
	}
	if err := s.prepareAll(); err != nil {
		return nil, err
	}
	out := append([]marker.Marker(nil), s.scanMarkers...)
	at := s.scanInitial()
	for i := range out {
		out[i].Sample -= at
	}
	return out, nil
}

// ScanSegments is a copy of the scan's active segments (vortex's scan_segments()).
func (s *SegmentedScan) ScanSegments() []Segment {
	s.mu.Lock()
	defer s.mu.Unlock()
	return copySegments(s.segments)
}

// Channels is channels_per_sample of the current config (0 before Initialize).
func (s *SegmentedScan) Channels() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ch
}

// ScansCompleted counts the passes Next has looped over.
func (s *SegmentedScan) ScansCompleted() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.scansCompleted
}

// change validates the channel count and switches to new segments (already
// validated against cfg) without a discontinuity.
func (s *SegmentedScan) change(cfg SegmentedConfig, segments []Segment, restart, withEvent bool, eventID uint64) error {
	if cfg.ChannelsPerSample != s.ch {
		return backend.Invalidf("change: channels_per_sample %d, expected %d (changing the number of channels is not permitted)", cfg.ChannelsPerSample, s.ch)
	}
	// the old segments' velocities are taken at the old rate
	oldSPS := float64(s.cfg.SamplesPerSecond)
	if err := s.locate(); err != nil {
		return err
	}
	s.cfg = cfg
	return s.mapState(segments, restart, withEvent, eventID, oldSPS)
}

// changeSegments is change without the checks, for initialize.
func (s *SegmentedScan) changeSegments(segments []Segment, restart, withEvent bool, eventID uint64) error {
	if err := s.locate(); err != nil {
		return err
	}
	return s.mapState(segments, restart, withEvent, eventID, float64(s.cfg.SamplesPerSecond))
}

// locate is the first half of vortex's _change_segments: it finds where in
// the pattern the scan is, keeps in the stream everything up to the next
// segment boundary ahead of the last released sample, and drops the rest
// of the scan buffer. It fails, changing nothing, when a scan without loop
// has finished.
func (s *SegmentedScan) locate() error {
	if s.st.kind != postScan {
		// still buffering: everything buffered plays, the change follows
		s.stream = append(s.stream, s.scan...)
		s.streamMarkers = append(s.streamMarkers, s.scanMarkers...)
		s.discardScan()
		return nil
	}
	sample := s.scanInitial()
	var next state
	switch {
	case sample > s.active:
		// still in the stream: the scan buffer starts at segment 0
		next = state{kind: preSegment, index: 0}
	default:
		found := false
		for i := range s.segments {
			sample += int64(s.segments[i].Len())
			if sample >= s.active {
				next, found = state{kind: postSegment, index: i}, true
				break
			}
			sample += s.rows(s.post[i])
			if sample > s.active {
				switch {
				case i+1 < len(s.segments):
					next = state{kind: preSegment, index: i + 1}
				case s.cfg.Loop:
					next = state{kind: preSegment, index: 0}
				default:
					return fmt.Errorf("change: the scan is complete and cannot be changed (loop is false): %w", backend.ErrInvalid)
				}
				found = true
				break
			}
		}
		if !found {
			if !s.cfg.Loop {
				return fmt.Errorf("change: the scan is complete and cannot be changed (loop is false): %w", backend.ErrInvalid)
			}
			// exactly at the end of a pass (vortex fails here): the next
			// pass starts with segment 0
			next = state{kind: preSegment, index: 0}
		}
		// keep what plays up to the boundary; vortex keeps it only when
		// the boundary is before the pass's end and so drops the rest of
		// the last inactive path (a jump; vortex 0.5.1 then hangs)
		if cut := sample - s.scanInitial(); cut > 0 {
			s.stream = append(s.stream, s.scan[:cut*int64(s.ch)]...)
			k := sort.Search(len(s.scanMarkers), func(j int) bool { return s.scanMarkers[j].Sample >= sample })
			s.streamMarkers = append(s.streamMarkers, s.scanMarkers[:k]...)
		}
	}
	s.st = next
	s.discardScan()
	return nil
}

// mapState is the second half of _change_segments: the scan continues from
// the located state into the new segments.
func (s *SegmentedScan) mapState(segments []Segment, restart, withEvent bool, eventID uint64, oldSPS float64) error {
	st := s.st
	switch st.kind {
	case preScan:
		if st.index >= len(segments) {
			st.index = 0
		}
	case preSegment:
		idx := st.index
		if restart || idx >= len(segments) {
			idx = 0
		}
		pos, _ := s.segments[st.index].EntryPosition()
		vel, _ := s.segments[st.index].EntryVelocity(oldSPS)
		st = state{kind: preScan, pos: pos, vel: vel, index: idx, includeStart: true}
	case postSegment:
		idx := st.index + 1
		if restart || idx >= len(segments) {
			idx = 0
		}
		pos, _ := s.segments[st.index].ExitPosition()
		vel, _ := s.segments[st.index].ExitVelocity(oldSPS)
		st = state{kind: preScan, pos: pos, vel: vel, index: idx}
	default:
		return fmt.Errorf("change: failed to determine the scan's state: %w", backend.ErrInvalid)
	}
	s.st = st
	s.segments = segments
	s.hasEvent, s.eventID = withEvent, eventID
	s.post = make([][]float64, len(segments))
	s.planned = make([]bool, len(segments))
	s.interrupted = true
	return nil
}

// validateSegments is vortex's _validate_segments: shapes, and unless
// bypass_limits_check, each active segment's position, velocity and
// acceleration (finite differences) within cfg.Limits.
func validateSegments(cfg *SegmentedConfig, segments []Segment) error {
	if len(segments) == 0 {
		return backend.Invalidf("scan: no segments, expected at least one")
	}
	ch := cfg.ChannelsPerSample
	total := int64(0)
	for i := range segments {
		s := &segments[i]
		if s.Channels != ch {
			return backend.Invalidf("segment %d: %d channels, expected channels_per_sample (%d)", i, s.Channels, ch)
		}
		if len(s.Position)%ch != 0 {
			return backend.Invalidf("segment %d: position has %d values, expected a multiple of %d channels", i, len(s.Position), ch)
		}
		n := s.Len()
		if n == 0 {
			return backend.Invalidf("segment %d: no samples (an empty position), expected at least one", i)
		}
		total += int64(len(s.Position))
		if total > maxScanElements {
			return fmt.Errorf("scan: more than %d values in its segments: %w", maxScanElements, backend.ErrTooLarge)
		}
		if s.EntryDelta != nil && len(s.EntryDelta) != ch {
			return backend.Invalidf("segment %d: entry_delta has %d values, expected %d", i, len(s.EntryDelta), ch)
		}
		if s.ExitDelta != nil && len(s.ExitDelta) != ch {
			return backend.Invalidf("segment %d: exit_delta has %d values, expected %d", i, len(s.ExitDelta), ch)
		}
		if n < 2 && (s.EntryDelta == nil || s.ExitDelta == nil) {
			return backend.Invalidf("segment %d: one sample and no entry_delta/exit_delta, cannot take its velocity", i)
		}
		for _, v := range s.Position {
			if !finite(v) {
				return backend.Invalidf("segment %d: position %v, expected finite values", i, v)
			}
		}
		if cfg.BypassLimitsCheck {
			continue
		}
		if err := checkLimits(cfg, i, s); err != nil {
			return err
		}
	}
	return nil
}

func checkLimits(cfg *SegmentedConfig, seg int, s *Segment) error {
	ch, n := s.Channels, s.Len()
	sps := float64(cfg.SamplesPerSecond)
	for d := range ch {
		l := cfg.Limits[d]
		lo, hi := math.Inf(1), math.Inf(-1)
		vIdx, vMax, aIdx, aMax := 0, 0.0, 0, 0.0
		for i := range n {
			p := s.Position[i*ch+d]
			lo, hi = math.Min(lo, p), math.Max(hi, p)
			if i >= 1 {
				if v := (p - s.Position[(i-1)*ch+d]) * sps; math.Abs(v) > math.Abs(vMax) {
					vIdx, vMax = i-1, v
				}
			}
			if i >= 2 {
				if a := (p - 2*s.Position[(i-1)*ch+d] + s.Position[(i-2)*ch+d]) * sps * sps; math.Abs(a) > math.Abs(aMax) {
					aIdx, aMax = i-2, a
				}
			}
		}
		if lo < l.Position.Min {
			return backend.Invalidf("axis %d violated lower position limit during segment %d: %v < %v (limits[%d].position)", d, seg, lo, l.Position.Min, d)
		}
		if hi > l.Position.Max {
			return backend.Invalidf("axis %d violated upper position limit during segment %d: %v > %v (limits[%d].position)", d, seg, hi, l.Position.Max, d)
		}
		if math.Abs(vMax) > l.Velocity {
			return backend.Invalidf("axis %d violated velocity limit during segment %d at sample %d: |%v| > %v (limits[%d].velocity)", d, seg, vIdx, vMax, l.Velocity, d)
		}
		if math.Abs(aMax) > l.Acceleration {
			return backend.Invalidf("axis %d violated acceleration limit during segment %d at sample %d: |%v| > %v (limits[%d].acceleration)", d, seg, aIdx, aMax, l.Acceleration, d)
		}
	}
	return nil
}
