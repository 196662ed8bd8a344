package hostmem

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/vortexgo/vortexgo/gosrc/backend"
)

// kept makes the tests' buffers escape to the heap: Go never moves heap
// objects, while a goroutine's stack (and a uintptr into it) may move.
var kept []any

func addr[T any](s []T) int {
	kept = append(kept, s)
	return int(uintptr(unsafe.Pointer(unsafe.SliceData(s))))
}

func TestSpanBounds(t *testing.T) {
	buf := []int64{1, 2, 3}
	tests := []struct {
		name    string
		ptr, n  int
		want    []int64
		wantErr bool
	}{
		{"all", addr(buf), 3, []int64{1, 2, 3}, false},
		{"empty", 0, 0, nil, false},
		{"negative n", addr(buf), -1, nil, true},
		{"no address", 0, 2, nil, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Span[int64](tc.ptr, tc.n)
			if tc.wantErr {
				require.ErrorIs(t, err, backend.ErrInvalid)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

func TestCopies(t *testing.T) {
	src := []float32{1, 2}
	in, err := CopyIn[float32](addr(src), 2)
	require.NoError(t, err)
	src[0] = 9
	require.Equal(t, []float32{1, 2}, in, "a copy, not a view")
	dst := make([]float32, 2)
	require.NoError(t, CopyOut(addr(dst), 2, in))
	require.Equal(t, in, dst)
	require.ErrorIs(t, CopyOut(addr(dst), 1, in), backend.ErrInvalid, "the size must match")
}

func TestRecordAndInts(t *testing.T) {
	dst := make([]float64, 2)
	require.Equal(t, 3, Record(addr(dst), 2, 1, 2, 3), "too small: nothing written, the size asked")
	require.Equal(t, []float64{0, 0}, dst)
	require.Equal(t, 2, Record(addr(dst), 2, 4, 5))
	require.Equal(t, []float64{4, 5}, dst)
	require.Equal(t, []int{-1, 7}, Ints[int](addr([]int64{-5, 7}), 2, -1))
	require.Empty(t, Ints[int](0, 1, 0), "no address: the empty list")
}
