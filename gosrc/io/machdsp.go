package io

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"time"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/driver/machdsp"
	"github.com/vortexgo/vortexgo/gosrc/engine"
)

// MachDSPChannel is one galvo of a MachDSPIO (vortex's machdsp::channel_t):
// the block stream and its column it outputs, the stream's units per
// degree-scaled unit, and the servo's full scale (DegreeScale: the value,
// after scaling, that maps to the servo's full-scale code).
type MachDSPChannel struct {
	Stream, Channel             int
	LogicalUnitsPerPhysicalUnit float64
	DegreeScale                 float64
}

// MachDSPChannelCount is how many channels a MachDSP streams (vortex's
// machdsp_config_t::channel_count).
const MachDSPChannelCount = 2

// MachDSPConfig is vortex's machdsp_config_t.
type MachDSPConfig struct {
	Port     string
	BaudRate int
	// OutputChannels are the servo's two galvo inputs (x, y); vortex's
	// InputChannels are kept but not streamed (vortex's IO turns the
	// servo's receive off).
	OutputChannels, InputChannels [MachDSPChannelCount]MachDSPChannel
	SamplesPerBlock               int
	BlocksToBuffer                int
	// ReadWriteTimeout bounds each serial read and write (vortex keeps its
	// driver's 1 s whatever this says; it is the same by default).
	ReadWriteTimeout time.Duration
	// SampleDivisor: the servo takes one sample per SampleDivisor
	// external triggers, and every SampleDivisor-th sample of a block is
	// sent. AuxDivisor divides its auxiliary I/O.
	SampleDivisor, AuxDivisor int
	TriggerRisingEdge         bool
	StopOnError               bool
}

// DefaultMachDSPChannel is vortex's channel_t{}.
func DefaultMachDSPChannel() MachDSPChannel {
	return MachDSPChannel{LogicalUnitsPerPhysicalUnit: 1, DegreeScale: 15}
}

// DefaultMachDSPConfig is vortex's machdsp_config_t{}.
func DefaultMachDSPConfig() MachDSPConfig {
	c := MachDSPConfig{Port: "COM1", BaudRate: 12_000_000, SamplesPerBlock: 100, BlocksToBuffer: 1,
		ReadWriteTimeout: time.Second, SampleDivisor: 1, AuxDivisor: 1, TriggerRisingEdge: true, StopOnError: true}
	for i := range c.OutputChannels {
		c.OutputChannels[i], c.InputChannels[i] = DefaultMachDSPChannel(), DefaultMachDSPChannel()
	}
	return c
}

// Validate is vortex's machdsp_config_t::validate, with its message, and
// vortexgo's checks of what vortex would divide by.
func (c *MachDSPConfig) Validate() error {
	switch {
	case c.BlocksToBuffer < 1:
		return backend.Invalidf("must buffer at least 1 block: %d", c.BlocksToBuffer)
	case c.SampleDivisor < 1:
		return backend.Invalidf("minimum sample divisor is 1: %d", c.SampleDivisor)
	case c.AuxDivisor < 1:
		return backend.Invalidf("minimum aux divisor is 1: %d", c.AuxDivisor)
	case c.SamplesPerBlock < 1:
		return backend.Invalidf("samples per block must be positive: %d", c.SamplesPerBlock)
	}
	for i, ch := range c.OutputChannels {
		if !(ch.DegreeScale > 0) || math.IsInf(ch.DegreeScale, 0) {
			return backend.Invalidf("output channel %d: degree_scale must be positive and finite: %v", i, ch.DegreeScale)
		}
		if ch.LogicalUnitsPerPhysicalUnit == 0 || math.IsNaN(ch.LogicalUnitsPerPhysicalUnit) {
			return backend.Invalidf("output channel %d: logical_units_per_physical_unit must be non-zero: %v", i,
				ch.LogicalUnitsPerPhysicalUnit)
		}
	}
	return nil
}

