package pyapi

// The binding of python/vortexgo/scan.py (vortex's bind/scan.cpp): scan
// configs and patterns, warps, scans and the scan queue of gosrc/scan.
// Configs cross as one JSON record of the core struct's fields (absent
// keys keep vortex's defaults), segments as JSON of wireSegment, markers
// as the int64 rows of python/vortexgo/marker.py's _to_records, arrays in
// the caller's buffers.

import (
	"encoding/json"
	"fmt"
	"math"
	"sync"

	"github.com/vortexgo/vortexgo/gosrc/hostmem"
	"github.com/vortexgo/vortexgo/gosrc/marker"
	"github.com/vortexgo/vortexgo/gosrc/scan"
)

// ---------------------------------------------------------------- records

// decodeScan reads record (when not empty) over v's defaults. A
// FreeformScanConfig's Pattern crosses as wire segments.
func decodeScan(what, record string, v any) error {
	if record == "" {
		return nil
	}
	f, ok := v.(*scan.FreeformScanConfig)
	if !ok {
		return decodeRecord(what, record, v)
	}
	w := struct {
		*scan.FreeformScanConfig
		Pattern []wireSegment
	}{FreeformScanConfig: f}
	if err := decodeRecord(what, record, &w); err != nil || w.Pattern == nil {
		return err
	}
	segs, err := fromWire(what+".pattern", w.Pattern)
	f.Pattern = segs
	return err
}

// encodeScan is decodeScan's inverse: the record with every field.
func encodeScan(v any) (string, error) {
	if f, ok := v.(*scan.FreeformScanConfig); ok {
		v = struct {
			*scan.FreeformScanConfig
			Pattern []wireSegment
		}{f, toWire(f.Pattern)}
	}
	b, err := json.Marshal(v)
	return string(b), tag(err)
}

// markerRow is a marker as marker.py's record row: kind, sample, sequence,
// index, count_hint, id, flags, reversed (id and flags as their bits).
type markerRow [8]int64

func toRows(ms []marker.Marker) []markerRow {
	out := make([]markerRow, len(ms))
	for i, m := range ms {
		rev := int64(0)
		if m.Reversed {
			rev = 1
		}
		out[i] = markerRow{int64(m.Kind), m.Sample, m.Sequence, m.Index, int64(m.CountHint), int64(m.ID), int64(m.Flags), rev}
	}
	return out
}

func fromRows(what string, rows []markerRow) ([]marker.Marker, error) {
	out := make([]marker.Marker, len(rows))
	for i, r := range rows {
		if r[0] < int64(marker.ScanBoundary) || r[0] > int64(marker.Event) || r[4] < 0 || r[4] > math.MaxInt32 {
			return nil, badArg("%s[%d]: marker row %v, expected kind 1..6 and count_hint >= 0", what, i, r)
		}
		out[i] = marker.Marker{Kind: marker.Kind(r[0]), Sample: r[1], Sequence: r[2], Index: r[3], CountHint: int(r[4]),
			ID: uint64(r[5]), Flags: marker.Flags(r[6]), Reversed: r[7] != 0}
	}
	return out, nil
}

// putRows writes the markers' rows into the caller's n int64s at dst when
// they fit, and returns their length in int64s either way.
func putRows(dst, n int, ms []marker.Marker) int {
	if k := len(ms) * len(markerRow{}); k > n {
		return k
	}
	out, _ := hostmem.Span[markerRow](dst, len(ms)) // dst 0 with markers writes nothing
	copy(out, toRows(ms))
	return len(ms) * len(markerRow{})
}

// wireSegment is a scan.Segment as it crosses to Python.
type wireSegment struct {
	Position              []float64
	Channels              int
	EntryDelta, ExitDelta []float64
	Markers               []markerRow
}

func toWire(segs []scan.Segment) []wireSegment {
	out := make([]wireSegment, len(segs))
	for i, s := range segs {
		out[i] = wireSegment{s.Position, s.Channels, s.EntryDelta, s.ExitDelta, toRows(s.Markers)}
	}
	return out
}

