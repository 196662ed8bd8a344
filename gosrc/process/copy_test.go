package process

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/cpu"
)

// TestCopyProcessor: vortex's CopyProcessor semantics: the channel's raw
// values through the slice (vortex's count) and transform, the int8 output
// their C cast (the low byte of a raw value: 1007 -> -17).
func TestCopyProcessor(t *testing.T) {
	const n, ch, R = 10, 2, 3
	tests := []struct {
		name      string
		slice     [3]int
		transform [2]float64
		channel   int
		m         int
		f         func(x uint16) (float32, int8)
	}{
		{"null", [3]int{}, [2]float64{}, 1, n, func(x uint16) (float32, int8) { return float32(x), int8(x) }},
		{"slice", [3]int{1, 10, 3}, [2]float64{}, 0, 3, func(x uint16) (float32, int8) { return float32(x), int8(x) }},
		{"linear", [3]int{2, 7, 1}, [2]float64{0.5, -3}, 1, 5, func(x uint16) (float32, int8) {
			v := 0.5*float64(x) - 3
			return float32(v), int8(int64(v))
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := smallConfig(n, R)
			c.ChannelsPerSample, c.Channel, c.SampleSlice, c.SampleTransform = ch, tc.channel, tc.slice, tc.transform
			p, err := NewCopyProcessor(c)
			require.NoError(t, err)
			defer func() { require.NoError(t, p.Close()) }()
			require.Equal(t, tc.m, p.OutputSamples())
			require.NoError(t, p.Prepare())
			h := newHostBuffers(t, n*ch, tc.m, R)
			for i := range h.raw {
				h.raw[i] = uint16(i*1000 + 7)
			}
			require.NoError(t, p.Process(1, h.s, h.in.Ptr(), R, h.out.Ptr(), h.out8.Ptr()))
			start, step := tc.slice[0], max(tc.slice[2], 1)
			for r := range R {
				for j := range tc.m {
					x := h.raw[r*n*ch+(start+j*step)*ch+tc.channel]
					f, i8 := tc.f(x)
					require.Equal(t, f, h.result[r*tc.m+j], "record %d sample %d", r, j)
					require.Equal(t, i8, h.result8[r*tc.m+j], "record %d sample %d", r, j)
				}
			}
		})
	}
	require.Equal(t, int8(-17), func() int8 { x := uint16(1007); return int8(x) }(), "vortex's cast of 1007")

	bad := []struct {
		name string
		mod  func(*Config)
		want string
	}{
		{"slice-past", func(c *Config) { c.SampleSlice = [3]int{0, n + 1, 1} }, "SampleSlice=[0 11 1], expected start >= 0, stop <= SamplesPerRecord=10"},
		{"slice-empty", func(c *Config) { c.SampleSlice = [3]int{4, 5, 2} }, "at least one sample"},
		{"channel", func(c *Config) { c.Channel = 1 }, "Channel=1, expected in [0, ChannelsPerSample=1)"},
		{"transform", func(c *Config) { c.SampleTransform = [2]float64{1, mathInf()} }, "finite (scale, offset)"},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			c := smallConfig(n, R)
			tc.mod(&c)
			_, err := NewCopyProcessor(c)
			require.ErrorContains(t, err, tc.want)
		})
	}
	p, err := NewCopyProcessorOn(cpu.Default(), smallConfig(n, R))
	require.NoError(t, err)
	require.NoError(t, p.Claims()[0].Take())
	c := smallConfig(n, R)
	c.SampleSlice = [3]int{0, 5, 1}
	require.ErrorIs(t, p.Change(c), backend.ErrInUse, "the A-scan length changes under a running engine")
	c.SampleSlice = [3]int{5, 10, 1}
	require.NoError(t, p.Change(smallConfig(n, R)), "same shape: taken at the next block")
	p.Claims()[0].Drop()
	require.NoError(t, p.Change(c))
	require.Equal(t, 5, p.OutputSamples())
}

// TestNullProcessor: it writes nothing and holds its configuration.
func TestNullProcessor(t *testing.T) {
	p, err := NewNullProcessorOn(cpu.Default(), smallConfig(16, 4))
	require.NoError(t, err)
	require.Equal(t, 16, p.OutputSamples())
	require.NoError(t, p.Prepare())
	h := newHostBuffers(t, 16, 16, 4)
	for i := range h.result {
		h.result[i] = 5
	}
	require.NoError(t, p.Process(0, h.s, h.in.Ptr(), 4, h.out.Ptr(), 0))
	for _, v := range h.result {
		require.Equal(t, float32(5), v, "nothing written")
	}
	require.NoError(t, p.Close())
	require.ErrorIs(t, p.Prepare(), backend.ErrClosed)
}

func mathInf() float64 { return math.Inf(1) }
