package process

import (
	"fmt"
	"math"
)

// maxElements bounds the values of one block so 32-bit indices in the CUDA
// kernels cannot overflow.
const maxElements = math.MaxInt32

// maxAverageWindow bounds the rolling-average history (AverageWindow x
// SamplesPerRecord values are kept) and keeps the history sums exact in
// int64 with room to spare.
const maxAverageWindow = 1 << 20

// Config is vortex's ProcessorConfig (CPUProcessorConfig and
// CUDAProcessorConfig) with Go names. The package documentation defines
// each step exactly.
type Config struct {
	// SamplesPerRecord is the raw spectrum length N (vortex: 1000).
	SamplesPerRecord int
	// AscansPerBlock is the most records one Process call handles, also
	// records_per_block (vortex: 1000).
	AscansPerBlock int
	// ChannelsPerSample is the number of interleaved channels of the raw
	// input, whose shape is (records, SamplesPerRecord, ChannelsPerSample);
	// 0 means 1 (vortex: 1).
	ChannelsPerSample int
	// Channel is the channel processed, in [0, ChannelsPerSample) (vortex: 0).
	Channel int
	// InterpretAsSigned reads the raw uint16 values as int16 (vortex's
	// CUDAProcessorConfig.interpret_as_signed, here on both backends).
	InterpretAsSigned bool
	// AverageWindow is the length W of the rolling average subtracted from
	// every record: the mean of the last W records seen, carried across
	// blocks; 0 disables it (vortex: 0).
	AverageWindow int
	// ResamplingSamples are fractional positions into the raw spectrum, in
	// [0, SamplesPerRecord-1], one per output sample; empty means no
	// resampling (vortex: empty).
	ResamplingSamples []float32
	// ClockChannel is vortex's clock_channel: the channel holding a k-clock
	// whose phase resamples every record to even wavenumber (doc.go, step
	// 2 with a clock); nil means none (vortex: None). It excludes
	// ResamplingSamples, as in vortex. It may equal Channel (a record
	// resampled by its own phase, e.g. to check the clock linearises).
	ClockChannel *int
	// SpectralFilter multiplies the (resampled) spectrum, OutputSamples()
	// long; empty means none (vortex: empty).
	SpectralFilter []complex64
	// EnableIFFT applies the inverse FFT of length OutputSamples(), any
	// length, with the normalisation 1/M (vortex: true).
	EnableIFFT bool
	// EnableMagnitude outputs |y| instead of Re(y) (vortex: true).
	EnableMagnitude bool
	// EnableSquare squares the magnitude (always |y|, as vortex does), or,
	// with EnableLog10, doubles the decibel factor: 20*log10 instead of
	// 10*log10 (vortex: true).
	EnableSquare bool
	// EnableLog10 outputs 10*log10 of the value (20*log10 with
	// EnableSquare) (vortex: true).
	EnableLog10 bool
	// Levels is the optional range [lo, hi] mapped linearly onto
	// -128..127 for the int8 output. The zero value [0, 0] means unset
	// (vortex's None, the default): the int8 output is then the value
	// itself, rounded and clamped. lo != hi; hi < lo inverts the mapping as
	// in vortex.
	Levels [2]float32
	// Slots is the number of Process calls that may be in flight at once,
	// each on its own stream with its own scratch (vortex: 2).
	Slots int
	// SampleSlice is CopyProcessor's sample_slice (start, stop, step);
	// [0 0 0] is vortex's NullSlice (every sample). The others ignore it.
	SampleSlice [3]int
	// SampleTransform is CopyProcessor's sample_transform (scale, offset);
	// [0 0] is vortex's NullTransform. The others ignore it.
	SampleTransform [2]float64
}