func fromWire(what string, ws []wireSegment) ([]scan.Segment, error) {
	out := make([]scan.Segment, len(ws))
	for i, w := range ws {
		name := fmt.Sprintf("%s[%d]", what, i)
		seg, err := scan.NewSegment(name, w.Position, w.Channels, w.EntryDelta, w.ExitDelta, nil)
		if err != nil {
			return nil, err
		}
		if seg.Markers, err = fromRows(name+".markers", w.Markers); err != nil {
			return nil, err
		}
		out[i] = seg
	}
	return out, nil
}

// segments is segs as JSON of wireSegment.
func segments(segs []scan.Segment, err error) (string, error) {
	if err != nil {
		return "", tag(err)
	}
	b, err := json.Marshal(toWire(segs))
	return string(b), tag(err)
}

// ---------------------------------------------------------------- configs

// ScanConfig is a scan config (RasterScanConfig ... FreeformScanConfig)
// on its own: vortex's config methods. The setters that a kind lacks
// refuse (ValueError).
type ScanConfig struct {
	kind string
	c    interface {
		Validate() error
		ToSegments() ([]scan.Segment, error)
	} // a pointer to the core config
}

func newScanConfig[C any](kind, record string, def func() C) (*ScanConfig, error) {
	c := def()
	p := any(&c).(interface {
		Validate() error
		ToSegments() ([]scan.Segment, error)
	})
	return tagged(&ScanConfig{kind: kind, c: p}, decodeScan(kind, record, &c))
}

// NewRasterScanConfig is a RasterScanConfig from its JSON record.
func NewRasterScanConfig(record string) (*ScanConfig, error) {
	return newScanConfig("RasterScanConfig", record, scan.NewRasterScanConfig)
}

// NewRepeatedRasterScanConfig is a RepeatedRasterScanConfig from its JSON record.
func NewRepeatedRasterScanConfig(record string) (*ScanConfig, error) {
	return newScanConfig("RepeatedRasterScanConfig", record, scan.NewRepeatedRasterScanConfig)
}

// NewRadialScanConfig is a RadialScanConfig from its JSON record.
func NewRadialScanConfig(record string) (*ScanConfig, error) {
	return newScanConfig("RadialScanConfig", record, scan.NewRadialScanConfig)
}

// NewRepeatedRadialScanConfig is a RepeatedRadialScanConfig from its JSON record.
func NewRepeatedRadialScanConfig(record string) (*ScanConfig, error) {
	return newScanConfig("RepeatedRadialScanConfig", record, scan.NewRepeatedRadialScanConfig)
}

// NewSpiralScanConfig is a SpiralScanConfig from its JSON record.
func NewSpiralScanConfig(record string) (*ScanConfig, error) {
	return newScanConfig("SpiralScanConfig", record, scan.NewSpiralScanConfig)
}

// NewFreeformScanConfig is a FreeformScanConfig from its JSON record.
func NewFreeformScanConfig(record string) (*ScanConfig, error) {
	return newScanConfig("FreeformScanConfig", record, scan.NewFreeformScanConfig)
}

// Validate checks every field (ValueError naming the first bad one).
func (c *ScanConfig) Validate() error { return tag(c.c.Validate()) }

// JSON is the config's record with every field.
func (c *ScanConfig) JSON() (string, error) { return encodeScan(c.c) }

// ToSegments is the pattern's active segments (JSON).
func (c *ScanConfig) ToSegments() (string, error) { return segments(c.c.ToSegments()) }

// ToWaypoints validates, then writes the (segments_per_volume,
// samples_per_segment, 2) waypoints into the caller's n float64s at dst
// when they fit; it returns their length either way.
func (c *ScanConfig) ToWaypoints(dst, n int) (int, error) {
	w, ok := c.c.(interface{ ToWaypoints() scan.Waypoints })
	if !ok {
		return 0, c.noOp("to_waypoints")
	}
	if err := c.c.Validate(); err != nil {
		return 0, tag(err)
	}
	return hostmem.Record(dst, n, w.ToWaypoints().Data...), nil
}

