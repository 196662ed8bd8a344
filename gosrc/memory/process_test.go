package memory_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/cpu"
	"github.com/vortexgo/vortexgo/gosrc/memory"
)

func TestAllocatorBoundsSizesBeforeAllocating(t *testing.T) {
	tests := []struct {
		name    string
		n       int
		wantErr error // nil: the allocation succeeds
	}{
		{"zero", 0, nil},
		{"one page", 4096, nil},
		{"negative", -1, backend.ErrInvalid},
		{"just over the bound", backend.MaxBytes + 1, backend.ErrTooLarge},
		{"max int", int(^uint(0) >> 1), backend.ErrTooLarge},
	}
	for _, tc := range tests {
		for _, kind := range []backend.MemKind{backend.DeviceMem, backend.PinnedMem} {
			t.Run(tc.name+"/"+kind.String(), func(t *testing.T) {
				a := newAllocator(t, 0, 0)
				sh, err := a.AllocShared(kind, tc.n)
				if tc.wantErr != nil {
					require.ErrorIs(t, err, tc.wantErr)
					requireNoUsage(t, a)
					return
				}
				require.NoError(t, err)
				assert.Equal(t, tc.n, sh.Size())
				assert.Equal(t, kind, sh.Buffer().Kind())
				require.NoError(t, sh.Close())
				assert.True(t, sh.Freed())
				requireNoUsage(t, a)
			})
		}
	}
}

func TestCPUAllocationTheKernelRefusesIsTooLarge(t *testing.T) {
	// Within MaxBytes but far beyond any machine: mmap fails with ENOMEM,
	// which must reach the caller as ErrTooLarge (MemoryError), not a crash.
	_, err := cpu.Default().Alloc(backend.MaxBytes)
	require.ErrorIs(t, err, backend.ErrTooLarge)
}

func TestProcessAllocatorsShareOneBudget(t *testing.T) {
	a, err := memory.AllocatorFor(cpu.Default(), "test-a")
	require.NoError(t, err)
	b, err := memory.AllocatorFor(cpu.Default(), "test-b")
	require.NoError(t, err)
	require.Same(t, memory.Process(), a.Budget())
	require.Same(t, a.Budget(), b.Budget())
	sh, err := b.AllocShared(backend.PinnedMem, 100)
	require.NoError(t, err)
	u := memory.Process().Usage()
	assert.Equal(t, memory.PurposeUsage{Bytes: 100, Count: 1}, u.Pinned.ByPurpose["test-b"])
	require.NoError(t, sh.Close())
	u = memory.Process().Usage()
	assert.NotContains(t, u.Pinned.ByPurpose, "test-b")
}

func TestBudgetSetLimits(t *testing.T) {
	tests := []struct {
		name           string
		device, pinned int64
		wantErr        bool
	}{
		{"both", 1 << 20, 1 << 10, false},
		{"unlimited", 0, 0, false},
		{"negative device leaves both", -1, 5, true},
		{"negative pinned leaves both", 5, -1, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, err := memory.NewBudget(7, 7)
			require.NoError(t, err)
			err = b.SetLimits(tc.device, tc.pinned)
			u := b.Usage()
			if tc.wantErr {
				require.ErrorIs(t, err, backend.ErrInvalid)
				assert.Equal(t, [2]int64{7, 7}, [2]int64{u.Device.Limit, u.Pinned.Limit})
				return
			}
			require.NoError(t, err)
			assert.Equal(t, [2]int64{tc.device, tc.pinned}, [2]int64{u.Device.Limit, u.Pinned.Limit})
		})
	}
}

func TestTensorViewsOutliveResizeAndClose(t *testing.T) {
	tests := []struct {
		name  string
		after func(t *testing.T, tn *memory.DeviceTensor)
	}{
		{"close", func(t *testing.T, tn *memory.DeviceTensor) { require.NoError(t, tn.Close()) }},
		{"growing resize", func(t *testing.T, tn *memory.DeviceTensor) {
			require.NoError(t, tn.Resize(1, []int{1 << 16}, backend.Float32))
			require.NoError(t, tn.Close())
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := newAllocator(t, 0, 0)
			tn, err := memory.NewDeviceTensor(a, backend.DeviceMem, []int{4, 4}, backend.Uint8)
			require.NoError(t, err)
			v, err := tn.View()
			require.NoError(t, err)
			require.Equal(t, []int{4, 4}, v.Shape)
			require.Equal(t, backend.Uint8, v.DType)
			mem := cpu.HostBytes(v.Ptr, 16)
			mem[15] = 42
			tc.after(t, tn)
			// The old memory is still mapped and charged: the view holds it.
			assert.False(t, v.Borrow.Shared().Freed())
			assert.Equal(t, byte(42), mem[15])
			assert.Equal(t, int64(16), a.Budget().Usage().Device.Current)
			require.NoError(t, v.Borrow.Release())
			assert.True(t, v.Borrow.Shared().Freed())
			requireNoUsage(t, a)
			_, err = tn.View()
			require.ErrorIs(t, err, backend.ErrClosed, "a view after close")
		})
	}
}

func TestEmptyTensorViewLendsEmptyMemory(t *testing.T) {
	a := newAllocator(t, 0, 0)
	tn, err := memory.NewDeviceTensor(a, backend.PinnedMem, []int{0, 3}, backend.Int16)
	require.NoError(t, err)
	v, err := tn.View()
	require.NoError(t, err)
	assert.Zero(t, v.Ptr)
	assert.Zero(t, v.Borrow.Shared().Size())
	assert.Equal(t, backend.PinnedMem, v.Borrow.Shared().Buffer().Kind())
	require.NoError(t, tn.Close())
	require.NoError(t, v.Borrow.Release())
	assert.True(t, v.Borrow.Shared().Freed())
	requireNoUsage(t, a)
	var none *memory.Borrow
	require.NoError(t, none.Release(), "releasing a nil borrow is a no-op")
}
