package process

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vortexgo/vortexgo/gosrc/backend"
)

// TestStandaloneNextEqualsTheEnginePath: vortex's next outside an engine
// (float32, int8 or both outputs, append_history on and off) gives what
// Process gives the engine, block after block, the history carried over.
func TestStandaloneNextEqualsTheEnginePath(t *testing.T) {
	const n, R = 48, 6
	c := smallConfig(n, R)
	c.AverageWindow = 4
	rng := rand.New(rand.NewPCG(3, 4))
	raw := make([]uint16, 3*R*n)
	for i := range raw {
		raw[i] = uint16(rng.IntN(4000))
	}
	blocks := []int{R, 2, R}
	want, want8 := cpuBlocks(t, c, raw, blocks)
	for _, outs := range []string{"both", "float32", "int8"} {
		t.Run(outs, func(t *testing.T) {
			p, err := NewCPUProcessor(c)
			require.NoError(t, err)
			defer func() { require.NoError(t, p.Close()) }()
			h := newHostBuffers(t, n, n, R)
			start := 0
			for _, b := range blocks {
				copy(h.raw, raw[start*n:(start+b)*n])
				clear(h.result)
				clear(h.result8)
				a := StandaloneBlock{In: h.in.Ptr(), Records: b, AppendHistory: true, Host: true}
				if outs != "int8" {
					a.Out = h.out.Ptr()
				}
				if outs != "float32" {
					a.Out8 = h.out8.Ptr()
				}
				require.NoError(t, p.Next(a))
				if outs != "int8" {
					require.Equal(t, want[start*n:(start+b)*n], h.result[:b*n], "records %d..%d", start, start+b)
				}
				if outs != "float32" {
					require.Equal(t, want8[start*n:(start+b)*n], h.result8[:b*n])
				}
				start += b
			}
		})
	}
}

// TestStandaloneChangeAndErrors: change to another processor's
// configuration, and each bad call refused naming what is wrong.
func TestStandaloneChangeAndErrors(t *testing.T) {
	const n, R = 32, 4
	p, err := NewCPUProcessor(smallConfig(n, R))
	require.NoError(t, err)
	h := newHostBuffers(t, n, n, R)
	for i := range h.raw {
		h.raw[i] = uint16(i % 97 * 31)
	}
	next := p.Next
	ok := StandaloneBlock{In: h.in.Ptr(), Out: h.out.Ptr(), Records: R, AppendHistory: true, Host: true}
	require.NoError(t, next(ok))
	logged := append([]float32(nil), h.result...)

	c2 := smallConfig(n, R)
	c2.EnableLog10 = false
	with, err := NewCPUProcessor(c2)
	require.NoError(t, err)
	require.NoError(t, p.Change(with.Config()))
	require.False(t, p.Config().EnableLog10)
	require.NoError(t, next(ok))
	require.NotEqual(t, logged, h.result, "the change applies to the next block")

	tests := []struct {
		name string
		a    StandaloneBlock
		want string
	}{
		{"zero-records", StandaloneBlock{In: h.in.Ptr(), Out: h.out.Ptr(), Host: true}, "0 records, expected 1..ascans_per_block=4"},
		{"too-many", StandaloneBlock{In: h.in.Ptr(), Out: h.out.Ptr(), Records: R + 1, Host: true}, "5 records"},
		{"no-output", StandaloneBlock{In: h.in.Ptr(), Records: 1, Host: true}, "expected an input and an output"},
		{"device-on-cpu", StandaloneBlock{In: h.in.Ptr(), Out: h.out.Ptr(), Records: 1}, "expected host (NumPy) arrays"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := p.Next(tc.a)
			require.ErrorIs(t, err, backend.ErrInvalid)
			require.ErrorContains(t, err, tc.want)
		})
	}
	require.NoError(t, p.Claims()[0].Take())
	require.ErrorIs(t, next(ok), backend.ErrInUse, "an engine's processor is not driven by hand")
	p.Claims()[0].Drop()
	require.NoError(t, p.Close())
	require.ErrorIs(t, next(ok), backend.ErrClosed)
	require.NoError(t, with.Close())
}

// TestStandaloneOneChannelOfABlock: a single channel of an interleaved
// block (vortex's pre-indexed spectra[..., c]: its address at channel c,
// only the bytes up to its last sample readable) processes as that channel
// of the whole block does; the other channels' bytes past its end are
// never read. Refused with another channel or a clock channel configured.
func TestStandaloneOneChannelOfABlock(t *testing.T) {
	const n, R, cps = 40, 5, 2
	rng := rand.New(rand.NewPCG(7, 8))
	for _, window := range []int{0, 3} {
		whole := smallConfig(n, R)
		whole.ChannelsPerSample, whole.Channel, whole.AverageWindow = cps, 1, window
		one := whole
		one.Channel = 0
		pw, err := NewCPUProcessor(whole)
		require.NoError(t, err)
		po, err := NewCPUProcessor(one)
		require.NoError(t, err)
		h := newHostBuffers(t, n*cps, n, R)
		got := newHostBuffers(t, n*cps, n, R)
		span := ((R*n-1)*cps + 1) * 2 // channel 1's bytes, from its first sample to its last
		for block := 0; block < 3; block++ {
			for i := range h.raw {
				h.raw[i] = uint16(rng.IntN(4000))
			}
			require.NoError(t, pw.Next(StandaloneBlock{In: h.in.Ptr(), Out: h.out.Ptr(), Out8: h.out8.Ptr(),
				Records: R, AppendHistory: true, Host: true}))
			require.NoError(t, po.Next(StandaloneBlock{In: h.in.Ptr() + 2, InBytes: span, Out: got.out.Ptr(),
				Out8: got.out8.Ptr(), Records: R, AppendHistory: true, Host: true}))
			require.Equal(t, h.result, got.result, "window %d block %d", window, block)
			require.Equal(t, h.result8, got.result8, "window %d block %d", window, block)
		}
		require.NoError(t, pw.Close())
		require.NoError(t, po.Close())
	}

	h := newHostBuffers(t, n*cps, n, R)
	for _, tc := range []struct {
		name    string
		channel int
		clock   bool
		bytes   int
		want    string
	}{
		{"too-many-bytes", 0, false, R*n*cps*2 + 2, "expected 0 (the whole block) up to the block's 800"},
		{"negative-bytes", 0, false, -1, "-1 input bytes"},
		{"other-channel", 1, false, 10, "with channel=1"},
		{"clock", 0, true, 10, "clock_channel=true"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := smallConfig(n, R)
			c.ChannelsPerSample, c.Channel = cps, tc.channel
			if tc.clock {
				k := 1
				c.ClockChannel = &k
			}
			p, err := NewCPUProcessor(c)
			require.NoError(t, err)
			defer func() { require.NoError(t, p.Close()) }()
			err = p.Next(StandaloneBlock{In: h.in.Ptr(), InBytes: tc.bytes, Out: h.out.Ptr(), Records: R, Host: true})
			require.ErrorIs(t, err, backend.ErrInvalid)
			require.ErrorContains(t, err, tc.want)
		})
	}
}