type spiralSetters interface {
	SetIsotropic(int)
	SetHybrid(int)
}

type radialSetters interface {
	SetEvenlySpaced(int)
	SetHalfEvenlySpaced(int)
	SetAiming()
}

// SetIsotropic is a spiral config's set_isotropic(samples_per_second).
func (c *ScanConfig) SetIsotropic(samplesPerSecond int) error {
	s, ok := c.c.(spiralSetters)
	if !ok {
		return c.noOp("set_isotropic")
	}
	s.SetIsotropic(samplesPerSecond)
	return nil
}

// SetHybrid is a spiral config's set_hybrid(samples_per_second).
func (c *ScanConfig) SetHybrid(samplesPerSecond int) error {
	s, ok := c.c.(spiralSetters)
	if !ok {
		return c.noOp("set_hybrid")
	}
	s.SetHybrid(samplesPerSecond)
	return nil
}

// SetEvenlySpaced is a radial config's set_evenly_spaced(n).
func (c *ScanConfig) SetEvenlySpaced(n int) error {
	r, ok := c.c.(radialSetters)
	if !ok {
		return c.noOp("set_evenly_spaced")
	}
	r.SetEvenlySpaced(n)
	return nil
}

// SetHalfEvenlySpaced is a radial config's set_half_evenly_spaced(n).
func (c *ScanConfig) SetHalfEvenlySpaced(n int) error {
	r, ok := c.c.(radialSetters)
	if !ok {
		return c.noOp("set_half_evenly_spaced")
	}
	r.SetHalfEvenlySpaced(n)
	return nil
}

// SetAiming is a radial config's set_aiming().
func (c *ScanConfig) SetAiming() error {
	r, ok := c.c.(radialSetters)
	if !ok {
		return c.noOp("set_aiming")
	}
	r.SetAiming()
	return nil
}

func (c *ScanConfig) noOp(op string) error {
	return tag(badArg("%s: operation %q, expected one of its documented operations", c.kind, op))
}

// ScanPattern is a SequentialPattern or RepeatedPattern.
type ScanPattern struct {
	p interface {
		ToPattern(waypoints [][]float64, channels int) ([]scan.Segment, error)
	} // a pointer to the core pattern
}

// NewSequentialPattern is a SequentialPattern from its JSON record.
func NewSequentialPattern(record string) (*ScanPattern, error) {
	p := scan.NewSequentialPattern()
	return tagged(&ScanPattern{&p}, decodeScan("SequentialPattern", record, &p))
}

// NewRepeatedPattern is a RepeatedPattern from its JSON record.
func NewRepeatedPattern(record string) (*ScanPattern, error) {
	p := scan.NewRepeatedPattern()
	return tagged(&ScanPattern{&p}, decodeScan("RepeatedPattern", record, &p))
}

// JSON is the pattern's record with every field.
func (p *ScanPattern) JSON() (string, error) { return encodeScan(p.p) }

// ToPattern is the segments (JSON) of one volume's waypoints: the caller's
// n float64s at values, segment i's (samples, channels) positions after
// segment i-1's, of lens[i] values (segments int64s at lens).
func (p *ScanPattern) ToPattern(values, n, lens, nlens, channels int) (string, error) {
	vals, err := hostmem.Span[float64](values, n)
	if err != nil {
		return "", tag(err)
	}
	ls, err := hostmem.Span[int64](lens, nlens)
	if err != nil {
		return "", tag(err)
	}
	wps := make([][]float64, len(ls))
	for i, l := range ls {
		if l < 0 || l > int64(len(vals)) {
			return "", tag(badArg("to_pattern: waypoints[%d] of %d values, past the %d values given", i, l, n))
		}
		wps[i], vals = vals[:l:l], vals[l:]
	}
	if len(vals) != 0 {
		return "", tag(badArg("to_pattern: %d values past the waypoints' lengths", len(vals)))
	}
	return segments(p.p.ToPattern(wps, channels))
}

