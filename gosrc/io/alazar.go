package io

import (
	"fmt"
	"log/slog"
	"math"
	"sort"
	"sync"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/driver/alazar"
	"github.com/vortexgo/vortexgo/gosrc/engine"
)

// AlazarAnalogChannels is how many analog outputs the galvo DAC has (x and
// y: vortex's alazar_config_t::analog_channel_count).
const AlazarAnalogChannels = 2

// AlazarAnalogChannel is one output of the galvo DAC (vortex's
// alazar::analog_channel_t): which column (Channel) of which block stream
// (Stream) it plays, how stream units become volts, where it rests when
// the DAC is not playing (Park, in stream units) and its limits in volts.
type AlazarAnalogChannel struct {
	Stream  int
	Channel int
	// Park is the resting position, in stream units (scaled and clipped
	// as a sample is).
	Park float64
	// LogicalUnitsPerPhysicalUnit scales values: stream value / this =
	// volts (vortex's logical_units_per_physical_unit).
	LogicalUnitsPerPhysicalUnit float64
	// Min and Max are the limits in volts; outputs are clipped to them.
	Min, Max float64
}

// DefaultAlazarAnalogChannel is vortex's analog_channel_t{}.
func DefaultAlazarAnalogChannel() AlazarAnalogChannel {
	return AlazarAnalogChannel{LogicalUnitsPerPhysicalUnit: 1, Min: -5, Max: 5}
}

// code is the DAC's offset-binary code of stream value v: scaled to volts,
// clipped to the limits, then volts/lsb + zero, truncated (vortex's
// conversion, the double assigned to a uint16).
func (ch *AlazarAnalogChannel) code(v float64, dac *alazar.DAC) uint16 {
	volts := math.Min(math.Max(v/ch.LogicalUnitsPerPhysicalUnit, ch.Min), ch.Max)
	c := volts/dac.VoltsPerLSB + float64(dac.ZeroPoint)
	return uint16(math.Min(math.Max(c, 0), math.MaxUint16))
}

// AlazarIOConfig is vortex's io::alazar_config_t: the board whose galvo
// DAC plays the waveforms, its two outputs and the ring buffer's size.
type AlazarIOConfig struct {
	// SystemIndex and BoardIndex name the board (both from 1): the
	// digitizer an AlazarAcquisition may use too.
	SystemIndex, BoardIndex uint32
	// AnalogOutputChannels are the DAC's x (0) and y (1) outputs.
	AnalogOutputChannels [AlazarAnalogChannels]AlazarAnalogChannel
	// SamplesPerBlock is the largest block (records) Next accepts.
	SamplesPerBlock int
	// BlocksToBuffer sizes the DAC's ring of samples in blocks.
	BlocksToBuffer int
	// Divisor keeps every Divisor-th sample of a block.
	Divisor int
	// StopOnError stops the DAC when a block fails.
	StopOnError bool
}

// DefaultAlazarIOConfig is vortex's alazar_config_t{}.
func DefaultAlazarIOConfig() AlazarIOConfig {
	c := AlazarIOConfig{SystemIndex: 1, BoardIndex: 1, SamplesPerBlock: 100, BlocksToBuffer: 1, Divisor: 1,
		StopOnError: true}
	for i := range c.AnalogOutputChannels {
		c.AnalogOutputChannels[i] = DefaultAlazarAnalogChannel()
	}
	return c
}

// Validate is vortex's alazar_config_t::validate, with its message, and
// the checks vortex leaves to a division by zero or the board (a divisor
// below 1, an empty block, a channel scaled by 0).
func (c *AlazarIOConfig) Validate() error {
	switch {
	case c.BlocksToBuffer < 1:
		return backend.Invalidf("must buffer at least 1 block: %d", c.BlocksToBuffer)
	case c.Divisor < 1:
		return backend.Invalidf("minimum divisor is 1: %d", c.Divisor)
	case c.SamplesPerBlock < 1:
		return backend.Invalidf("samples per block must be positive: %d", c.SamplesPerBlock)
	}
	for i, ch := range c.AnalogOutputChannels {
		if ch.LogicalUnitsPerPhysicalUnit == 0 || math.IsNaN(ch.LogicalUnitsPerPhysicalUnit) {
			return backend.Invalidf("analog output channel %d: logical_units_per_physical_unit=%v, expected a "+
				"non-zero number", i, ch.LogicalUnitsPerPhysicalUnit)
		}
		if !(ch.Min <= ch.Max) {
			return backend.Invalidf("analog output channel %d: limits [%v, %v], expected min <= max", i, ch.Min, ch.Max)
		}
	}
	return nil
}

