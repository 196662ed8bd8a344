package engine

import (
	"fmt"
	"slices"

	"github.com/vortexgo/vortexgo/gosrc/marker"
)

// Strobes are vortex's digital outputs (engine/common.hpp strobe::*,
// generated in engine/detail/session.hpp): one word per sample, bit Line of
// which each strobe drives. The Generate stage writes them per block beside
// the galvo waveform and hands them to the IOs (IOBlock.Strobes), delayed
// per lead like the waveform.

// StrobeKind says which of vortex's strobes a Strobe is.
type StrobeKind uint8

// The strobes of vortex.engine.
const (
	// SampleStrobe (vortex's SampleStrobe) is periodic in the sample
	// index: high while (sample + Phase) % Divisor < Duration.
	SampleStrobe StrobeKind = iota
	// SegmentStrobe fires Duration samples long, Delay samples after each
	// SegmentBoundary marker whose flags match Flags.
	SegmentStrobe
	// VolumeStrobe does so after each matching VolumeBoundary.
	VolumeStrobe
	// ScanStrobe does so after each matching ScanBoundary.
	ScanStrobe
	// EventStrobe does so after each matching Event marker.
	EventStrobe
)

var strobeNames = [...]string{"SampleStrobe", "SegmentStrobe", "VolumeStrobe", "ScanStrobe", "EventStrobe"}

// String is vortex's class name.
func (k StrobeKind) String() string {
	if int(k) < len(strobeNames) {
		return strobeNames[k]
	}
	return fmt.Sprintf("StrobeKind(%d)", uint8(k))
}

// Polarity is vortex's strobe Polarity: what an active strobe drives its
// line to. A line whose strobes are active-low idles high.
type Polarity uint8

const (
	// PolarityLow is vortex's Polarity.Low (0).
	PolarityLow Polarity = iota
	// PolarityHigh is vortex's Polarity.High (1), the default.
	PolarityHigh
)

// StrobeLines is the number of digital lines: vortex's Python engine uses
// uint32 words.
const StrobeLines = 32

// Strobe is one of vortex's strobes; the fields a kind does not use are
// ignored (Divisor and Phase: SampleStrobe only; Delay and Flags: the
// marker strobes only).
type Strobe struct {
	Kind     StrobeKind
	Line     int
	Polarity Polarity
	// Duration is how many samples the strobe stays active (vortex's
	// defaults: 1 for SampleStrobe, 10 for the others).
	Duration int
	// Divisor and Phase: a SampleStrobe is active at samples s with
	// (s + Phase) % Divisor < Duration.
	Divisor, Phase int
	// Delay is how many samples after its marker a marker strobe starts.
	Delay int
	// Flags select the markers a marker strobe fires for (vortex's
	// default: all).
	Flags marker.Flags
}

// NewSampleStrobe is vortex's SampleStrobe(line, divisor, polarity,
// duration, phase).
func NewSampleStrobe(line, divisor int, polarity Polarity, duration, phase int) Strobe {
	return Strobe{Kind: SampleStrobe, Line: line, Divisor: divisor, Polarity: polarity, Duration: duration, Phase: phase}
}

// NewMarkerStrobe is vortex's SegmentStrobe / VolumeStrobe / ScanStrobe /
// EventStrobe(line, polarity, duration, delay, flags).
func NewMarkerStrobe(kind StrobeKind, line int, polarity Polarity, duration, delay int, flags marker.Flags) Strobe {
	return Strobe{Kind: kind, Line: line, Polarity: polarity, Duration: duration, Delay: delay, Flags: flags}
}

// DefaultStrobes is vortex's EngineConfig().strobes: a sample clock on
// line 0 (every other sample), a 10-sample pulse every 1000 samples on
// line 1 (active high) and line 2 (active low), and a 10-sample pulse at
// every segment (line 3) and volume (line 4). A Config's nil Strobes are
// none; the Python EngineConfig starts with these, as vortex's does.
func DefaultStrobes() []Strobe {
	return []Strobe{
		NewSampleStrobe(0, 2, PolarityHigh, 1, 0),
		NewSampleStrobe(1, 1000, PolarityHigh, 10, 0),
		NewSampleStrobe(2, 1000, PolarityLow, 10, 0),
		NewMarkerStrobe(SegmentStrobe, 3, PolarityHigh, 10, 0, marker.AllFlags),
		NewMarkerStrobe(VolumeStrobe, 4, PolarityHigh, 10, 0, marker.AllFlags),
	}
}

// maxStrobeSpan bounds Duration, Delay, Divisor and Phase: beyond it a
// marker strobe's end would overflow the sample counter arithmetic.
const maxStrobeSpan = 1 << 40

