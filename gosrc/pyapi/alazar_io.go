package pyapi

import (
	gio "github.com/vortexgo/vortexgo/gosrc/io"
)

// The bindings of vortexgo.io's Alazar names (python/vortexgo/io.py's
// AlazarIO and AlazarIOConfig, python/vortexgo/_alazar_io.py's
// AnalogChannel): the galvo-DAC IO (io.AlazarIO) over the driver
// (driver/alazar).

// alazarAnalogChannelRecord is one output of an AlazarIOConfig record.
type alazarAnalogChannelRecord struct {
	Stream, Channel             int
	Park                        float64
	LogicalUnitsPerPhysicalUnit float64
	Min, Max                    float64
}

// alazarIOConfigRecord is io.AlazarIOConfig as Python sends it (one JSON
// record; exactly two channels, x and y).
type alazarIOConfigRecord struct {
	SystemIndex, BoardIndex                  uint32
	AnalogOutputChannels                     []alazarAnalogChannelRecord
	SamplesPerBlock, BlocksToBuffer, Divisor int
	StopOnError                              bool
}

func alazarIOConfig(record string) (gio.AlazarIOConfig, error) {
	var r alazarIOConfigRecord
	if err := decodeRecord("AlazarIOConfig", record, &r); err != nil {
		return gio.AlazarIOConfig{}, err
	}
	if len(r.AnalogOutputChannels) != gio.AlazarAnalogChannels {
		return gio.AlazarIOConfig{}, badArg("AlazarIOConfig.analog_output_channels: %d channels, expected %d",
			len(r.AnalogOutputChannels), gio.AlazarAnalogChannels)
	}
	c := gio.AlazarIOConfig{SystemIndex: r.SystemIndex, BoardIndex: r.BoardIndex, SamplesPerBlock: r.SamplesPerBlock,
		BlocksToBuffer: r.BlocksToBuffer, Divisor: r.Divisor, StopOnError: r.StopOnError}
	for i, ch := range r.AnalogOutputChannels {
		c.AnalogOutputChannels[i] = gio.AlazarAnalogChannel{Stream: ch.Stream, Channel: ch.Channel, Park: ch.Park,
			LogicalUnitsPerPhysicalUnit: ch.LogicalUnitsPerPhysicalUnit, Min: ch.Min, Max: ch.Max}
	}
	return c, nil
}

// ValidateAlazarIOConfig is AlazarIOConfig.validate (vortex's messages).
func ValidateAlazarIOConfig(config string) error {
	c, err := alazarIOConfig(config)
	if err != nil {
		return tag(err)
	}
	return tag(c.Validate())
}

// AlazarIO is the galvo-DAC IO (io.AlazarIO).
type AlazarIO struct {
	Object
	d *gio.AlazarIO
}

// NewAlazarIO builds an io.AlazarIO from its AlazarIOConfig record: the
// library is loaded, the board opened and the DAC configured now.
func NewAlazarIO(config string) (*AlazarIO, error) {
	c, err := alazarIOConfig(config)
	if err != nil {
		return nil, tag(err)
	}
	d, err := gio.NewAlazarIO(c, nil)
	if err != nil {
		return nil, tag(err)
	}
	return &AlazarIO{Object{obj: d}, d}, nil
}

// Prepare is vortex's standalone AlazarIO.prepare: the next block is
// written at the ring's start.
func (d *AlazarIO) Prepare() error { return tag(d.d.PrepareStandalone()) }

// Next is vortex's standalone AlazarIO.next: count samples of the streams
// s names (the caller's memory, used during this call only) written into
// the DAC's ring; it returns count.
func (d *AlazarIO) Next(id, count int, s *IOStreams) (int, error) {
	return s.next(id, count, d.d.NextStandalone)
}

// Start starts playback (vortex's AlazarIO.start; the engine does it).
func (d *AlazarIO) Start() error { return tag(d.d.Start()) }

// Stop stops playback (vortex's AlazarIO.stop): the outputs park.
func (d *AlazarIO) Stop() error { return tag(d.d.Stop()) }

// Running tells whether the DAC plays.
func (d *AlazarIO) Running() bool { return d.d.Running() }

// Slot is the DAC pattern slot the ring lives in.
func (d *AlazarIO) Slot() int { return d.d.Slot() }

// RingSamples is the ring's length in DAC words.
func (d *AlazarIO) RingSamples() int { return d.d.RingSamples() }
