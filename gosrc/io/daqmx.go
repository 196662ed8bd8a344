package io

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/driver/daqmx"
	"github.com/vortexgo/vortexgo/gosrc/engine"
)

// DAQmxChannelKind is what a DAQmxChannel is (vortex's channel classes
// AnalogVoltageOutput, AnalogVoltageInput, DigitalOutput, DigitalInput).
type DAQmxChannelKind int

// The channel kinds.
const (
	AnalogVoltageOutput DAQmxChannelKind = iota
	AnalogVoltageInput
	DigitalOutput
	DigitalInput
)

func (k DAQmxChannelKind) String() string {
	switch k {
	case AnalogVoltageOutput:
		return "AnalogVoltageOutput"
	case AnalogVoltageInput:
		return "AnalogVoltageInput"
	case DigitalOutput:
		return "DigitalOutput"
	case DigitalInput:
		return "DigitalInput"
	}
	return fmt.Sprintf("DAQmxChannelKind(%d)", int(k))
}

func (k DAQmxChannelKind) analog() bool { return k == AnalogVoltageOutput || k == AnalogVoltageInput }

// vortex's block streams (Block.StreamIndex), which a channel names.
const (
	StreamCounter      = 0
	StreamGalvoTarget  = 1
	StreamSampleTarget = 2
	StreamGalvoActual  = 3
	StreamSampleActual = 4
	StreamStrobes      = 5
)

var streamNames = []string{"Counter", "GalvoTarget", "SampleTarget", "GalvoActual", "SampleActual", "Strobes"}

func streamName(s int) string {
	if s >= 0 && s < len(streamNames) {
		return streamNames[s]
	}
	return fmt.Sprint(s)
}

// DAQmxChannel is one channel of a DAQmxIO's task (vortex's
// daqmx::channel::*): which physical channel or lines, and which column
// (Channel) of which block stream (Stream) it outputs or fills.
type DAQmxChannel struct {
	Kind DAQmxChannelKind
	// Name is the physical channel ("Dev1/ao0": vortex's port_name) or
	// the lines ("Dev1/port0": vortex's line_name).
	Name    string
	Stream  int
	Channel int
	// LogicalUnitsPerPhysicalUnit scales analog values: stream value /
	// this = volts (vortex's logical_units_per_physical_unit).
	LogicalUnitsPerPhysicalUnit float64
	// Min and Max are the analog channel's limits in volts (vortex's
	// limits); outputs are clipped to them.
	Min, Max float64
	// Terminal is an analog input's terminal configuration.
	Terminal daqmx.Terminal
}

// DAQmxConfig is vortex's daqmx_config_t: one NI-DAQmx task.
type DAQmxConfig struct {
	Name             string
	SamplesPerSecond int
	SamplesPerBlock  int
	// ClockSource, ClockEdge and ClockDivisor are vortex's clock: the
	// terminal clocking the task (or its timebase, when the divisor is
	// above 1) and starting it.
	ClockSource  string
	ClockEdge    daqmx.Edge
	ClockDivisor int
	// BlocksToBuffer sizes the task's buffer in blocks.
	BlocksToBuffer int
	// ReadWriteTimeout bounds a write's wait for buffer space.
	ReadWriteTimeout time.Duration
	Channels         []DAQmxChannel
	// PersistentTask keeps the task from NewDAQmxIO to Close (stopped
	// between sessions); otherwise it is created by Prepare and cleared
	// by Stop.
	PersistentTask bool
	// StopOnError stops the task when a block fails.
	StopOnError bool
}

// DefaultDAQmxConfig is vortex's daqmx_config_t{}.
func DefaultDAQmxConfig() DAQmxConfig {
	return DAQmxConfig{Name: "unknown", SamplesPerSecond: 100000, SamplesPerBlock: 100, ClockSource: "pfi0",
		ClockEdge: daqmx.Rising, ClockDivisor: 1, BlocksToBuffer: 1, ReadWriteTimeout: time.Second,
		PersistentTask: true, StopOnError: true}
}

