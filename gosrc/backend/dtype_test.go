package backend

import (
	"math"
	"strings"
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
	require.ErrorIs(t, err, ErrInvalid)
	require.False(t, DType(99).Valid())
}

func TestKindStrings(t *testing.T) {
	require.Equal(t, "cpu", CPU.String())
	require.Equal(t, "cuda", CUDA.String())
	require.Equal(t, "pinned", PinnedMem.String())
	require.Equal(t, "device", DeviceMem.String())
}

func TestByteSizeBounds(t *testing.T) {
	tests := []struct {
		name    string
		shape   []int
		dtype   DType
		want    int
		wantErr error
	}{
		{"scalar", []int{}, Float64, 8, nil},
		{"zero-size with a huge dim", []int{0, 1 << 62}, Float32, 0, nil},
		{"exactly the bound", []int{1 << 48}, Float64, MaxBytes, nil},
		{"one element over", []int{1<<48 + 1}, Float64, 0, ErrTooLarge},
		{"product overflows int64", []int{1 << 40, 1 << 40}, Int8, 0, ErrTooLarge},
		{"negative", []int{3, -1}, Int8, 0, ErrInvalid},
		{"bad dtype", []int{3}, DType(42), 0, ErrInvalid},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n, err := ByteSize(tc.shape, tc.dtype)
			if tc.wantErr != nil {
				require.ErrorIs(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, n)
		})
	}
}

func TestParseShape(t *testing.T) {
	tests := []struct {
		in      string
		want    []int
		wantErr error
	}{
		{"", []int{}, nil},
		{"3", []int{3}, nil},
		{"3, 4,5", []int{3, 4, 5}, nil},
		{"0,9223372036854775807", []int{0, 1<<63 - 1}, nil},
		{"2,-1", nil, ErrInvalid},
		{"2,1.5", nil, ErrInvalid},
		{"a", nil, ErrInvalid},
		{"99999999999999999999", nil, ErrTooLarge},
		{"4294967296,4294967296", nil, ErrTooLarge},
		{strings.Repeat("1,", MaxDims) + "1", nil, ErrInvalid},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseShape(tc.in)
			if tc.wantErr != nil {
				require.ErrorIs(t, err, tc.wantErr)
				require.ErrorContains(t, err, "shape")
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
			require.Equal(t, got, must(ParseShape(FormatShape(got))))
		})
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func TestCheckValue(t *testing.T) {
	tests := []struct {
		dtype DType
		v     float64
		ok    bool
	}{
		{Int8, 127, true}, {Int8, 128, false}, {Int8, -128, true}, {Int8, -129, false},
		{Uint8, -1, false}, {Uint16, 65535, true}, {Uint32, 4294967295, true}, {Uint32, 4294967296, false},
		{Int32, math.NaN(), false}, {Int16, math.Inf(1), false},
		{Float32, math.Inf(-1), true}, {Float64, math.NaN(), true}, {Complex64, 1e300, true},
	}
	for _, tc := range tests {
		t.Run(tc.dtype.String(), func(t *testing.T) {
			err := tc.dtype.CheckValue(tc.v)
			if tc.ok {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, ErrInvalid)
		})
	}
}

// TestInvalidf: the text is exactly the caller's, and it is an ErrInvalid.
func TestInvalidf(t *testing.T) {
	err := Invalidf("n=%d, expected >= 0", -1)
	require.ErrorIs(t, err, ErrInvalid)
	require.EqualError(t, err, "n=-1, expected >= 0")
}
