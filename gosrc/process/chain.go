package process

import (
	"errors"
	"fmt"
	"math"

	"github.com/vortexgo/vortexgo/gosrc/backend"
)

// processor is the engine's Processor contract; the assertions keep both
// implementations in step with it without importing the engine.
type processor interface {
	Prepare() error
	Process(slot int, s backend.Stream, in uintptr, records int, out uintptr, outInt8 uintptr) error
	OutputSamples() int
	Close() error
}

var (
	_ processor = (*CPUProcessor)(nil)
	_ processor = (*CUDAProcessor)(nil)
)

// minNormal floors the argument of log10 so decibel outputs stay finite
// (about -379 dB for squares): a zero would otherwise become -Inf, which
// poisons averages and MIPs downstream.
const minNormal = 0x1p-126

// postParams are the per-value parameters of step 5, derived once from a
// Config. The CUDA kernel receives the same values, so both backends do the
// same float32 arithmetic.
type postParams struct {
	scale     float32 // 1/M with EnableIFFT (a power of two: exact), else 1
	magnitude bool
	square    bool
	log10     bool
	lo        float32 // Levels[0]
	levelStep float32 // 255/(hi-lo)
}

func newPostParams(c *Config) postParams {
	p := postParams{
		scale:     1,
		magnitude: c.EnableMagnitude,
		square:    c.EnableSquare,
		log10:     c.EnableLog10,
		lo:        c.Levels[0],
		levelStep: 255 / (c.Levels[1] - c.Levels[0]),
	}
	if c.EnableIFFT {
		p.scale = 1 / float32(c.OutputSamples())
	}
	return p
}

// value is step 5 for one complex output. The explicit float32
// conversions forbid fused multiply-adds, matching the kernel's __fmul_rn
// and __fadd_rn.
func (p *postParams) value(c complex64) float32 {
	re := float32(real(c) * p.scale)
	im := float32(imag(c) * p.scale)
	// The power, |y|^2 or Re(y)^2: decibels come from it directly, since
	// 20*log10|y| = 10*log10|y|^2, which saves a square root.
	power := float32(re * re)
	if p.magnitude {
		power += float32(im * im)
	}
	switch {
	case p.log10:
		return decibels(power)
	case p.square:
		return power
	case p.magnitude:
		return float32(math.Sqrt(float64(power)))
	}
	return re
}

// decibels is 10*log10(max(power, minNormal)) to ~1e-7 dB. It is a few
// times faster than math.Log10, which would otherwise be a third of the CPU
// chain's time: log2 of the float's exponent plus an odd series in
// t = (f-1)/(f+1) for the mantissa f in [sqrt(1/2), sqrt(2)), |t| <= 0.172,
// where the terms past t^9 are below 4e-10.
func decibels(power float32) float32 {
	power = max(power, minNormal)
	b := math.Float32bits(power)
	if b>>23 >= 0xff { // +Inf or NaN
		return float32(10 * math.Log10(float64(power)))
	}
	e := int(b>>23) - 127
	f := float64(math.Float32frombits(b&0x7fffff | 0x3f800000))
	if f > math.Sqrt2 {
		f /= 2
		e++
	}
	t := (f - 1) / (f + 1)
	t2 := t * t
	log2 := float64(e) + 2/math.Ln2*t*(1+t2*(1.0/3+t2*(1.0/5+t2*(1.0/7+t2*(1.0/9)))))
	return float32(10 * math.Log10E * math.Ln2 * log2)
}

// level maps v onto int8 through Levels: round to nearest even, clamp.
func (p *postParams) level(v float32) int8 {
	t := float32(float32(v-p.lo)*p.levelStep) - 128
	switch {
	case t != t: // NaN
		return -128
	case t <= -128:
		return -128
	case t >= 127:
		return 127
	}
	return int8(math.RoundToEven(float64(t)))
}

// windowStart returns the first record of record r's background window
// among R records with an effective window of w = min(W, R) records.
func windowStart(r, w, R int) int {
	return min(max(r-w/2, 0), R-w)
}

// errClosed reports a use after Close.
func errClosed(op string) error { return fmt.Errorf("%s: %w", op, backend.ErrClosed) }

// checkProcess validates the arguments common to both processors.
func checkProcess(op string, c *Config, slot int, s backend.Stream, in uintptr, records int, out uintptr) error {
	switch {
	case slot < 0 || slot >= c.Slots:
		return fmt.Errorf("%s: slot=%d, expected in [0, Slots=%d)", op, slot, c.Slots)
	case s == nil:
		return errors.New(op + ": s=nil, expected a stream")
	case records < 0 || records > c.AscansPerBlock:
		return fmt.Errorf("%s: records=%d, expected in [0, AscansPerBlock=%d]", op, records, c.AscansPerBlock)
	case records > 0 && in == 0:
		return fmt.Errorf("%s: in=0 with records=%d, expected the address of the raw spectra", op, records)
	case records > 0 && out == 0:
		return fmt.Errorf("%s: out=0 with records=%d, expected the address of the float32 output", op, records)
	}
	return nil
}
