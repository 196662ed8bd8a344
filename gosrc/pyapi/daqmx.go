package pyapi

import (
	"time"

	"github.com/vortexgo/vortexgo/gosrc/driver/daqmx"
	"github.com/vortexgo/vortexgo/gosrc/hostmem"
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

// Prepare is vortex's standalone DAQmxIO.prepare: a non-persistent task
// is created now.
func (d *DAQmxIO) Prepare() error { return tag(d.d.PrepareStandalone()) }

// Next is vortex's standalone DAQmxIO.next: count samples of the streams
// s names (the caller's memory, used during this call only) through the
// task; it returns count.
func (d *DAQmxIO) Next(id, count int, s *IOStreams) (int, error) {
	return s.next(id, count, d.d.NextStandalone)
}

// Start starts the task (vortex's DAQmxIO.start; the engine does it).
func (d *DAQmxIO) Start() error { return tag(d.d.Start()) }

// Stop stops the task (vortex's DAQmxIO.stop).
func (d *DAQmxIO) Stop() error { return tag(d.d.Stop()) }

// Running tells whether the task runs.
func (d *DAQmxIO) Running() bool { return d.d.Running() }

// DAQmxLibrary is the NI-DAQmx library loaded ("" before one is).
func DAQmxLibrary() string { return daqmx.Library() }

// DAQmxLoad loads NI-DAQmx if it is not loaded yet and returns its version
// ("" when the library does not report it).
func DAQmxLoad() (string, error) {
	if err := daqmx.Load(); err != nil {
		return "", tag(err)
	}
	return daqmx.Version(), nil
}

// DAQmxTask is one NI-DAQmx task (driver/daqmx.Task; python/vortexgo/daqmx.py's
// DAQmx, vortex's vortex.io.daqmx.DAQmx): the driver's calls one by one.
type DAQmxTask struct {
	Object
	t *daqmx.Task
}

// NewDAQmxTask loads NI-DAQmx if needed and creates the task name.
func NewDAQmxTask(name string) (*DAQmxTask, error) {
	t, err := daqmx.NewTask(name)
	if err != nil {
		return nil, tag(err)
	}
	return &DAQmxTask{Object{obj: t}, t}, nil
}

// CreateDigitalOutput adds a digital output channel of lines.
func (d *DAQmxTask) CreateDigitalOutput(lines string) error {
	return tag(d.t.CreateDigitalOutput(lines))
}

// CreateAnalogVoltageOutput adds an analog voltage output channel of [min, max] volts.
func (d *DAQmxTask) CreateAnalogVoltageOutput(port string, min, max float64) error {
	return tag(d.t.CreateAnalogVoltageOutput(port, min, max))
}

// CreateAnalogVoltageInput adds an analog voltage input channel (terminal: NI's value).
func (d *DAQmxTask) CreateAnalogVoltageInput(port string, min, max float64, terminal int) error {
	return tag(d.t.CreateAnalogVoltageInput(port, min, max, daqmx.Terminal(terminal)))
}

// ConfigureSampleClock is Task.ConfigureSampleClock (mode, edge: NI's values).
func (d *DAQmxTask) ConfigureSampleClock(source string, mode, samplesPerSecond, samplesPerChannel, divisor, edge int) error {
	return tag(d.t.ConfigureSampleClock(source, daqmx.SampleMode(mode), samplesPerSecond, samplesPerChannel, divisor,
		daqmx.Edge(edge)))
}

// SetOutputBufferSize sizes the output buffer (samples per channel).
func (d *DAQmxTask) SetOutputBufferSize(samplesPerChannel int) error {
	return tag(d.t.SetOutputBufferSize(samplesPerChannel))
}

// SetInputBufferSize sizes the input buffer (samples per channel).
func (d *DAQmxTask) SetInputBufferSize(samplesPerChannel int) error {
	return tag(d.t.SetInputBufferSize(samplesPerChannel))
}

// SetRegeneration allows or forbids regeneration.
func (d *DAQmxTask) SetRegeneration(enable bool) error { return tag(d.t.SetRegeneration(enable)) }

// daqmxTimeout is seconds as a Duration (negative: wait forever).
func daqmxTimeout(seconds float64) time.Duration {
	if seconds < 0 {
		return -1
	}
	return time.Duration(seconds * float64(time.Second))
}

// WriteAnalog writes samplesPerChannel rows of channels volts from the
// caller's n float64 values at data (row-major).
func (d *DAQmxTask) WriteAnalog(samplesPerChannel, channels, data, n int, timeout float64) error {
	buf, err := hostmem.Span[float64](data, n)
	if err != nil {
		return tag(err)
	}
	return tag(d.t.WriteAnalog(samplesPerChannel, channels, buf, daqmxTimeout(timeout)))
}

// WriteDigital writes samplesPerChannel rows of channels words from the
// caller's n uint32 values at data (row-major).
func (d *DAQmxTask) WriteDigital(samplesPerChannel, channels, data, n int, timeout float64) error {
	buf, err := hostmem.Span[uint32](data, n)
	if err != nil {
		return tag(err)
	}
	return tag(d.t.WriteDigital(samplesPerChannel, channels, buf, daqmxTimeout(timeout)))
}

// StartTask starts the task (a no-op when it runs).
func (d *DAQmxTask) StartTask() error { return tag(d.t.Start()) }

// StopTask stops the task (a no-op when it is stopped).
func (d *DAQmxTask) StopTask() error { return tag(d.t.Stop()) }

// ClearTask releases the task (a no-op when released).
func (d *DAQmxTask) ClearTask() error { return tag(d.t.Clear()) }

// Valid tells whether the task exists (not cleared).
func (d *DAQmxTask) Valid() bool { return d.t.Valid() }

// Running tells whether the task was started and not stopped.
func (d *DAQmxTask) Running() bool { return d.t.Running() }

// Name is the task's name ("" once cleared, as vortex's).
func (d *DAQmxTask) Name() string {
	if !d.t.Valid() {
		return ""
	}
	return d.t.Name()
}
