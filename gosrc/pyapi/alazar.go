package pyapi

import (
	"github.com/vortexgo/vortexgo/gosrc/acquire"
	"github.com/vortexgo/vortexgo/gosrc/driver/alazar"
)

// The bindings of python/vortexgo/alazar.py (vortex's vortex.acquire.alazar
// and vortex.driver.alazar): the AlazarTech digitizer's Board and
// AlazarAcquisition. The ATS-SDK is loaded at the first call that needs it
// (gosrc/driver/alazar); without it every call here fails with the error
// naming VORTEXGO_ATSAPI_LIBRARY.

// NewAlazarAcquisition builds an acquire.AlazarAcquisition from its
// acquire.AlazarConfig as a JSON record (AcquireTimeout in nanoseconds):
// it opens, checks and configures the board.
func NewAlazarAcquisition(config string) (*Acquisition, error) {
	return newFromRecord("AlazarConfig", config, acquire.AlazarConfig{}, acquire.NewAlazarAcquisition)
}

// alazarFFTRecord is acquire.AlazarFFTConfig as Python sends it: the
// spectral filter as its real and imaginary parts (JSON has no complex).
type alazarFFTRecord struct {
	acquire.AlazarConfig
	FFTLength                              int
	SpectralFilterReal, SpectralFilterImag []float32
	IncludeTimeDomain                      bool
	Background                             []int16
}

// NewAlazarFFTAcquisition builds an acquire.AlazarFFTAcquisition from its
// configuration as a JSON record (alazarFFTRecord: AlazarConfig's fields
// plus the FFT's): it opens, checks and configures the board and its FFT.
func NewAlazarFFTAcquisition(config string) (*Acquisition, error) {
	var r alazarFFTRecord
	if err := decodeRecord("AlazarFFTConfig", config, &r); err != nil {
		return nil, tag(err)
	}
	if len(r.SpectralFilterReal) != len(r.SpectralFilterImag) {
		return nil, tag(badArg("AlazarFFTConfig.spectral_filter: %d real and %d imaginary parts, expected as many",
			len(r.SpectralFilterReal), len(r.SpectralFilterImag)))
	}
	c := acquire.AlazarFFTConfig{AlazarConfig: r.AlazarConfig, FFTLength: r.FFTLength,
		IncludeTimeDomain: r.IncludeTimeDomain, Background: r.Background}
	if len(r.SpectralFilterReal) > 0 {
		c.SpectralFilter = make([]complex64, len(r.SpectralFilterReal))
		for i := range c.SpectralFilter {
			c.SpectralFilter[i] = complex(r.SpectralFilterReal[i], r.SpectralFilterImag[i])
		}
	}
	return newAcquisition(acquire.NewAlazarFFTAcquisition(c))
}

// AlazarLoad loads the ATS-SDK library if it is not loaded yet and returns
// its version.
func AlazarLoad() (string, error) { return tagged(alazar.Load()) }

// AlazarLibrary is the name the ATS-SDK library was loaded under ("" before).
func AlazarLibrary() string { return alazar.Library() }

// AlazarBoard is an open digitizer (vortex's alazar.Board).
type AlazarBoard struct {
	b *alazar.Board
}

// OpenAlazarBoard opens board boardIndex of system systemIndex (from 1).
func OpenAlazarBoard(systemIndex, boardIndex int) (*AlazarBoard, error) {
	if systemIndex < 0 || boardIndex < 0 || systemIndex > 1<<31 || boardIndex > 1<<31 {
		return nil, tag(badArg("Board(system_index=%d, board_index=%d), expected indices >= 1", systemIndex, boardIndex))
	}
	b, err := alazar.Open(uint32(systemIndex), uint32(boardIndex))
	if err != nil {
		return nil, tag(err)
	}
	return &AlazarBoard{b: b}, nil
}

// AlazarBoardIDs lists every board's (system, board) indices as a JSON
// record [[1, 1], ...] (vortex's enumerate opens each).
func AlazarBoardIDs() (string, error) {
	boards, err := alazar.Enumerate()
	if err != nil {
		return "", tag(err)
	}
	ids := make([][2]uint32, len(boards))
	for i, b := range boards {
		in := b.Info()
		ids[i] = [2]uint32{in.SystemIndex, in.BoardIndex}
	}
	return encodeJSON(ids), nil
}

// Info is the board's alazar.Info as a JSON record (Go field names).
func (b *AlazarBoard) Info() string { return encodeJSON(b.b.Info()) }

