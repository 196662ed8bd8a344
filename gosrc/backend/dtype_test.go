package backend

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseDType(t *testing.T) {
	tests := []struct {
		name string
		want DType
		size int
	}{
		{"int8", Int8, 1}, {"uint8", Uint8, 1}, {"int16", Int16, 2}, {"uint16", Uint16, 2},
		{"int32", Int32, 4}, {"uint32", Uint32, 4}, {"float32", Float32, 4},
		{"float64", Float64, 8}, {"complex64", Complex64, 8},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, err := ParseDType(tc.name)
			require.NoError(t, err)
			require.Equal(t, tc.want, d)
			require.Equal(t, tc.size, d.Size())
			require.Equal(t, tc.name, d.String())
			require.True(t, d.Valid())
		})
	}
	_, err := ParseDType("float16")
	require.ErrorContains(t, err, `unsupported "float16"`)
	require.False(t, DType(99).Valid())
}

func TestKindStrings(t *testing.T) {
	require.Equal(t, "cpu", CPU.String())
	require.Equal(t, "cuda", CUDA.String())
	require.Equal(t, "pinned", PinnedMem.String())
	require.Equal(t, "device", DeviceMem.String())
}
