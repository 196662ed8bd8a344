package pyapi

import (
	"time"

	"github.com/vortexgo/vortexgo/gosrc/driver/machdsp"
	gio "github.com/vortexgo/vortexgo/gosrc/io"
)

// The bindings of vortexgo.io's MachDSP names (python/vortexgo/io.py's
// MachDSPIO and MachDSPIOConfig, python/vortexgo/machdsp.py's MachDSP,
// Channel and records): the servo IO (io.MachDSPIO) over the serial
// driver (driver/machdsp).

// machdspChannelRecord is one channel of a MachDSPIOConfig record.
type machdspChannelRecord struct {
	Stream, Channel             int
	LogicalUnitsPerPhysicalUnit float64
	DegreeScale                 float64
}

// machdspConfigRecord is io.MachDSPConfig as Python sends it (one JSON
// record; ReadWriteTimeout in seconds).
type machdspConfigRecord struct {
	Port                          string
	BaudRate                      int
	OutputChannels, InputChannels []machdspChannelRecord
	SamplesPerBlock               int
	BlocksToBuffer                int
	ReadWriteTimeout              float64
	SampleDivisor, AuxDivisor     int
	TriggerRisingEdge             bool
	StopOnError                   bool
}

func machdspConfig(record string) (gio.MachDSPConfig, error) {
	var r machdspConfigRecord
	if err := decodeRecord("MachDSPIOConfig", record, &r); err != nil {
		return gio.MachDSPConfig{}, err
	}
	c := gio.MachDSPConfig{Port: r.Port, BaudRate: r.BaudRate, SamplesPerBlock: r.SamplesPerBlock,
		BlocksToBuffer: r.BlocksToBuffer, ReadWriteTimeout: time.Duration(r.ReadWriteTimeout * float64(time.Second)),
		SampleDivisor: r.SampleDivisor, AuxDivisor: r.AuxDivisor, TriggerRisingEdge: r.TriggerRisingEdge,
		StopOnError: r.StopOnError}
	for name, pair := range map[string]struct {
		src []machdspChannelRecord
		dst *[gio.MachDSPChannelCount]gio.MachDSPChannel
	}{"output_channels": {r.OutputChannels, &c.OutputChannels}, "input_channels": {r.InputChannels, &c.InputChannels}} {
		if len(pair.src) != gio.MachDSPChannelCount {
			return gio.MachDSPConfig{}, badArg("MachDSPIOConfig.%s: %d channels, expected %d", name, len(pair.src),
				gio.MachDSPChannelCount)
		}
		for i, ch := range pair.src {
			pair.dst[i] = gio.MachDSPChannel{Stream: ch.Stream, Channel: ch.Channel,
				LogicalUnitsPerPhysicalUnit: ch.LogicalUnitsPerPhysicalUnit, DegreeScale: ch.DegreeScale}
		}
	}
	return c, nil
}

// ValidateMachDSPIOConfig is MachDSPIOConfig.validate (vortex's message).
func ValidateMachDSPIOConfig(config string) error {
	c, err := machdspConfig(config)
	if err != nil {
		return tag(err)
	}
	return tag(c.Validate())
}

// MachDSPIO is the servo IO (io.MachDSPIO).
type MachDSPIO struct {
	Object
	m *gio.MachDSPIO
}

// OpenMachDSPIO opens the servo of a MachDSPIOConfig record (its greeting,
// each reply within a second); Configure then configures it, a call
// Cancel ends (Python runs it interruptibly by Ctrl-C).
func OpenMachDSPIO(config string) (*MachDSPIO, error) {
	c, err := machdspConfig(config)
	if err != nil {
		return nil, tag(err)
	}
	m, err := gio.OpenMachDSPIO(c, nil)
	if err != nil {
		return nil, tag(err)
	}
	return &MachDSPIO{Object{obj: m}, m}, nil
}

