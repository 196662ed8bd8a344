package acquire

import (
	"fmt"
	"math/bits"
	"slices"

	"github.com/vortexgo/vortexgo/gosrc/driver/alazar"
	"github.com/vortexgo/vortexgo/gosrc/engine"
)

// AlazarFFTConfig configures an AlazarFFTAcquisition (vortex's
// AlazarFFTConfig): an AlazarConfig plus the on-board FFT's settings.
type AlazarFFTConfig struct {
	AlazarConfig
	// FFTLength is the FFT's length, a power of two at least
	// SamplesPerRecord (the record is zero-padded to it).
	FFTLength int
	// SpectralFilter is the complex window the board multiplies each
	// record by (FFTLength values), or empty for the SDK's flat window.
	SpectralFilter []complex64
	// IncludeTimeDomain prepends each A-scan with its time-domain record
	// (signed, zero-padded to FFTLength samples).
	IncludeTimeDomain bool
	// Background is subtracted from each record (signed samples,
	// FFTLength of them) before the window; empty disables it.
	Background []int16
}

// DefaultAlazarFFTConfig is vortex's default AlazarFFTConfig: the
// AlazarConfig defaults, an FFT of 1024 points, no filter, no background,
// no time domain.
func DefaultAlazarFFTConfig() AlazarFFTConfig {
	return AlazarFFTConfig{AlazarConfig: DefaultAlazarConfig(), FFTLength: 1024}
}

// SamplesPerAscan is an output record's length: the FFT's first half
// (FFTLength/2 bins), after FFTLength time-domain samples when
// IncludeTimeDomain.
func (c *AlazarFFTConfig) SamplesPerAscan() int {
	if c.IncludeTimeDomain {
		return c.FFTLength + c.FFTLength/2
	}
	return c.FFTLength / 2
}

// validateFFT is vortex's AlazarFFTConfig.validate beyond the base's.
func (c *AlazarFFTConfig) validateFFT(info *alazar.Info, sdk string) error {
	if len(c.SpectralFilter) > 0 && len(c.SpectralFilter) != c.FFTLength {
		return fmt.Errorf("spectral filter and FFT length mismatch: %d vs %d", len(c.SpectralFilter), c.FFTLength)
	}
	if len(c.Background) > 0 && len(c.Background) != c.FFTLength {
		return fmt.Errorf("background and FFT length mismatch: %d vs %d", len(c.Background), c.FFTLength)
	}
	fft, err := info.FindFFTInfo()
	if err != nil {
		return err
	}
	if c.FFTLength > int(fft.MaxRecordLength) {
		return fmt.Errorf("FFT length exceeds maximum size: %d > %d", c.FFTLength, fft.MaxRecordLength)
	}
	if c.FFTLength <= 0 || c.FFTLength&(c.FFTLength-1) != 0 {
		next := 1
		if c.FFTLength > 1 {
			next = 1 << bits.Len(uint(c.FFTLength-1))
		}
		return fmt.Errorf("samples/A-scan (FFT length) is not a power of 2: %d (consider %d)", c.FFTLength, next)
	}
	if c.IncludeTimeDomain && !fft.FFTTimeDomainSupported {
		return fmt.Errorf("FFT with time-domain records is not supported by the hardware or the loaded ATS-SDK %s", sdk)
	}
	return nil
}

// applyFFT is vortex's AlazarFFTConfig.apply beyond the base's: the
// window (flat without a filter) and the background subtraction.
func (c *AlazarFFTConfig) applyFFT(b *alazar.Board) error {
	if n := len(c.SpectralFilter); n > 0 {
		re, im := make([]float32, n), make([]float32, n)
		for i, v := range c.SpectralFilter {
			re[i], im[i] = real(v), imag(v)
		}
		if err := b.ConfigureFFTWindow(uint32(n), re, im); err != nil {
			return err
		}
	} else if err := b.ConfigureFFTWindow(uint32(c.FFTLength), nil, nil); err != nil {
		return err
	}
	return b.ConfigureFFTBackgroundSubtraction(c.Background)
}

// AlazarFFTAcquisition acquires through the board's on-FPGA FFT (vortex's
// AlazarFFTAcquisition): each record of SamplesPerRecord samples (channel
// A, the only one the module takes) arrives as SamplesPerAscan uint16
// values, the FFT's log amplitude in 1/256 dB (the SDK's U16_LOG format),
// after the time-domain record when IncludeTimeDomain. It is an
// AlazarAcquisition in every other way: buffers posted and DMA'd with no
// host copy, vortex's errors, Stop leaving the board ready.
type AlazarFFTAcquisition struct {
	*AlazarAcquisition
	fft AlazarFFTConfig
}

// NewAlazarFFTAcquisition opens the board of cfg, validates cfg against it
// (vortex's messages) and configures it, the FFT's window and background
// included.
func NewAlazarFFTAcquisition(cfg AlazarFFTConfig) (*AlazarFFTAcquisition, error) {
	if err := cfg.checkShape(); err != nil {
		return nil, err
	}
	if cfg.FFTLength < 1 || cfg.FFTLength > 1<<30 {
		return nil, engine.Invalid("acquire: AlazarFFTConfig.FFTLength=%d, expected a power of 2 >= SamplesPerRecord", cfg.FFTLength)
	}
	cfg.Inputs = slices.Clone(cfg.Inputs)
	cfg.Options = slices.Clone(cfg.Options)
	cfg.Resampling = slices.Clone(cfg.Resampling)
	cfg.SpectralFilter = slices.Clone(cfg.SpectralFilter)
	cfg.Background = slices.Clone(cfg.Background)
	b, err := alazar.Open(cfg.SystemIndex, cfg.BoardIndex)
	if err != nil {
		return nil, err
	}
	info := b.Info()
	sdk, _ := alazar.Load()
	if err := cfg.validate(&info); err != nil {
		return nil, err
	}
	if err := cfg.validateFFT(&info, sdk); err != nil {
		return nil, err
	}
	a := &AlazarAcquisition{cfg: cfg.AlazarConfig, board: b, values: cfg.SamplesPerAscan() * len(cfg.Inputs)}
	a.claim.Name("AlazarFFTAcquisition")
	a.apply = func() error {
		if err := cfg.apply(b); err != nil {
			return err
		}
		return cfg.applyFFT(b)
	}
	if err := a.applyNew(); err != nil {
		return nil, err
	}
	f := &AlazarFFTAcquisition{AlazarAcquisition: a, fft: cfg}
	format := uint32(alazar.FFTOutputFormatU16Log)
	if cfg.IncludeTimeDomain {
		format |= alazar.FFTOutputFormatRawPlusFFT
	}
	a.configureCapture = func() error {
		_, err := b.ConfigureCaptureFFT(cfg.ChannelMask(), uint32(cfg.SamplesPerRecord), uint32(cfg.RecordsPerBlock),
			uint32(cfg.FFTLength), format, 0)
		return err
	}
	return f, nil
}

// FFTConfig returns the configuration the source was made with.
func (f *AlazarFFTAcquisition) FFTConfig() AlazarFFTConfig { return f.fft }
