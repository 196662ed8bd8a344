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
	var v float32
	switch {
	case p.magnitude && p.square:
		v = float32(re*re) + float32(im*im)
	case p.magnitude:
		v = float32(math.Sqrt(float64(float32(re*re) + float32(im*im))))
	case p.square:
		v = float32(re * re)
	default:
		v = re
	}
	if p.log10 {
		if p.square {
			v = float32(10 * math.Log10(float64(max(v, minNormal))))
		} else {
			v = float32(20 * math.Log10(float64(max(float32(math.Abs(float64(v))), minNormal))))
		}
	}
	return v
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