// Configure is vortex's initialize after the open (MachDSPIO.Configure).
func (m *MachDSPIO) Configure() error { return tag(m.m.Configure()) }

// Prepare is vortex's standalone MachDSPIO.prepare (the stream reset).
func (m *MachDSPIO) Prepare() error { return tag(m.m.PrepareStandalone()) }

// Next is vortex's standalone MachDSPIO.next.
func (m *MachDSPIO) Next(id, count int, s *IOStreams) (int, error) {
	return s.next(id, count, m.m.NextStandalone)
}

// Start starts the stream.
func (m *MachDSPIO) Start() error { return tag(m.m.Start()) }

// Stop stops the stream.
func (m *MachDSPIO) Stop() error { return tag(m.m.Stop()) }

// Running tells whether the servo streams.
func (m *MachDSPIO) Running() bool { return m.m.Running() }

// Cancel ends the servo's call in progress (Ctrl-C in a standalone call).
func (m *MachDSPIO) Cancel() { m.m.Cancel() }

// machdspSettingsRecord is a Settings (MACHDSP_SETTINGS).
type machdspSettingsRecord struct {
	UnderflowBehavior, OverflowBehavior, BlockCount, BlockSamples, MaxBufferSamples int64
	EnableReceive, TriggerEdge, InternalTrigger, SampleDivisor, MaxSampleDivisor    int64
	AuxDivisor, MaxAuxDivisor                                                       int64
}

// machdspStatusRecord is a StreamStatus (MACHDSP_STATUS).
type machdspStatusRecord struct {
	TxBlockIdx, RxBlockIdx, TxBlockValid, RxBlockValid, State int64
}

// machdspInfoRecord is an Info (MACHDSP_INFO).
type machdspInfoRecord struct {
	Major, Minor, Features, ZeroPoint                 int64
	PerLSB                                            float64
	MaxBufferSamples, MaxSampleDivisor, MaxAuxDivisor int64
}

// MachDSP is one servo, call by call (driver/machdsp; vortex's
// vortex.io.machdsp.MachDSP).
type MachDSP struct {
	Object
	d *machdsp.MachDSP
}

// OpenMachDSP opens the servo on port at baudRate.
func OpenMachDSP(port string, baudRate int) (*MachDSP, error) {
	d, err := machdsp.Open(port, baudRate)
	if err != nil {
		return nil, tag(err)
	}
	return &MachDSP{Object{obj: d}, d}, nil
}

// Ping sends a ping with index and returns the servo's answer.
func (m *MachDSP) Ping(index int) (int, error) {
	v, err := m.d.Ping(uint16(index))
	return int(v), tag(err)
}

// StreamStart starts streaming.
func (m *MachDSP) StreamStart() error { return tag(m.d.StreamStart()) }

// StreamStop stops streaming.
func (m *MachDSP) StreamStop() error { return tag(m.d.StreamStop()) }

// StreamReset resets the stream.
func (m *MachDSP) StreamReset() error { return tag(m.d.StreamReset()) }

// StreamStatus writes the stream's status (MACHDSP_STATUS).
func (m *MachDSP) StreamStatus(rec, n int) (int, error) {
	s, err := m.d.StreamStatus()
	if err != nil {
		return 0, tag(err)
	}
	return putRecord(rec, n, &machdspStatusRecord{int64(s.TxBlockIdx), int64(s.RxBlockIdx), int64(s.TxBlockValid),
		int64(s.RxBlockValid), int64(s.State)})
}

// WriteSetting writes one setting.
func (m *MachDSP) WriteSetting(setting, v0, v1, v2 int) error {
	return tag(m.d.WriteSetting(machdsp.SettingsEntry(setting), uint16(v0), uint16(v1), uint16(v2)))
}