// MachDSPIO is vortex's MachDSPIO: an engine IO that sends the Generate
// stage's galvo waveforms block by block to a MachDSP digital servo over
// its serial port (driver/machdsp), as 16-bit codes: a stream value v is
// clip(v / logical_units_per_physical_unit, -degree_scale, degree_scale)
// / degree_scale * 32767 + 32768, truncated. The servo streams on its
// external trigger (the A-line trigger), one sample per SampleDivisor
// triggers, with underflow and overflow as errors: a host that falls
// behind stops the engine with the servo's "protocol error: SAI Tx (3):
// underflow (1)". vortex sends no strobes to a MachDSP, nor does this.
type MachDSPIO struct {
	cfg MachDSPConfig
	log *slog.Logger
	dev *machdsp.MachDSP

	claim engine.Claim

	// blockMu serializes blocks and holds the staging buffer.
	blockMu sync.Mutex
	out     []byte
	outs    [MachDSPChannelCount]streamRef
	info    engine.IOInfo

	mu        sync.Mutex
	stopped   bool // Stop was called: a block in flight or after it returns ErrStopped
	needReset bool // the stream is reset at the next session's first block
}

var _ engine.IO = (*MachDSPIO)(nil)

// NewMachDSPIO validates cfg, opens the servo and configures it (vortex's
// initialize): this is where a missing or busy port, a silent servo or
// a refused setting is reported. It is OpenMachDSPIO then Configure.
func NewMachDSPIO(cfg MachDSPConfig, log *slog.Logger) (*MachDSPIO, error) {
	m, err := OpenMachDSPIO(cfg, log)
	if err != nil {
		return nil, err
	}
	if err := m.Configure(); err != nil {
		_ = m.dev.Close()
		return nil, err
	}
	return m, nil
}

// OpenMachDSPIO validates cfg and opens the servo (its greeting and
// limits, at most machdsp.DefaultTimeout per reply), without configuring
// it: Configure, whose calls wait up to cfg's ReadWriteTimeout each, then
// runs as a call Cancel can end (Ctrl-C during vortex's initialize).
func OpenMachDSPIO(cfg MachDSPConfig, log *slog.Logger) (*MachDSPIO, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if log != nil {
		log.Debug("initializing MachDSP module")
	}
	dev, err := machdsp.Open(cfg.Port, cfg.BaudRate)
	if err != nil {
		return nil, err
	}
	m := &MachDSPIO{cfg: cfg, log: log, dev: dev, needReset: true}
	m.claim.Name(fmt.Sprintf("MachDSPIO %q", cfg.Port))
	for i, ch := range cfg.OutputChannels {
		m.outs[i] = streamRef{stream: ch.Stream, channel: ch.Channel, name: fmt.Sprintf("output channel %d", i)}
	}
	return m, nil
}

// Configure is the rest of vortex's initialize after OpenMachDSPIO: the
// stream stopped and reset, the default settings, the trigger, divisors,
// blocks and error behaviours. On an error the caller closes the IO.
func (m *MachDSPIO) Configure() error { return m.named(m.configure()) }

// named is err, the driver's, with the IO's port named before vortex's
// text (`MachDSPIO "/dev/ttyACM0": serial read: End of file`): an engine
// may drive several servos, and the line's errors do not say which.
// (Opening's errors name it already: they do not come through here.)
func (m *MachDSPIO) named(err error) error {
	var de *machdsp.Error
	if err == nil || !errors.As(err, &de) {
		return err
	}
	return fmt.Errorf("MachDSPIO %q: %w", m.cfg.Port, err)
}

