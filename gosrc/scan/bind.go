package scan

import (
	"encoding/json"
	"fmt"
	"math"
	"sync"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/hostmem"
	"github.com/vortexgo/vortexgo/gosrc/marker"
)

// Bound is an object of this package driven by named operations, the form
// in which the Python binding (gosrc/pyapi's generic Object path) carries
// it: args and result are JSON records, with keys the Go field names; an
// array result goes into the caller's n elements at dst when it fits
// (float64 unless the op says otherwise) and its length ("Len") is in the
// result either way, so a caller whose buffer was short calls again. with
// is the core object of a second bound object the op takes (a scan that a
// queue's append takes); ops that take none ignore it.
type Bound interface {
	Do(op string, args []byte, with any, dst, n int) ([]byte, error)
}

// New builds the object of kind from its JSON config record (absent keys
// keep vortex's defaults): a scan (RasterScan ... FreeformScan; an empty
// record leaves it uninitialized, as vortex's RasterScan() is), a scan
// config (RasterScanConfig ...: validate, to_waypoints, to_segments and
// the set_* helpers), a pattern (SequentialPattern, RepeatedPattern:
// to_pattern), a Warp (forward, inverse) or a ScanQueue.
func New(kind, record string) (Bound, error) {
	switch kind {
	case "RasterScan":
		return newScan(kind, record, NewRasterScanConfig)
	case "RepeatedRasterScan":
		return newScan(kind, record, NewRepeatedRasterScanConfig)
	case "RadialScan":
		return newScan(kind, record, NewRadialScanConfig)
	case "RepeatedRadialScan":
		return newScan(kind, record, NewRepeatedRadialScanConfig)
	case "SpiralScan":
		return newScan(kind, record, NewSpiralScanConfig)
	case "FreeformScan":
		return newScan(kind, record, NewFreeformScanConfig)
	case "RasterScanConfig":
		return newConfig(kind, record, NewRasterScanConfig)
	case "RepeatedRasterScanConfig":
		return newConfig(kind, record, NewRepeatedRasterScanConfig)
	case "RadialScanConfig":
		return newConfig(kind, record, NewRadialScanConfig)
	case "RepeatedRadialScanConfig":
		return newConfig(kind, record, NewRepeatedRadialScanConfig)
	case "SpiralScanConfig":
		return newConfig(kind, record, NewSpiralScanConfig)
	case "FreeformScanConfig":
		return newConfig(kind, record, NewFreeformScanConfig)
	case "SequentialPattern":
		p := &patternObject{seq: NewSequentialPattern()}
		return p, decode(kind, record, &p.seq)
	case "RepeatedPattern":
		p := &patternObject{rep: NewRepeatedPattern(), repeated: true}
		return p, decode(kind, record, &p.rep)
	case "Warp":
		w := &warpObject{}
		if err := decode(kind, record, &w.w); err != nil {
			return nil, err
		}
		return w, w.w.Validate("warp")
	case "ScanQueue":
		return newQueue(record)
	}
	return nil, backend.Invalidf("scan.New: kind %q, expected a scan, scan config, pattern, Warp or ScanQueue", kind)
}

// decode reads record (when not empty) over v's defaults. A
// FreeformScanConfig's Pattern crosses as wire segments (markers as rows).
func decode(what, record string, v any) error {
	if record == "" {
		return nil
	}
	if f, ok := v.(*FreeformScanConfig); ok {
		w := struct {
			*FreeformScanConfig
			Pattern []wireSegment
		}{FreeformScanConfig: f}
		if err := backend.DecodeRecord(what, record, &w); err != nil {
			return err
		}
		if w.Pattern == nil {
			return nil
		}
		segs, err := fromWire(what+".pattern", w.Pattern)
		f.Pattern = segs
		return err
	}
	return backend.DecodeRecord(what, record, v)
}

// encode is decode's inverse.
func encode(v any) ([]byte, error) {
	if f, ok := v.(*FreeformScanConfig); ok {
		return json.Marshal(struct {
			*FreeformScanConfig
			Pattern []wireSegment
		}{f, toWire(f.Pattern)})
	}
	return json.Marshal(v)
}

