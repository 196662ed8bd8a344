package memory_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/cpu"
	"github.com/vortexgo/vortexgo/gosrc/memory"
)

func TestBudgetReserve(t *testing.T) {
	type step struct {
		kind    backend.MemKind
		n       int
		purpose string
		wantErr bool
	}
	tests := []struct {
		name         string
		device       int64
		pinned       int64
		steps        []step
		wantDevice   int64
		wantPinned   int64
		wantDevPeak  int64
		wantPurposes map[string]memory.PurposeUsage // device kind
	}{
		{
			name: "unlimited counts", steps: []step{
				{backend.DeviceMem, 100, "a", false}, {backend.DeviceMem, 50, "a", false}, {backend.PinnedMem, 7, "b", false},
			},
			wantDevice: 150, wantPinned: 7, wantDevPeak: 150,
			wantPurposes: map[string]memory.PurposeUsage{"a": {Bytes: 150, Count: 2}},
		},
		{
			name: "exact limit fits", device: 100, steps: []step{
				{backend.DeviceMem, 60, "a", false}, {backend.DeviceMem, 40, "b", false}, {backend.DeviceMem, 1, "c", true},
			},
			wantDevice: 100, wantDevPeak: 100,
			wantPurposes: map[string]memory.PurposeUsage{"a": {Bytes: 60, Count: 1}, "b": {Bytes: 40, Count: 1}},
		},
		{
			name: "limits are per kind", device: 10, pinned: 20, steps: []step{
				{backend.PinnedMem, 20, "p", false}, {backend.DeviceMem, 10, "d", false}, {backend.PinnedMem, 1, "p", true},
			},
			wantDevice: 10, wantPinned: 20, wantDevPeak: 10,
			wantPurposes: map[string]memory.PurposeUsage{"d": {Bytes: 10, Count: 1}},
		},
		{
			name: "refused request changes nothing", pinned: 5, steps: []step{
				{backend.PinnedMem, 6, "p", true},
			},
			wantPurposes: map[string]memory.PurposeUsage{},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, err := memory.NewBudget(tc.device, tc.pinned)
			require.NoError(t, err)
			for i, s := range tc.steps {
				err := b.Reserve(s.kind, s.n, s.purpose)
				if !s.wantErr {
					require.NoError(t, err, "step %d", i)
					continue
				}
				var be *memory.BudgetError
				require.ErrorAs(t, err, &be, "step %d", i)
				require.Equal(t, s.kind, be.Kind)
				require.Equal(t, int64(s.n), be.Requested)
				require.Equal(t, s.purpose, be.Purpose)
			}
			u := b.Usage()
			require.Equal(t, tc.wantDevice, u.Device.Current)
			require.Equal(t, tc.wantPinned, u.Pinned.Current)
			require.Equal(t, tc.wantDevPeak, u.Device.Peak)
			require.Equal(t, tc.device, u.Device.Limit)
			require.Equal(t, tc.wantPurposes, u.Device.ByPurpose)
		})
	}
}

func TestBudgetErrorMessage(t *testing.T) {
	b, err := memory.NewBudget(0, 1000)
	require.NoError(t, err)
	require.NoError(t, b.Reserve(backend.PinnedMem, 700, "staging"))
	err = b.Reserve(backend.PinnedMem, 400, "readback")
	require.EqualError(t, err, `memory budget exceeded: requested 400 bytes of pinned memory for "readback", 700 bytes in use, limit 1000 bytes (300 available)`)
}

func TestBudgetReleaseAndArguments(t *testing.T) {
	b, err := memory.NewBudget(0, 0)
	require.NoError(t, err)
	require.NoError(t, b.Reserve(backend.DeviceMem, 10, "x"))
	tests := []struct {
		name string
		call func() error
		want string
	}{
		{"release unknown purpose", func() error { return b.Release(backend.DeviceMem, 1, "y") }, `n=1 of device memory for "y", expected at most a live reservation (0 bytes in 0 allocations)`},
		{"release too much", func() error { return b.Release(backend.DeviceMem, 11, "x") }, "expected at most a live reservation (10 bytes in 1 allocations)"},
		{"release negative", func() error { return b.Release(backend.DeviceMem, -1, "x") }, "n=-1"},
		{"reserve negative", func() error { return b.Reserve(backend.DeviceMem, -1, "x") }, "n=-1, expected n >= 0"},
		{"bad kind", func() error { return b.Reserve(backend.MemKind(9), 1, "x") }, "kind=9, expected backend.DeviceMem or backend.PinnedMem"},
		{"negative limit", func() error { return b.SetLimit(backend.PinnedMem, -5) }, "limit=-5 for pinned memory, expected limit >= 0"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			require.ErrorContains(t, tc.call(), tc.want)
		})
	}
	_, err = memory.NewBudget(-1, 0)
	require.ErrorContains(t, err, "memory.NewBudget: memory.Budget.SetLimit: limit=-1")

	require.NoError(t, b.Release(backend.DeviceMem, 10, "x"))
	u := b.Usage()
	require.Zero(t, u.Device.Current)
	require.Equal(t, int64(10), u.Device.Peak)
	b.ResetPeak()
	require.Zero(t, b.Usage().Device.Peak)

	// Lowering the limit under usage refuses new reservations only.
	require.NoError(t, b.Reserve(backend.DeviceMem, 10, "x"))
	require.NoError(t, b.SetLimit(backend.DeviceMem, 5))
	require.Error(t, b.Reserve(backend.DeviceMem, 1, "x"))
	require.NoError(t, b.Release(backend.DeviceMem, 10, "x"))
	require.NoError(t, b.Reserve(backend.DeviceMem, 5, "x"))
}

