package alazar

import (
	"fmt"
	"math"
)

// The on-FPGA DSP modules (vortex's board_t::info_t::dsp_t and the FFT
// calls of board_t). Names, signatures and constants are from the
// ATS-SDK's public header AlazarDSP.h (e.g. the copy in
// github.com/mgliewe/qrnds, thrd-party/ats/include); behaviour and
// messages follow vortex's driver.

// DSPModuleFFT is the SDK's DSP_MODULE_FFT type of a module.
const DSPModuleFFT = 0x10000

// The FFT output formats (the SDK's FFT_OUTPUT_FORMAT): vortex asks for
// 16-bit log amplitude, optionally preceded by the time-domain record.
const (
	FFTOutputFormatU16Log     = 0x1
	FFTOutputFormatRawPlusFFT = 0x1000
)

const (
	dspRawPlusFFTSupported    = 0
	dspFFTSubtractorSupported = 1
	admaDSP                   = 0x4000
	fftFooterNone             = 0
)

// ApiInvalidDspModule is the SDK's code for a DSP call on the wrong kind
// of module or acquisition.
const ApiInvalidDspModule ReturnCode = 596

// DSPVersion is a DSP module's version (vortex's dsp_t::version_t).
type DSPVersion struct {
	Major, Minor uint16
}

// DSP is one on-FPGA DSP module (vortex's info_t::dsp_t).
type DSP struct {
	// Handle is the SDK's dsp_module_handle.
	Handle uintptr
	// Type is the module's kind (DSPModuleFFT for the FFT).
	Type    uint32
	Version DSPVersion
	// MaxRecordLength is the longest record (FFT) the module takes.
	MaxRecordLength   uint32
	SupportedChannels Channel
	// FFTTimeDomainSupported: RAW_PLUS_FFT records; FFTSubtractorSupported:
	// background subtraction.
	FFTTimeDomainSupported bool
	FFTSubtractorSupported bool
}

// MaxTriggerRatePerFFTLength is the highest trigger rate (Hz) the module
// sustains at FFT length n (AlazarFFTGetMaxTriggerRepeatRate).
func (d *DSP) MaxTriggerRatePerFFTLength(n uint32) (float64, error) {
	r, rc := fftMaxTriggerRate(d.Handle, n)
	if err := check(rc, "unable to query maximum trigger rate for FFT length %d", n); err != nil {
		return 0, err
	}
	return r, nil
}

// readDSP lists the board's DSP modules as vortex's board_t constructor
// does (a failed query of a module's details leaves them zero).
func readDSP(h uintptr, n uint32) ([]DSP, error) {
	if n == 0 {
		return nil, nil
	}
	handles, rc := dspModules(h, n)
	if err := check(rc, "unable to open DSP modules"); err != nil {
		return nil, err
	}
	out := make([]DSP, len(handles))
	for i, d := range handles {
		m := &out[i]
		m.Handle = d
		var ch uint32
		var rc ReturnCode
		m.Type, m.Version.Major, m.Version.Minor, m.MaxRecordLength, ch, rc = dspGetInfo(d)
		if rc == ApiSuccess {
			m.SupportedChannels = Channel(ch)
		}
		if m.Type == DSPModuleFFT {
			if v, rc := dspGetParameterU32(d, dspRawPlusFFTSupported); rc == ApiSuccess {
				m.FFTTimeDomainSupported = v != 0
			}
			if v, rc := dspGetParameterU32(d, dspFFTSubtractorSupported); rc == ApiSuccess {
				m.FFTSubtractorSupported = v != 0
			}
		}
	}
	return out, nil
}

// FindFFTInfo is the board's FFT module; without one the error matches
// ErrUnsupported (vortex's "FFT module is not available").
func (i *Info) FindFFTInfo() (*DSP, error) {
	for k := range i.DSP {
		if i.DSP[k].Type == DSPModuleFFT {
			return &i.DSP[k], nil
		}
	}
	return nil, &Error{Msg: "FFT module is not available", Code: ApiUnsupportedFunction, Text: errorText(ApiUnsupportedFunction)}
}

// ConfigureFFTWindow sets the FFT's window of n samples: real and imag
// (each n long), or both nil for the SDK's flat window (vortex's default).
func (b *Board) ConfigureFFTWindow(n uint32, real, imag []float32) error {
	fft, err := b.info.FindFFTInfo()
	if err != nil {
		return err
	}
	if (real == nil) != (imag == nil) || (real != nil && (len(real) != int(n) || len(imag) != int(n))) {
		return fmt.Errorf("unable to set FFT window function of length %d: %d real and %d imaginary values", n, len(real), len(imag))
	}
	return check(fftSetWindow(fft.Handle, n, real, imag), "unable to set FFT window function of length %d", n)
}

// ConfigureFFTBackgroundSubtraction subtracts background (signed samples)
// from each record before the FFT; an empty background disables it.
func (b *Board) ConfigureFFTBackgroundSubtraction(background []int16) error {
	fft, err := b.info.FindFFTInfo()
	if err != nil {
		return err
	}
	enable := len(background) > 0
	if enable {
		if err := check(fftBackgroundSetRecord(fft.Handle, background),
			"unable to set FFT background record with %d samples", len(background)); err != nil {
			return err
		}
	}
	word := "disable"
	if enable {
		word = "enable"
	}
	return check(fftBackgroundSetEnabled(fft.Handle, enable), "unable to %s FFT background subtraction", word)
}

// ConfigureCaptureFFT readies an acquisition through the FFT module
// (AlazarFFTSetup in place of AlazarSetRecordSize, then
// AlazarBeforeAsyncRead with ADMA_DSP, infinite records): each record of
// samplesPerRecord samples becomes one output record in format. It
// returns the bytes of an output record. WaitBuffer and StopCapture then
// use the DSP calls until the next ConfigureCapture.
func (b *Board) ConfigureCaptureFFT(channels Channel, samplesPerRecord, recordsPerBuffer, fftLength, format uint32, transferOffset int64) (uint32, error) {
	fft, err := b.info.FindFFTInfo()
	if err != nil {
		return 0, err
	}
	if channels > math.MaxUint16 {
		return 0, fmt.Errorf("failed to configure FFT for channels %s: the SDK takes 16 channel bits", channels)
	}
	bytes, rc := fftSetup(fft.Handle, uint16(channels), samplesPerRecord, fftLength, format)
	if err := check(rc, "failed to configure FFT for channels %s with samples per record %d, FFT length %d, and output format %d",
		channels, samplesPerRecord, fftLength, format); err != nil {
		return 0, err
	}
	flags := b.captureFlags() | admaDSP
	if err := check(beforeAsyncRead(b.h, uint32(channels), transferOffset, bytes, recordsPerBuffer, InfiniteAcquisition, flags),
		"failed to configure capture for channels %s with offset %d, bytes per record %d, records per buffer %d, and records per acquisition %d (flags = 0x%x)",
		channels, transferOffset, bytes, recordsPerBuffer, InfiniteAcquisition, flags); err != nil {
		return 0, err
	}
	b.dsp.Store(true)
	return bytes, nil
}

// abort is vortex's DSP-aware abort.
func (b *Board) abort() ReturnCode {
	if b.dsp.Load() {
		return dspAbortCapture(b.h)
	}
	return abortAsyncRead(b.h)
}

// wait is vortex's DSP-aware wait for a buffer.
func (b *Board) wait(ptr uintptr, ms uint32) ReturnCode {
	if b.dsp.Load() {
		return dspGetBuffer(b.h, ptr, ms)
	}
	return waitAsyncBufferComplete(b.h, ptr, ms)
}