// configure is vortex's initialize after opening: the stream stopped and
// reset, the default settings, then the trigger, divisors, blocks and
// error behaviours.
func (m *MachDSPIO) configure() error {
	c, d := &m.cfg, m.dev
	if c.ReadWriteTimeout > 0 {
		d.SetTimeout(c.ReadWriteTimeout)
	}
	i := d.Info()
	if m.log != nil {
		m.log.Info(fmt.Sprintf("using version %d.%d @ %d baud with features %d", i.Version.Major, i.Version.Minor,
			c.BaudRate, i.Version.Features))
	}
	daq := c.SamplesPerBlock / c.SampleDivisor
	if err := d.ClearError(); err != nil {
		return err
	}
	steps := []func() error{
		d.StreamStop, d.StreamReset, d.ResetSettings,
		func() error { return d.SetInternalTrigger(0) },
		func() error { return d.SetSampleDivisor(c.SampleDivisor) },
		func() error { return d.SetTriggerEdgeRising(c.TriggerRisingEdge) },
		func() error { return d.SetAuxDivisor(c.AuxDivisor) },
		// One block more than vortex's blocks_to_buffer, as DAQmxIO's
		// buffer and AlazarIO's ring: vortexgo's engine hands the IO the
		// block after its preload before the acquisition's first block
		// starts the A-line trigger, so a buffer of exactly the preload
		// would wait for a trigger that only comes after the write.
		func() error { return d.SetBlocks(c.BlocksToBuffer+1, daq) },
		func() error { return d.SetEnableReceive(false) },
		func() error { return d.SetOverflowBehavior(machdsp.OverflowError) },
		func() error { return d.SetUnderflowBehavior(machdsp.UnderflowError) },
	}
	for _, s := range steps {
		if err := s(); err != nil {
			return err
		}
	}
	m.out = make([]byte, 4*daq)
	return nil
}

// Config is the IO's configuration.
func (m *MachDSPIO) Config() MachDSPConfig { return m.cfg }

// Info is what the servo reported when opened.
func (m *MachDSPIO) Info() machdsp.Info { return m.dev.Info() }

// Device is the servo (its calls one by one; vortex's MachDSP).
func (m *MachDSPIO) Device() *machdsp.MachDSP { return m.dev }

// Claims is the IO's claim (engine.Claimer).
func (m *MachDSPIO) Claims() []*engine.Claim { return []*engine.Claim{&m.claim} }

// Prepare checks that both outputs name columns of GalvoTarget (the
// stream an engine hands its IOs) and that the engine's blocks are the
// configured size, which the servo's blocks are (vortex's check).
func (m *MachDSPIO) Prepare(info engine.IOInfo) error {
	for _, r := range m.outs {
		if r.stream != StreamGalvoTarget {
			return backend.Invalidf("MachDSPIO %q: %s reads stream %s (%d), expected GalvoTarget (%d) "+
				"(Block.StreamIndex.GalvoTarget)", m.cfg.Port, r.name, streamName(r.stream), r.stream, StreamGalvoTarget)
		}
		if r.channel < 0 || r.channel >= info.OutputChannels {
			return backend.Invalidf("stream is incorrectly sized: [%d,%d] vs [:%d,%d] (MachDSPIO %q, %s)",
				info.RecordsPerBlock, info.OutputChannels, m.cfg.SamplesPerBlock, r.channel, m.cfg.Port, r.name)
		}
	}
	if info.RecordsPerBlock != m.cfg.SamplesPerBlock {
		return backend.Invalidf("block is not exactly equal to the configured size: %d != %d (MachDSPIO %q: "+
			"samples_per_block, expected EngineConfig.records_per_block)", info.RecordsPerBlock,
			m.cfg.SamplesPerBlock, m.cfg.Port)
	}
	m.info = info
	return nil
}

// reset resets the stream when a session begins (vortex's prepare).
func (m *MachDSPIO) reset() error {
	m.mu.Lock()
	need := m.needReset
	m.needReset, m.stopped = false, false
	m.mu.Unlock()
	if !need {
		return nil
	}
	return m.named(m.dev.StreamReset())
}

// Start starts the stream: the servo plays the buffered blocks, one
// sample per SampleDivisor triggers.
func (m *MachDSPIO) Start() error {
	if err := m.reset(); err != nil {
		return err
	}
	if m.log != nil {
		m.log.Info("starting I/O")
	}
	return m.named(m.dev.StreamStart())
}

// Cancel ends the servo's call in progress, if any (the driver's Cancel):
// a standalone call interrupted by Ctrl-C. The IO stays usable.
func (m *MachDSPIO) Cancel() { m.dev.Cancel() }

