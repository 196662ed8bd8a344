//go:build gpu

package process

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestCUDAStandaloneNext: vortex's next on a CUDAProcessor, from host
// arrays (staged through the processor's scratch) and from device arrays
// (read in place), gives what the engine's path gives on the device.
func TestCUDAStandaloneNext(t *testing.T) {
	dev := gpuDevice(t)
	const n, R = 1376, 8 // Axsun100k's length: not a power of two
	c := smallConfig(n, R)
	c.AverageWindow = 3
	rng := rand.New(rand.NewPCG(5, 6))
	raw := make([]uint16, 2*R*n)
	for i := range raw {
		raw[i] = uint16(rng.IntN(4000))
	}
	want, want8 := gpuBlocks(t, dev, c, raw, []int{R, R})
	for _, host := range []bool{true, false} {
		name := map[bool]string{true: "host", false: "device"}[host]
		t.Run(name, func(t *testing.T) {
			p, err := NewCUDAProcessor(dev, c)
			require.NoError(t, err)
			defer func() { require.NoError(t, p.Close()) }()
			alloc := func(size int) uintptr {
				var ptr uintptr
				if host {
					b, err := dev.MallocHost(size)
					require.NoError(t, err)
					t.Cleanup(func() { b.Free() })
					ptr = b.Ptr()
				} else {
					b, err := dev.Malloc(size)
					require.NoError(t, err)
					t.Cleanup(func() { b.Free() })
					ptr = b.Ptr()
				}
				return ptr
			}
			in, out, out8 := alloc(R*n*2), alloc(R*n*4), alloc(R*n)
			stage, err := dev.MallocHost(R * n * 4)
			require.NoError(t, err)
			defer stage.Free()
			s, err := dev.CreateStream(0)
			require.NoError(t, err)
			defer s.Close()
			for k := range 2 {
				block := raw[k*R*n : (k+1)*R*n]
				if host {
					copy(hostSlice[uint16](in, R*n), block)
				} else {
					copy(hostSlice[uint16](stage.Ptr(), R*n), block)
					require.NoError(t, s.CopyHtoD(in, stage.Ptr(), R*n*2))
					require.NoError(t, s.Synchronize())
				}
				require.NoError(t, p.Next(StandaloneBlock{In: in, Out: out, Out8: out8, Records: R, AppendHistory: true, Host: host}))
				var got []float32
				var got8 []int8
				if host {
					got, got8 = slices.Clone(hostSlice[float32](out, R*n)), slices.Clone(hostSlice[int8](out8, R*n))
				} else {
					require.NoError(t, s.CopyDtoH(stage.Ptr(), out, R*n*4))
					require.NoError(t, s.Synchronize())
					got = slices.Clone(hostSlice[float32](stage.Ptr(), R*n))
					require.NoError(t, s.CopyDtoH(stage.Ptr(), out8, R*n))
					require.NoError(t, s.Synchronize())
					got8 = slices.Clone(hostSlice[int8](stage.Ptr(), R*n))
				}
				require.Equal(t, want[k*R*n:(k+1)*R*n], got, "block %d", k)
				require.Equal(t, want8[k*R*n:(k+1)*R*n], got8, "block %d", k)
			}
		})
	}
}
