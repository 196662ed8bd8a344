package process

import (
	"fmt"
	"math"
	"math/bits"
)

// maxElements bounds the values of one block so 32-bit indices in the CUDA
// kernels cannot overflow.
const maxElements = math.MaxInt32

// maxAverageWindow keeps the background sums exact in 32-bit integers:
// 65536 * 65535 < 2^32.
const maxAverageWindow = 1 << 16

// Config is vortex's ProcessorConfig with Go names. See the package
// documentation for the exact definition of each step.
type Config struct {
	// SamplesPerRecord is the raw spectrum length N (>= 2).
	SamplesPerRecord int
	// AscansPerBlock is the most records one Process call handles; scratch
	// is sized for it.
	AscansPerBlock int
	// AverageWindow is the number of records averaged for background
	// subtraction; 0 disables it.
	AverageWindow int
	// ResamplingSamples are fractional positions into the raw spectrum, in
	// [0, SamplesPerRecord-1], one per output spectrum sample; empty means
	// no resampling.
	ResamplingSamples []float32
	// SpectralFilter multiplies the (resampled) spectrum: a window times a
	// dispersion phasor, OutputSamples long; empty means none.
	SpectralFilter []complex64
	// EnableIFFT transforms the spectrum to depth (inverse FFT, 1/M).
	EnableIFFT bool
	// EnableMagnitude outputs |y| instead of the real part.
	EnableMagnitude bool
	// EnableSquare squares the output (|y|^2 with EnableMagnitude).
	EnableSquare bool
	// EnableLog10 outputs decibels: 20*log10 of amplitudes, 10*log10 of
	// squares.
	EnableLog10 bool
	// Levels is the float range [lo, hi] mapped linearly onto int8
	// -128..127 (with clamping) for the int8 output; hi > lo.
	Levels [2]float32
	// Slots is the number of Process calls that may run concurrently, each
	// on its own stream with its own scratch (>= 1).
	Slots int
}

// DefaultConfig returns the usual OCT chain for n-sample spectra and blocks
// of ascans records: inverse FFT, magnitude in dB, Levels [0, 60] dB, two
// slots, no background subtraction, resampling or filter (set those for
// your spectrometer, e.g. from acquire.SimulatedAcquisition).
func DefaultConfig(n, ascans int) Config {
	return Config{
		SamplesPerRecord: n,
		AscansPerBlock:   ascans,
		EnableIFFT:       true,
		EnableMagnitude:  true,
		EnableLog10:      true,
		Levels:           [2]float32{0, 60},
		Slots:            2,
	}
}

// OutputSamples is the length M of one processed record: the number of
// resampling positions, or SamplesPerRecord without resampling.
func (c *Config) OutputSamples() int {
	if len(c.ResamplingSamples) > 0 {
		return len(c.ResamplingSamples)
	}
	return c.SamplesPerRecord
}

// Validate reports the first field that is out of range, naming it and the
// value expected.
func (c *Config) Validate() error {
	bad := func(field string, v any, want string) error {
		return fmt.Errorf("process: Config.%s=%v, expected %s", field, v, want)
	}
	finite := func(x float32) bool { return !math.IsNaN(float64(x)) && !math.IsInf(float64(x), 0) }
	n := c.SamplesPerRecord
	switch {
	case n < 2:
		return bad("SamplesPerRecord", n, ">= 2")
	case c.AscansPerBlock < 1:
		return bad("AscansPerBlock", c.AscansPerBlock, ">= 1")
	case c.AverageWindow < 0 || c.AverageWindow > maxAverageWindow:
		return bad("AverageWindow", c.AverageWindow, fmt.Sprintf("in [0, %d] (0 disables)", maxAverageWindow))
	case c.Slots < 1:
		return bad("Slots", c.Slots, ">= 1")
	case !finite(c.Levels[0]) || !finite(c.Levels[1]) || c.Levels[1] <= c.Levels[0]:
		return bad("Levels", c.Levels, "finite [lo, hi] with hi > lo")
	}
	for j, p := range c.ResamplingSamples {
		if !finite(p) || p < 0 || p > float32(n-1) {
			return bad(fmt.Sprintf("ResamplingSamples[%d]", j), p, fmt.Sprintf("in [0, SamplesPerRecord-1 = %d]", n-1))
		}
	}
	m := c.OutputSamples()
	if len(c.SpectralFilter) != 0 && len(c.SpectralFilter) != m {
		return fmt.Errorf("process: len(Config.SpectralFilter)=%d, expected 0 or OutputSamples()=%d", len(c.SpectralFilter), m)
	}
	for j, h := range c.SpectralFilter {
		if !finite(real(h)) || !finite(imag(h)) {
			return bad(fmt.Sprintf("SpectralFilter[%d]", j), h, "a finite complex number")
		}
	}
	if c.EnableIFFT && (m < 2 || bits.OnesCount(uint(m)) != 1) {
		return fmt.Errorf("process: Config.OutputSamples()=%d with EnableIFFT, expected a power of two >= 2 (set ResamplingSamples to such a length)", m)
	}
	if int64(c.AscansPerBlock)*int64(max(n, m)) > maxElements {
		return bad("AscansPerBlock", c.AscansPerBlock, fmt.Sprintf("AscansPerBlock*max(SamplesPerRecord, OutputSamples()) <= %d", maxElements))
	}
	return nil
}

// clone copies the slices so a processor is immune to later edits of the
// caller's Config.
func (c Config) clone() Config {
	c.ResamplingSamples = append([]float32(nil), c.ResamplingSamples...)
	c.SpectralFilter = append([]complex64(nil), c.SpectralFilter...)
	return c
}

// HannWindow returns the n-point symmetric Hann window
// 0.5 - 0.5*cos(2*pi*j/(n-1)).
func HannWindow(n int) []float32 {
	w := make([]float32, n)
	for j := range w {
		if n > 1 {
			w[j] = float32(0.5 - 0.5*math.Cos(2*math.Pi*float64(j)/float64(n-1)))
		} else {
			w[j] = 1
		}
	}
	return w
}

// SpectralFilter combines a real window and a complex phasor (either may be
// nil; when both are given they must have the same length) into a
// Config.SpectralFilter.
func SpectralFilter(window []float32, phasor []complex64) ([]complex64, error) {
	switch {
	case window != nil && phasor != nil && len(window) != len(phasor):
		return nil, fmt.Errorf("process: SpectralFilter: len(window)=%d, expected len(phasor)=%d", len(window), len(phasor))
	case window == nil && phasor == nil:
		return nil, nil
	}
	n := max(len(window), len(phasor))
	h := make([]complex64, n)
	for j := range h {
		v := complex64(1)
		if window != nil {
			v = complex(window[j], 0)
		}
		if phasor != nil {
			v *= phasor[j]
		}
		h[j] = v
	}
	return h, nil
}
