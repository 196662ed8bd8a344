package alazar

import (
	"errors"
	"fmt"
	"math"
	"sync/atomic"
	"time"
)

// InfoType is a board's model (vortex's info_t::type_t).
type InfoType struct {
	// ID is the SDK's BOARD_TYPE; Model its name ("ATS9360"; "UNKNOWN").
	ID    uint32
	Model string
}

// InfoPCIe is a board's PCIe link (vortex's info_t::pcie_t).
type InfoPCIe struct {
	// Speed is in units of 2.5 Gb/s, Width in lanes; SpeedGbps = 2.5*Speed.
	Speed, Width uint32
	SpeedGbps    float64
}

// Info describes a board (vortex's board_t::info_t).
type Info struct {
	SystemIndex, BoardIndex       uint32
	SerialNumber, CalibrationDate uint32
	OnboardMemorySize             uint32
	BitsPerSample                 uint8
	Type                          InfoType
	PCIe                          InfoPCIe
	SupportedChannels             []Channel
	SupportedSamplingRates        []int
	SupportedInputCombinations    []InputCombination
	MaxPretriggerSamples          uint32
	MinSamplesPerRecord           uint32
	SampleAlignmentDivisor        uint32
	Features                      Features
	// DSPModules is how many on-FPGA DSP modules the board has; DSP
	// describes them (dsp.go).
	DSPModules uint32
	DSP        []DSP
	// DAC is the galvo DAC's (dac.go).
	DAC DAC
}

// MaxSamplingRate is the highest of SupportedSamplingRates (0 if none).
func (i *Info) MaxSamplingRate() int {
	m := 0
	for _, r := range i.SupportedSamplingRates {
		m = max(m, r)
	}
	return m
}

// NearestAlignedSamplesPerRecord rounds target to the nearest multiple of
// SampleAlignmentDivisor.
func (i *Info) NearestAlignedSamplesPerRecord(target float64) uint32 {
	d := float64(i.SampleAlignmentDivisor)
	return uint32(math.Round(target/d) * d)
}

// SmallestAlignedSamplesPerRecord rounds target up to a multiple of
// SampleAlignmentDivisor.
func (i *Info) SmallestAlignedSamplesPerRecord(target float64) uint32 {
	d := float64(i.SampleAlignmentDivisor)
	return uint32(math.Ceil(target/d) * d)
}

// Board is one digitizer (vortex's vortex::alazar::board_t). Its
// configuration calls are for one goroutine; StopCapture may come from
// another while WaitBuffer waits (it ends the wait).
type Board struct {
	h       uintptr
	info    Info
	started atomic.Bool
	dsp     atomic.Bool // the capture runs through the FFT module (dsp.go)
}

// Open loads the library (Load) and opens board boardIndex of system
// systemIndex (both from 1), reading its Info.
func Open(systemIndex, boardIndex uint32) (*Board, error) {
	if _, err := Load(); err != nil {
		return nil, err
	}
	h := boardByID(systemIndex, boardIndex)
	if h == 0 {
		return nil, fmt.Errorf("unable to open Alazar board %d-%d: board not found", systemIndex, boardIndex)
	}
	b := &Board{h: h}
	in := &b.info
	in.SystemIndex, in.BoardIndex = systemIndex, boardIndex
	in.SerialNumber, _ = queryCapability(h, capSerialNumber)
	in.CalibrationDate, _ = queryCapability(h, capLatestCalDate)
	in.OnboardMemorySize, in.BitsPerSample, _ = channelInfo(h)
	in.Type.ID, _ = queryCapability(h, capBoardType)
	in.Type.Model = "UNKNOWN"
	if m, ok := boardKinds[in.Type.ID]; ok {
		in.Type.Model = m
	}
	in.PCIe.Speed, _ = queryCapability(h, capPCIeLinkSpeed)
	in.PCIe.SpeedGbps = float64(in.PCIe.Speed) * 2.5
	in.PCIe.Width, _ = queryCapability(h, capPCIeLinkWidth)
	in.MaxPretriggerSamples, _ = queryCapability(h, capMaxPretrigger)
	al, ok := alignments[in.Type.Model]
	if !ok {
		al = defaultAlignment
	}
	in.MinSamplesPerRecord, in.SampleAlignmentDivisor = al.minRecord, al.resolution
	in.Features = features[in.Type.Model]
	if flags, rc := queryCapability(h, capBoardOptionsLow); rc == ApiSuccess {
		in.Features.DualPortMemory = flags&optionDualPortMemory != 0
		in.Features.DualEdgeSampling = in.Features.DualEdgeSampling || flags&optionDualEdge != 0
	}
	if n, rc := getParameter(h, 0, parChannelsPerBoard); rc == ApiSuccess {
		in.SupportedChannels = append([]Channel(nil), AllChannels[:min(max(n, 0), 16)]...)
	}
	in.SupportedSamplingRates = append([]int(nil), supportedRates[in.Type.Model]...)
	in.SupportedInputCombinations = append([]InputCombination(nil), inputCombinations[in.Type.Model]...)
	n, rc := dspModuleCount(h)
	if err := check(rc, "unable to query DSP module count"); err != nil {
		return nil, err
	}
	in.DSPModules = n
	dsp, err := readDSP(h, n)
	if err != nil {
		return nil, err
	}
	in.DSP = dsp
	in.DAC = readDAC(h)
	return b, nil
}

