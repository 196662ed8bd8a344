// Package io holds the engine's IOs without hardware (engine.IO, vortex's
// io adapters): NullIO, which accepts the waveforms and drops them, and
// SimIO, a simulated galvo IO that records every sample it would output in
// a bounded ring and can feed back a delayed copy as the measured position
// (for PositionFormatExecutor and the galvo endpoints).
//
// A driver for a real DAQ card is one more package implementing
// engine.IO (see gosrc/engine/adapter.go).
package io

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/engine"
)

// NullIO is vortex's NullIO: it accepts every block and outputs nothing.
type NullIO struct {
	started, stopped atomic.Bool
	blocks           atomic.Int64
}

var _ engine.IO = (*NullIO)(nil)

// NewNullIO returns a NullIO.
func NewNullIO() *NullIO { return &NullIO{} }

// Prepare accepts any geometry.
func (n *NullIO) Prepare(engine.IOInfo) error { return nil }

// Start notes the start.
func (n *NullIO) Start() error { n.started.Store(true); return nil }

// Stop notes the stop.
func (n *NullIO) Stop() error { n.stopped.Store(true); return nil }

// Next drops the block.
func (n *NullIO) Next(*engine.IOBlock) error { n.blocks.Add(1); return nil }

// Blocks is the number of blocks received.
func (n *NullIO) Blocks() int64 { return n.blocks.Load() }

// MaxRecordedSamples bounds SimConfig.RecordSamples (64 channels of
// float64 would be 8 GiB).
const MaxRecordedSamples = 1 << 24

// SimConfig configures a SimIO.
type SimConfig struct {
	// RecordSamples is how many of the latest output samples the ring
	// keeps (0: 65,536); older samples are overwritten, Samples() still
	// counts them.
	RecordSamples int
	// Feedback writes the output, delayed by FeedbackDelay samples, into
	// the block's measured positions (channel c measures output channel c;
	// extra input channels read 0). Before the first output the measured
	// position is 0.
	Feedback bool
	// FeedbackDelay is the lag of the measured position, in samples.
	FeedbackDelay int
}

// SimIO is a simulated galvo IO: it records every sample it is given to
// output (the galvo waveform and the digital strobes) and, with Feedback,
// measures a delayed copy of it.
type SimIO struct {
	cfg  SimConfig
	info engine.IOInfo

	// mu guards the ring against a reader (Recorded) on another goroutine
	// than the engine's; the engine's Next is its only writer, so it is
	// uncontended unless a user is reading.
	mu      sync.Mutex
	ring    []float64 // RecordSamples rows of OutputChannels
	strobes []uint32  // RecordSamples strobe words, beside ring
	head    int       // next row to write
	samples int64     // rows ever written
	first   int64     // Sample of the first block

	delay, tmp []float64 // feedback delay line and its scratch

	started, stopped atomic.Bool
}

var _ engine.IO = (*SimIO)(nil)

// NewSimIO validates cfg and returns a SimIO.
func NewSimIO(cfg SimConfig) (*SimIO, error) {
	if cfg.RecordSamples == 0 {
		cfg.RecordSamples = 1 << 16
	}
	switch {
	case cfg.RecordSamples < 0 || cfg.RecordSamples > MaxRecordedSamples:
		return nil, backend.Invalidf("SimIO: record_samples=%d, expected 0 <= record_samples <= %d", cfg.RecordSamples, MaxRecordedSamples)
	case cfg.FeedbackDelay < 0 || cfg.FeedbackDelay > engine.MaxRecordsPerBlock:
		return nil, backend.Invalidf("SimIO: feedback_delay=%d, expected 0 <= feedback_delay <= %d", cfg.FeedbackDelay, engine.MaxRecordsPerBlock)
	}
	return &SimIO{cfg: cfg}, nil
}

