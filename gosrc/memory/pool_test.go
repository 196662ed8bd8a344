package memory_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/cpu"
	"github.com/vortexgo/vortexgo/gosrc/memory"
)

func newPool(t *testing.T, a *memory.Allocator, cfg memory.PoolConfig) *memory.BufferPool {
	t.Helper()
	p, err := memory.NewBufferPool(a, cfg)
	require.NoError(t, err)
	return p
}

func TestBufferPoolConfigErrors(t *testing.T) {
	a := newAllocator(t, 0, 0)
	tests := []struct {
		name string
		cfg  memory.PoolConfig
		want string
		is   error
	}{
		{"zero size", memory.PoolConfig{}, "buffer_size=0, expected > 0", backend.ErrInvalid},
		{"negative initial", memory.PoolConfig{Size: 8, Initial: -1}, "pool_size=-1, expected >= 0", backend.ErrInvalid},
		{"negative max", memory.PoolConfig{Size: 8, Max: -1}, "max_size=-1, expected >= 0", backend.ErrInvalid},
		{"initial over max", memory.PoolConfig{Size: 8, Initial: 3, Max: 2}, "pool_size=3, expected pool_size <= max_size (2)", backend.ErrInvalid},
		{"bad policy", memory.PoolConfig{Size: 8, Policy: memory.Policy(7)}, "Policy=7, expected Grow or Block", backend.ErrInvalid},
		{"empty block pool", memory.PoolConfig{Size: 8, Policy: memory.Block}, "pool_size=0 with policy 'block'", backend.ErrInvalid},
		{"huge buffer", memory.PoolConfig{Size: 1 << 50, Initial: 1}, "buffer_size=1125899906842624", backend.ErrTooLarge},
		// A count out of range is a ValueError naming the argument and the
		// range, as the pipeline's counts are; MemoryError is for bytes.
		{"too many buffers", memory.PoolConfig{Size: 1, Initial: 1 << 40}, "pool_size=1099511627776, expected 0 <= pool_size <= 65536", backend.ErrInvalid},
		{"max over the bound", memory.PoolConfig{Size: 1, Max: 1<<16 + 1}, "max_size=65537, expected 0 <= max_size <= 65536", backend.ErrInvalid},
		{"huge total", memory.PoolConfig{Size: 1 << 40, Initial: 1 << 10}, "expected at most", backend.ErrTooLarge},
		// Under the pool's bound but over the allocator's: still named.
		{"buffer over the allocator's bound", memory.PoolConfig{Size: 1 << 40, Initial: 1}, "buffer_size=1099511627776", backend.ErrTooLarge},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := memory.NewBufferPool(a, tc.cfg)
			require.ErrorContains(t, err, tc.want)
			require.ErrorIs(t, err, tc.is)
		})
	}
	_, err := memory.NewBufferPool(nil, memory.PoolConfig{Size: 8})
	require.ErrorContains(t, err, "a=nil")

	// Initial allocation over budget frees what it got.
	small := newAllocator(t, 0, 20)
	_, err = memory.NewBufferPool(small, memory.PoolConfig{Size: 8, Initial: 3})
	var be *memory.BudgetError
	require.ErrorAs(t, err, &be)
	require.ErrorContains(t, err, "buffer_size=8: allocating buffer 3 of pool_size=3")
	requireNoUsage(t, small)
}