// markerRow is a marker as the int64 record row of
// python/vortexgo/marker.py's _to_records: kind, sample, sequence, index,
// count_hint, id, flags, reversed (id and flags as their bits).
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
			return nil, backend.Invalidf("%s[%d]: marker row %v, expected kind 1..6 and count_hint >= 0", what, i, r)
		}
		out[i] = marker.Marker{Kind: marker.Kind(r[0]), Sample: r[1], Sequence: r[2], Index: r[3], CountHint: int(r[4]),
			ID: uint64(r[5]), Flags: marker.Flags(r[6]), Reversed: r[7] != 0}
	}
	return out, nil
}

// wireSegment is a Segment as it crosses to Python.
type wireSegment struct {
	Position              []float64
	Channels              int
	EntryDelta, ExitDelta []float64
	Markers               []markerRow
}

func toWire(segs []Segment) []wireSegment {
	out := make([]wireSegment, len(segs))
	for i, s := range segs {
		out[i] = wireSegment{s.Position, s.Channels, s.EntryDelta, s.ExitDelta, toRows(s.Markers)}
	}
	return out
}

func fromWire(what string, ws []wireSegment) ([]Segment, error) {
	out := make([]Segment, len(ws))
	for i, w := range ws {
		name := fmt.Sprintf("%s[%d]", what, i)
		if w.Channels < 1 || w.Channels > maxChannels || len(w.Position)%w.Channels != 0 || len(w.Position) == 0 {
			return nil, backend.Invalidf("%s: %d positions of %d channels, expected a non-empty (samples, channels) array with 1..%d channels", name, len(w.Position), w.Channels, maxChannels)
		}
		for _, d := range [][]float64{w.EntryDelta, w.ExitDelta} {
			if d != nil && len(d) != w.Channels {
				return nil, backend.Invalidf("%s: entry/exit delta of %d values, expected %d (channels)", name, len(d), w.Channels)
			}
		}
		ms, err := fromRows(name+".markers", w.Markers)
		if err != nil {
			return nil, err
		}
		out[i] = Segment{Position: w.Position, Channels: w.Channels, EntryDelta: w.EntryDelta, ExitDelta: w.ExitDelta, Markers: ms}
	}
	return out, nil
}

// result marshals an op's result record.
func result(v any) ([]byte, error) { return json.Marshal(v) }

// array writes vals into the caller's buffer when they fit; the record
// says their length either way.
func array(dst, n int, vals []float64, extra map[string]any) ([]byte, error) {
	if extra == nil {
		extra = map[string]any{}
	}
	extra["Len"] = hostmem.Record(dst, n, vals...)
	return result(extra)
}

func badOp(kind, op string) error {
	return backend.Invalidf("%s: operation %q, expected one of its documented operations", kind, op)
}

// boundScan is a scan of config type C.
type scanObject[C Config[C]] struct {
	kind string
	def  func() C
	s    Scan[C]
}

func newScan[C Config[C]](kind, record string, def func() C) (Bound, error) {
	b := &scanObject[C]{kind: kind, def: def}
	if record == "" {
		return b, nil
	}
	_, err := b.Do("initialize", []byte(record), nil, 0, 0)
	return b, err
}

// Kind is the scan's class name ("RasterScan"), for messages.
func (b *scanObject[C]) Kind() string { return b.kind }

// Streamer is the scan a ScanQueue plays.
func (b *scanObject[C]) Streamer() Streamer { return &b.s }

func (b *scanObject[C]) config(what string, raw []byte) (C, error) {
	cfg := b.def()
	return cfg, decode(what, string(raw), &cfg)
}

