package pyapi

import (
	"time"

	"github.com/vortexgo/vortexgo/gosrc/driver/daqmx"
	gio "github.com/vortexgo/vortexgo/gosrc/io"
)

// The bindings of vortexgo.io's DAQmx names (python/vortexgo/io.py's
// DAQmxIO and DAQmxConfig, python/vortexgo/daqmx.py's channels): the
// NI-DAQmx IO (io.DAQmxIO) over the driver (driver/daqmx).

// daqmxChannelRecord is one channel of a DAQmxConfig record: Kind is
// io.DAQmxChannelKind's value (0 AnalogVoltageOutput, 1
// AnalogVoltageInput, 2 DigitalOutput, 3 DigitalInput), Terminal NI's
// terminal configuration.
type daqmxChannelRecord struct {
	Kind                        int
	Name                        string
	Stream, Channel             int
	LogicalUnitsPerPhysicalUnit float64
	Min, Max                    float64
	Terminal                    int32
}

// daqmxConfigRecord is io.DAQmxConfig as Python sends it (one JSON
// record; ReadWriteTimeout in seconds, negative: wait forever).
type daqmxConfigRecord struct {
	Name                              string
	SamplesPerSecond, SamplesPerBlock int
	ClockSource                       string
	ClockEdge                         int32
	ClockDivisor, BlocksToBuffer      int
	ReadWriteTimeout                  float64
	Channels                          []daqmxChannelRecord
	PersistentTask, StopOnError       bool
}

func daqmxConfig(record string) (gio.DAQmxConfig, error) {
	var r daqmxConfigRecord
	if err := decodeRecord("DAQmxConfig", record, &r); err != nil {
		return gio.DAQmxConfig{}, err
	}
	timeout := time.Duration(-1)
	if r.ReadWriteTimeout >= 0 {
		timeout = time.Duration(r.ReadWriteTimeout * float64(time.Second))
	}
	c := gio.DAQmxConfig{Name: r.Name, SamplesPerSecond: r.SamplesPerSecond, SamplesPerBlock: r.SamplesPerBlock,
		ClockSource: r.ClockSource, ClockEdge: daqmx.Edge(r.ClockEdge), ClockDivisor: r.ClockDivisor,
		BlocksToBuffer: r.BlocksToBuffer, ReadWriteTimeout: timeout, PersistentTask: r.PersistentTask,
		StopOnError: r.StopOnError}
	for _, ch := range r.Channels {
		if ch.Kind < int(gio.AnalogVoltageOutput) || ch.Kind > int(gio.DigitalInput) {
			return gio.DAQmxConfig{}, badArg("DAQmxConfig.channels: kind %d, expected 0..3", ch.Kind)
		}
		c.Channels = append(c.Channels, gio.DAQmxChannel{Kind: gio.DAQmxChannelKind(ch.Kind), Name: ch.Name,
			Stream: ch.Stream, Channel: ch.Channel, LogicalUnitsPerPhysicalUnit: ch.LogicalUnitsPerPhysicalUnit,
			Min: ch.Min, Max: ch.Max, Terminal: daqmx.Terminal(ch.Terminal)})
	}
	return c, nil
}

// ValidateDAQmxConfig is DAQmxConfig.validate (vortex's messages).
func ValidateDAQmxConfig(config string) error {
	c, err := daqmxConfig(config)
	if err != nil {
		return tag(err)
	}
	return tag(c.Validate())
}

// DAQmxIO is the NI-DAQmx IO (io.DAQmxIO).
type DAQmxIO struct {
	Object
	d *gio.DAQmxIO
}

// NewDAQmxIO builds an io.DAQmxIO from its DAQmxConfig record: the
// library is loaded and a persistent task configured now.
func NewDAQmxIO(config string) (*DAQmxIO, error) {
	c, err := daqmxConfig(config)
	if err != nil {
		return nil, tag(err)
	}
	d, err := gio.NewDAQmxIO(c, nil)
	if err != nil {
		return nil, tag(err)
	}
	return &DAQmxIO{Object{obj: d}, d}, nil
}

// Start starts the task (vortex's DAQmxIO.start; the engine does it).
func (d *DAQmxIO) Start() error { return tag(d.d.Start()) }

// Stop stops the task (vortex's DAQmxIO.stop).
func (d *DAQmxIO) Stop() error { return tag(d.d.Stop()) }

// Running tells whether the task runs.
func (d *DAQmxIO) Running() bool { return d.d.Running() }

// DAQmxLibrary is the NI-DAQmx library loaded ("" before one is).
func DAQmxLibrary() string { return daqmx.Library() }
