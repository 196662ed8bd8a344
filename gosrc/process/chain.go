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

// decibels is 10*log10(max(power, minNormal)) to ~1e-6 dB, several times
// faster than math.Log10, which would otherwise be the largest cost of the
// CPU chain. log2(power) is the float's exponent plus log2 of its mantissa
// f in [1, 2): a table gives log2 and 1/f0 at f0, the mantissa cut to its
// top 8 bits, and log2(f/f0) = log2(1+r) with r = (f-f0)/f0 < 2^-8 needs
// three series terms (the fourth is below 1e-10).
func decibels(power float32) float32 {
	power = max(power, minNormal)
	b := math.Float32bits(power)
	if b>>23 >= 0xff { // +Inf or NaN
		return float32(10 * math.Log10(float64(power)))
	}
	top := b >> 15 & 0xff
	f := float64(math.Float32frombits(b&0x7fffff | 0x3f800000))
	f0 := float64(math.Float32frombits(top<<15 | 0x3f800000))
	r := (f - f0) * log2Table[top].inv
	ln := r * (1 - r*(0.5-r*(1.0/3)))
	log2 := float64(int(b>>23)-127) + log2Table[top].log2 + ln*math.Log2E
	return float32(10 * math.Log10E * math.Ln2 * log2)
}

// log2Table holds log2(f0) and 1/f0 for the 256 mantissas f0 = 1 + k/256.
var log2Table = func() (t [256]struct{ log2, inv float64 }) {
	for k := range t {
		f0 := 1 + float64(k)/256
		t[k].log2, t[k].inv = math.Log2(f0), 1/f0
	}
	return t
}()

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

// checkProcess validates the processor's state (closed, prepared) and the
// arguments common to both processors.
func checkProcess(op string, closed, prepared bool, c *Config, slot int, s backend.Stream, in uintptr, records int, out uintptr) error {
	switch {
	case closed:
		return errClosed(op)
	case !prepared:
		return fmt.Errorf("%s: called before Prepare", op)
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