// ScanWarp is a scan.Warp: vortex's forward and inverse.
type ScanWarp struct{ w scan.Warp }

// NewScanWarp is the warp of kind (scan.WarpKind) with its parameters,
// validated.
func NewScanWarp(kind int, factor, galvoLensSpacing, scale float64) (*ScanWarp, error) {
	w := scan.Warp{Kind: scan.WarpKind(kind), Factor: factor, GalvoLensSpacing: galvoLensSpacing, Scale: scale}
	if kind < 0 || kind > math.MaxUint8 {
		w.Kind = math.MaxUint8 // an unknown kind, which Validate names
	}
	return tagged(&ScanWarp{w}, w.Validate("warp"))
}

// Forward maps the caller's n float64s at ptr from galvo to sample
// coordinates, in place.
func (w *ScanWarp) Forward(ptr, n int) error {
	vals, err := hostmem.Span[float64](ptr, n)
	w.w.Forward(vals, vals)
	return tag(err)
}

// Inverse maps the caller's n float64s at ptr from sample to galvo
// coordinates, in place.
func (w *ScanWarp) Inverse(ptr, n int) error {
	vals, err := hostmem.Span[float64](ptr, n)
	w.w.Inverse(vals, vals)
	return tag(err)
}

// ---------------------------------------------------------------- scans

// scanOf is a scan of config type C with what its binding needs of C.
type scanOf[C scan.Config[C]] struct {
	scan.Scan[C]
	kind string // the class name ("RasterScan"), for messages
	def  func() C
}

func (s *scanOf[C]) config(record string) (C, error) {
	cfg := s.def()
	return cfg, decodeScan(s.kind+"Config", record, &cfg)
}

func (s *scanOf[C]) initialize(record string) error {
	cfg, err := s.config(record)
	if err != nil {
		return err
	}
	return s.Initialize(cfg)
}

func (s *scanOf[C]) change(record string, restart bool, eventID uint64) error {
	cfg, err := s.config(record)
	if err != nil {
		return err
	}
	return s.Change(cfg, restart, eventID)
}

func (s *scanOf[C]) configJSON() (string, error) {
	cfg := s.Config()
	return encodeScan(&cfg)
}

// anyScan is a scanOf of any config type.
type anyScan interface {
	scan.Streamer
	Restart() error
	Prepare() error
	PrepareCount(count int) error
	ScanBuffer() ([]float64, error)
	ScanMarkers() ([]marker.Marker, error)
	ScanSegments() []scan.Segment
	initialize(record string) error
	change(record string, restart bool, eventID uint64) error
	configJSON() (string, error)
}

// Scan is a segmented scan (RasterScan ... FreeformScan), uninitialized
// when made.
type Scan struct {
	kind string
	s    anyScan

	mu      sync.Mutex // guards markers
	markers []marker.Marker
}

func newScan[C scan.Config[C]](kind string, def func() C) *Scan {
	return &Scan{kind: kind, s: &scanOf[C]{kind: kind, def: def}}
}

// NewRasterScan is a RasterScan.
func NewRasterScan() *Scan { return newScan("RasterScan", scan.NewRasterScanConfig) }

// NewRepeatedRasterScan is a RepeatedRasterScan.
func NewRepeatedRasterScan() *Scan {
	return newScan("RepeatedRasterScan", scan.NewRepeatedRasterScanConfig)
}

// NewRadialScan is a RadialScan.
func NewRadialScan() *Scan { return newScan("RadialScan", scan.NewRadialScanConfig) }

// NewRepeatedRadialScan is a RepeatedRadialScan.
func NewRepeatedRadialScan() *Scan {
	return newScan("RepeatedRadialScan", scan.NewRepeatedRadialScanConfig)
}

// NewSpiralScan is a SpiralScan.
func NewSpiralScan() *Scan { return newScan("SpiralScan", scan.NewSpiralScanConfig) }

// NewFreeformScan is a FreeformScan.
func NewFreeformScan() *Scan { return newScan("FreeformScan", scan.NewFreeformScanConfig) }

