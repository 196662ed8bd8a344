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
// the chain as the package documentation defines it: the background mean
// by definition, interpolation, a DFT by definition.
func reference(c Config, raw []uint16, R int) []float64 {
	n, m := c.SamplesPerRecord, c.OutputSamples()
	out := make([]float64, R*m)
	spec := make([]float64, n)
	x := make([]complex128, m)
	for r := range R {
		for i := range n {
			spec[i] = float64(raw[r*n+i])
		}
		if c.AverageWindow > 0 {
			w := min(c.AverageWindow, R)
			s := r - w/2
			s = max(s, 0)
			s = min(s, R-w)
			for i := range n {
				sum := 0.0
				for q := s; q < s+w; q++ {
					sum += float64(raw[q*n+i])
				}
				spec[i] -= sum / float64(w)
			}
		}
		for j := range m {
			v := 0.0
			if len(c.ResamplingSamples) > 0 {
				p := float64(c.ResamplingSamples[j])
				i0 := min(int(math.Floor(p)), n-2)
				f := p - float64(i0)
				v = (1-f)*spec[i0] + f*spec[i0+1]
			} else {
				v = spec[j]
			}
			x[j] = complex(v, 0)
			if len(c.SpectralFilter) > 0 {
				x[j] *= complex128(c.SpectralFilter[j])
			}
		}
		for k := range m {
			y := x[k]
			if c.EnableIFFT {
				y = 0
				for j := range m {
					y += x[j] * cmplx.Exp(complex(0, 2*math.Pi*float64(j*k%m)/float64(m)))
				}
				y /= complex(float64(m), 0)
			}
			out[r*m+k] = refValue(&c, y)
		}
	}
	return out
}

func refValue(c *Config, y complex128) float64 {
	v := real(y)
	if c.EnableMagnitude {
		v = cmplx.Abs(y)
	}
	if c.EnableLog10 {
		// 20*log10 of the amplitude, floored where the power is 2^-126.
		return 20 * math.Log10(max(math.Abs(v), math.Sqrt(minNormal)))
	}
	if c.EnableSquare {
		v *= v
	}
	return v
}

// refLevel is the int8 mapping in float64.
func refLevel(c *Config, v float64) float64 {
	lo, hi := float64(c.Levels[0]), float64(c.Levels[1])
	t := (v-lo)/(hi-lo)*255 - 128
	return min(max(math.RoundToEven(t), -128), 127)
}

// hostBuffers is a CPU stream with input and output buffers for R records.
type hostBuffers struct {
	s             backend.Stream
	in, out, out8 backend.Buffer
	raw           []uint16
	result        []float32
	result8       []int8
}

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