// Validate is vortex's daqmx_config_t::validate, with its messages.
func (c *DAQmxConfig) Validate() error {
	switch {
	case c.BlocksToBuffer < 1:
		return backend.Invalidf("must buffer at least 1 block: %d", c.BlocksToBuffer)
	case c.ClockDivisor < 1:
		return backend.Invalidf("minimum clock divisor is 1: %d", c.ClockDivisor)
	case c.SamplesPerBlock%c.ClockDivisor != 0:
		return backend.Invalidf("samples per block (%d) must be evenly divisible by clock divisor (%d): %d != 0",
			c.SamplesPerBlock, c.ClockDivisor, c.SamplesPerBlock%c.ClockDivisor)
	case c.SamplesPerSecond%c.ClockDivisor != 0:
		return backend.Invalidf("samples per second (%d) must be evenly divisible by clock divisor (%d): %d != 0",
			c.SamplesPerSecond, c.ClockDivisor, c.SamplesPerSecond%c.ClockDivisor)
	}
	for _, ch := range c.Channels {
		if ch.Kind.analog() && strings.ContainsAny(ch.Name, ":,") {
			return backend.Invalidf("analog inputs/outputs must map to a single DAQmx channel: %s", ch.Name)
		}
	}
	return nil
}

// DAQmxIO is vortex's DAQmxIO: an engine IO that writes the Generate
// stage's galvo waveforms (analog outputs, from GalvoTarget) and strobes
// (digital outputs, from Strobes) block by block to one NI-DAQmx task,
// with regeneration off, so a host that falls behind the card's clock
// stops the engine with NI's underflow instead of repeating old samples.
// The engine shifts the waveforms by the IO's lead samples (add_io) before
// they reach Next. Inputs (AnalogVoltageInput, DigitalInput) are not
// streamed yet: Prepare refuses them.
type DAQmxIO struct {
	cfg DAQmxConfig
	log *slog.Logger

	claim engine.Claim // an engine's, from its Prepare to the end of its run

	mu   sync.Mutex // guards task against Stop and Close racing a block
	task *daqmx.Task
	// blockMu serializes blocks (the engine's Next, the standalone
	// NextStandalone), which share the staging buffers; Stop and Close
	// never take it, so they end a block blocked in NI-DAQmx.
	blockMu sync.Mutex
	// chans are the channels in the configuration's order; ao ... di
	// the same by kind.
	chans          []daqmxChan
	ao, ai, do, di []daqmxChan
	aoBuf, aiBuf   []float64
	doBuf, diBuf   []uint32
	info           engine.IOInfo
}

var _ engine.IO = (*DAQmxIO)(nil)

// NewDAQmxIO validates cfg and, for a persistent task, creates and
// configures the task now (vortex's initialize): this is where a missing
// NI-DAQmx library or a bad channel is reported.
func NewDAQmxIO(cfg DAQmxConfig, log *slog.Logger) (*DAQmxIO, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.Channels = append([]DAQmxChannel(nil), cfg.Channels...)
	d := &DAQmxIO{cfg: cfg, log: log}
	d.claim.Name(fmt.Sprintf("DAQmxIO %q", cfg.Name))
	for _, c := range cfg.Channels {
		ch := newDAQmxChan(c)
		d.chans = append(d.chans, ch)
		switch ch.Kind {
		case AnalogVoltageOutput:
			d.ao = append(d.ao, ch)
		case AnalogVoltageInput:
			d.ai = append(d.ai, ch)
		case DigitalOutput:
			d.do = append(d.do, ch)
		case DigitalInput:
			d.di = append(d.di, ch)
		}
	}
	if cfg.PersistentTask {
		if err := d.prepareTask(); err != nil {
			return nil, err
		}
	}
	return d, nil
}

// Config is the IO's configuration.
func (d *DAQmxIO) Config() DAQmxConfig { return d.cfg }

func (d *DAQmxIO) debug(msg string, args ...any) {
	if d.log != nil {
		d.log.Debug(msg, args...)
	}
}