// Enumerate opens every board of every system (vortex's enumerate).
func Enumerate() ([]*Board, error) {
	if _, err := Load(); err != nil {
		return nil, err
	}
	var boards []*Board
	for sid := uint32(1); sid <= numSystems(); sid++ {
		for bid := uint32(1); bid <= boardsInSystem(sid); bid++ {
			b, err := Open(sid, bid)
			if err != nil {
				return nil, err
			}
			boards = append(boards, b)
		}
	}
	return boards, nil
}

// Info describes the board.
func (b *Board) Info() Info { return b.info }

// Handle is the SDK's handle of the board.
func (b *Board) Handle() uintptr { return b.h }

// Valid reports whether the board was opened.
func (b *Board) Valid() bool { return b != nil && b.h != 0 }

// Running reports whether a capture was started and not stopped.
func (b *Board) Running() bool { return b.started.Load() }

// ConfigureClockExternal samples on an external clock; level is a ratio
// in [0, 1] (applied on boards with Features.SetExternalClockLevel).
func (b *Board) ConfigureClockExternal(level float32, coupling Coupling, edge ClockEdge, decimation uint32) error {
	src := uint32(externalClockAC)
	if coupling == CouplingDC {
		src = externalClockDC
	}
	if err := check(setCaptureClock(b.h, src, sampleRateUserDef, uint32(edge), decimation),
		"failed to configure external %d clock on edge %d with decimation %d", uint32(coupling), uint32(edge), decimation); err != nil {
		return err
	}
	if b.info.Features.SetExternalClockLevel {
		return check(setExternalClockLevel(b.h, 100*level), "failed to set external clock level to %v", level)
	}
	return nil
}

// ConfigureClockInternal samples on the internal clock at samplesPerSecond
// (one of the SDK's rates).
func (b *Board) ConfigureClockInternal(samplesPerSecond int, decimation uint32) error {
	id, err := lookupID(sampleRateIDs, samplesPerSecond, "sampling rate")
	if err != nil {
		return err
	}
	return check(setCaptureClock(b.h, internalClock, id, 0, decimation),
		"failed to configure internal clock at %d samples/s and decimation %d", samplesPerSecond, decimation)
}

// ConfigureInput sets one channel's coupling, range and impedance.
func (b *Board) ConfigureInput(channel Channel, coupling Coupling, rangeMillivolts, impedanceOhms int) error {
	r, err := lookupID(inputRangeIDs, rangeMillivolts, "input range (mV)")
	if err != nil {
		return err
	}
	z, err := lookupID(impedanceIDs, impedanceOhms, "impedance (Ohms)")
	if err != nil {
		return err
	}
	return check(inputControlEx(b.h, uint32(channel), uint32(coupling), r, z),
		"failed to configure channel %s with coupling %s, range %d, and impedance %d", channel, coupling, rangeMillivolts, impedanceOhms)
}

// triggerLevel maps a level ratio in [-1, 1] to the SDK's 0..255.
func triggerLevel(level float32) uint32 {
	return uint32(min(max((level+1)/2*255, 0), 255))
}

// ConfigureSingleTriggerExternal triggers on the external input through
// engine J (level a ratio in [-1, 1]).
func (b *Board) ConfigureSingleTriggerExternal(rangeMillivolts int, level float32, delaySamples int, slope TriggerSlope, coupling Coupling) error {
	if err := check(setTriggerOperation(b.h, trigEngineOpJ, trigEngineJ, trigExternal, uint32(slope), triggerLevel(level),
		trigEngineK, trigDisable, uint32(TriggerSlopePositive), 0),
		"failed set single external trigger on engine J with level %v%% and slope %d", 100*level, uint32(slope)); err != nil {
		return err
	}
	return b.configureExternalTrigger(rangeMillivolts, delaySamples, coupling)
}