func TestBufferPoolReuseAfterEvent(t *testing.T) {
	a := newAllocator(t, 0, 0)
	p := newPool(t, a, memory.PoolConfig{Size: 4096, Initial: 1})
	require.Equal(t, memory.PoolStats{Allocated: 1, Free: 1}, p.Stats())

	b1, err := p.GetTimeout(0)
	require.NoError(t, err)
	require.Equal(t, backend.PinnedMem, b1.Kind())
	require.Equal(t, 4096, b1.Size())
	require.Equal(t, memory.PoolStats{Allocated: 1, InUse: 1}, p.Stats())

	// Returned behind an incomplete event: the pool grows instead of
	// handing b1 out again, and does not block.
	ev := newFakeEvent()
	require.NoError(t, p.Put(b1, ev))
	require.Equal(t, memory.PoolStats{Allocated: 1, Pending: 1}, p.Stats())
	b2, err := p.GetTimeout(0)
	require.NoError(t, err)
	require.NotEqual(t, b1.Ptr(), b2.Ptr())
	require.Positive(t, ev.queryCount(), "Get queried the returned buffer's event")
	require.Equal(t, memory.PoolStats{Allocated: 2, Pending: 1, InUse: 1}, p.Stats())

	// Once the event completes, b1 is reused.
	ev.complete()
	b3, err := p.GetTimeout(0)
	require.NoError(t, err)
	require.Equal(t, b1, b3)

	// Returned with no event: reusable at once.
	require.NoError(t, p.Put(b2, nil))
	b4, err := p.GetTimeout(0)
	require.NoError(t, err)
	require.Equal(t, b2, b4)

	// A CPU event is complete as soon as it is recorded.
	s, err := cpu.Default().NewStream(0)
	require.NoError(t, err)
	defer s.Close()
	require.NoError(t, p.PutStream(b4, s))
	b5, err := p.GetTimeout(0)
	require.NoError(t, err)
	require.Equal(t, b2, b5)

	require.NoError(t, p.Put(b3, nil))
	require.NoError(t, p.Put(b5, nil))
	require.Equal(t, int64(2*4096), a.Budget().Usage().Pinned.Current)
	require.NoError(t, p.Close())
	requireNoUsage(t, a)
}

func TestBufferPoolBlockPolicy(t *testing.T) {
	a := newAllocator(t, 0, 0)
	p := newPool(t, a, memory.PoolConfig{Size: 64, Initial: 2, Policy: memory.Block})
	b1, err := p.GetTimeout(0)
	require.NoError(t, err)
	b2, err := p.GetTimeout(0)
	require.NoError(t, err)

	_, err = p.GetTimeout(0)
	require.ErrorIs(t, err, memory.ErrPoolExhausted)
	require.ErrorContains(t, err, "no buffer free without waiting (2 allocated, block policy, 0 pending, 2 in use)")

	ev := newFakeEvent()
	require.NoError(t, p.Put(b1, ev))
	_, err = p.GetTimeout(20 * time.Millisecond)
	require.ErrorIs(t, err, memory.ErrPoolExhausted)
	require.ErrorContains(t, err, "no buffer free after 20ms (2 allocated, block policy, 1 pending, 1 in use)")

	// A waiting Get wakes when the pending buffer's event completes.
	type getResult struct {
		b   backend.Buffer
		err error
	}
	got := make(chan getResult, 1)
	go func() {
		b, err := p.Get(context.Background())
		got <- getResult{b, err}
	}()
	select {
	case <-got:
		t.Fatal("Get returned before the event completed")
	case <-time.After(30 * time.Millisecond):
	}
	ev.complete()
	select {
	case r := <-got:
		require.NoError(t, r.err)
		require.Equal(t, b1, r.b)
	case <-time.After(5 * time.Second):
		t.Fatal("Get did not wake when the event completed")
	}

	// And when a buffer is returned.
	go func() {
		b, err := p.GetTimeout(-1)
		got <- getResult{b, err}
	}()
	time.Sleep(10 * time.Millisecond)
	require.NoError(t, p.Put(b2, nil))
	r := <-got
	require.NoError(t, r.err)
	require.Equal(t, b2, r.b)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	_, err = p.Get(ctx)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Equal(t, 2, p.Stats().Allocated, "a block pool never grows")

	require.NoError(t, p.Put(b1, nil))
	require.NoError(t, p.Put(b2, nil))
	require.NoError(t, p.Close())
	requireNoUsage(t, a)
}

func TestBufferPoolGrowUpToMax(t *testing.T) {
	a := newAllocator(t, 0, 0)
	p := newPool(t, a, memory.PoolConfig{Size: 32, Max: 2})
	b1, err := p.GetTimeout(0)
	require.NoError(t, err)
	b2, err := p.GetTimeout(0)
	require.NoError(t, err)
	_, err = p.GetTimeout(5 * time.Millisecond)
	require.ErrorContains(t, err, "(2 allocated, max 2, 0 pending, 2 in use)")
	require.NoError(t, p.Put(b1, nil))
	require.NoError(t, p.Put(b2, nil))
	require.NoError(t, p.Close())
	requireNoUsage(t, a)

	// A budget refusal surfaces from Get and is not counted.
	tight := newAllocator(t, 0, 32)
	p2 := newPool(t, tight, memory.PoolConfig{Size: 32})
	b, err := p2.GetTimeout(0)
	require.NoError(t, err)
	_, err = p2.GetTimeout(0)
	var be *memory.BudgetError
	require.ErrorAs(t, err, &be)
	require.Equal(t, 1, p2.Stats().Allocated)
	require.NoError(t, p2.Put(b, nil))
	require.NoError(t, p2.Close())
	requireNoUsage(t, tight)
}