// Initialize validates the config record and restarts the scan on it.
func (s *Scan) Initialize(config string) error { return tag(s.s.initialize(config)) }

// Change switches to the config record without a discontinuity, an Event
// marker of eventID (vortex's uint64, as its bits) marking where.
func (s *Scan) Change(config string, restart bool, eventID int64) error {
	return tag(s.s.change(config, restart, uint64(eventID)))
}

// Config is the active config's record.
func (s *Scan) Config() (string, error) { return s.s.configJSON() }

// Restart starts again at sample 0 from the origin at rest.
func (s *Scan) Restart() error { return tag(s.s.Restart()) }

// RestartAt continues from sample in the state of the caller's npos and nvel
// float64s at position and velocity.
func (s *Scan) RestartAt(sample int64, position, npos, velocity, nvel int, includeStart bool) error {
	p, err := hostmem.CopyIn[float64](position, npos)
	if err != nil {
		return tag(err)
	}
	v, err := hostmem.CopyIn[float64](velocity, nvel)
	if err != nil {
		return tag(err)
	}
	return tag(s.s.RestartAt(sample, p, v, includeStart))
}

// Prepare buffers the whole pass.
func (s *Scan) Prepare() error { return tag(s.s.Prepare()) }

// PrepareCount buffers count samples ahead.
func (s *Scan) PrepareCount(count int) error { return tag(s.s.PrepareCount(count)) }

