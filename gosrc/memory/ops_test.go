package memory_test

import (
	"errors"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/cpu"
	"github.com/vortexgo/vortexgo/gosrc/internal/testmem"
	"github.com/vortexgo/vortexgo/gosrc/memory"
)

func TestOpBytes(t *testing.T) {
	tests := []struct {
		name     string
		op       memory.Op
		dst, src int
		wantErr  error
	}{
		{"copy", memory.Op{Code: memory.OpCopy, N: 10}, 10, 10, nil},
		{"memset", memory.Op{Code: memory.OpMemset, N: 10, A: 255}, 10, 0, nil},
		{"memset not a byte", memory.Op{Code: memory.OpMemset, N: 10, A: 256}, 0, 0, backend.ErrInvalid},
		{"fill", memory.Op{Code: memory.OpFill, N: 3, DType: backend.Float64, A: 1e300}, 24, 0, nil},
		{"fill out of range", memory.Op{Code: memory.OpFill, N: 3, DType: backend.Int8, A: 128}, 0, 0, backend.ErrInvalid},
		{"scale offset", memory.Op{Code: memory.OpScaleOffset, N: 3, DType: backend.Uint16}, 6, 6, nil},
		{"cast", memory.Op{Code: memory.OpCast, N: 3, DType: backend.Float32, SrcDType: backend.Int8}, 12, 3, nil},
		{"negative", memory.Op{Code: memory.OpCopy, N: -1}, 0, 0, backend.ErrInvalid},
		{"beyond MaxBytes", memory.Op{Code: memory.OpCast, N: backend.MaxBytes + 1, DType: backend.Float64}, 0, 0, backend.ErrInvalid},
		{"bad dtype", memory.Op{Code: memory.OpFill, N: 1, DType: 99}, 0, 0, backend.ErrInvalid},
		{"bad code", memory.Op{Code: 42, N: 1}, 0, 0, backend.ErrInvalid},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dst, src, err := tc.op.Bytes()
			if tc.wantErr != nil {
				require.ErrorIs(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, [2]int{tc.dst, tc.src}, [2]int{dst, src})
		})
	}
}

func TestOpRunOnCPU(t *testing.T) {
	s, err := cpu.Default().NewStream(0)
	require.NoError(t, err)
	defer func() { require.NoError(t, s.Close()) }()
	a := newAllocator(t, 0, 0)
	dst, err := a.AllocShared(backend.DeviceMem, 16)
	require.NoError(t, err)
	src, err := a.AllocShared(backend.DeviceMem, 16)
	require.NoError(t, err)
	f32 := func(sh *memory.Shared) []float32 {
		return unsafe.Slice((*float32)(unsafe.Pointer(&cpu.HostBytes(sh.Ptr(), 16)[0])), 4)
	}
	run := func(o memory.Op) {
		t.Helper()
		_, _, err := o.Bytes()
		require.NoError(t, err)
		require.NoError(t, o.Run(s, dst.Ptr(), src.Ptr()))
	}
	run(memory.Op{Code: memory.OpFill, N: 4, DType: backend.Float32, SrcDType: backend.Float32, A: 2})
	require.NoError(t, memory.Op{Code: memory.OpCopy, N: 16}.Run(s, src.Ptr(), dst.Ptr())) // src = dst
	run(memory.Op{Code: memory.OpScaleOffset, N: 4, DType: backend.Float32, SrcDType: backend.Float32, A: 3, B: 1})
	assert.Equal(t, []float32{7, 7, 7, 7}, f32(dst))
	run(memory.Op{Code: memory.OpMemset, N: 16, A: 0})
	assert.Equal(t, []float32{0, 0, 0, 0}, f32(dst))
	require.ErrorIs(t, memory.Op{Code: 42}.Run(s, dst.Ptr(), src.Ptr()), backend.ErrInvalid)
	require.NoError(t, dst.Close())
	require.NoError(t, src.Close())
	requireNoUsage(t, a)
}