func TestBufferPoolPutErrors(t *testing.T) {
	a := newAllocator(t, 0, 0)
	p := newPool(t, a, memory.PoolConfig{Size: 16, Initial: 1})
	foreign, err := a.AllocPinned(16)
	require.NoError(t, err)
	b, err := p.GetTimeout(0)
	require.NoError(t, err)
	require.NoError(t, p.Put(b, nil))
	tests := []struct {
		name string
		call func() error
		want string
	}{
		{"nil", func() error { return p.Put(nil, nil) }, "buf=nil, expected a buffer from this pool's Get"},
		{"foreign", func() error { return p.Put(foreign, nil) }, "is not in use from this pool"},
		{"double put", func() error { return p.Put(b, nil) }, "is not in use from this pool"},
		{"nil stream", func() error { return p.PutStream(b, nil) }, "s=nil"},
		{"nil ctx", func() error { _, err := p.Get(nil); return err }, "ctx=nil"}, //nolint:staticcheck // the nil context is the point
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			require.ErrorContains(t, tc.call(), tc.want)
		})
	}
	require.NoError(t, foreign.Free())
	require.NoError(t, p.Close())
	requireNoUsage(t, a)
}

func TestBufferPoolClose(t *testing.T) {
	a := newAllocator(t, 0, 0)
	p := newPool(t, a, memory.PoolConfig{Size: 16, Initial: 3, Policy: memory.Block})
	s, err := cpu.Default().NewStream(0)
	require.NoError(t, err)
	defer s.Close()
	inUse, err := p.GetTimeout(0)
	require.NoError(t, err)
	pending, err := p.GetTimeout(0)
	require.NoError(t, err)
	inUseStream, err := p.GetTimeout(0)
	require.NoError(t, err)
	ev := newFakeEvent()
	require.NoError(t, p.Put(pending, ev))

	waiter := make(chan error, 1)
	go func() { _, err := p.GetTimeout(-1); waiter <- err }()
	time.Sleep(10 * time.Millisecond) // let the waiter start its event watcher

	closed := make(chan error, 1)
	go func() { closed <- p.Close() }()
	require.ErrorIs(t, <-waiter, backend.ErrClosed)
	select {
	case <-closed:
		t.Fatal("Close freed a buffer whose event had not completed")
	case <-time.After(20 * time.Millisecond):
	}
	ev.complete()
	require.NoError(t, <-closed)
	require.Equal(t, memory.PoolStats{Allocated: 2, InUse: 2}, p.Stats())

	_, err = p.GetTimeout(0)
	require.ErrorIs(t, err, backend.ErrClosed)
	require.ErrorIs(t, p.Close(), backend.ErrClosed)
	// Buffers out at Close are freed when returned.
	require.NoError(t, p.Put(inUse, newCompletedEvent()))
	require.NoError(t, p.PutStream(inUseStream, s))
	require.Equal(t, memory.PoolStats{}, p.Stats())
	requireNoUsage(t, a)
}

func newCompletedEvent() *fakeEvent {
	ev := newFakeEvent()
	ev.complete()
	return ev
}