// Stop stops the stream: a block waiting for the servo's room ends (with
// engine.ErrStopped), and the servo's or the line's errors are logged, as
// vortex does, not returned.
func (m *MachDSPIO) Stop() error {
	m.mu.Lock()
	m.stopped, m.needReset = true, true
	m.mu.Unlock()
	m.dev.Cancel()
	if m.log != nil {
		m.log.Info("stopping I/O")
	}
	if err := m.dev.StreamStop(); err != nil && m.log != nil {
		m.log.Warn(fmt.Sprintf("exception while stopping: %v", err))
	}
	return nil
}

// Close closes the port; refused (backend.ErrInUse) while an engine that
// prepared the IO has not finished its run.
func (m *MachDSPIO) Close() error {
	return m.claim.Close(func() error {
		m.dev.Cancel()
		return m.dev.Close()
	})
}

// Running tells whether the servo streams (vortex's running(): the
// stream's status; false when it cannot be read).
func (m *MachDSPIO) Running() bool {
	if !m.dev.Valid() {
		return false
	}
	s, err := m.dev.StreamStatus()
	return err == nil && s.State == machdsp.StreamContinue
}

// Next sends block b's galvo waveform (vortex's _dispatch_block). A
// failure stops the stream when StopOnError is set.
func (m *MachDSPIO) Next(b *engine.IOBlock) error {
	if b.ID == 0 {
		if err := m.reset(); err != nil {
			return m.failed(b.ID, err)
		}
	}
	m.blockMu.Lock()
	defer m.blockMu.Unlock()
	if err := m.checkStopped(); err != nil {
		return err
	}
	s := engineStreams(b, m.info.OutputChannels)
	if err := m.process(b.Records, &s); err != nil {
		if serr := m.checkStopped(); serr != nil && errors.Is(err, machdsp.ErrCancelled) {
			return serr
		}
		return m.failed(b.ID, err)
	}
	return nil
}

func (m *MachDSPIO) checkStopped() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.stopped {
		return fmt.Errorf("MachDSPIO %q: %w", m.cfg.Port, engine.ErrStopped)
	}
	return nil
}

// failed logs a block's error and stops the stream (StopOnError).
func (m *MachDSPIO) failed(id int64, err error) error {
	if m.log != nil {
		m.log.Error(fmt.Sprintf("error during I/O for block %d: %v", id, err))
	}
	if m.cfg.StopOnError {
		_ = m.Stop()
	}
	return err
}

// process converts count samples (every SampleDivisor-th; a short block
// is held at its last sample to the servo's block size) and writes them
// (vortex's _process_block). The caller holds blockMu.
func (m *MachDSPIO) process(count int, s *BlockStreams) error {
	c := &m.cfg
	div := c.SampleDivisor
	daq := c.SamplesPerBlock / div
	have := (count + div - 1) / div
	info := m.dev.Info()
	for j := range m.outs {
		src, err := s.analog(&m.outs[j], count)
		if err != nil {
			return err
		}
		ch := c.OutputChannels[j]
		for k := 0; k < daq; k++ {
			row := min(k, have-1) * div
			v := 0.0
			if have > 0 {
				v = src.Data[row*src.Cols+ch.Channel] / ch.LogicalUnitsPerPhysicalUnit
			}
			v = math.Min(math.Max(v, -ch.DegreeScale), ch.DegreeScale)
			code := v/(ch.DegreeScale*info.PerLSB) + float64(info.ZeroPoint)
			putCode(m.out[4*k+2*j:], code)
		}
	}
	return m.named(m.dev.BlockWrite(m.out[:4*daq]))
}

// putCode stores code as vortex's conversion to uint16 does (truncated
// toward zero), little-endian.
func putCode(b []byte, code float64) {
	u := uint16(0)
	switch {
	case code >= 65535:
		u = 65535
	case code > 0:
		u = uint16(code)
	}
	b[0], b[1] = byte(u), byte(u>>8)
}