func TestBudgetConcurrent(t *testing.T) {
	b, err := memory.NewBudget(1000, 0)
	require.NoError(t, err)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Go(func() {
			errs <- func() error {
				for range 500 {
					if b.Reserve(backend.DeviceMem, 100, "w") == nil {
						if cur := b.Usage().Device.Current; cur > 1000 {
							return fmt.Errorf("usage %d over the limit 1000", cur)
						}
						if err := b.Release(backend.DeviceMem, 100, "w"); err != nil {
							return err
						}
					}
				}
				return nil
			}()
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	u := b.Usage()
	require.Zero(t, u.Device.Current)
	require.LessOrEqual(t, u.Device.Peak, int64(1000))
}

func TestAllocator(t *testing.T) {
	a := newAllocator(t, 1<<20, 4096)
	vol := a.WithPurpose("volume")
	require.Equal(t, "volume", vol.Purpose())
	require.Equal(t, memory.DefaultPurpose, a.Purpose())
	require.Equal(t, memory.DefaultPurpose, a.WithPurpose("").Purpose())
	require.Same(t, a.Budget(), vol.Budget())

	d, err := vol.Alloc(1000)
	require.NoError(t, err)
	require.Equal(t, backend.DeviceMem, d.Kind())
	require.IsType(t, &cpu.Buffer{}, memory.Unwrap(d))
	p, err := a.AllocPinned(4096)
	require.NoError(t, err)
	require.Equal(t, backend.PinnedMem, p.Kind())

	u := a.Budget().Usage()
	require.Equal(t, map[string]memory.PurposeUsage{"volume": {Bytes: 1000, Count: 1}}, u.Device.ByPurpose)
	require.Equal(t, 1, u.Device.Active)
	require.Equal(t, 1, u.Pinned.Active)
	require.Equal(t, int64(4096), u.Pinned.Current)

	// Over budget: refused, with nothing allocated or charged.
	_, err = a.AllocPinned(1)
	var be *memory.BudgetError
	require.ErrorAs(t, err, &be)
	require.ErrorContains(t, err, "memory.Allocator.AllocPinned: memory budget exceeded: requested 1 bytes")
	require.Equal(t, int64(4096), a.Budget().Usage().Pinned.Current)

	require.NoError(t, d.Free())
	require.ErrorIs(t, d.Free(), backend.ErrClosed, "double free")
	require.NoError(t, p.Free())
	requireNoUsage(t, a)
	require.Equal(t, int64(4096), a.Budget().Usage().Pinned.Peak)
}

func TestAllocatorNativeFailureLeaksNothing(t *testing.T) {
	b, err := memory.NewBudget(0, 0)
	require.NoError(t, err)
	a, err := memory.NewAllocator(failingDevice{cpu.Default()}, b)
	require.NoError(t, err)
	for _, kind := range []backend.MemKind{backend.DeviceMem, backend.PinnedMem} {
		_, err := a.AllocKind(kind, 123)
		require.ErrorIs(t, err, errNoMemory)
	}
	require.Zero(t, b.Usage().Device.Current)
	require.Zero(t, b.Usage().Pinned.Current)
	require.Empty(t, b.Usage().Device.ByPurpose)

	_, err = memory.NewAllocator(nil, nil)
	require.ErrorContains(t, err, "dev=nil, expected a device")
	// A nil budget still counts.
	a2, err := memory.NewAllocator(cpu.Default(), nil)
	require.NoError(t, err)
	buf, err := a2.Alloc(10)
	require.NoError(t, err)
	require.Equal(t, int64(10), a2.Budget().Usage().Device.Current)
	require.NoError(t, buf.Free())
	require.True(t, errors.Is(buf.Free(), backend.ErrClosed))
}