func TestBufferPoolConcurrent(t *testing.T) {
	a := newAllocator(t, 0, 0)
	p := newPool(t, a, memory.PoolConfig{Size: 256, Initial: 2, Max: 4})
	s, err := cpu.Default().NewStream(0)
	require.NoError(t, err)
	defer s.Close()

	var (
		mu    sync.Mutex
		owned = map[uintptr]bool{}
		wg    sync.WaitGroup
	)
	errs := make(chan error, 8)
	for w := range 8 {
		wg.Go(func() {
			errs <- func() error {
				for i := range 200 {
					b, err := p.GetTimeout(5 * time.Second)
					if err != nil {
						return err
					}
					mu.Lock()
					shared := owned[b.Ptr()]
					owned[b.Ptr()] = true
					mu.Unlock()
					if shared {
						return fmt.Errorf("buffer %#x handed to two users", b.Ptr())
					}
					// Write the whole buffer: the race detector would flag a
					// buffer shared by two goroutines.
					clear(cpu.HostBytes(b.Ptr(), b.Size()))
					mu.Lock()
					owned[b.Ptr()] = false
					mu.Unlock()
					switch (w + i) % 3 {
					case 0:
						err = p.Put(b, nil)
					case 1:
						err = p.PutStream(b, s)
					default:
						ev := newFakeEvent()
						err = p.Put(b, ev)
						go ev.complete()
					}
					if err != nil {
						return err
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
	st := p.Stats()
	require.Zero(t, st.InUse)
	require.LessOrEqual(t, st.Allocated, 4)
	require.NoError(t, p.Close())
	requireNoUsage(t, a)
}

// TestBufferPoolLend: a lent buffer is neither handed out again nor freed
// until its last lend is released, whatever Put and Close did meanwhile.
func TestBufferPoolLend(t *testing.T) {
	tests := []struct {
		name    string
		close   bool // close the pool while the buffer is lent
		putLate bool // put the buffer back after Close
	}{
		{"put while lent", false, false},
		{"closed while lent", true, false},
		{"put after close while lent", true, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := newAllocator(t, 0, 0)
			p := newPool(t, a, memory.PoolConfig{Size: 64, Initial: 1, Policy: memory.Block})
			buf, err := p.GetTimeout(0)
			require.NoError(t, err)
			l1, err := p.Lend(buf)
			require.NoError(t, err)
			l2, err := p.Lend(buf)
			require.NoError(t, err)
			if !tc.putLate {
				require.NoError(t, p.Put(buf, nil))
				_, err = p.Lend(buf)
				require.ErrorIs(t, err, backend.ErrClosed, "a returned buffer cannot be lent")
			}
			if tc.close {
				require.NoError(t, p.Close())
			} else {
				_, err = p.GetTimeout(0)
				require.ErrorIs(t, err, memory.ErrPoolExhausted, "not handed out while lent")
			}
			if tc.putLate {
				require.NoError(t, p.Put(buf, nil))
			}
			require.NoError(t, l1.Release())
			require.NoError(t, l1.Release(), "releasing twice is a no-op")
			require.Positive(t, a.Budget().Usage().Pinned.Current, "still lent once")
			require.NoError(t, l2.Release())
			if tc.close {
				requireNoUsage(t, a)
				return
			}
			got, err := p.GetTimeout(0)
			require.NoError(t, err)
			require.Equal(t, buf, got, "reusable once every lend is released")
			require.NoError(t, p.Put(got, nil))
			require.NoError(t, p.Close())
			requireNoUsage(t, a)
		})
	}
}

// TestBufferPoolLendWakesWaiter: releasing the last lend wakes a Get that
// waits for a buffer.
func TestBufferPoolLendWakesWaiter(t *testing.T) {
	a := newAllocator(t, 0, 0)
	p := newPool(t, a, memory.PoolConfig{Size: 64, Initial: 1, Policy: memory.Block})
	buf, err := p.GetTimeout(0)
	require.NoError(t, err)
	l, err := p.Lend(buf)
	require.NoError(t, err)
	require.NoError(t, p.Put(buf, nil))
	got := make(chan error, 1)
	go func() {
		b, err := p.GetTimeout(5 * time.Second)
		if err == nil {
			err = p.Put(b, nil)
		}
		got <- err
	}()
	time.Sleep(20 * time.Millisecond)
	require.NoError(t, l.Release())
	require.NoError(t, <-got)
	require.NoError(t, p.Close())
	requireNoUsage(t, a)
}

func TestBufferPoolErrorsAreTyped(t *testing.T) {
	a := newAllocator(t, 0, 0)
	p := newPool(t, a, memory.PoolConfig{Size: 8, Initial: 1, Policy: memory.Block})
	defer func() { require.NoError(t, p.Close()) }()
	other, err := a.AllocPinned(8)
	require.NoError(t, err)
	defer func() { require.NoError(t, other.Free()) }()
	require.ErrorIs(t, p.Put(other, nil), backend.ErrInvalid)
	_, err = p.Lend(other)
	require.ErrorIs(t, err, backend.ErrClosed)
	b, err := p.GetTimeout(0)
	require.NoError(t, err)
	_, err = p.GetTimeout(time.Millisecond)
	var timeout interface{ Timeout() bool }
	require.ErrorAs(t, err, &timeout)
	require.True(t, timeout.Timeout(), "exhaustion is a timeout to the boundary")
	require.NoError(t, p.Put(b, nil))
}