// ringSamples is the DAC ring's length in words: one block more than
// vortex's blocks_to_buffer * samples_per_block. vortexgo's engine hands
// an IO the block after its preload before the acquisition's first block
// starts (vortex writes it from another thread), so with blocks_to_buffer
// = preload_count (vortex's demos) that block would overwrite block 0 of
// the ring before the DAC played it (DAQmxIO's buffer has the same block
// more).
func (c *AlazarIOConfig) ringSamples() int { return (c.BlocksToBuffer + 1) * c.SamplesPerBlock }

// AlazarIO is vortex's AlazarIO: an engine IO that plays the Generate
// stage's galvo waveforms through an AlazarTech digitizer's galvo DAC
// (AlazarGalvo.h), so a system without an NI-DAQmx card can scan.
//
// The DAC plays one pattern slot as a ring, one word per A-line trigger
// (vortex's custom pattern mode: sequence 0 repeats the slot forever);
// Next writes each block's samples, scaled to DAC codes, at the ring's
// write position, wrapping at its end. The DAC has no underflow: a host
// that falls behind makes it replay the last lap's samples.
//
// The board: AlazarIO opens the board by its indices as vortex's does (its
// own alazar.Board over the SDK's one handle per board). Only the DAC
// calls go through it: the capture, and stopping it, belong to the
// AlazarAcquisition on the same board (its Board alone starts and aborts
// captures, and closing the IO's Board never aborts one), so the two may
// share a board in either order.
type AlazarIO struct {
	cfg  AlazarIOConfig
	log  *slog.Logger
	mu   sync.Mutex // serializes blocks, Prepare, Start, Stop and Close (vortex's _mutex)
	b    *alazar.Board
	dac  alazar.DAC
	slot int
	ring int // words in the ring
	off  int // the ring's write position
	buf  []uint32
	info engine.IOInfo
	// refs are where the outputs' samples are in a block.
	refs [AlazarAnalogChannels]streamRef
	// playing: StartDAC succeeded and StopDAC was not called since.
	playing bool
	// prepared: an engine's Prepare or PrepareStandalone rewound the ring.
	prepared bool
	closed   bool

	// claim refuses Close while an engine uses the DAC (the engine would
	// go on writing blocks to a board handle given up under it).
	claim engine.Claim
}

var (
	_ engine.IO      = (*AlazarIO)(nil)
	_ engine.Claimer = (*AlazarIO)(nil)
)

// Claims reports the claim an engine holds while it uses the DAC.
func (d *AlazarIO) Claims() []*engine.Claim { return []*engine.Claim{&d.claim} }

// NewAlazarIO validates cfg and readies the DAC (vortex's initialize):
// opens the board (loading the ATS-SDK: a missing library is reported
// here), selects custom pattern mode, picks the first pattern slot that
// holds the ring, makes sequence 0 repeat it forever and sets the park
// position.
func NewAlazarIO(cfg AlazarIOConfig, log *slog.Logger) (*AlazarIO, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	d := &AlazarIO{cfg: cfg, log: log}
	d.claim.Name("AlazarIO")
	for i, ch := range cfg.AnalogOutputChannels {
		d.refs[i] = streamRef{stream: ch.Stream, channel: ch.Channel,
			name: fmt.Sprintf("AlazarIO analog output channel %d", i)}
	}
	d.debug("initializing Alazar DAC module")
	b, err := alazar.Open(cfg.SystemIndex, cfg.BoardIndex)
	if err != nil {
		return nil, err
	}
	info := b.Info()
	if log != nil {
		log.Info(fmt.Sprintf("using %s (%d) PCIe x%d @ %g Gbps", info.Type.Model, info.SerialNumber, info.PCIe.Width,
			info.PCIe.SpeedGbps))
	}
	d.b, d.dac = b, info.DAC
	d.debug("configuring custom pattern mode")
	if err := b.ConfigureDACMode(0, false); err != nil {
		return nil, err
	}
	d.ring = cfg.ringSamples()
	slots := make([]int, 0, len(d.dac.SlotSizes))
	for s := range d.dac.SlotSizes {
		slots = append(slots, s)
	}
	sort.Ints(slots)
	for _, s := range slots {
		if d.dac.SlotSizes[s] >= d.ring {
			d.slot = s
			break
		}
	}
	if d.slot == 0 || d.ring > math.MaxInt32 {
		return nil, fmt.Errorf("could not find DAC slot with capacity for %d samples", d.ring)
	}
	d.debug(fmt.Sprintf("using pattern slot %d for %d samples", d.slot, d.ring))
	d.debug(fmt.Sprintf("configuring sequence 0 to repeat pattern slot %d", d.slot))
	if err := b.ConfigureDACSequence(0, d.slot, 0, 0, int32(d.ring-1)); err != nil {
		return nil, err
	}
	d.buf = make([]uint32, cfg.SamplesPerBlock)
	x, y := d.parkCodes()
	d.debug(fmt.Sprintf("setting park position to (%d, %d)", x, y))
	if err := b.SetDACParkPosition(x, y); err != nil {
		return nil, err
	}
	return d, nil
}