// Next writes the next count samples into the caller's n float64s at dst
// and returns how many it wrote; their markers wait for Markers.
func (s *Scan) Next(dst, n, count int) (int, error) {
	buf, err := hostmem.Span[float64](dst, n)
	if err != nil {
		return 0, tag(err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.markers = s.markers[:0]
	return tagged(s.s.Next(&s.markers, buf, count))
}

// Markers writes the last Next's markers as rows into the caller's n
// int64s at dst when they fit, and returns their length either way.
func (s *Scan) Markers(dst, n int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return putRows(dst, n, s.markers)
}

// Channels is channels_per_sample (0 before Initialize).
func (s *Scan) Channels() int { return s.s.Channels() }

// ScanBuffer writes one pass, (samples, Channels()), into the caller's n
// float64s at dst when it fits, and returns its length either way.
func (s *Scan) ScanBuffer(dst, n int) (int, error) {
	buf, err := s.s.ScanBuffer()
	if err != nil {
		return 0, tag(err)
	}
	return hostmem.Record(dst, n, buf...), nil
}

// ScanMarkers writes one pass's markers as rows into the caller's n int64s
// at dst when they fit, and returns their length either way.
func (s *Scan) ScanMarkers(dst, n int) (int, error) {
	ms, err := s.s.ScanMarkers()
	if err != nil {
		return 0, tag(err)
	}
	return putRows(dst, n, ms), nil
}

// ScanSegments is the pattern's active segments (JSON).
func (s *Scan) ScanSegments() (string, error) { return segments(s.s.ScanSegments(), nil) }

// ---------------------------------------------------------------- queue

// maxPendingEvents bounds the queue events waiting for Python to collect
// them (an engine playing a queue no one polls drops the oldest).
const maxPendingEvents = 1 << 12

// ScanQueue is a scan.ScanQueue whose callbacks are tokens: the Go queue
// calls them with its lock held, possibly on the engine's goroutine, where
// a Python callback must never run (DESIGN.md 1), so each call is recorded
// as (token, sample, event) for Events; Python runs its callbacks after
// the call returns. It embeds Object so that the engine's wiring
// (EngineConfig.Link, Engine.SetScanQueue) takes it.
type ScanQueue struct {
	Object
	q *scan.ScanQueue

	mu     sync.Mutex // guards events: recorded under the queue's lock, drained by Events
	events [][3]int64

	gen     sync.Mutex // guards the last Generate's markers and scan samples
	markers []marker.Marker
	scanned int
}

// queueOf is what the engine's wiring takes of a ScanQueue.
type queueOf struct{ q *scan.ScanQueue }

// Queue is the core queue the engine's Generate stage plays.
func (o queueOf) Queue() *scan.ScanQueue { return o.q }

func wrapQueue(q *scan.ScanQueue) *ScanQueue {
	return &ScanQueue{Object: Object{obj: queueOf{q}}, q: q}
}

// NewScanQueue is vortex's ScanQueue(): at sample 0, state unknown.
func NewScanQueue() *ScanQueue { return wrapQueue(scan.NewScanQueue()) }

// NewScanQueueAt is vortex's ScanQueue(sample, position, velocity), from
// the caller's npos and nvel float64s at position and velocity.
func NewScanQueueAt(sample int64, position, npos, velocity, nvel int) (*ScanQueue, error) {
	p, err := hostmem.CopyIn[float64](position, npos)
	if err != nil {
		return nil, tag(err)
	}
	v, err := hostmem.CopyIn[float64](velocity, nvel)
	if err != nil {
		return nil, tag(err)
	}
	q, err := scan.NewScanQueueAt(sample, p, v)
	if err != nil {
		return nil, tag(err)
	}
	return wrapQueue(q), nil
}

func (q *ScanQueue) callback(token int) scan.QueueCallback {
	if token == 0 {
		return nil
	}
	return func(sample int64, e scan.QueueEvent) {
		q.mu.Lock()
		defer q.mu.Unlock()
		if len(q.events) >= maxPendingEvents {
			q.events = q.events[1:]
		}
		q.events = append(q.events, [3]int64{int64(token), sample, int64(e)})
	}
}

// boundary is the ScanBoundary of the caller's n int64s at row (n 0: the
// default one).
func boundary(op string, row, n int) (marker.Marker, error) {
	if n == 0 {
		return scan.ScanBoundary(), nil
	}
	r, err := hostmem.Span[markerRow](row, n/len(markerRow{}))
	if err != nil || len(r) != 1 {
		return marker.Marker{}, badArg("ScanQueue.%s.marker: %d values, expected one marker row of %d (%v)", op, n, len(markerRow{}), err)
	}
	ms, err := fromRows("ScanQueue."+op+".marker", r)
	if err != nil {
		return marker.Marker{}, err
	}
	if ms[0].Kind != marker.ScanBoundary {
		return marker.Marker{}, badArg("ScanQueue.%s.marker: %v, expected a ScanBoundary", op, ms[0])
	}
	return ms[0], nil
}

func (q *ScanQueue) add(op string, s *Scan, token, row, n int) error {
	if s == nil {
		return tag(badArg("ScanQueue.%s: scan None, expected a scan (RasterScan ... FreeformScan)", op))
	}
	m, err := boundary(op, row, n)
	if err != nil {
		return tag(err)
	}
	if op == "append" {
		err = q.q.Append(s.s, q.callback(token), m)
	} else {
		err = q.q.Interrupt(s.s, q.callback(token), m)
	}
	if err != nil {
		return tag(fmt.Errorf("ScanQueue.%s(%s): %w", op, s.kind, err))
	}
	return nil
}

// Append queues scan after the others; its events carry token (0: none);
// the n int64s at marker are the ScanBoundary row it starts with (n 0:
// the default).
func (q *ScanQueue) Append(s *Scan, token, marker, n int) error {
	return q.add("append", s, token, marker, n)
}

// Interrupt drops the active and queued scans and queues scan (see Append).
func (q *ScanQueue) Interrupt(s *Scan, token, marker, n int) error {
	return q.add("interrupt", s, token, marker, n)
}

// Generate fills the caller's n float64s at dst, rows of channels values,
// from the queued scans, and returns the samples written; ScanSamples and
// Markers then say how many came from scans and their markers.
func (q *ScanQueue) Generate(dst, n, channels int, zeroOrderHold bool) (int, error) {
	buf, err := hostmem.Span[float64](dst, n)
	if err != nil {
		return 0, tag(err)
	}
	q.gen.Lock()
	defer q.gen.Unlock()
	q.markers, q.scanned = q.markers[:0], 0
	rows := 0
	if channels > 0 {
		rows = n / channels
	}
	scanned, released, err := q.q.Generate(&q.markers, buf, channels, rows, zeroOrderHold)
	if err != nil {
		return 0, tag(err)
	}
	q.scanned = scanned
	return released, nil
}

// ScanSamples is how many samples of the last Generate came from scans.
func (q *ScanQueue) ScanSamples() int {
	q.gen.Lock()
	defer q.gen.Unlock()
	return q.scanned
}

// Markers writes the last Generate's markers as rows into the caller's n
// int64s at dst when they fit, and returns their length either way.
func (q *ScanQueue) Markers(dst, n int) int {
	q.gen.Lock()
	defer q.gen.Unlock()
	return putRows(dst, n, q.markers)
}

// Reset clears the queue and restarts it at sample 0, state unknown.
func (q *ScanQueue) Reset() { q.q.Reset() }

// ResetAt clears the queue and restarts it at sample in the state of the
// caller's npos and nvel float64s at position and velocity.
func (q *ScanQueue) ResetAt(sample int64, position, npos, velocity, nvel int) error {
	p, err := hostmem.CopyIn[float64](position, npos)
	if err != nil {
		return tag(err)
	}
	v, err := hostmem.CopyIn[float64](velocity, nvel)
	if err != nil {
		return tag(err)
	}
	return tag(q.q.ResetAt(sample, p, v))
}

// Clear drops the active and queued scans.
func (q *ScanQueue) Clear() { q.q.Clear() }

// Rebase moves the queue's sample counter.
func (q *ScanQueue) Rebase(sample int64) error { return tag(q.q.Rebase(sample)) }

// SetEmptyWanted says whether an engine playing the queue waits for the
// empty callback.
func (q *ScanQueue) SetEmptyWanted(on bool) { q.q.SetEmptyWanted(on) }

// Sample is the queue's sample count (State's).
func (q *ScanQueue) Sample() int64 {
	s, _, _ := q.q.State()
	return s
}

// Position writes the last position into the caller's n float64s at dst
// when it fits, and returns its length either way; -1 when unknown.
func (q *ScanQueue) Position(dst, n int) int {
	_, p, _ := q.q.State()
	return known(dst, n, p)
}

// Velocity is Position's velocity.
func (q *ScanQueue) Velocity(dst, n int) int {
	_, _, v := q.q.State()
	return known(dst, n, v)
}

func known(dst, n int, vals []float64) int {
	if vals == nil {
		return -1
	}
	return hostmem.Record(dst, n, vals...)
}

// Events moves the oldest recorded callback events, (token, sample, event)
// each, into the caller's n int64s at dst, and returns how many int64s it
// moved: fewer than n when none (of those asked for) are left.
//
// all false is a caller's take after its own call (Append, Interrupt,
// Clear, Reset, State): it moves the events up to the last Interrupt or
// Abort, which only callers' calls record, and leaves the Start and Finish
// that an engine's Generate recorded after them to the engine's
// dispatcher, which polls with all true when Generate's count moves. So
// the scans' callbacks fire on the threads vortex fires them on: Interrupt
// and Abort on the caller's, Start and Finish on the engine's, whichever
// takes the lock first.
func (q *ScanQueue) Events(dst, n int, all bool) int {
	q.mu.Lock()
	defer q.mu.Unlock()
	pending := len(q.events)
	if !all {
		pending = 0
		for i, e := range q.events {
			if ev := scan.QueueEvent(e[2]); ev == scan.QueueInterrupt || ev == scan.QueueAbort {
				pending = i + 1
			}
		}
	}
	k := min(pending, n/3)
	out, _ := hostmem.Span[[3]int64](dst, k) // dst 0 with events moves nothing
	k = copy(out, q.events[:k])
	q.events = q.events[k:]
	if len(q.events) == 0 {
		q.events = nil
	}
	return 3 * k
}