// ReadSettings writes the servo's settings (MACHDSP_SETTINGS).
func (m *MachDSP) ReadSettings(rec, n int) (int, error) {
	s, err := m.d.ReadSettings()
	if err != nil {
		return 0, tag(err)
	}
	return putRecord(rec, n, &machdspSettingsRecord{int64(s.UnderflowBehavior), int64(s.OverflowBehavior),
		int64(s.BlockCount), int64(s.BlockSamples), int64(s.MaxBufferSamples), int64(s.EnableReceive),
		int64(s.TriggerEdge), int64(s.InternalTrigger), int64(s.SampleDivisor), int64(s.MaxSampleDivisor),
		int64(s.AuxDivisor), int64(s.MaxAuxDivisor)})
}

// ResetSettings restores the default settings.
func (m *MachDSP) ResetSettings() error { return tag(m.d.ResetSettings()) }

// SetTriggerEdgeRising selects the trigger edge.
func (m *MachDSP) SetTriggerEdgeRising(rising bool) error {
	return tag(m.d.SetTriggerEdgeRising(rising))
}

// SetInternalTrigger sets the internal trigger's divisor.
func (m *MachDSP) SetInternalTrigger(divisor int) error { return tag(m.d.SetInternalTrigger(divisor)) }

// SetSampleDivisor sets the sample divisor.
func (m *MachDSP) SetSampleDivisor(divisor int) error { return tag(m.d.SetSampleDivisor(divisor)) }

// SetAuxDivisor sets the aux divisor.
func (m *MachDSP) SetAuxDivisor(divisor int) error { return tag(m.d.SetAuxDivisor(divisor)) }

// SetBlocks sets the stream's buffer.
func (m *MachDSP) SetBlocks(blockCount, blockSamples int) error {
	return tag(m.d.SetBlocks(blockCount, blockSamples))
}

// SetEnableReceive turns the input stream on or off.
func (m *MachDSP) SetEnableReceive(enable bool) error { return tag(m.d.SetEnableReceive(enable)) }

// SetOverflowBehavior sets the overflow behaviour (Overflow's value).
func (m *MachDSP) SetOverflowBehavior(b int) error {
	return tag(m.d.SetOverflowBehavior(machdsp.Overflow(b)))
}

// SetUnderflowBehavior sets the underflow behaviour (Underflow's value).
func (m *MachDSP) SetUnderflowBehavior(b int) error {
	return tag(m.d.SetUnderflowBehavior(machdsp.Underflow(b)))
}

// CheckError raises the servo's latched error.
func (m *MachDSP) CheckError() error { return tag(m.d.CheckError()) }

// ClearError reads and drops the servo's error.
func (m *MachDSP) ClearError() error { return tag(m.d.ClearError()) }

// HardReset reboots the servo.
func (m *MachDSP) HardReset() error { return tag(m.d.HardReset()) }

// Timeout is the read and write timeout in seconds.
func (m *MachDSP) Timeout() float64 { return m.d.Timeout().Seconds() }

// SetTimeout sets it.
func (m *MachDSP) SetTimeout(seconds float64) {
	m.d.SetTimeout(time.Duration(seconds * float64(time.Second)))
}

// Valid tells whether the port is open.
func (m *MachDSP) Valid() bool { return m.d.Valid() }

// Cancel ends the call in progress (Ctrl-C).
func (m *MachDSP) Cancel() { m.d.Cancel() }

// Info writes what opening learned (MACHDSP_INFO).
func (m *MachDSP) Info(rec, n int) (int, error) {
	i := m.d.Info()
	return putRecord(rec, n, &machdspInfoRecord{int64(i.Version.Major), int64(i.Version.Minor),
		int64(i.Version.Features), int64(i.ZeroPoint), i.PerLSB, int64(i.MaxBufferSamples),
		int64(i.MaxSampleDivisor), int64(i.MaxAuxDivisor)})
}

// MachDSPInfo writes the IO's servo's Info (MACHDSP_INFO).
func (m *MachDSPIO) MachDSPInfo(rec, n int) (int, error) {
	return (&MachDSP{d: m.m.Device()}).Info(rec, n)
}