// prepareTask creates and configures the task (vortex's _prepare_task).
func (d *DAQmxIO) prepareTask() (err error) {
	c := &d.cfg
	task, err := daqmx.NewTask(c.Name)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = task.Clear()
		}
	}()
	var inputs int
	for _, ch := range c.Channels {
		switch ch.Kind {
		case AnalogVoltageOutput:
			d.debug("creating analog output", "port", ch.Name, "min", ch.Min, "max", ch.Max)
			err = task.CreateAnalogVoltageOutput(ch.Name, ch.Min, ch.Max)
		case AnalogVoltageInput:
			inputs++
			err = task.CreateAnalogVoltageInput(ch.Name, ch.Min, ch.Max, ch.Terminal)
		case DigitalOutput:
			d.debug("creating digital output", "lines", ch.Name)
			err = task.CreateDigitalOutput(ch.Name)
		case DigitalInput:
			inputs++
			err = task.CreateDigitalInput(ch.Name)
		default:
			err = backend.Invalidf("DAQmxConfig.channels: kind %v, expected a DAQmx channel", ch.Kind)
		}
		if err != nil {
			return err
		}
	}
	div := c.ClockDivisor
	d.debug("configuring sample clock", "source", c.ClockSource, "samples_per_second", c.SamplesPerSecond,
		"divisor", div, "samples_per_block", c.SamplesPerBlock)
	if err = task.ConfigureSampleClock(c.ClockSource, daqmx.Continuous, c.SamplesPerSecond/div, c.SamplesPerBlock/div,
		div, c.ClockEdge); err != nil {
		return err
	}
	bufferSize := c.BlocksToBuffer * c.SamplesPerBlock / div
	if len(d.ao)+len(d.do) > 0 {
		if err = task.SetRegeneration(false); err != nil {
			return err
		}
		// One block more than vortex's: vortexgo's engine hands an IO the
		// block after its preload synchronously, before the acquisition's
		// first block starts the digitizer (vortex writes it from another
		// thread), so with blocks_to_buffer = preload_count (vortex's
		// demos) a card clocked by the A-line trigger would wait for a
		// trigger that only comes after the write: tests_py/test_closed_loop.py.
		if err = task.SetOutputBufferSize(bufferSize + c.SamplesPerBlock/div); err != nil {
			return err
		}
	}
	if inputs > 0 {
		if err = task.SetInputBufferSize(bufferSize); err != nil {
			return err
		}
	}
	daq := c.SamplesPerBlock / div
	d.mu.Lock()
	d.aoBuf = make([]float64, daq*len(d.ao))
	d.aiBuf = make([]float64, daq*len(d.ai))
	d.doBuf = make([]uint32, daq*len(d.do))
	d.diBuf = make([]uint32, daq*len(d.di))
	d.task = task
	d.mu.Unlock()
	return nil
}

// Prepare checks that every channel names a stream the engine's blocks
// carry, and creates the task of a non-persistent IO.
func (d *DAQmxIO) Prepare(info engine.IOInfo) error {
	for _, ch := range d.cfg.Channels {
		var width int
		switch {
		case ch.Kind == AnalogVoltageOutput && ch.Stream == StreamGalvoTarget:
			width = info.OutputChannels
		case ch.Kind == DigitalOutput && ch.Stream == StreamStrobes:
			width = 1
		case ch.Kind == AnalogVoltageInput || ch.Kind == DigitalInput:
			return backend.Invalidf("DAQmxIO %q: %s %s: vortexgo's DAQmxIO does not stream inputs yet, expected "+
				"AnalogVoltageOutput and DigitalOutput channels", d.cfg.Name, ch.Kind, ch.Name)
		default:
			return backend.Invalidf("DAQmxIO %q: %s %s reads stream %s, expected %s", d.cfg.Name, ch.Kind, ch.Name,
				streamName(ch.Stream), map[bool]string{true: "GalvoTarget", false: "Strobes"}[ch.Kind.analog()])
		}
		if ch.Channel < 0 || ch.Channel >= width {
			return backend.Invalidf("stream is incorrectly sized: [%d,%d] vs [:%d,%d] (DAQmxIO %q, %s %s)",
				info.RecordsPerBlock, width, d.cfg.SamplesPerBlock, ch.Channel, d.cfg.Name, ch.Kind, ch.Name)
		}
	}
	if info.RecordsPerBlock > d.cfg.SamplesPerBlock {
		return backend.Invalidf("block is larger than maximum configured size: %d > %d (DAQmxIO %q: "+
			"samples_per_block, expected >= EngineConfig.records_per_block)", info.RecordsPerBlock,
			d.cfg.SamplesPerBlock, d.cfg.Name)
	}
	d.info = info
	return d.ensureTask()
}

