// Package format is the index-only raster formatter that predates the
// Generate stage: a RasterScan of records (no waveform, no markers) and a
// StackFormatExecutor that plans, per block, which records go to which
// B-scan straight from the record index, ignoring the engine's markers.
//
// It is kept for the bindings until they move to vortex's wiring (the
// engine's scan queue feeding a stage.FormatPlanner, whose plan the
// endpoints execute with stage's executors); new code uses those. It
// implements engine.Formatter with engine.ScanLimiter (the run ends with
// its scan) and engine.Slicer (its depth crop).
package format

import (
	"fmt"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/engine"
	"github.com/vortexgo/vortexgo/gosrc/format/stage"
	"github.com/vortexgo/vortexgo/gosrc/marker"
)

// RasterScan is a raster pattern: AscansPerBscan records per B-scan,
// BscansPerVolume B-scans per volume, repeated Volumes times (0 = forever).
// With Bidirectional, odd B-scans are acquired right to left, so their
// records are placed in reverse.
type RasterScan struct {
	// AscansPerBscan is the number of records in one B-scan.
	AscansPerBscan int
	// BscansPerVolume is the number of B-scans in one volume.
	BscansPerVolume int
	// Bidirectional flips odd B-scans (the return lines).
	Bidirectional bool
	// Volumes is the loop count; 0 repeats forever.
	Volumes int
}

// Validate checks the scan, naming the offending field.
func (r RasterScan) Validate() error {
	switch {
	case r.AscansPerBscan <= 0:
		return backend.Invalidf("RasterScan.AscansPerBscan: %d, expected > 0", r.AscansPerBscan)
	case r.BscansPerVolume <= 0:
		return backend.Invalidf("RasterScan.BscansPerVolume: %d, expected > 0", r.BscansPerVolume)
	case r.Volumes < 0:
		return backend.Invalidf("RasterScan.Volumes: %d, expected >= 0 (0 = forever)", r.Volumes)
	}
	return nil
}

// RecordsPerVolume is AscansPerBscan * BscansPerVolume.
func (r RasterScan) RecordsPerVolume() int64 {
	return int64(r.AscansPerBscan) * int64(r.BscansPerVolume)
}

// TotalRecords is the number of records in the scan, 0 when it repeats
// forever.
func (r RasterScan) TotalRecords() int64 { return int64(r.Volumes) * r.RecordsPerVolume() }

// Position is where one record lands.
type Position struct {
	// Volume counts volumes since the start.
	Volume int
	// Bscan is the B-scan within the volume.
	Bscan int
	// Ascan is the record's index along the B-scan in acquisition order.
	Ascan int
	// Reversed is true on the return lines of a bidirectional scan: the
	// record belongs at A-scan AscansPerBscan-1-Ascan.
	Reversed bool
}

// Position locates record (counted since the start).
func (r RasterScan) Position(record int64) Position {
	a := int64(r.AscansPerBscan)
	line := record / a
	p := Position{
		Volume: int(line / int64(r.BscansPerVolume)),
		Bscan:  int(line % int64(r.BscansPerVolume)),
		Ascan:  int(record % a),
	}
	p.Reversed = r.Bidirectional && p.Bscan%2 == 1
	return p
}

// SampleSlice crops the depth of each A-scan to [Start, Stop). Stop 0
// means the end of the A-scan.
type SampleSlice struct {
	// Start is the first sample kept.
	Start int
	// Stop is one past the last sample kept; 0 keeps through the end.
	Stop int
}

// StackFormatExecutor places records into (bscans, ascans, depth) volumes
// following a RasterScan; it implements engine.Formatter.
type StackFormatExecutor struct {
	scan  RasterScan
	slice SampleSlice
}

var (
	_ engine.Formatter   = (*StackFormatExecutor)(nil)
	_ engine.ScanLimiter = (*StackFormatExecutor)(nil)
	_ engine.Slicer      = (*StackFormatExecutor)(nil)
)

// NewStackFormatExecutor validates scan and slice.
func NewStackFormatExecutor(scan RasterScan, slice SampleSlice) (*StackFormatExecutor, error) {
	if err := scan.Validate(); err != nil {
		return nil, err
	}
	if slice.Start < 0 {
		return nil, backend.Invalidf("SampleSlice.Start: %d, expected >= 0", slice.Start)
	}
	if slice.Stop != 0 && slice.Stop <= slice.Start {
		return nil, backend.Invalidf("SampleSlice.Stop: %d, expected 0 (to the end) or > Start (%d)", slice.Stop, slice.Start)
	}
	return &StackFormatExecutor{scan: scan, slice: slice}, nil
}

// Scan returns the raster scan.
func (f *StackFormatExecutor) Scan() RasterScan { return f.scan }

// ScanRecords is the scan's record count (0 = forever).
func (f *StackFormatExecutor) ScanRecords() int64 { return f.scan.TotalRecords() }

// SegmentsPerVolume is BscansPerVolume.
func (f *StackFormatExecutor) SegmentsPerVolume() int { return f.scan.BscansPerVolume }