// Prepare allocates the ring and the feedback delay line.
func (s *SimIO) Prepare(info engine.IOInfo) error {
	if info.OutputChannels <= 0 || info.InputChannels < 0 || info.RecordsPerBlock <= 0 {
		return backend.Invalidf("SimIO.Prepare: %d output, %d input channels, %d records per block, expected > 0", info.OutputChannels, info.InputChannels, info.RecordsPerBlock)
	}
	if _, ok := engine.MulSize(s.cfg.RecordSamples+s.cfg.FeedbackDelay+info.RecordsPerBlock, info.OutputChannels, 8); !ok {
		return backend.Invalidf("SimIO.Prepare: buffers too large")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.info = info
	s.ring = make([]float64, s.cfg.RecordSamples*info.OutputChannels)
	s.strobes = make([]uint32, s.cfg.RecordSamples)
	s.head, s.samples = 0, 0
	if s.cfg.Feedback {
		s.delay = make([]float64, s.cfg.FeedbackDelay*info.OutputChannels)
		s.tmp = make([]float64, (s.cfg.FeedbackDelay+info.RecordsPerBlock)*info.OutputChannels)
	}
	return nil
}

// Start notes the start.
func (s *SimIO) Start() error { s.started.Store(true); return nil }

// Stop notes the stop; later blocks are refused.
func (s *SimIO) Stop() error { s.stopped.Store(true); return nil }

// Started and Stopped report the engine's calls.
func (s *SimIO) Started() bool { return s.started.Load() }

// Stopped reports whether Stop was called.
func (s *SimIO) Stopped() bool { return s.stopped.Load() }

// Next records the block's output and writes the measured positions.
func (s *SimIO) Next(b *engine.IOBlock) error {
	if s.stopped.Load() {
		return fmt.Errorf("SimIO.Next: %w", engine.ErrStopped)
	}
	out, in := s.info.OutputChannels, s.info.InputChannels
	if len(b.GalvoTarget) < b.Records*out || len(b.GalvoActual) < b.Records*in {
		return backend.Invalidf("SimIO.Next: block of %d records with %d target and %d actual values, expected %d and %d", b.Records, len(b.GalvoTarget), len(b.GalvoActual), b.Records*out, b.Records*in)
	}
	s.mu.Lock()
	if s.samples == 0 {
		s.first = b.Sample
	}
	rows := len(s.ring) / out
	for r := 0; r < b.Records; r++ {
		copy(s.ring[s.head*out:(s.head+1)*out], b.GalvoTarget[r*out:(r+1)*out])
		s.strobes[s.head] = 0
		if r < len(b.Strobes) {
			s.strobes[s.head] = b.Strobes[r]
		}
		s.head = (s.head + 1) % rows
	}
	s.samples += int64(b.Records)
	s.mu.Unlock()
	if !s.cfg.Feedback {
		return nil
	}
	// measured = output delayed by FeedbackDelay rows
	d, n := len(s.delay), b.Records*out
	copy(s.tmp[:d], s.delay)
	copy(s.tmp[d:d+n], b.GalvoTarget[:n])
	copy(s.delay, s.tmp[n:n+d])
	for r := 0; r < b.Records; r++ {
		row := b.GalvoActual[r*in : (r+1)*in]
		clear(row)
		copy(row, s.tmp[r*out:r*out+min(in, out)])
	}
	return nil
}

// OutputChannels is the channels of each recorded sample (the engine's
// galvo output channels; 0 before Prepare).
func (s *SimIO) OutputChannels() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.info.OutputChannels
}

// Samples is the number of samples output so far (including those the
// ring no longer holds).
func (s *SimIO) Samples() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.samples
}

// Recorded copies the latest recorded samples, oldest first, into dst (rows
// of OutputChannels) and returns the sample index of the first row copied
// and the rows copied: at most the ring's size and len(dst)/channels.
func (s *SimIO) Recorded(dst []float64) (first int64, rows int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.info.OutputChannels
	if out == 0 {
		return 0, 0
	}
	size := len(s.ring) / out
	rows = int(min(s.samples, int64(size), int64(len(dst)/out)))
	start := (s.head - rows + size) % size
	for r := 0; r < rows; r++ {
		i := (start + r) % size
		copy(dst[r*out:(r+1)*out], s.ring[i*out:(i+1)*out])
	}
	return s.first + s.samples - int64(rows), rows
}

// RecordedStrobes is Recorded for the strobe words (one per sample): the
// latest up to len(dst), oldest first.
func (s *SimIO) RecordedStrobes(dst []uint32) (first int64, rows int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	size := len(s.strobes)
	if size == 0 {
		return 0, 0
	}
	rows = int(min(s.samples, int64(size), int64(len(dst))))
	start := (s.head - rows + size) % size
	for r := 0; r < rows; r++ {
		dst[r] = s.strobes[(start+r)%size]
	}
	return s.first + s.samples - int64(rows), rows
}
