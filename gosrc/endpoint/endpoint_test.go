package endpoint

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/cpu"
	"github.com/vortexgo/vortexgo/gosrc/ops"
)

func hostBuf(t *testing.T, n int) backend.Buffer {
	t.Helper()
	b, err := cpu.Default().Alloc(n)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, b.Free()) })
	return b
}

func TestFormatHostCastsAndPlaces(t *testing.T) {
	// Two source records of 4 float32 samples (stride 5), cropped to
	// samples [1, 3), into a destination of stride 2.
	src := []float32{9, 1.5, 2.5, 9, 9, 9, float32(math.NaN()), 70000, 9, 9}
	tests := []struct {
		name    string
		dst     backend.DType
		reverse bool
		want    []float64
	}{
		{"f32", backend.Float32, false, []float64{1.5, 2.5, math.NaN(), 70000}},
		{"u16 rounds to even, saturates, NaN->0", backend.Uint16, false, []float64{2, 2, 0, 65535}},
		{"i8 reversed", backend.Int8, true, []float64{0, 127, 2, 2}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, viaOps := range []bool{false, true} {
				s := hostBuf(t, 4*len(src))
				copy(hostView[float32](s.Ptr(), len(src)), src)
				d := hostBuf(t, 4*tc.dst.Size())
				a := FormatArgs{Dst: d.Ptr(), Src: s.Ptr() + 4, DstType: tc.dst, SrcType: backend.Float32,
					Records: 2, Samples: 2, DstStride: 2, SrcStride: 5, Reverse: tc.reverse}
				if viaOps {
					// The registered twin behind ops.LaunchByName.
					st, err := cpu.Default().NewStream(0)
					require.NoError(t, err)
					name, err := KernelName(a.SrcType, a.DstType)
					require.NoError(t, err)
					require.NoError(t, ops.LaunchByName(st, name, [3]uint32{1, 2, 1}, [3]uint32{256, 1, 1}, KernelArgs(&a)...))
					require.NoError(t, st.Close())
				} else {
					require.NoError(t, FormatHost(&a))
				}
				for i, w := range tc.want {
					var got float64
					switch tc.dst {
					case backend.Float32:
						got = float64(hostView[float32](d.Ptr(), 4)[i])
					case backend.Uint16:
						got = float64(hostView[uint16](d.Ptr(), 4)[i])
					case backend.Int8:
						got = float64(hostView[int8](d.Ptr(), 4)[i])
					}
					if math.IsNaN(w) {
						require.True(t, math.IsNaN(got), "element %d (ops=%v)", i, viaOps)
					} else {
						require.Equal(t, w, got, "element %d (ops=%v)", i, viaOps)
					}
				}
			}
		})
	}
}

func TestKernelNames(t *testing.T) {
	tests := []struct {
		src, dst backend.DType
		want     string
	}{
		{backend.Float32, backend.Int8, "vortexgo_format_f32_i8"},
		{backend.Float32, backend.Uint16, "vortexgo_format_f32_u16"},
		{backend.Uint16, backend.Uint16, "vortexgo_format_u16_u16"},
		{backend.Uint16, backend.Float32, ""},
	}
	for _, tc := range tests {
		got, err := KernelName(tc.src, tc.dst)
		if tc.want == "" {
			require.ErrorContains(t, err, "no format kernel from uint16 to float32")
			continue
		}
		require.NoError(t, err)
		require.Equal(t, tc.want, got)
	}
	for _, name := range kernelNames {
		require.Contains(t, ops.HostKernels(), name, "CPU twin registered")
	}
}

func TestConstructorErrors(t *testing.T) {
	_, err := NewStackDeviceTensorEndpoint(backend.Float64)
	require.ErrorContains(t, err, "dtype=float64, expected int8, uint16 or float32")
	_, err = NewStackHostTensorEndpoint(backend.Complex64)
	require.ErrorContains(t, err, "dtype=complex64")
	_, err = NewAscanStackEndpoint(nil)
	require.ErrorContains(t, err, "store=nil")
	_, err = NewSpectraStackEndpoint(nil)
	require.ErrorContains(t, err, "store=nil")
}