// DefaultConfig returns vortex's defaults: 1000 samples per record, 1000
// records per block, one channel, inverse FFT, magnitude, square and
// log10 enabled (20*log10|y/M|), levels unset, no average, resampling or
// filter, two slots.
func DefaultConfig() Config {
	return Config{
		SamplesPerRecord:  1000,
		AscansPerBlock:    1000,
		ChannelsPerSample: 1,
		EnableIFFT:        true,
		EnableMagnitude:   true,
		EnableSquare:      true,
		EnableLog10:       true,
		Slots:             2,
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

// Channels is ChannelsPerSample with 0 read as 1.
func (c *Config) Channels() int { return max(c.ChannelsPerSample, 1) }

// HasLevels reports whether Levels is set.
func (c *Config) HasLevels() bool { return c.Levels != [2]float32{} }

// Validate reports the first field that is out of range, naming it and the
// value expected.
func (c *Config) Validate() error {
	bad := func(field string, v any, want string) error {
		return fmt.Errorf("process: Config.%s=%v, expected %s", field, v, want)
	}
	finite := func(x float32) bool { return !math.IsNaN(float64(x)) && !math.IsInf(float64(x), 0) }
	n := c.SamplesPerRecord
	switch {
	case n < 1:
		return bad("SamplesPerRecord", n, ">= 1")
	case c.AscansPerBlock < 1:
		return bad("AscansPerBlock", c.AscansPerBlock, ">= 1")
	case c.ChannelsPerSample < 0:
		return bad("ChannelsPerSample", c.ChannelsPerSample, ">= 1 (0 means 1)")
	case c.Channel < 0 || c.Channel >= c.Channels():
		return bad("Channel", c.Channel, fmt.Sprintf("in [0, ChannelsPerSample=%d)", c.Channels()))
	case c.AverageWindow < 0 || c.AverageWindow > maxAverageWindow:
		return bad("AverageWindow", c.AverageWindow, fmt.Sprintf("in [0, %d] (0 disables)", maxAverageWindow))
	case c.Slots < 1:
		return bad("Slots", c.Slots, ">= 1")
	case c.HasLevels() && (!finite(c.Levels[0]) || !finite(c.Levels[1]) || c.Levels[0] == c.Levels[1]):
		return bad("Levels", c.Levels, "finite [lo, hi] with lo != hi, or [0 0] for unset")
	}
	if len(c.ResamplingSamples) > 0 && len(c.ResamplingSamples) < 2 {
		return fmt.Errorf("process: len(Config.ResamplingSamples)=1, expected 0 or >= 2")
	}
	for j, p := range c.ResamplingSamples {
		if !finite(p) || p < 0 || p > float32(n-1) {
			return bad(fmt.Sprintf("ResamplingSamples[%d]", j), p, fmt.Sprintf("in [0, SamplesPerRecord-1 = %d]", n-1))
		}
	}
	if k := c.ClockChannel; k != nil {
		switch {
		case *k < 0 || *k >= c.Channels():
			return bad("ClockChannel", *k, fmt.Sprintf("in [0, ChannelsPerSample=%d), or nil for none", c.Channels()))
		case len(c.ResamplingSamples) > 0:
			return fmt.Errorf("process: Config.ClockChannel=%d with %d ResamplingSamples, expected one of them: "+
				"dynamic (clock) and static resampling are mutually exclusive, as in vortex", *k, len(c.ResamplingSamples))
		case n < 2:
			return bad("SamplesPerRecord", n, ">= 2 with ClockChannel")
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
	if int64(c.AscansPerBlock)*int64(max(n*c.Channels(), m)) > maxElements {
		return bad("AscansPerBlock", c.AscansPerBlock, fmt.Sprintf("AscansPerBlock*max(SamplesPerRecord*ChannelsPerSample, OutputSamples()) <= %d", maxElements))
	}
	if int64(c.AverageWindow)*int64(n) > maxElements {
		return bad("AverageWindow", c.AverageWindow, fmt.Sprintf("AverageWindow*SamplesPerRecord <= %d", maxElements))
	}
	return nil
}

// clone copies the slices so a processor is immune to later edits of the
// caller's Config.
func (c Config) clone() Config {
	c.ResamplingSamples = append([]float32(nil), c.ResamplingSamples...)
	c.SpectralFilter = append([]complex64(nil), c.SpectralFilter...)
	if c.ClockChannel != nil {
		k := *c.ClockChannel
		c.ClockChannel = &k
	}
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
