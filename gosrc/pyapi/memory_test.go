package pyapi

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vortexgo/vortexgo/gosrc/cpu"
	"github.com/vortexgo/vortexgo/gosrc/internal/testmem"
	"github.com/vortexgo/vortexgo/gosrc/memory"
)

func TestArrayOpsCheckMemory(t *testing.T) {
	dev, err := GetDevice("cpu")
	require.NoError(t, err)
	s, err := dev.NewStream(0)
	require.NoError(t, err)
	defer func() { require.NoError(t, s.Close()) }()
	f32 := DTypeCode("float32")
	_, addr := testmem.Slice[float32](t, 16)
	hostPtr := int(addr)
	tests := []struct {
		name    string
		run     func(b *Buffer, l *Lease) error
		wantErr string // "" for success
	}{
		{"fill all", func(b *Buffer, _ *Lease) error {
			return ArrayOp(int(memory.OpFill), s.ID(), b.ID(), b.Ptr(), 0, 0, 16, f32, f32, 2, 0)
		}, ""},
		{"fast path fails where the method path raises", func(b *Buffer, _ *Lease) error {
			require.Equal(t, -1, FastArrayOp(int(memory.OpFill), s.ID(), b.ID(), b.Ptr(), 0, 0, 17, f32, f32, 2, 0))
			require.Zero(t, FastArrayOp(int(memory.OpCopy), s.ID(), 0, hostPtr, b.ID(), b.Ptr(), 64, 0, 0, 0, 0))
			return nil
		}, ""},
		{"fill one element too many", func(b *Buffer, _ *Lease) error {
			return ArrayOp(int(memory.OpFill), s.ID(), b.ID(), b.Ptr(), 0, 0, 17, f32, f32, 2, 0)
		}, "ValueError: destination: memory: 68 bytes"},
		{"copy from an address outside", func(b *Buffer, _ *Lease) error {
			return ArrayOp(int(memory.OpCopy), s.ID(), 0, hostPtr, b.ID(), b.Ptr()+8, 64, 0, 0, 0, 0)
		}, "ValueError: source: memory: 64 bytes"},
		{"fill out of the dtype's range", func(b *Buffer, _ *Lease) error {
			return ArrayOp(int(memory.OpFill), s.ID(), b.ID(), b.Ptr(), 0, 0, 4, DTypeCode("int8"), 0, 1000, 0)
		}, "ValueError: memory.Op: fill_value: value=1000 is out of range for int8"},
		{"after free", func(b *Buffer, _ *Lease) error {
			require.NoError(t, b.Free())
			return ArrayOp(int(memory.OpMemset), s.ID(), b.ID(), b.Ptr(), 0, 0, 64, 0, 0, 0, 0)
		}, "ClosedError: destination"},
		{"through a lease after the owner freed", func(b *Buffer, l *Lease) error {
			require.NoError(t, b.Free())
			return ArrayOp(int(memory.OpScaleOffset), s.ID(), l.ID(), l.Ptr(), l.ID(), l.Ptr(), 16, f32, f32, 2, 1)
		}, ""},
		{"through a released lease", func(b *Buffer, l *Lease) error {
			require.NoError(t, l.Release())
			return ArrayOp(int(memory.OpMemset), s.ID(), l.ID(), l.Ptr(), 0, 0, 64, 0, 0, 0, 0)
		}, "ClosedError"},
		{"a closed stream", func(b *Buffer, _ *Lease) error {
			s2, err := dev.NewStream(0)
			require.NoError(t, err)
			require.NoError(t, s2.Close())
			return ArrayOp(int(memory.OpMemset), s2.ID(), b.ID(), b.Ptr(), 0, 0, 64, 0, 0, 0, 0)
		}, "ClosedError: stream"},
		{"an unknown op", func(b *Buffer, _ *Lease) error {
			return ArrayOp(99, s.ID(), b.ID(), b.Ptr(), 0, 0, 4, 0, 0, 0, 0)
		}, "ValueError: memory.Op: code=99"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, err := dev.Alloc(64, false)
			require.NoError(t, err)
			l, err := b.Lease()
			require.NoError(t, err)
			err = tc.run(b, l)
			if tc.wantErr == "" {
				require.NoError(t, err)
			} else {
				require.ErrorContains(t, err, tc.wantErr)
			}
			require.NoError(t, l.Release())
			_ = b.Free() // may have been freed by the case
		})
	}
}

func TestFreeWhileOperationsRun(t *testing.T) {
	// Operations hold the memory for their duration: freeing concurrently
	// must end in success or a ClosedError, never a fault (-race).
	dev, err := GetDevice("cpu")
	require.NoError(t, err)
	const size = 1 << 20
	for round := range 20 {
		b, err := dev.Alloc(size, round%2 == 0)
		require.NoError(t, err)
		// Python caches the address when the array is made; the id is what
		// the operation borrows, so the race is free against the borrow.
		ptr := b.Ptr()
		var wg sync.WaitGroup
		errs := make(chan error, 64)
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				s, err := dev.NewStream(0)
				if err != nil {
					errs <- err
					return
				}
				defer s.Close()
				for range 16 {
					if FastArrayOp(int(memory.OpMemset), s.ID(), b.ID(), ptr, 0, 0, size, 0, 0, 7, 0) != 0 {
						errs <- ArrayOp(int(memory.OpMemset), s.ID(), b.ID(), ptr, 0, 0, size, 0, 0, 7, 0)
						return
					}
				}
			}()
		}
		require.NoError(t, b.Free())
		wg.Wait()
		close(errs)
		for err := range errs {
			require.ErrorContains(t, err, "ClosedError")
		}
	}
}

func TestLeaseKeepsMemoryAfterFree(t *testing.T) {
	dev, err := GetDevice("cpu")
	require.NoError(t, err)
	b, err := dev.Alloc(4096, false)
	require.NoError(t, err)
	l, err := b.Lease()
	require.NoError(t, err)
	mem := cpu.HostBytes(uintptr(l.Ptr()), 4096)
	mem[4095] = 9
	require.NoError(t, b.Free())
	_, err = b.Lease()
	require.ErrorContains(t, err, "ClosedError", "a lease from a freed owner")
	assert.Equal(t, byte(9), mem[4095], "still mapped while leased")
	require.NoError(t, l.Release())
	require.NoError(t, l.Release(), "a second release is a no-op")
}

func TestTensorViewAfterClose(t *testing.T) {
	dev, err := GetDevice("cpu")
	require.NoError(t, err)
	tn, err := NewTensor(dev, "2,3", "int16", false)
	require.NoError(t, err)
	v, err := tn.View()
	require.NoError(t, err)
	assert.JSONEq(t, `{"shape":[2,3],"dtype":"int16","nbytes":12,"closed":false}`, v.Info())
	require.NoError(t, tn.Close())
	_, err = tn.View()
	require.ErrorContains(t, err, "ClosedError")
	_, err = tn.Ptr()
	require.ErrorContains(t, err, "ClosedError")
	mem := cpu.HostBytes(uintptr(v.Ptr()), 12)
	mem[11] = 1 // still mapped: the view holds it
	require.NoError(t, v.Release())
	_, err = NewTensor(dev, "99999999999999999999", "int8", false)
	require.ErrorContains(t, err, "MemoryError: shape=")
	_, err = NewTensor(dev, "1099511627776,1099511627776", "int8", false)
	require.ErrorContains(t, err, "MemoryError: shape=")
}