// ConfigureDualTriggerExternal triggers on both edges of the external
// input (engines J or K, the second on the opposite slope).
func (b *Board) ConfigureDualTriggerExternal(rangeMillivolts int, first, second float32, delaySamples int, slope TriggerSlope, coupling Coupling) error {
	other := TriggerSlopePositive
	if slope == TriggerSlopePositive {
		other = TriggerSlopeNegative
	}
	if err := check(setTriggerOperation(b.h, trigEngineOpJOrK, trigEngineJ, trigExternal, uint32(slope), triggerLevel(first),
		trigEngineK, trigExternal, uint32(other), triggerLevel(second)),
		"failed set dual external trigger on engine (J or K) with levels %v%% / %v%% and slope %d / %d",
		100*first, 100*second, uint32(slope), uint32(other)); err != nil {
		return err
	}
	return b.configureExternalTrigger(rangeMillivolts, delaySamples, coupling)
}

func (b *Board) configureExternalTrigger(rangeMillivolts, delaySamples int, coupling Coupling) error {
	r, err := lookupID(triggerRangeIDs, rangeMillivolts, "trigger range (V)")
	if err != nil {
		return err
	}
	if err := check(setExternalTrigger(b.h, uint32(coupling), r),
		"failed set external trigger range %d mV (0 mV means TTL) and coupling %d", rangeMillivolts, uint32(coupling)); err != nil {
		return err
	}
	if delaySamples < 0 || delaySamples > math.MaxUint32 {
		return fmt.Errorf("trigger delay of %d samples does not fit the SDK's 32 bits", delaySamples)
	}
	return check(setTriggerDelay(b.h, uint32(delaySamples)),
		"failed set trigger delay to %d samples (check trigger delay alignment)", delaySamples)
}

// ConfigureAuxIOTriggerOut passes the trigger to the AUX connector.
func (b *Board) ConfigureAuxIOTriggerOut() error {
	return check(configureAuxIO(b.h, auxOutTrigger, 0), "failed to set auxiliary I/O to trigger output")
}

// ConfigureAuxIOClockOut passes the sample clock to the AUX connector.
func (b *Board) ConfigureAuxIOClockOut() error {
	return check(configureAuxIO(b.h, auxOutClock, 0), "failed to set auxiliary I/O to clock output")
}

// ConfigureAuxIOPacerOut outputs the sample clock divided by divider.
func (b *Board) ConfigureAuxIOPacerOut(divider uint32) error {
	return check(configureAuxIO(b.h, auxOutPacer, divider), "failed to set auxiliary I/O to pacer output with divider %d", divider)
}

// SetIgnoreBadClock is the SDK's OCT ignore-bad-clock option.
func (b *Board) SetIgnoreBadClock(enable bool, goodSeconds, badSeconds float64) error {
	return check(octIgnoreBadClock(b.h, enable, goodSeconds, badSeconds),
		"failed to set OCT ignore bad clock %v with good %v s and bad %v s", enable, goodSeconds, badSeconds)
}

// SetDualEdgeSampling switches dual-edge sampling of the channel mask.
func (b *Board) SetDualEdgeSampling(channel uint8, enable bool) error {
	mode := uint32(adcModeDefault)
	if enable {
		mode = adcModeDES
	}
	return check(setParameterUL(b.h, channel, parSetADCMode, mode), "failed to set dual edge sampling %v on channel %d", enable, channel)
}

// ConfigureSampleSkipping keeps the samples whose bits are set among
// clocksPerRecord clocks; clocksPerRecord 0 (or no bitmap) disables it.
func (b *Board) ConfigureSampleSkipping(clocksPerRecord uint32, bitmap []uint16) error {
	if clocksPerRecord > 0 && len(bitmap) > 0 {
		if uint64(len(bitmap))*16 < uint64(clocksPerRecord) {
			return fmt.Errorf("sample skipping bitmap of %d words covers %d clocks, expected >= %d", len(bitmap), 16*len(bitmap), clocksPerRecord)
		}
		return check(configureSampleSkipping(b.h, ssmEnable, clocksPerRecord, bitmap),
			"unable to enable sample skipping with %d clocks per record", clocksPerRecord)
	}
	return check(configureSampleSkipping(b.h, ssmDisable, 0, nil), "unable to disable sample skipping")
}

// captureFlags are vortex's AutoDMA flags: no pre-trigger, started by
// AlazarStartCapture, channels interleaved; FIFO streaming on boards
// without on-board memory.
func (b *Board) captureFlags() uint32 {
	f := uint32(admaNPT | admaExternalStart | admaInterleave)
	if b.info.OnboardMemorySize == 0 {
		f |= admaFIFOOnly
	}
	return f
}