// RecordsPerSegment is AscansPerBscan.
func (f *StackFormatExecutor) RecordsPerSegment() int { return f.scan.AscansPerBscan }

// SampleSlice is the depth crop resolved against A-scans of samples
// samples, clamped to the A-scan.
func (f *StackFormatExecutor) SampleSlice(samples int) stage.SampleSlice {
	start, stop := f.slice.Start, f.slice.Stop
	if stop == 0 || stop > samples {
		stop = samples
	}
	if start >= stop {
		return stage.NullSlice()
	}
	return stage.SimpleSlice(start, stop, 1)
}

// Finish has nothing pending: every notification goes out with the block
// that completes it.
func (f *StackFormatExecutor) Finish(plan *engine.FormatPlan) error {
	plan.Actions = plan.Actions[:0]
	return nil
}

// Next replaces plan's actions with the copies and notifications for
// records [start, start+records), ignoring markers. Records past the end of
// a finite scan are ignored. Notifications carry vortex's fields with the
// old meanings: ScanIndex counts B-scans since the start, VolumeIndex
// counts volumes, SegmentIndexBuffer is the B-scan in its volume. It never
// allocates once the plan has capacity for the block.
func (f *StackFormatExecutor) Next(plan *engine.FormatPlan, start int64, records int, _ []marker.Marker) error {
	if start < 0 || records < 0 {
		return fmt.Errorf("StackFormatExecutor.Next: start=%d records=%d, expected both >= 0", start, records)
	}
	plan.Actions = plan.Actions[:0]
	end := start + int64(records)
	total := f.scan.TotalRecords()
	if total > 0 {
		end = min(end, total)
	}
	a := f.scan.AscansPerBscan
	for rec := start; rec < end; {
		p := f.scan.Position(rec)
		n := int(min(int64(a-p.Ascan), end-rec))
		dst := p.Ascan
		if p.Reversed {
			dst = a - p.Ascan - n
		}
		line := rec / int64(a)
		plan.Actions = append(plan.Actions, stage.Action{
			Kind: stage.Copy, BlockOffset: int(rec - start), Count: n, BufferRecord: dst,
			Reverse: p.Reversed, BufferSegment: p.Bscan,
		})
		rec += int64(n)
		if p.Ascan+n < a {
			continue
		}
		note := stage.Action{ScanIndex: line, VolumeIndex: int64(p.Volume), SegmentIndexBuffer: int64(p.Bscan), Sample: rec}
		note.Kind = stage.FinishSegment
		plan.Actions = append(plan.Actions, note)
		if p.Bscan == f.scan.BscansPerVolume-1 {
			note.Kind = stage.FinishVolume
			plan.Actions = append(plan.Actions, note)
		}
		if total > 0 && rec == total {
			note.Kind = stage.FinishScan
			plan.Actions = append(plan.Actions, note)
		}
	}
	return nil
}

// New builds an object of vortex's format module from its JSON record,
// for bindings (keys are the Go field names; absent keys keep vortex's
// defaults): "FormatPlanner" (a stage.FormatPlannerConfig; the planner is
// the engine's Formatter), or an executor, "StackFormatExecutor",
// "RadialFormatExecutor", "SpiralFormatExecutor" or
// "PositionFormatExecutor" (their configs), which endpoints execute plans
// with; "IndexStackFormatExecutor" is this package's index-only formatter
// (a RasterScan's and a SampleSlice's fields).
func New(kind, record string) (any, error) {
	decode := func(v any) error {
		if record == "" {
			return nil
		}
		return backend.DecodeRecord(kind+"Config", record, v)
	}
	switch kind {
	case "FormatPlanner":
		c := stage.DefaultFormatPlannerConfig(0, 0)
		if err := decode(&c); err != nil {
			return nil, err
		}
		return stage.NewFormatPlanner(c)
	case "StackFormatExecutor":
		var c stage.StackFormatExecutorConfig
		if err := decode(&c); err != nil {
			return nil, err
		}
		return stage.NewStackFormatExecutor(c)
	case "RadialFormatExecutor":
		var c stage.RadialFormatExecutorConfig
		if err := decode(&c); err != nil {
			return nil, err
		}
		return stage.NewRadialFormatExecutor(c)
	case "SpiralFormatExecutor":
		var c stage.SpiralFormatExecutorConfig
		if err := decode(&c); err != nil {
			return nil, err
		}
		return stage.NewSpiralFormatExecutor(c)
	case "PositionFormatExecutor":
		c := stage.DefaultPositionFormatExecutorConfig()
		if err := decode(&c); err != nil {
			return nil, err
		}
		return stage.NewPositionFormatExecutor(c)
	case "IndexStackFormatExecutor": // this package's, for the old wiring
		var c struct {
			RasterScan
			SampleSlice
		}
		if err := decode(&c); err != nil {
			return nil, err
		}
		return NewStackFormatExecutor(c.RasterScan, c.SampleSlice)
	}
	return nil, backend.Invalidf("format.New: kind %q, expected FormatPlanner, StackFormatExecutor, RadialFormatExecutor, SpiralFormatExecutor or PositionFormatExecutor", kind)
}