// Handle is the SDK's handle of the board.
func (b *AlazarBoard) Handle() int { return int(b.b.Handle()) }

// Valid reports whether the board is open.
func (b *AlazarBoard) Valid() bool { return b.b.Valid() }

// Running reports whether the board is capturing.
func (b *AlazarBoard) Running() bool { return b.b.Running() }

// AlazarBoard is an AlazarAcquisition's board (vortex's
// AlazarAcquisition.board).
func (a *Acquisition) AlazarBoard() (*AlazarBoard, error) {
	s, ok := a.a.(interface{ Board() *alazar.Board }) // AlazarAcquisition, AlazarFFTAcquisition
	if !ok {
		return nil, tag(badArg("%T has no board, expected an AlazarAcquisition", a.a))
	}
	return &AlazarBoard{b: s.Board()}, nil
}

// alazarStandalone is an Alazar source's standalone calls beyond
// standaloneSource's (AlazarAcquisition, AlazarFFTAcquisition).
type alazarStandalone interface {
	PrepareStandalone() error
	PostStandalone(ptr uintptr, size int) error
	WaitStandalone(ptr uintptr) (int, error)
	Running() bool
}

func (a *Acquisition) alazar(op string) (alazarStandalone, error) {
	s, ok := a.a.(alazarStandalone)
	if !ok {
		return nil, tag(badArg("%T has no %s, expected an AlazarAcquisition", a.a, op))
	}
	return s, nil
}

// AlazarPrepare is vortex's prepare of an AlazarAcquisition: it
// configures the board's capture (the engine's Prepare while an engine
// uses the source).
func (a *Acquisition) AlazarPrepare() error {
	s, err := a.alazar("prepare")
	if err != nil {
		return err
	}
	return tag(s.PrepareStandalone())
}

// AlazarPost posts the caller's size bytes at addr (one block) to the
// board; the caller keeps that memory alive until its AlazarWait returns
// or the acquisition is stopped or closed.
func (a *Acquisition) AlazarPost(addr, size int) error {
	s, err := a.alazar("next_async")
	if err != nil {
		return err
	}
	if addr == 0 || size < 0 {
		return tag(badArg("AlazarPost(0x%x, %d), expected a buffer", addr, size))
	}
	return tag(s.PostStandalone(uintptr(addr), size))
}

// AlazarWait waits for the posted buffer at addr and returns its records
// (0 when the capture was stopped).
func (a *Acquisition) AlazarWait(addr int) (int, error) {
	s, err := a.alazar("next_async")
	if err != nil {
		return 0, err
	}
	return tagged(s.WaitStandalone(uintptr(addr)))
}

// MaxTriggerRatePerFFTLength is the FFT module's highest trigger rate at
// FFT length n (vortex's InfoDsp.max_trigger_rate_per_fft_length) for
// module index (in Info's DSP list).
func (b *AlazarBoard) MaxTriggerRatePerFFTLength(index, n int) (float64, error) {
	in := b.b.Info()
	if index < 0 || index >= len(in.DSP) || n < 0 || n > 1<<31 {
		return 0, tag(badArg("InfoDsp.max_trigger_rate_per_fft_length(%d) of module %d, expected one of the board's %d modules",
			n, index, len(in.DSP)))
	}
	return tagged(in.DSP[index].MaxTriggerRatePerFFTLength(uint32(n)))
}

// AcquireAlazarClock is vortex's engine.acquire_alazar_clock: config is
// an acquire.AlazarConfig JSON record, the source's duty cycle and
// triggers per second and the clock's channel; it returns the sampling
// rate and the record as a JSON record [rate, [samples...]].
func AcquireAlazarClock(config string, dutyCycle float64, triggersPerSecond int, clockChannel int) (string, error) {
	var c acquire.AlazarConfig
	if err := decodeRecord("AlazarConfig", config, &c); err != nil {
		return "", tag(err)
	}
	if clockChannel <= 0 || clockChannel > 1<<15 {
		return "", tag(badArg("acquire_alazar_clock: clock_channel=%d, expected an alazar.Channel", clockChannel))
	}
	rate, clock, err := acquire.AcquireAlazarClock(c, dutyCycle, triggersPerSecond, alazar.Channel(clockChannel))
	if err != nil {
		return "", tag(err)
	}
	return encodeJSON([]any{rate, clock}), nil
}