// Do runs op: initialize (args: the config record), change ({Config,
// Restart, EventID}), restart ({} or {At: true, Sample, Position,
// Velocity, IncludeStart}), prepare ({Count}, < 0: the whole pass),
// next ({Count}: samples into the buffer, markers as rows), scan_buffer,
// scan_markers, scan_segments, config, last.
func (b *scanObject[C]) Do(op string, args []byte, _ any, dst, n int) ([]byte, error) {
	var a struct {
		Config                    json.RawMessage
		Restart, At, IncludeStart bool
		EventID                   uint64
		Count                     int
		Sample                    int64
		Position, Velocity        []float64
	}
	if op != "initialize" && len(args) > 0 {
		if err := backend.DecodeRecord(b.kind+"."+op, string(args), &a); err != nil {
			return nil, err
		}
	}
	switch op {
	case "initialize":
		cfg, err := b.config(b.kind+"Config", args)
		if err != nil {
			return nil, err
		}
		return nil, b.s.Initialize(cfg)
	case "change":
		cfg, err := b.config(b.kind+"Config", a.Config)
		if err != nil {
			return nil, err
		}
		return nil, b.s.Change(cfg, a.Restart, a.EventID)
	case "restart":
		if a.At {
			return nil, b.s.RestartAt(a.Sample, a.Position, a.Velocity, a.IncludeStart)
		}
		return nil, b.s.Restart()
	case "prepare":
		if a.Count < 0 {
			return nil, b.s.Prepare()
		}
		return nil, b.s.PrepareCount(a.Count)
	case "next":
		ch := b.s.Channels()
		if a.Count < 0 || ch == 0 || a.Count > n/ch {
			if ch == 0 {
				return nil, notInitialized()
			}
			return nil, backend.Invalidf("%s.next: %d samples of %d channels into a buffer of %d values", b.kind, a.Count, ch, n)
		}
		buf, err := hostmem.Span[float64](dst, a.Count*ch)
		if err != nil {
			return nil, err
		}
		var ms []marker.Marker
		got, err := b.s.Next(&ms, buf, a.Count)
		if err != nil {
			return nil, err
		}
		return result(map[string]any{"Count": got, "Markers": toRows(ms)})
	case "scan_buffer":
		buf, err := b.s.ScanBuffer()
		if err != nil {
			return nil, err
		}
		return array(dst, n, buf, map[string]any{"Channels": b.s.Channels()})
	case "scan_markers":
		ms, err := b.s.ScanMarkers()
		if err != nil {
			return nil, err
		}
		return result(map[string]any{"Markers": toRows(ms)})
	case "scan_segments":
		return result(map[string]any{"Segments": toWire(b.s.ScanSegments())})
	case "config":
		cfg := b.s.Config()
		return encode(&cfg)
	case "last":
		p, v, pok, vok := b.s.Last()
		if !pok {
			p = nil
		}
		if !vok {
			v = nil
		}
		return result(map[string]any{"Position": p, "Velocity": v, "ScansCompleted": b.s.ScansCompleted()})
	}
	return nil, badOp(b.kind, op)
}

// boundConfig is a scan config on its own: vortex's config methods.
type configObject[C Config[C]] struct {
	kind string
	cfg  C
}

func newConfig[C Config[C]](kind, record string, def func() C) (Bound, error) {
	b := &configObject[C]{kind: kind, cfg: def()}
	return b, decode(kind, record, &b.cfg)
}

// Do runs op: validate, record (the config with every field), to_segments,
// to_waypoints (the (segments, samples, channels) array into the buffer),
// and the helpers that set fields from others, each returning the record:
// set_isotropic and set_hybrid ({Count}: samples_per_second),
// set_evenly_spaced and set_half_evenly_spaced ({Count}), set_aiming.
func (b *configObject[C]) Do(op string, args []byte, _ any, dst, n int) ([]byte, error) {
	var a struct{ Count int }
	if len(args) > 0 {
		if err := backend.DecodeRecord(b.kind+"."+op, string(args), &a); err != nil {
			return nil, err
		}
	}
	c := any(&b.cfg)
	switch op {
	case "validate":
		return nil, b.cfg.Validate()
	case "record":
		return encode(c)
	case "to_segments":
		segs, err := b.cfg.ToSegments()
		if err != nil {
			return nil, err
		}
		return result(map[string]any{"Segments": toWire(segs)})
	case "to_waypoints":
		w, ok := c.(interface {
			ToWaypoints() Waypoints
			Validate() error
		})
		if !ok {
			break
		}
		if err := w.Validate(); err != nil {
			return nil, err
		}
		wp := w.ToWaypoints()
		return array(dst, n, wp.Data, map[string]any{"Shape": []int{wp.Segments, wp.Samples, wp.Channels}})
	case "set_isotropic", "set_hybrid":
		s, ok := c.(interface {
			SetIsotropic(int)
			SetHybrid(int)
		})
		if !ok {
			break
		}
		if a.Count < 1 {
			return nil, backend.Invalidf("%s.%s: samples_per_second %d, expected > 0", b.kind, op, a.Count)
		}
		if op == "set_isotropic" {
			s.SetIsotropic(a.Count)
		} else {
			s.SetHybrid(a.Count)
		}
		return encode(c)
	case "set_evenly_spaced", "set_half_evenly_spaced", "set_aiming":
		r, ok := c.(interface {
			SetEvenlySpaced(int)
			SetHalfEvenlySpaced(int)
		})
		if !ok {
			break
		}
		switch {
		case op == "set_aiming":
			r.SetHalfEvenlySpaced(2)
		case a.Count < 1 || a.Count > maxScanElements:
			return nil, backend.Invalidf("%s.%s: n %d, expected in [1, %d]", b.kind, op, a.Count, maxScanElements)
		case op == "set_evenly_spaced":
			r.SetEvenlySpaced(a.Count)
		default:
			r.SetHalfEvenlySpaced(a.Count)
		}
		return encode(c)
	}
	return nil, badOp(b.kind, op)
}