func (d *DAQmxIO) current() (*daqmx.Task, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.task == nil {
		return nil, fmt.Errorf("DAQmxIO %q: %w", d.cfg.Name, engine.ErrStopped)
	}
	return d.task, nil
}

// ensureTask makes the task of a non-persistent IO when it has none.
func (d *DAQmxIO) ensureTask() error {
	d.mu.Lock()
	had := d.task != nil
	d.mu.Unlock()
	if had || d.cfg.PersistentTask {
		return nil
	}
	return d.prepareTask()
}

// Start starts the task (the preloaded blocks are in its buffer).
func (d *DAQmxIO) Start() error {
	if err := d.ensureTask(); err != nil {
		return err
	}
	t, err := d.current()
	if err != nil {
		return err
	}
	if d.log != nil {
		d.log.Info("starting I/O")
	}
	return t.Start()
}

// Stop stops the task (a persistent one) or clears it; NI's errors while
// stopping are logged, as vortex does, not returned.
func (d *DAQmxIO) Stop() error {
	d.mu.Lock()
	t := d.task
	if !d.cfg.PersistentTask {
		d.task = nil
	}
	d.mu.Unlock()
	if t == nil {
		return nil
	}
	var err error
	if d.cfg.PersistentTask {
		err = t.Stop()
	} else {
		err = t.Clear()
	}
	if err != nil && d.log != nil {
		d.log.Warn("exception while stopping", "error", err)
	}
	return nil
}

// Claims is the IO's claim (engine.Claimer): an engine that prepared the
// IO holds it until its run ends, refusing Close and the standalone calls.
func (d *DAQmxIO) Claims() []*engine.Claim { return []*engine.Claim{&d.claim} }

// Close clears the task; a block blocked in NI-DAQmx (a standalone
// next waiting for buffer space or samples) returns NI's abort error.
// It is refused (backend.ErrInUse) while an engine that prepared the IO
// has not finished its run.
func (d *DAQmxIO) Close() error {
	return d.claim.Close(func() error {
		d.mu.Lock()
		t := d.task
		d.task = nil
		d.mu.Unlock()
		if t == nil {
			return nil
		}
		return t.Clear()
	})
}

// Next writes block b's outputs (vortex's _dispatch_block and
// _process_block): every ClockDivisor-th sample, analog values scaled to
// volts and clipped to the channel's limits. A failure stops the task
// when StopOnError is set.
func (d *DAQmxIO) Next(b *engine.IOBlock) error {
	err := d.next(b)
	if err != nil {
		var de *daqmx.Error
		if d.log != nil && errors.As(err, &de) {
			d.log.Error(fmt.Sprintf("error during I/O for block %d: %v", b.ID, err))
		}
		if d.cfg.StopOnError {
			_ = d.Stop()
		}
	}
	return err
}

func (d *DAQmxIO) next(b *engine.IOBlock) error {
	d.blockMu.Lock()
	defer d.blockMu.Unlock()
	count := b.Records
	if err := d.checkCount(count); err != nil {
		return err
	}
	if b.ID == 0 {
		// a session's first block: a non-persistent task cleared by the
		// last session's Stop is made again (vortex's prepare)
		if err := d.ensureTask(); err != nil {
			return err
		}
	}
	t, err := d.current()
	if err != nil {
		return err
	}
	s := engineStreams(b, d.info.OutputChannels)
	return d.process(t, count, &s)
}

// Running tells whether the task runs (vortex's running()).
func (d *DAQmxIO) Running() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.task != nil && d.task.Running()
}
