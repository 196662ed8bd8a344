// Package format maps acquired records to their place in a volume: the
// raster scan pattern and vortex's StackFormatExecutor, which plans, per
// block, which records go to which B-scan and where the B-scans, volumes
// and the scan end.
package format

import (
	"fmt"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/engine"
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

var _ engine.Formatter = (*StackFormatExecutor)(nil)

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

// Prepare has nothing to allocate: the engine sizes the plan, since a block
// spans at most recordsPerBlock/AscansPerBscan+2 B-scans.
func (f *StackFormatExecutor) Prepare(recordsPerBlock int) error {
	if recordsPerBlock <= 0 {
		return fmt.Errorf("StackFormatExecutor.Prepare: recordsPerBlock=%d, expected > 0", recordsPerBlock)
	}
	return nil
}

// ScanRecords is the scan's record count (0 = forever).
func (f *StackFormatExecutor) ScanRecords() int64 { return f.scan.TotalRecords() }

// VolumeShape is (BscansPerVolume, AscansPerBscan).
func (f *StackFormatExecutor) VolumeShape() (bscans, ascans int) {
	return f.scan.BscansPerVolume, f.scan.AscansPerBscan
}

// SampleRange resolves the slice against A-scans of samples samples,
// clamping it to the A-scan.
func (f *StackFormatExecutor) SampleRange(samples int) (start, stop int) {
	start, stop = f.slice.Start, f.slice.Stop
	if stop == 0 || stop > samples {
		stop = samples
	}
	return min(start, stop), stop
}

// Plan appends the copies and notifications for records
// [start, start+records). Records past the end of a finite scan are
// ignored. It never allocates once the plan has capacity for the block.
func (f *StackFormatExecutor) Plan(start int64, records int, plan *engine.FormatPlan) error {
	if start < 0 || records < 0 {
		return fmt.Errorf("StackFormatExecutor.Plan: start=%d records=%d, expected both >= 0", start, records)
	}
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
		plan.Actions = append(plan.Actions, engine.Action{
			Kind: engine.ActionCopy, SrcRecord: int(rec - start), Records: n, DstAscan: dst,
			Reverse: p.Reversed, Bscan: p.Bscan, Volume: p.Volume, Segment: line,
		})
		rec += int64(n)
		if p.Ascan+n < a {
			continue
		}
		note := engine.Action{Bscan: p.Bscan, Volume: p.Volume, Segment: line, Sample: rec}
		note.Kind = engine.ActionSegment
		plan.Actions = append(plan.Actions, note)
		if p.Bscan == f.scan.BscansPerVolume-1 {
			note.Kind = engine.ActionVolume
			plan.Actions = append(plan.Actions, note)
		}
		if total > 0 && rec == total {
			note.Kind = engine.ActionScan
			plan.Actions = append(plan.Actions, note)
		}
	}
	return nil
}