func TestSharedReachable(t *testing.T) {
	cpuStream, err := cpu.Default().NewStream(0)
	require.NoError(t, err)
	defer func() { require.NoError(t, cpuStream.Close()) }()
	a := newAllocator(t, 0, 0)
	for _, kind := range []backend.MemKind{backend.DeviceMem, backend.PinnedMem} {
		sh, err := a.AllocShared(kind, 8)
		require.NoError(t, err)
		for _, copying := range []bool{false, true} {
			assert.NoError(t, sh.Reachable(cpuStream, copying), "CPU memory on a CPU stream")
		}
		require.NoError(t, sh.Close())
	}
}

// TestOpRunHeld: operations hold the memory they name and check each
// range against it, before a byte moves.
func TestOpRunHeld(t *testing.T) {
	s, err := cpu.Default().NewStream(0)
	require.NoError(t, err)
	defer func() { require.NoError(t, s.Close()) }()
	a := newAllocator(t, 0, 0)
	_, hostPtr := testmem.Slice[byte](t, 32)
	copy16 := memory.Op{Code: memory.OpCopy, N: 16}
	tests := []struct {
		name    string
		run     func(sh *memory.Shared) error
		wantErr error // nil for success
		text    string
	}{
		{"host to memory", func(sh *memory.Shared) error {
			return copy16.RunHeld(s, sh, sh.Ptr(), nil, hostPtr)
		}, nil, ""},
		{"nothing to do needs no range", func(sh *memory.Shared) error {
			return memory.Op{Code: memory.OpCopy}.RunHeld(s, sh, 0, sh, 0)
		}, nil, ""},
		{"destination too small", func(sh *memory.Shared) error {
			return memory.Op{Code: memory.OpCopy, N: 17}.RunHeld(s, sh, sh.Ptr(), nil, hostPtr)
		}, backend.ErrInvalid, "destination: "},
		{"source outside", func(sh *memory.Shared) error {
			return copy16.RunHeld(s, nil, hostPtr, sh, sh.Ptr()+8)
		}, backend.ErrInvalid, "source: "},
		{"closed owner", func(sh *memory.Shared) error {
			ptr := sh.Ptr()
			require.NoError(t, sh.Close())
			return copy16.RunHeld(s, sh, ptr, nil, hostPtr)
		}, backend.ErrClosed, "destination: "},
		{"a borrow outlives its closed owner", func(sh *memory.Shared) error {
			b, err := sh.Borrow()
			require.NoError(t, err)
			require.NoError(t, sh.Close())
			ptr := b.Ptr()
			return errors.Join(copy16.RunHeld(s, b, ptr, nil, hostPtr), b.Release())
		}, nil, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sh, err := a.AllocShared(backend.DeviceMem, 16)
			require.NoError(t, err)
			err = tc.run(sh)
			if tc.wantErr == nil {
				require.NoError(t, err)
			} else {
				require.ErrorIs(t, err, tc.wantErr)
				require.ErrorContains(t, err, tc.text)
			}
			_ = sh.Close() // the case may have closed it
			requireNoUsage(t, a)
		})
	}
}

func TestTensorInfo(t *testing.T) {
	tn, err := memory.NewDeviceTensor(newAllocator(t, 0, 0), backend.DeviceMem, []int{2, 3}, backend.Int16)
	require.NoError(t, err)
	want := memory.TensorInfo{Shape: []int{2, 3}, DType: "int16", Nbytes: 12}
	assert.Equal(t, want, tn.Info())
	v, err := tn.View()
	require.NoError(t, err)
	require.NoError(t, tn.Resize(1, []int{}, backend.Float64))
	assert.Equal(t, "float64", tn.Info().DType)
	assert.Empty(t, tn.Info().Shape, "0-d")
	assert.Equal(t, 8, tn.Info().Nbytes)
	assert.Equal(t, want, v.Info(), "the view keeps what it showed")
	require.NoError(t, tn.Close())
	assert.True(t, tn.Info().Closed)
	require.NoError(t, v.Borrow.Release())
}
