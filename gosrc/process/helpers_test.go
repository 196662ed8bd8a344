package process

import (
	"math"
	"math/cmplx"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/cpu"
)

// reference is an independent, straightforward float64 implementation of
// vortex's chain for consecutive blocks (sizes in blocks) of raw records
// (records x N x channels): the rolling average by definition (the mean of
// the last min(W, seen) records, the current block's included, of the
// records seen so far, block by block), interpolation by vortex's formula,
// a DFT by definition and vortex's output expressions; with a
// ClockChannel, each record's tables from refClockTables. It returns the
// float output per record and sample.
func reference(c Config, raw []uint16, blocks []int) []float64 {
	n, m, ch := c.SamplesPerRecord, c.OutputSamples(), c.Channels()
	total := 0
	for _, b := range blocks {
		total += b
	}
	val := func(r, i int) float64 {
		v := raw[(r*n+i)*ch+c.Channel]
		if c.InterpretAsSigned {
			return float64(int16(v))
		}
		return float64(v)
	}
	out := make([]float64, total*m)
	spec := make([]float64, n)
	avg := make([]float64, n)
	x := make([]complex128, m)
	start := 0
	for _, b := range blocks {
		if c.AverageWindow > 0 {
			// The history holds the last W records up to this block's end.
			lo := max(0, start+b-c.AverageWindow)
			for i := range n {
				s := 0.0
				for q := lo; q < start+b; q++ {
					s += val(q, i)
				}
				avg[i] = float64(float32(s / float64(start+b-lo)))
			}
		}
		for r := start; r < start+b; r++ {
			for i := range n {
				spec[i] = val(r, i)
				if c.AverageWindow > 0 {
					spec[i] = float64(float32(spec[i]) - float32(avg[i]))
				}
			}
			var cb, ca []int
			var cr []float64
			if c.ClockChannel != nil {
				clock := make([]float64, n)
				for i := range clock {
					v := raw[(r*n+i)*ch+*c.ClockChannel]
					clock[i] = float64(v)
					if c.InterpretAsSigned {
						clock[i] = float64(int16(v))
					}
				}
				cb, ca, cr = refClockTables(clock)
			}
			for j := range m {
				v := spec[j%n]
				if cb != nil {
					v = (1-cr[j])*spec[cb[j]] + cr[j]*spec[ca[j]]
				}
				if len(c.ResamplingSamples) > 0 {
					p := float64(c.ResamplingSamples[j])
					f := p - math.Floor(p)
					a, b := int(math.Floor(p)), int(math.Floor(p))+1
					if b >= n {
						a, b = n-1, n-1
					}
					v = (1-f)*spec[a] + f*spec[b]
				}
				x[j] = complex(v, 0)
				if len(c.SpectralFilter) > 0 {
					x[j] *= complex128(c.SpectralFilter[j])
				}
			}
			for k := range m {
				y := x[k]
				norm := 1.0
				if c.EnableIFFT {
					y = 0
					for j := range m {
						y += x[j] * cmplx.Exp(complex(0, 2*math.Pi*float64(j*k%m)/float64(m)))
					}
					norm = 1 / float64(m)
				}
				out[r*m+k] = refValue(&c, y, norm)
			}
		}
		start += b
	}
	return out
}

// refValue is vortex's output expression for a float output without
// levels, read from its documentation and source.
func refValue(c *Config, y complex128, norm float64) float64 {
	db := 10.0
	if c.EnableSquare {
		db = 20
	}
	switch {
	case c.EnableLog10 && c.EnableMagnitude:
		return db * math.Log10(norm*cmplx.Abs(y))
	case c.EnableLog10:
		return db * math.Log10(norm*real(y))
	case c.EnableSquare:
		return math.Pow(norm*cmplx.Abs(y), 2)
	case c.EnableMagnitude:
		return norm * cmplx.Abs(y)
	}
	return norm * real(y)
}

// refLevel is vortex's int8 output for a float value v: Levels mapped onto
// [-128, 127] when set, rounded half away from zero, clipped.
func refLevel(c *Config, v float64) float64 {
	if c.HasLevels() {
		lo, hi := float64(c.Levels[0]), float64(c.Levels[1])
		v = (v-lo)*255/(hi-lo) - 128
	}
	if math.IsNaN(v) {
		return 0
	}
	return min(max(math.Round(v), -128), 127)
}

// hostBuffers is a CPU stream with input and output buffers for R records.
type hostBuffers struct {
	s             backend.Stream
	in, out, out8 backend.Buffer
	raw           []uint16
	result        []float32
	result8       []int8
}

// newHostBuffers allocates for R records of n raw values (samples x
// channels) and m output samples.
func newHostBuffers(t testing.TB, n, m, R int) *hostBuffers {
	t.Helper()
	dev := cpu.Default()
	s, err := dev.NewStream(0)
	require.NoError(t, err)
	h := &hostBuffers{s: s}
	for _, b := range []struct {
		dst  *backend.Buffer
		size int
	}{{&h.in, R * n * 2}, {&h.out, R * m * 4}, {&h.out8, R * m}} {
		*b.dst, err = dev.Alloc(b.size)
		require.NoError(t, err)
	}
	h.raw = hostSlice[uint16](h.in.Ptr(), R*n)
	h.result = hostSlice[float32](h.out.Ptr(), R*m)
	h.result8 = hostSlice[int8](h.out8.Ptr(), R*m)
	t.Cleanup(func() {
		for _, b := range []backend.Buffer{h.in, h.out, h.out8} {
			require.NoError(t, b.Free())
		}
		require.NoError(t, s.Close())
	})
	return h
}

// cpuBlocks runs the CPU processor over consecutive blocks of raw
// (records x N x channels), alternating slots, and returns the float and
// int8 outputs of all records.
func cpuBlocks(t testing.TB, c Config, raw []uint16, blocks []int) ([]float32, []int8) {
	t.Helper()
	p, err := NewCPUProcessor(c)
	require.NoError(t, err)
	require.NoError(t, p.Prepare())
	defer func() { require.NoError(t, p.Close()) }()
	nraw, m := c.SamplesPerRecord*c.Channels(), p.OutputSamples()
	h := newHostBuffers(t, nraw, m, c.AscansPerBlock)
	var out []float32
	var out8 []int8
	start := 0
	for k, b := range blocks {
		copy(h.raw, raw[start*nraw:(start+b)*nraw])
		require.NoError(t, p.Process(k%c.Slots, h.s, h.in.Ptr(), b, h.out.Ptr(), h.out8.Ptr()))
		out = append(out, h.result[:b*m]...)
		out8 = append(out8, h.result8[:b*m]...)
		start += b
	}
	return out, out8
}