// patternObject is a SequentialPattern or RepeatedPattern.
type patternObject struct {
	seq      SequentialPattern
	rep      RepeatedPattern
	repeated bool
}

// Do runs record (the pattern's fields) and to_pattern ({Waypoints: one
// flat (samples, channels) list per segment, Channels}): the segments.
func (b *patternObject) Do(op string, args []byte, _ any, _, _ int) ([]byte, error) {
	switch {
	case op == "record" && b.repeated:
		return encode(&b.rep)
	case op == "record":
		return encode(&b.seq)
	case op != "to_pattern":
		return nil, badOp("pattern", op)
	}
	var a struct {
		Waypoints [][]float64
		Channels  int
	}
	if err := backend.DecodeRecord("to_pattern", string(args), &a); err != nil {
		return nil, err
	}
	if a.Channels < 1 || a.Channels > maxChannels {
		return nil, backend.Invalidf("to_pattern: %d channels, expected in [1, %d]", a.Channels, maxChannels)
	}
	var segs []Segment
	var err error
	if b.repeated {
		segs, err = b.rep.ToPattern(a.Waypoints, a.Channels)
	} else {
		segs, err = b.seq.ToPattern(a.Waypoints, a.Channels)
	}
	if err != nil {
		return nil, err
	}
	return result(map[string]any{"Segments": toWire(segs)})
}

// warpObject is a Warp.
type warpObject struct{ w Warp }

// Do runs forward or inverse ({Values}: mapped into the buffer).
func (b *warpObject) Do(op string, args []byte, _ any, dst, n int) ([]byte, error) {
	var a struct{ Values []float64 }
	if err := backend.DecodeRecord("warp."+op, string(args), &a); err != nil {
		return nil, err
	}
	switch op {
	case "forward":
		b.w.Forward(a.Values, a.Values)
	case "inverse":
		b.w.Inverse(a.Values, a.Values)
	default:
		return nil, badOp("warp", op)
	}
	return array(dst, n, a.Values, nil)
}

// maxPendingEvents bounds the queue events waiting for the binding to
// collect them (an engine playing a queue no one polls drops the oldest).
const maxPendingEvents = 1 << 12

// queueObject is a ScanQueue whose callbacks are tokens: the Go queue calls
// them with its lock held, possibly on the engine's goroutine, where a
// Python callback must never run (DESIGN.md 1), so each call is recorded
// as (token, sample, event) and every op's result carries the events
// recorded so far ("Events"); the binding runs the Python callbacks after
// the call returns.
type queueObject struct {
	q       *ScanQueue
	mu      sync.Mutex // guards events: recorded under the queue's lock, drained by any op
	events  [][3]int64
	dropped int64
}

func newQueue(record string) (Bound, error) {
	var a struct {
		Sample             int64
		Position, Velocity []float64
	}
	if err := decode("ScanQueue", record, &a); err != nil {
		return nil, err
	}
	if a.Position == nil && a.Velocity == nil && a.Sample == 0 {
		return &queueObject{q: NewScanQueue()}, nil
	}
	if len(a.Position) != len(a.Velocity) || len(a.Position) > maxChannels {
		return nil, backend.Invalidf("ScanQueue: position of %d values and velocity of %d, expected one per channel each", len(a.Position), len(a.Velocity))
	}
	return &queueObject{q: NewScanQueueAt(a.Sample, a.Position, a.Velocity)}, nil
}

