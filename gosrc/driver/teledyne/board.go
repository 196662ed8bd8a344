package teledyne

/*
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "shim.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"strings"
	"sync"
	"time"
	"unsafe"
)

// Errors a Board wraps (vortex's exception classes).
var (
	// ErrDriver is wrapped by every failure ADQAPI reports (vortex's teledyne::exception).
	ErrDriver = errors.New("teledyne")
	// ErrOverflow is a hardware buffer overflow: the host fell behind (vortex's buffer_overflow).
	ErrOverflow = errors.New("teledyne: buffer overflow")
	// ErrWaitTimeout is a wait that timed out (vortex's wait_timeout).
	ErrWaitTimeout = errors.New("teledyne: wait timeout")
	// ErrInvalid is a bad argument the driver refuses before ADQAPI sees it.
	ErrInvalid = errors.New("teledyne: invalid argument")
)

func driverErr(format string, a ...any) error {
	return fmt.Errorf("%w: %s", ErrDriver, fmt.Sprintf(format, a...))
}

// The enumerations below are the driver's own, with vortex's values (those
// of vortex's teledyne.TriggerSource etc., which are the ADQAPI releases'
// it was built against): Python and the acquisition see these. The board
// is given the installed header's value of the ADQAPI name each stands for
// (the maps below, through the layout table's constants); a value whose
// name the header lacks is refused (ErrLayout), one without a name
// (ErrInvalid).

// TriggerSource is vortex's teledyne.TriggerSource (ADQEventSource).
type TriggerSource int32

// The trigger sources.
const (
	TriggerPortTrig TriggerSource = 2  // ADQ_EVENT_SOURCE_TRIG
	TriggerPortSync TriggerSource = 9  // ADQ_EVENT_SOURCE_SYNC
	TriggerPortGPIO TriggerSource = 25 // ADQ_EVENT_SOURCE_GPIOA0
	TriggerPeriodic TriggerSource = 4  // ADQ_EVENT_SOURCE_PERIODIC
)

var triggerNames = map[TriggerSource]string{
	TriggerPortTrig: cEventTrig, TriggerPortSync: cEventSync, TriggerPortGPIO: cEventGPIOA0, TriggerPeriodic: cEventPeriodic,
}

// ClockGenerator is vortex's teledyne.ClockGenerator (ADQClockGenerator).
type ClockGenerator int32

// The clock generators.
const (
	ClockInternalPLL   ClockGenerator = 1 // ADQ_CLOCK_GENERATOR_INTERNAL_PLL
	ClockExternalClock ClockGenerator = 2 // ADQ_CLOCK_GENERATOR_EXTERNAL_CLOCK
)

var clockNames = map[ClockGenerator]string{ClockInternalPLL: cClockInternalPLL, ClockExternalClock: cClockExternal}

// ClockReferenceSource is vortex's teledyne.ClockReferenceSource (ADQReferenceClockSource).
type ClockReferenceSource int32

// The reference sources.
const (
	ReferenceInternal ClockReferenceSource = 1 // ADQ_REFERENCE_CLOCK_SOURCE_INTERNAL
	ReferencePortCLK  ClockReferenceSource = 2 // ADQ_REFERENCE_CLOCK_SOURCE_PORT_CLK
	ReferencePXIE10M  ClockReferenceSource = 3 // ADQ_REFERENCE_CLOCK_SOURCE_PXIE_10M
)

var referenceNames = map[ClockReferenceSource]string{
	ReferenceInternal: cRefInternal, ReferencePortCLK: cRefPortCLK, ReferencePXIE10M: cRefPXIE10M,
}

// HeaderName is the ADQAPI name trigger source, clock generator or
// reference source v stands for ("" for a value without one).
func HeaderName[T TriggerSource | ClockGenerator | ClockReferenceSource](v T) string {
	switch x := any(v).(type) {
	case TriggerSource:
		return triggerNames[x]
	case ClockGenerator:
		return clockNames[x]
	case ClockReferenceSource:
		return referenceNames[x]
	}
	return ""
}

// ClockEdges is vortex's teledyne.ClockEdges (FWOCT k-clock edges).
type ClockEdges int32

// The k-clock edges.
const (
	EdgesRising ClockEdges = iota
	EdgesFalling
	EdgesBoth
)

// FFTMode is vortex's teledyne.FFTMode (the FWOCT FFT's output).
type FFTMode int32

// The FFT modes.
const (
	FFTDisabled FFTMode = iota - 1
	FFTComplex
	FFTMagnitude
	FFTLogMagnitude
)

// InfiniteAcquisition is the records per acquisition that means "no end"
// (vortex's value); the board is given the header's ADQ_INFINITE_NOF_RECORDS.
const InfiniteAcquisition = int64(-1)

// BytesPerSample is the size of one sample in a transfer buffer.
const BytesPerSample = 2

// FWOCT register map (vortex's driver's).
const (
	regModuleID = iota
	regRecordLength
	regDebug
	regErrors
	regAddrReset
	regTableData
	regTableConfig
	regKClkDelay
	regConfig
	regPhaseInc
	regClearErrors
	regTrigRep
	regAvoidZeroPadding
)

const (
	fwoctIDMagic      = 0x4b
	fwoctPhaseUnity   = 0x10000
	fwoctBackgroundTb = 2
	fwoctWindowTb     = 4
)

// FWOCT describes the FWOCT firmware found on the board (vortex's info.fwoct).
type FWOCT struct {
	Detected                           bool
	AlignmentDivisor                   int
	Version, ID                        int
	OCTChannelCount, ClockChannelCount int
	FFTCapacity, SampleTimeCapacity    int
}

// Info is the board's constant description (vortex's teledyne.Info).
type Info struct {
	BoardIndex, DeviceNumber, BufferCount                   int
	HugepageBytes                                           int
	ProductName, ProductOptions, SerialNumber, FirmwareName string
	ChannelCount, PatternGeneratorCount                     int
	FWOCT                                                   FWOCT
}

// DeviceInfo is one entry of Enumerate (vortex's teledyne.DeviceInfo).
type DeviceInfo struct {
	ProductID int
	DevFile   string
}

// Board is an open ADQ digitizer (vortex's teledyne.Teledyne).
type Board struct {
	mu       sync.Mutex
	cu       uintptr
	p        *params // ADQParameters in C memory (libadq writes the buffer addresses into it), through the layout table
	ul       int     // the header's ADQ_USER_LOGIC2: the FWOCT registers' user logic
	info     Info
	channels []int
	started  bool
	closed   bool
}

// Open opens the board at boardIndex (from 0; vortex's board_t).
func Open(boardIndex int) (*Board, error) {
	if err := Load(); err != nil {
		return nil, err
	}
	if boardIndex < 0 || boardIndex > math.MaxInt32-1 {
		return nil, fmt.Errorf("%w: board index %d, expected >= 0", ErrInvalid, boardIndex)
	}
	cu := uintptr(C.vg_create())
	if cu == 0 {
		return nil, driverErr("failed to create ADQ API handle")
	}
	b := &Board{cu: cu}
	ok := false
	defer func() {
		if !ok {
			b.release()
		}
	}()
	lay := currentLayout()
	if level, err := lay.Constant(cLogLevelInfo); err == nil { // the trace is a help, not a need: none without the level
		C.vg_enable_error_trace(C.uintptr_t(cu), C.uint(level))
	}
	var list unsafe.Pointer
	var n C.uint
	if C.vg_list_devices(C.uintptr_t(cu), &list, &n) == 0 {
		return nil, driverErr("unable to list devices")
	}
	if boardIndex >= int(n) {
		return nil, driverErr("device index is out of range: %d >= %d", boardIndex, int(n))
	}
	if C.vg_setup_device(C.uintptr_t(cu), C.int(boardIndex)) == 0 {
		return nil, driverErr("unable to set up device %d", boardIndex)
	}
	top, err := lay.Constant(cParameterIDTop)
	if err != nil {
		return nil, err
	}
	ul, err := lay.Constant(cUserLogic2)
	if err != nil {
		return nil, err
	}
	b.ul = int(ul)
	b.p = &params{base: C.calloc(1, C.size_t(lay.Size)), lay: lay}
	if b.p.base == nil {
		return nil, driverErr("unable to allocate device parameters (%d bytes)", lay.Size)
	}
	// the transfer buffers: as many as the structure holds and the P2P status reports
	count := min(lay.Count(fRecordBuffer, 1), lay.Structures[sP2pStatus].Fields[mCompleted].Dims[1].Count)
	if m, err := lay.Constant(cMaxNofBuffers); err == nil && m > 0 {
		count = min(count, int(m))
	}
	b.info = Info{BoardIndex: boardIndex, DeviceNumber: boardIndex + 1, BufferCount: count, HugepageBytes: 1 << 30}
	got := int(C.vg_initialize_parameters(C.uintptr_t(cu), C.int(b.info.DeviceNumber), C.int(top), b.p.base))
	if got < 0 {
		return nil, driverErr("unable to allocate device parameters: %d", got)
	}
	if got != lay.Size {
		return nil, fmt.Errorf("%w: ADQ_InitializeParameters reports a %d-byte struct ADQParameters, the layout table %s "+
			"(from %s, ADQAPI %d.%d) a %d-byte one: the table was made from another ADQAPI's header than the library's; %s",
			ErrIncompatible, got, lay.Path, lay.Header, lay.APIVersion.Major, lay.APIVersion.Minor, lay.Size, layoutHowTo)
	}
	if err := b.readInfo(); err != nil {
		return nil, err
	}
	if b.p.has(fMemoryOwner) {
		_ = b.p.setEnum(fMemoryOwner, cMemoryOwnerAPI)
	} else {
		_ = b.p.setInt(fRecordsToHost, 1) // ADQAPI < 10: the API allocates the buffers in host RAM
	}
	_ = b.p.setInt(fPacked, 1)    // every channel of a buffer index back to back (vortex's layout)
	_ = b.p.setInt(fWriteLock, 1) // the board never writes a buffer the host holds
	_ = b.p.setEnum(fMarkerMode, cMarkerHostManual)
	if b.p.err != nil {
		return nil, b.p.err
	}
	data, err := b.readRegister(regModuleID)
	if err != nil {
		return nil, err
	}
	pop := func(n uint) int { v := int(data & (1<<n - 1)); data >>= n; return v }
	f := &b.info.FWOCT
	f.AlignmentDivisor = 8
	f.Version = pop(8)
	f.ID = pop(8)
	f.ClockChannelCount = pop(1)
	f.OCTChannelCount = pop(2)
	f.FFTCapacity = 1 << pop(5)
	f.SampleTimeCapacity = 1 << pop(5)
	f.Detected = f.ID == fwoctIDMagic
	ok = true
	return b, nil
}

func (b *Board) release() {
	if b.cu != 0 {
		C.vg_destroy(C.uintptr_t(b.cu))
		b.cu = 0
	}
	if b.p != nil {
		C.free(b.p.base)
		b.p = nil
	}
}

// readInfo reads the constant section into b.info.
func (b *Board) readInfo() error {
	var err error
	str := func(name string) string {
		v, e := b.p.getString(name)
		err = errors.Join(err, e)
		return v
	}
	num := func(name string) int {
		v, e := b.p.getInt(name)
		err = errors.Join(err, e)
		return int(v)
	}
	b.info.ProductName = str(fProductName)
	b.info.ProductOptions = str(fProductOptions)
	b.info.SerialNumber = str(fSerialNumber)
	b.info.FirmwareName = str(fFirmwareName)
	b.info.ChannelCount = num(fNofChannels)
	b.info.PatternGeneratorCount = num(fNofPatternGens)
	if n := b.p.lay.Count(fRecordLength, 0); err == nil && (b.info.ChannelCount < 0 || b.info.ChannelCount > n) {
		err = fmt.Errorf("%w: the board reports %d channels, the structure holds %d", ErrLayout, b.info.ChannelCount, n)
	}
	return err
}

// Close stops a capture and deletes the control unit.
func (b *Board) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil
	}
	b.closed = true
	if b.started {
		C.vg_stop(C.uintptr_t(b.cu), C.int(b.info.DeviceNumber)) // as vortex's destructor: the result does not matter
		b.started = false
	}
	b.release()
	return nil
}

// Info is the board's description.
func (b *Board) Info() Info { return b.info }

// Handle is the ADQ control unit's handle (0 once closed).
func (b *Board) Handle() uintptr {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.cu
}

// Valid reports whether the board is open.
func (b *Board) Valid() bool { return b.Handle() != 0 }

// Running reports whether a capture is started.
func (b *Board) Running() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.started
}

func (b *Board) readRegister(reg uint32) (uint32, error) {
	var v C.uint32_t
	if rc := C.vg_read_register(C.uintptr_t(b.cu), C.int(b.info.DeviceNumber), C.int(b.ul), C.uint32_t(reg), &v); rc != C.ADQ_EOK {
		return 0, driverErr("failed to read register %d: %d", reg, int(rc))
	}
	return uint32(v), nil
}

func (b *Board) writeRegister(reg, data uint32) error {
	if rc := C.vg_write_register(C.uintptr_t(b.cu), C.int(b.info.DeviceNumber), C.int(b.ul), C.uint32_t(reg), 0, C.uint32_t(data)); rc != C.ADQ_EOK {
		return driverErr("failed to write to value %d to register %d with mask %d: %d", data, reg, 0, int(rc))
	}
	return nil
}

// ConfigureSamplingClock sets the clock system (vortex's configure_sampling_clock).
func (b *Board) ConfigureSamplingClock(samplingHz, referenceHz float64, gen ClockGenerator, ref ClockReferenceSource, delay float64, lowJitter bool) {
	p := b.p
	_ = p.setFloat(fSamplingFrequency, samplingHz)
	_ = p.setFloat(fReferenceFrequency, referenceHz)
	_ = p.setEnum(fClockGenerator, p.enumName(clockNames[gen], "clock generator", int64(gen)))
	_ = p.setEnum(fReferenceSource, p.enumName(referenceNames[ref], "clock reference source", int64(ref)))
	_ = p.setFloat(fDelayAdjustment, delay)
	_ = p.setInt(fDelayAdjustmentOn, int64(b2u(delay != 0)))
	_ = p.setInt(fLowJitter, int64(b2u(lowJitter)))
}

// ConfigureTriggerSource sets every channel's trigger, the periodic
// source's frequency and trigger skipping through pattern generator 0
// (vortex's configure_trigger_source).
func (b *Board) ConfigureTriggerSource(src TriggerSource, periodicHz float64, offsetSamples int64, skip int32) error {
	p := b.p
	defer p.keepErr()() // this method returns its own refusals
	name, ok := triggerNames[src]
	if !ok {
		return fmt.Errorf("%w: trigger source %d is none of TriggerPortTrig, TriggerPortSync, TriggerPortGPIO, TriggerPeriodic", ErrInvalid, src)
	}
	value, err := p.lay.Constant(name)
	if err != nil {
		return err
	}
	errs := []error{p.setFloat(fPeriodicFrequency, periodicHz)}
	blocking := cFunctionInvalid
	if skip > 1 {
		blocking = cFunctionPG0
	}
	for ch := 0; ch < b.info.ChannelCount; ch++ {
		errs = append(errs, p.setInt(fHorizontalOffset, offsetSamples, ch), p.setInt(fTriggerSource, value, ch),
			p.setEnum(fTriggerBlocking, blocking, ch))
	}
	if skip <= 1 {
		errs = append(errs, p.setInt(fPGNofInstructions, 0, 0))
		return errors.Join(errs...)
	}
	if b.info.PatternGeneratorCount < 1 {
		return driverErr("triggering skipping requires a pattern generator but there are none: %d", b.info.PatternGeneratorCount)
	}
	errs = append(errs, p.setInt(fPGNofInstructions, 2, 0))
	for i, ins := range []struct{ count, out int64 }{{1, 0}, {int64(skip) - 1, 1}} {
		errs = append(errs, p.setEnum(fPGOp, cPGOperationEvent, 0, i), p.setInt(fPGSource, value, 0, i),
			p.setInt(fPGCount, ins.count, 0, i), p.setInt(fPGOutput, ins.out, 0, i), p.setInt(fPGOutputTransition, ins.out, 0, i))
	}
	return errors.Join(errs...)
}

// ConfigureTriggerSync passes the first channel's trigger to the SYNC port
// (vortex's configure_trigger_sync); call after ConfigureCapture.
func (b *Board) ConfigureTriggerSync(enable bool) error {
	p := b.p
	defer p.keepErr()() // this method returns its own refusals
	if !enable {
		return errors.Join(p.setEnum(fDaisySource, cEventInvalid), p.setEnum(fSyncFunction, cFunctionInvalid))
	}
	if len(b.channels) == 0 {
		return driverErr("no channels are active")
	}
	src, err := p.getInt(fTriggerSource, b.channels[0])
	if err != nil {
		return err
	}
	return errors.Join(p.setInt(fDaisySource, src), p.setEnum(fDaisyArm, cArmAtStart),
		p.setInt(fDaisyResync, 1), p.setInt(fDaisyPosition, 0),
		p.setEnum(fSyncDirection, cDirectionOut), p.setEnum(fSyncFunction, cFunctionDaisyChain),
		p.setInt(fSyncInvert, 0), p.setEnum(fSyncImpedance, cImpedance50))
}

// ConfigureCapture sets the active channels, record shape and transfer
// buffers (vortex's configure_capture).
func (b *Board) ConfigureCapture(mask uint32, samples int64, recordsPerBuffer int32, recordsPerAcquisition int64, testPattern bool, sampleSkip int64) {
	p := b.p
	b.channels = b.channels[:0]
	records := recordsPerAcquisition
	if records == InfiniteAcquisition {
		v, err := p.lay.Constant(cInfiniteNofRecords)
		records = v
		_ = p.note(err)
	}
	for ch := 0; ch < b.info.ChannelCount; ch++ {
		if mask&(1<<ch) == 0 {
			_ = p.setInt(fNofRecords, 0, ch)
			continue
		}
		b.channels = append(b.channels, ch)
		_ = p.setInt(fNofRecords, records, ch)
		_ = p.setInt(fRecordLength, samples, ch)
		_ = p.setFloat(fDCOffset, 0, ch)
		_ = p.setInt(fSkipFactor, sampleSkip, ch)
		_ = p.setInt(fRecordSize, BytesPerSample*samples, ch)
		_ = p.setInt(fInfiniteLength, 0, ch)
		_ = p.setInt(fRecordBufferSize, BytesPerSample*int64(recordsPerBuffer)*samples, ch)
		_ = p.setInt(fMetadata, 0, ch)
		_ = p.setInt(fNofBuffers, int64(b.info.BufferCount), ch)
		pattern := cTestPatternOff
		if testPattern {
			pattern = cTestPatternTri
		}
		_ = p.setEnum(fTestPattern, pattern, ch)
	}
}

// CommitConfiguration hands the parameters to the board (vortex's commit_configuration).
func (b *Board) CommitConfiguration() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.p.err != nil { // a setting the installed ADQAPI lacks a field for
		err := b.p.err
		b.p.err = nil
		return err
	}
	if rc := int(C.vg_set_parameters(C.uintptr_t(b.cu), C.int(b.info.DeviceNumber), b.p.base)); rc != b.p.lay.Size {
		return driverErr("ADQ SetParameters() failed: %d", rc)
	}
	return nil
}

func pushBits(data *uint32, n uint, v uint32) error {
	if v&(1<<n-1) != v {
		return fmt.Errorf("%w: value %d exceeds %d bits", ErrInvalid, v, n)
	}
	*data = *data<<n | v
	return nil
}

func fixedPoint(v float64, intBits, fracBits uint) uint32 {
	return uint32(int64(v*float64(uint64(1)<<fracBits))) & (1<<(intBits+fracBits) - 1)
}

// ConfigureFWOCT programs the FWOCT firmware's registers: record length,
// channel mapping, k-clock delay (15.12 fixed point), resampling phase
// increment, the background (int16) and spectral filter (2.14 fixed point)
// tables and the FFT (vortex's configure_fwoct).
func (b *Board) ConfigureFWOCT(recordLength uint32, edges ClockEdges, clockDelaySamples, relativePhaseIncrement float64,
	background []int16, window []complex64, mode FFTMode, channelMapping uint32) error {
	f := b.info.FWOCT
	if err := b.writeRegister(regRecordLength, recordLength); err != nil {
		return err
	}
	if err := b.writeRegister(regDebug, channelMapping); err != nil {
		return err
	}
	if err := b.writeRegister(regKClkDelay, fixedPoint(clockDelaySamples, 15, 12)); err != nil {
		return err
	}
	if err := b.writeRegister(regPhaseInc, uint32(fwoctPhaseUnity*relativePhaseIncrement)); err != nil {
		return err
	}
	fftPo2, magnitude := uint32(0), uint32(0)
	if mode != FFTDisabled {
		if f.Version < 8 {
			return driverErr("FFT requires FWOCT version >= 8 (current version == %d)", f.Version)
		}
		fftPo2 = uint32(bits.Len32(recordLength - 1))
		magnitude = uint32(mode)
	}
	pre := len(background) > 0 || len(window) > 0
	var config uint32
	for _, fld := range []struct {
		n uint
		v uint32
	}{{1, 0}, {1, 0}, {1, 0}, {4, fftPo2}, {1, 0}, {2, magnitude}, {1, b2u(mode != FFTDisabled)}, {1, b2u(pre)}, {1, 0}, {2, uint32(edges)}} {
		if err := pushBits(&config, fld.n, fld.v); err != nil {
			return err
		}
	}
	if err := b.writeRegister(regConfig, config); err != nil {
		return err
	}
	if pre {
		if f.Version < 8 {
			return driverErr("FFT preprocessor requires FWOCT version >= 8 (current version == %d)", f.Version)
		}
		table := func(base uint32, value func(i int) uint32) error {
			for _, w := range [][2]uint32{{regAddrReset, 1}, {regAddrReset, 0}, {regTableConfig, base}} {
				if err := b.writeRegister(w[0], w[1]); err != nil {
					return err
				}
			}
			for i := 0; i < f.FFTCapacity; i++ {
				if err := b.writeRegister(regTableData, value(i)); err != nil {
					return err
				}
			}
			return nil
		}
		if err := table(fwoctBackgroundTb, func(i int) uint32 {
			if i < len(background) && i < int(recordLength) {
				return uint32(uint16(background[i]))
			}
			return 0
		}); err != nil {
			return err
		}
		if err := table(fwoctWindowTb, func(i int) uint32 {
			v := complex64(1)
			if i < len(window) && i < int(recordLength) {
				v = window[i]
			}
			return fixedPoint(float64(imag(v)), 2, 14)<<16 | fixedPoint(float64(real(v)), 2, 14)
		}); err != nil {
			return err
		}
	}
	if err := b.writeRegister(regTrigRep, 0); err != nil {
		return err
	}
	return b.writeRegister(regAvoidZeroPadding, 0)
}

func b2u(v bool) uint32 {
	if v {
		return 1
	}
	return 0
}

// StartCapture starts the acquisition (vortex's start_capture).
func (b *Board) StartCapture() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if rc := C.vg_start(C.uintptr_t(b.cu), C.int(b.info.DeviceNumber)); rc != C.ADQ_EOK {
		return driverErr("start acquisition failed: %d", int(rc))
	}
	b.started = true
	return nil
}

// StopCapture stops the acquisition (vortex's stop_capture).
func (b *Board) StopCapture() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.cu == 0 {
		return nil
	}
	rc := C.vg_stop(C.uintptr_t(b.cu), C.int(b.info.DeviceNumber))
	b.started = false
	if rc != C.ADQ_EOK && rc != C.ADQ_EINTERRUPTED && rc != C.ADQ_ENOTREADY {
		return driverErr("stop acquisition failed: %d", int(rc))
	}
	return nil
}

// RecordsPerBuffer is the records of one transfer buffer.
func (b *Board) RecordsPerBuffer() int {
	if len(b.channels) == 0 {
		return 0
	}
	size, err1 := b.p.getInt(fRecordBufferSize, b.channels[0])
	rec, err2 := b.p.getInt(fRecordSize, b.channels[0])
	if err1 != nil || err2 != nil || rec <= 0 {
		return 0
	}
	return int(size / rec)
}

// WaitAndLockBuffer waits up to timeout for transfer buffer index to be
// complete on every active channel and returns its address (packed: every
// channel back to back) and records; the buffer stays locked until
// UnlockBuffer (vortex's wait_and_lock_buffer).
func (b *Board) WaitAndLockBuffer(index int, timeout time.Duration) (unsafe.Pointer, int, error) {
	if index < 0 || index >= b.info.BufferCount {
		return nil, 0, fmt.Errorf("%w: index exceeds buffer count: %d > %d", ErrInvalid, index, b.info.BufferCount)
	}
	if len(b.channels) == 0 {
		return nil, 0, driverErr("no channels are active")
	}
	deadline := time.Now().Add(timeout)
	// struct ADQP2pStatus in C memory of the table's size, read through its offsets
	lay := b.p.lay
	st := view{C.calloc(1, C.size_t(lay.Structures[sP2pStatus].Size)), lay.Structures[sP2pStatus], sP2pStatus}
	if st.base == nil {
		return nil, 0, driverErr("unable to allocate the P2P status")
	}
	defer C.free(st.base)
	for {
		ms := max(time.Until(deadline).Milliseconds(), 0)
		rc := C.vg_wait_p2p(C.uintptr_t(b.cu), C.int(b.info.DeviceNumber), st.base, C.int(ms))
		if rc == C.ADQ_EAGAIN {
			over, err := b.overflow()
			if err != nil {
				return nil, 0, driverErr("unable to query device overflow status after a timeout for buffer %d: %v", index, err)
			}
			if over {
				return nil, 0, fmt.Errorf("%w: hardware buffer overflow at buffer %d", ErrOverflow, index)
			}
			return nil, 0, fmt.Errorf("%w: acquisition timeout for buffer %d", ErrWaitTimeout, index)
		}
		if rc != C.ADQ_EOK {
			return nil, 0, driverErr("unable to query buffer status: %d", int(rc))
		}
		ready := true
		for _, ch := range b.channels {
			n, err := st.getInt(mNofCompleted, ch)
			if err != nil {
				return nil, 0, err
			}
			found := false
			for k := 0; k < int(n) && !found; k++ {
				v, err := st.getInt(mCompleted, ch, k)
				if err != nil {
					return nil, 0, err
				}
				found = int(v) == index
			}
			ready = ready && found
		}
		if ready {
			buf, err := b.p.getPointer(fRecordBuffer, b.channels[0], index)
			if err != nil {
				return nil, 0, err
			}
			return buf, b.RecordsPerBuffer(), nil
		}
		if time.Now().After(deadline) {
			return nil, 0, fmt.Errorf("%w: acquisition timeout for buffer %d", ErrWaitTimeout, index)
		}
	}
}

// overflow reads ADQ_GetStatus(ADQ_STATUS_ID_OVERFLOW) into struct
// ADQOverflowStatus (C memory of the table's size, through its offsets).
func (b *Board) overflow() (bool, error) {
	lay := b.p.lay
	st := lay.Structures[sOverflow]
	if st == nil {
		return false, fmt.Errorf("%w: the installed ADQAPI %d.%d's header declares no struct ADQOverflowStatus (layout table %s)",
			ErrLayout, lay.APIVersion.Major, lay.APIVersion.Minor, lay.Path)
	}
	id, err := lay.Constant(cStatusIDOverflow)
	if err != nil {
		return false, err
	}
	v := view{C.calloc(1, C.size_t(st.Size)), st, sOverflow}
	if v.base == nil {
		return false, errors.New("unable to allocate the overflow status")
	}
	defer C.free(v.base)
	if rc := int(C.vg_get_status(C.uintptr_t(b.cu), C.int(b.info.DeviceNumber), C.int(id), v.base)); rc != st.Size {
		return false, fmt.Errorf("ADQ_GetStatus returned %d, expected the structure's %d bytes", rc, st.Size)
	}
	o, err := v.getInt(mOverflow)
	return o != 0, err
}

// UnlockBuffer hands transfer buffer index back to the board (vortex's unlock_buffer).
func (b *Board) UnlockBuffer(index int) error {
	if index < 0 || index >= b.info.BufferCount {
		return fmt.Errorf("%w: index exceeds buffer count: %d > %d", ErrInvalid, index, b.info.BufferCount)
	}
	for _, ch := range b.channels {
		if rc := C.vg_unlock_p2p(C.uintptr_t(b.cu), C.int(b.info.DeviceNumber), C.int(ch), C.uint64_t(1)<<index); rc != C.ADQ_EOK {
			return driverErr("failed to unlock buffer %d for channel %d: %d", index, ch, int(rc))
		}
	}
	return nil
}

// Enumerate lists the ADQ devices in the system (vortex's enumerate).
func Enumerate() ([]DeviceInfo, error) {
	if err := Load(); err != nil {
		return nil, err
	}
	cu := C.vg_create()
	if cu == 0 {
		return nil, driverErr("failed to create ADQ API handle")
	}
	defer C.vg_destroy(cu)
	var list unsafe.Pointer
	var n C.uint
	if C.vg_list_devices(cu, &list, &n) == 0 {
		return nil, driverErr("ADQ ListDevices() failed.")
	}
	// ADQInfoListEntry[n], each entry the table's size, read through its offsets
	st := currentLayout().Structures[sInfoList]
	out := make([]DeviceInfo, int(n))
	for i := range out {
		e := view{unsafe.Add(list, i*st.Size), st, sInfoList}
		pid, err := e.getInt(mProductID)
		if err != nil {
			return nil, err
		}
		dev, err := e.getString(mDevFile)
		if err != nil {
			return nil, err
		}
		out[i] = DeviceInfo{ProductID: int(pid), DevFile: dev}
	}
	return out, nil
}

// ChannelMaskString is vortex's channel_mask_to_string ("0+1", "None").
func ChannelMaskString(mask uint32) string {
	var s []string
	for i := 0; i < 32; i++ {
		if mask&(1<<i) != 0 {
			s = append(s, fmt.Sprint(i))
		}
	}
	if len(s) == 0 {
		return "None"
	}
	return strings.Join(s, "+")
}