// ConfigureCapture sets the record size and readies an asynchronous
// acquisition of recordsPerBuffer records per posted buffer.
func (b *Board) ConfigureCapture(channels Channel, samplesPerRecord, recordsPerBuffer, recordsPerAcquisition uint32, transferOffset int64) error {
	if err := check(setRecordSize(b.h, 0, samplesPerRecord),
		"failed to set record size to zero pre-trigger samples and %d post-trigger samples", samplesPerRecord); err != nil {
		return err
	}
	flags := b.captureFlags()
	b.dsp.Store(false)
	return check(beforeAsyncRead(b.h, uint32(channels), transferOffset, samplesPerRecord, recordsPerBuffer, recordsPerAcquisition, flags),
		"failed to configure capture for channels %s with offset %d, samples per record %d, records per buffer %d, and records per acquisition %d (flags = 0x%x)",
		channels, transferOffset, samplesPerRecord, recordsPerBuffer, recordsPerAcquisition, flags)
}

// StartCapture starts the acquisition configured by ConfigureCapture.
func (b *Board) StartCapture() error {
	if err := check(startCapture(b.h), "failed to start capture"); err != nil {
		return err
	}
	b.started.Store(true)
	return nil
}

// StopCapture aborts the acquisition: posted buffers are abandoned (the
// board writes none of them after it returns) and a WaitBuffer in
// progress returns. The board is then ready for ConfigureCapture again.
func (b *Board) StopCapture() error {
	rc := b.abort()
	b.started.Store(false)
	return check(rc, "failed to stop capture")
}

// PostBuffer queues size bytes of pinned memory at ptr to be filled.
func (b *Board) PostBuffer(ptr uintptr, size int) error {
	if size < 0 || size > math.MaxUint32 {
		return fmt.Errorf("failed to post buffer 0x%x size %d bytes: the SDK takes at most 4 GiB", ptr, size)
	}
	return check(postAsyncBuffer(b.h, ptr, uint32(size)), "failed to post buffer 0x%x size %d bytes", ptr, size)
}

// WaitBuffer waits up to timeout for the oldest posted buffer, ptr, to be
// filled; a negative timeout waits until it is (vortex's wait_buffer
// without a timeout: retried on ApiWaitTimeout).
func (b *Board) WaitBuffer(ptr uintptr, timeout time.Duration) error {
	if timeout < 0 {
		for {
			rc := b.wait(ptr, math.MaxUint32)
			if rc != ApiWaitTimeout {
				return check(rc, "failed to wait for buffer 0x%x", ptr)
			}
		}
	}
	ms := min(timeout.Milliseconds(), math.MaxUint32-1)
	return check(b.wait(ptr, uint32(ms)), "failed to wait for buffer 0x%x", ptr)
}

// BufferBytesPerSample is the bytes one sample takes in a buffer.
func (b *Board) BufferBytesPerSample() (float64, error) {
	packing, rc := getParameter(b.h, 0, parPackMode)
	if rc == ApiUnsupportedFunction {
		packing, rc = packDefault, ApiSuccess
	}
	if err := check(ReturnCode(rc), "failed to get packing mode"); err != nil {
		return 0, err
	}
	switch {
	case packing == packDefault:
		return math.Ceil(float64(b.info.BitsPerSample) / 8), nil
	case b.info.BitsPerSample == 12 && packing == pack12Bits:
		return 1.5, nil
	}
	return 0, fmt.Errorf("unknown combination of bits per sample %d and packing %d", b.info.BitsPerSample, packing)
}

func (b *Board) parameterUL(parameter uint32, what string) (int, error) {
	v, rc := getParameterUL(b.h, 0, parameter)
	if err := check(rc, "failed to get %s", what); err != nil {
		return 0, err
	}
	return int(v), nil
}

// SamplesPerRecord is the record length the board is set to.
func (b *Board) SamplesPerRecord() (int, error) {
	return b.parameterUL(parRecordLength, "samples per record (record length)")
}

// RecordCaptureCount is the records captured since the capture started.
func (b *Board) RecordCaptureCount() (int, error) {
	return b.parameterUL(parRecordsCaptured, "record capture count")
}

// PendingBufferCount is the posted buffers not filled yet.
func (b *Board) PendingBufferCount() (int, error) {
	return b.parameterUL(parAsyncBuffersPending, "pending count")
}

// Close stops a capture still running (vortex's board_t destructor).
func (b *Board) Close() error {
	if b.started.Load() {
		return b.StopCapture()
	}
	return nil
}

// IsDriverError reports whether err came from an SDK call (an *Error).
func IsDriverError(err error) bool {
	var e *Error
	return errors.As(err, &e)
}