// Queue is the core queue (the engine's Generate stage plays it).
func (b *queueObject) Queue() *ScanQueue { return b.q }

func (b *queueObject) callback(token int64) QueueCallback {
	if token == 0 {
		return nil
	}
	return func(sample int64, e QueueEvent) {
		b.mu.Lock()
		defer b.mu.Unlock()
		if len(b.events) >= maxPendingEvents {
			b.events = b.events[1:]
			b.dropped++
		}
		b.events = append(b.events, [3]int64{token, sample, int64(e)})
	}
}

// Do runs append and interrupt (with: the scan; {Callback: a token, 0 for
// none; Marker: the ScanBoundary row, absent for the default}), generate
// ({Channels, ZeroOrderHold}: samples into the buffer), reset ({} or {At:
// true, Sample, Position, Velocity}), clear, state, rebase ({Sample}),
// empty_wanted ({At}: SetEmptyWanted) and events; every result carries the
// callback events recorded so far.
func (b *queueObject) Do(op string, args []byte, with any, dst, n int) ([]byte, error) {
	var a struct {
		Callback           int64
		Marker             *markerRow
		Channels           int
		ZeroOrderHold, At  bool
		Sample             int64
		Position, Velocity []float64
	}
	if len(args) > 0 {
		if err := backend.DecodeRecord("ScanQueue."+op, string(args), &a); err != nil {
			return nil, err
		}
	}
	out := map[string]any{}
	switch op {
	case "append", "interrupt":
		s, ok := with.(interface{ Streamer() Streamer })
		if !ok {
			return nil, backend.Invalidf("ScanQueue.%s: scan %T, expected a scan (RasterScan ... FreeformScan)", op, with)
		}
		m := ScanBoundary()
		if a.Marker != nil {
			ms, err := fromRows("ScanQueue."+op+".marker", []markerRow{*a.Marker})
			if err != nil {
				return nil, err
			}
			if m = ms[0]; m.Kind != marker.ScanBoundary {
				return nil, backend.Invalidf("ScanQueue.%s.marker: %v, expected a ScanBoundary", op, m)
			}
		}
		var err error
		if op == "append" {
			err = b.q.Append(s.Streamer(), b.callback(a.Callback), m)
		} else {
			err = b.q.Interrupt(s.Streamer(), b.callback(a.Callback), m)
		}
		if err != nil {
			if k, ok := with.(interface{ Kind() string }); ok {
				return nil, fmt.Errorf("ScanQueue.%s(%s): %w", op, k.Kind(), err)
			}
			return nil, err
		}
	case "generate":
		if a.Channels < 1 || a.Channels > maxChannels {
			return nil, backend.Invalidf("ScanQueue.generate: %d channels, expected in [1, %d]", a.Channels, maxChannels)
		}
		buf, err := hostmem.Span[float64](dst, n/a.Channels*a.Channels)
		if err != nil {
			return nil, err
		}
		var ms []marker.Marker
		scanned, released, err := b.q.Generate(&ms, buf, a.Channels, n/a.Channels, a.ZeroOrderHold)
		if err != nil {
			return nil, err
		}
		out["Samples"], out["Released"], out["Markers"] = scanned, released, toRows(ms)
	case "reset":
		if a.At && (len(a.Position) != len(a.Velocity) || len(a.Position) > maxChannels) {
			return nil, backend.Invalidf("ScanQueue.reset: position of %d values and velocity of %d, expected one per channel each", len(a.Position), len(a.Velocity))
		}
		if a.At {
			if err := b.q.ResetAt(a.Sample, a.Position, a.Velocity); err != nil {
				return nil, err
			}
		} else {
			b.q.Reset()
		}
	case "clear":
		b.q.Clear()
	case "state":
		out["Sample"], out["Position"], out["Velocity"] = b.q.State()
	case "rebase":
		if err := b.q.Rebase(a.Sample); err != nil {
			return nil, err
		}
	case "empty_wanted": // {At}: whether an engine playing the queue waits for the empty callback
		b.q.SetEmptyWanted(a.At)
	case "events":
	default:
		return nil, badOp("ScanQueue", op)
	}
	b.mu.Lock()
	out["Events"], out["Dropped"] = b.events, b.dropped
	b.events, b.dropped = nil, 0
	b.mu.Unlock()
	return result(out)
}