// validateStrobes names the first bad strobe field.
func validateStrobes(strobes []Strobe) error {
	for i, s := range strobes {
		f := func(field string) string { return fmt.Sprintf("Config.Strobes[%d] (%v).%s", i, s.Kind, field) }
		switch {
		case s.Kind > EventStrobe:
			return Invalid("Config.Strobes[%d]: kind %d, expected SampleStrobe, SegmentStrobe, VolumeStrobe, ScanStrobe or EventStrobe", i, s.Kind)
		case s.Line < 0 || s.Line >= StrobeLines:
			return Invalid("%s: %d, expected 0 <= line < %d", f("line"), s.Line, StrobeLines)
		case s.Polarity > PolarityHigh:
			return Invalid("%s: %d, expected Low (0) or High (1)", f("polarity"), s.Polarity)
		case s.Duration < 0 || s.Duration > maxStrobeSpan:
			return Invalid("%s: %d, expected 0 <= duration <= %d", f("duration"), s.Duration, maxStrobeSpan)
		}
		if s.Kind == SampleStrobe {
			switch {
			case s.Divisor < 1 || s.Divisor > maxStrobeSpan:
				return Invalid("%s: %d, expected 1 <= divisor <= %d", f("divisor"), s.Divisor, maxStrobeSpan)
			case s.Phase < 0 || s.Phase > maxStrobeSpan:
				return Invalid("%s: %d, expected 0 <= phase <= %d", f("phase"), s.Phase, maxStrobeSpan)
			}
		} else if s.Delay < 0 || s.Delay > maxStrobeSpan {
			return Invalid("%s: %d, expected 0 <= delay <= %d", f("delay"), s.Delay, maxStrobeSpan)
		}
	}
	return nil
}

// strobeIdle is vortex's resting word: every line with an active-low
// strobe high, the others low.
func strobeIdle(strobes []Strobe) uint32 {
	var idle uint32
	for _, s := range strobes {
		if s.Polarity == PolarityLow {
			idle |= 1 << s.Line
		}
	}
	return idle
}

var strobeMarkerKind = [...]marker.Kind{
	SegmentStrobe: marker.SegmentBoundary,
	VolumeStrobe:  marker.VolumeBoundary,
	ScanStrobe:    marker.ScanBoundary,
	EventStrobe:   marker.Event,
}

// strobeGen generates the strobes block by block, carrying the markers
// whose strobes outlast their block (vortex's _ongoing_strobe_markers).
type strobeGen struct {
	strobes []Strobe
	idle    uint32
	// ongoing are the markers carried from the previous block (a set, as
	// vortex's std::set: a marker counts once however many strobes it
	// outlasts its block for).
	ongoing []marker.Marker
	markers []marker.Marker // scratch: this block's and the ongoing ones
	next    []marker.Marker // scratch: those to carry on
}

func newStrobeGen(strobes []Strobe, markers int) *strobeGen {
	return &strobeGen{
		strobes: strobes, idle: strobeIdle(strobes),
		ongoing: make([]marker.Marker, 0, markers), markers: make([]marker.Marker, 0, 2*markers),
		next: make([]marker.Marker, 0, markers),
	}
}

// generate writes the strobes of the block of len(dst) samples starting at
// sample into dst, from the block's markers (those inside it) and the ones
// carried over. As vortex does, the sample clock and the marker positions
// are those of the acquisition (the block's samples), written into the
// buffer of the largest lead and delayed for each smaller lead like the
// waveform.
func (g *strobeGen) generate(dst []uint32, sample int64, markers []marker.Marker) {
	n := int64(len(dst))
	for i := range dst {
		dst[i] = g.idle
	}
	if len(g.strobes) == 0 {
		return
	}
	g.markers = append(g.markers[:0], g.ongoing...)
	for _, m := range markers {
		switch m.Kind {
		case marker.SegmentBoundary, marker.VolumeBoundary, marker.ScanBoundary, marker.Event:
			if !slices.Contains(g.ongoing, m) {
				g.markers = append(g.markers, m)
			}
		}
	}
	g.next = g.next[:0]
	end := sample + n
	for _, s := range g.strobes {
		bit := uint32(1) << s.Line
		if s.Kind == SampleStrobe {
			// (sample + i + phase) % divisor, counted up rather than
			// divided per sample
			div, dur := int64(s.Divisor), int64(s.Duration)
			k := (sample + int64(s.Phase)) % div
			for i := range dst {
				if k < dur {
					setStrobe(&dst[i], bit, s.Polarity)
				}
				if k++; k == div {
					k = 0
				}
			}
			continue
		}
		want := strobeMarkerKind[s.Kind]
		for _, m := range g.markers {
			if m.Kind != want || !m.Flags.Matches(s.Flags) {
				continue
			}
			start := m.Sample + int64(s.Delay)
			stop := start + int64(s.Duration)
			if stop > end && !slices.Contains(g.next, m) {
				g.next = append(g.next, m)
			}
			lo, hi := max(start, sample)-sample, min(stop, end)-sample
			for i := lo; i < hi; i++ {
				setStrobe(&dst[i], bit, s.Polarity)
			}
		}
	}
	g.ongoing, g.next = g.next, g.ongoing
}

func setStrobe(w *uint32, bit uint32, p Polarity) {
	if p == PolarityHigh {
		*w |= bit
	} else {
		*w &^= bit
	}
}
