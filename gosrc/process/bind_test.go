package process

import (
	"encoding/json"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vortexgo/vortexgo/gosrc/backend"
)

func nextRecord(t testing.TB, a nextArgs) []byte {
	t.Helper()
	b, err := json.Marshal(a)
	require.NoError(t, err)
	return b
}

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
				a := nextArgs{In: h.in.Ptr(), Records: b, Host: true}
				if outs != "int8" {
					a.Out = h.out.Ptr()
				}
				if outs != "float32" {
					a.Out8 = h.out8.Ptr()
				}
				_, err := p.Do("next", nextRecord(t, a), nil, 0, 0)
				require.NoError(t, err)
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

// TestStandaloneChangeAndErrors: change through a processor holding the
// new configuration, and each bad call refused naming what is wrong.
func TestStandaloneChangeAndErrors(t *testing.T) {
	const n, R = 32, 4
	p, err := NewCPUProcessor(smallConfig(n, R))
	require.NoError(t, err)
	h := newHostBuffers(t, n, n, R)
	for i := range h.raw {
		h.raw[i] = uint16(i % 97 * 31)
	}
	next := func(a nextArgs) error {
		_, err := p.Do("next", nextRecord(t, a), nil, 0, 0)
		return err
	}
	ok := nextArgs{In: h.in.Ptr(), Out: h.out.Ptr(), Records: R, Host: true}
	require.NoError(t, next(ok))
	logged := append([]float32(nil), h.result...)

	c2 := smallConfig(n, R)
	c2.EnableLog10 = false
	with, err := NewCPUProcessor(c2)
	require.NoError(t, err)
	_, err = p.Do("change", nil, with, 0, 0)
	require.NoError(t, err)
	require.False(t, p.Config().EnableLog10)
	require.NoError(t, next(ok))
	require.NotEqual(t, logged, h.result, "the change applies to the next block")

	tests := []struct {
		name string
		op   string
		a    nextArgs
		with any
		is   error
		want string
	}{
		{"zero-records", "next", nextArgs{In: h.in.Ptr(), Out: h.out.Ptr(), Host: true}, nil, backend.ErrInvalid, "0 records, expected 1..ascans_per_block=4"},
		{"too-many", "next", nextArgs{In: h.in.Ptr(), Out: h.out.Ptr(), Records: R + 1, Host: true}, nil, backend.ErrInvalid, "5 records"},
		{"no-output", "next", nextArgs{In: h.in.Ptr(), Records: 1, Host: true}, nil, backend.ErrInvalid, "expected an input and an output"},
		{"device-on-cpu", "next", nextArgs{In: h.in.Ptr(), Out: h.out.Ptr(), Records: 1}, nil, backend.ErrInvalid, "expected host (NumPy) arrays"},
		{"change-without", "change", nextArgs{}, 3, backend.ErrInvalid, "with=int, expected a processor"},
		{"unknown", "rewind", nextArgs{}, nil, backend.ErrInvalid, `operation "rewind"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := p.Do(tc.op, nextRecord(t, tc.a), tc.with, 0, 0)
			require.ErrorIs(t, err, tc.is)
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
