package process

import (
	"errors"
	"fmt"
	"math"
	"sync"

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

// resampling holds vortex's precomputed linear-interpolation tables: for
// output sample j, the samples before[j] and after[j] = before[j]+1 and
// their weights, after[j] = p - floor(p) and before = 1 - that (float32,
// as vortex computes them), with both indices clamped to N-1 at the right
// edge (p = N-1 exactly).
type resampling struct {
	before, after []int32
	wBefore       []float32
	wAfter        []float32
}

func newResampling(pos []float32, n int) resampling {
	m := len(pos)
	r := resampling{before: make([]int32, m), after: make([]int32, m), wBefore: make([]float32, m), wAfter: make([]float32, m)}
	for j, p := range pos {
		b := int32(math.Floor(float64(p)))
		a := b + 1
		r.wAfter[j] = p - float32(b)
		r.wBefore[j] = 1 - r.wAfter[j]
		if a >= int32(n) {
			b, a = int32(n-1), int32(n-1)
		}
		r.before[j], r.after[j] = b, a
	}
	return r
}

// interpolate is step 2 for output sample j, with vortex's float32
// roundings spelled out (no fused multiply-add; the kernel uses __fmul_rn
// and __fadd_rn).
func (r *resampling) interpolate(x []float32, j int) float32 {
	return float32(r.wBefore[j]*x[r.before[j]]) + float32(r.wAfter[j]*x[r.after[j]])
}

// postParams are the parameters of step 5, derived once from a Config.
// The CPU computes step 5 in float64 from them; the CUDA kernel receives
// the float32 constants of kernelConsts.
type postParams struct {
	log10, square, magnitude bool
	factor                   float64 // the normalisation 1/M (float32, as vortex) with EnableIFFT, else 1
	db                       float64 // 20 with EnableSquare, else 10
	dbFactor                 float64 // db*log10(factor)
	levels                   bool
	scale, offset            float64 // int8 level mapping t = scale*value + offset
}

func newPostParams(c *Config) postParams {
	p := postParams{
		log10: c.EnableLog10, square: c.EnableSquare, magnitude: c.EnableMagnitude,
		factor: 1, db: 10, levels: c.HasLevels(),
	}
	if c.EnableIFFT {
		p.factor = float64(1 / float32(c.OutputSamples()))
	}
	if c.EnableSquare {
		p.db = 20
	}
	p.dbFactor = p.db * math.Log10(p.factor)
	if p.levels {
		lo, hi := float64(c.Levels[0]), float64(c.Levels[1])
		p.scale = 255 / (hi - lo)
		p.offset = -lo*p.scale - 128
	}
	return p
}

// value is step 5 for one output y = re + i*im (im = 0 for a real
// spectrum): the float output, vortex's expression for a float output type
// without levels. EnableLog10 takes precedence over EnableSquare (which then
// only selects 20 or 10), and EnableSquare squares |y| whatever
// EnableMagnitude says, as vortex does. log10 of a zero gives -Inf and of a
// negative real part NaN, as in vortex.
func (p *postParams) value(re, im float64) float64 {
	switch {
	case p.log10 && p.magnitude:
		// db*log10(factor*|y|) = (db/2)*log10(|y|^2) + db*log10(factor):
		// no square root, and float64 cannot overflow on float32 inputs.
		return p.db/2*log10(re*re+im*im) + p.dbFactor
	case p.log10:
		return p.db * log10(p.factor*re)
	case p.square:
		return p.factor * p.factor * (re*re + im*im)
	case p.magnitude:
		return p.factor * math.Sqrt(re*re+im*im)
	}
	return p.factor * re
}

// log10 is math.Log10 to ~1e-10 relative, several times faster, which the
// CPU chain needs (it is a third of its time with math.Log10): log2(x) is
// the exponent plus log2 of the mantissa f in [1, 2), from a table at f0,
// f cut to its top 8 bits, and the series of log(1+r), r = (f-f0)/f0 <
// 2^-8, to r^4 (the next term is below 1e-11). Zero, negative, subnormal,
// infinite and NaN arguments take math.Log10 (-Inf, NaN, ...), as vortex.
func log10(x float64) float64 {
	b := math.Float64bits(x)
	e := int(b >> 52) // sign and exponent: 1..2046 for positive normal numbers
	if e == 0 || e >= 0x7ff {
		return math.Log10(x)
	}
	top := b >> 44 & 0xff
	f := math.Float64frombits(b&(1<<52-1) | 0x3ff<<52)
	f0 := math.Float64frombits(top<<44 | 0x3ff<<52)
	r := (f - f0) * log2Table[top].inv
	ln := r * (1 - r*(0.5-r*(1.0/3-r*0.25)))
	return (float64(e-1023)+log2Table[top].log2)*(math.Ln2/math.Ln10) + ln*(1/math.Ln10)
}

// log2Table holds log2(f0) and 1/f0 for the 256 mantissas f0 = 1 + k/256.
var log2Table = func() (t [256]struct{ log2, inv float64 }) {
	for k := range t {
		f0 := 1 + float64(k)/256
		t[k].log2, t[k].inv = math.Log2(f0), 1/f0
	}
	return t
}()

// level is the int8 output for a value v: through Levels when set, else v
// itself; rounded half away from zero, clamped to -128..127, NaN as 0 (what
// a float-to-int8 conversion gives on both x86 and CUDA, vortex's
// round_clip_cast).
func (p *postParams) level(v float64) int8 {
	if p.levels {
		v = p.scale*v + p.offset
	}
	return roundClip(v)
}

func roundClip(v float64) int8 {
	switch {
	case v != v:
		return 0
	case v >= 127:
		return 127
	case v <= -128:
		return -128
	}
	return int8(math.Round(v))
}

// kernelConsts are oct_post's float32 parameters: out = outMul*f(a) +
// outAdd and, for the int8 output, t = lvlMul*f(a) + lvlAdd, where f is
// log10(a), a*a or a for a = |y| or Re(y). They are vortex's CUDA
// constants (the normalisation folded into the multiplier, or into the
// offset through log10 for decibels), computed in float64 and rounded once.
type kernelConsts struct {
	outMul, outAdd, lvlMul, lvlAdd float32
}

// flags are the CUDA kernels' step-5 flags (flagLog10, ...) for p.
func (p *postParams) flags() int32 {
	var f int32
	if p.log10 {
		f |= flagLog10
	}
	if p.square {
		f |= flagSquare
	}
	if p.magnitude {
		f |= flagMagnitude
	}
	if p.levels {
		f |= flagLevels
	}
	return f
}

func (p *postParams) kernel() kernelConsts {
	var mul, add float64
	switch {
	case p.log10:
		mul, add = p.db, p.db*math.Log10(p.factor)
	case p.square:
		mul = p.factor * p.factor
	default:
		mul = p.factor
	}
	k := kernelConsts{outMul: float32(mul), outAdd: float32(add), lvlMul: float32(mul), lvlAdd: float32(add)}
	if p.levels {
		k.lvlMul, k.lvlAdd = float32(mul*p.scale), float32(add*p.scale+p.offset)
	}
	return k
}

// history is vortex's rolling-average state, carried across blocks: a ring
// of the last AverageWindow records (rows [0, count) valid; it fills from
// row 0 and wraps once full) and, as vortex recomputes the mean of the ring
// each block, the exact per-sample integer sums of its valid rows.
type history struct {
	// mu orders the updates of concurrent calls; it is held while one
	// block's last records enter the history and its mean is taken
	// (O(min(records, W) x N)), never during the FFTs.
	mu           sync.Mutex
	w, n         int
	ring         []int32 // w x n raw values (uint16 or int16)
	sums         []int64
	index, count int
}

func newHistory(w, n int) *history {
	return &history{w: w, n: n, ring: make([]int32, w*n), sums: make([]int64, n)}
}

// append adds the last min(records, w) records of a block, oldest first,
// reading record r's sample i through at(r, i).
func (h *history) append(records int, at func(r, i int) int32) {
	cnt := min(records, h.w)
	for r := records - cnt; r < records; r++ {
		row := h.ring[h.index*h.n : (h.index+1)*h.n]
		valid := h.index < h.count
		for i := range row {
			v := at(r, i)
			if valid {
				h.sums[i] -= int64(row[i])
			}
			h.sums[i] += int64(v)
			row[i] = v
		}
		h.index = (h.index + 1) % h.w
		h.count = min(h.count+1, h.w)
	}
}

// mean writes the average record: the exact sum divided by the count in
// float64, rounded once to float32 (the correctly rounded mean; vortex's
// CPU mean is the same up to its summation order, its CUDA mean is a
// float32 running sum, equal while the sums stay below 2^24).
func (h *history) mean(dst []float32) {
	c := float64(h.count)
	for i, s := range h.sums {
		dst[i] = float32(float64(s) / c)
	}
}

// errClosed reports a use after Close.
func errClosed(op string) error { return fmt.Errorf("%s: %w", op, backend.ErrClosed) }

// checkProcess validates the processor's state (closed, prepared) and the
// arguments common to both processors.
func checkProcess(op string, closed, prepared bool, c *Config, slot int, s backend.Stream, in uintptr, records int, out, outInt8 uintptr) error {
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
	case records > 0 && out == 0 && outInt8 == 0:
		return fmt.Errorf("%s: out=0 and outInt8=0 with records=%d, expected the address of the float32 output, the int8 output or both", op, records)
	}
	return nil
}