// parkCodes is the park position as DAC codes.
func (d *AlazarIO) parkCodes() (x, y uint16) {
	ch := &d.cfg.AnalogOutputChannels
	return ch[0].code(ch[0].Park, &d.dac), ch[1].code(ch[1].Park, &d.dac)
}

func (d *AlazarIO) debug(msg string, args ...any) {
	if d.log != nil {
		d.log.Debug(msg, args...)
	}
}

// Config is the IO's configuration.
func (d *AlazarIO) Config() AlazarIOConfig { return d.cfg }

// Slot is the DAC pattern slot the ring lives in.
func (d *AlazarIO) Slot() int { return d.slot }

// RingSamples is the ring's length in DAC words.
func (d *AlazarIO) RingSamples() int { return d.ring }

// Prepare checks that each output plays a column of GalvoTarget, the one
// analog output stream the engine's IO blocks carry, and that blocks fit.
func (d *AlazarIO) Prepare(info engine.IOInfo) error {
	for i, ch := range d.cfg.AnalogOutputChannels {
		if ch.Stream != StreamGalvoTarget {
			return backend.Invalidf("AlazarIO: analog output channel %d reads stream %s, expected GalvoTarget (%d)",
				i, streamName(ch.Stream), StreamGalvoTarget)
		}
		if ch.Channel < 0 || ch.Channel >= info.OutputChannels {
			return backend.Invalidf("stream is incorrectly sized: [%d,%d] vs [:%d,%d] (AlazarIO, analog output "+
				"channel %d)", info.RecordsPerBlock, info.OutputChannels, d.cfg.SamplesPerBlock, ch.Channel, i)
		}
	}
	if info.RecordsPerBlock > d.cfg.SamplesPerBlock {
		return backend.Invalidf("block is larger than maximum configured size: %d > %d (AlazarIO: "+
			"samples_per_block, expected >= EngineConfig.records_per_block)", info.RecordsPerBlock,
			d.cfg.SamplesPerBlock)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.info = info
	d.off = 0 // vortex's prepare
	d.prepared = true
	return nil
}

// Start starts playback (the preloaded blocks are in the ring).
func (d *AlazarIO) Start() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return fmt.Errorf("AlazarIO: %w", engine.ErrStopped)
	}
	if d.log != nil {
		d.log.Info("starting I/O")
	}
	if err := d.b.StartDAC(); err != nil {
		return err
	}
	d.playing = true
	return nil
}

// Stop stops playback: the outputs go to the park position. The SDK's
// errors while stopping are logged, as vortex does, not returned.
func (d *AlazarIO) Stop() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.stop()
	return nil
}

func (d *AlazarIO) stop() {
	if d.closed {
		return
	}
	if d.log != nil {
		d.log.Info("stopping I/O")
	}
	// stopped whether or not it plays (vortex's: the DAC runs only while the board does)
	err := d.b.StopDAC()
	d.playing = false
	if err != nil && d.log != nil {
		d.log.Warn(fmt.Sprintf("exception while stopping: %v", err))
	}
}

// Close stops playback; the board stays open for anyone else using it.
func (d *AlazarIO) Close() error {
	return d.claim.Close(func() error {
		d.mu.Lock()
		defer d.mu.Unlock()
		if d.closed {
			return nil
		}
		d.stop()
		d.closed = true
		return d.b.Close() // aborts nothing: this Board never starts a capture
	})
}

// Running tells whether the DAC plays (started, not stopped since).
func (d *AlazarIO) Running() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.playing
}

// Next writes block b's outputs into the ring (vortex's _dispatch_block
// and _process_block; see process).
func (d *AlazarIO) Next(b *engine.IOBlock) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return fmt.Errorf("AlazarIO: %w", engine.ErrStopped)
	}
	if b.ID == 0 {
		d.off = 0 // a session's first block: the DAC plays the ring from its start
	}
	s := engineStreams(b, d.info.OutputChannels)
	return d.failed(b.ID, d.process(b.Records, &s))
}
