package memory_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vortexgo/vortexgo/gosrc/memory"
)

// panicOnceEvent is never complete to a query, and its first Synchronize
// (the pool's event watcher) panics; later ones return at once.
type panicOnceEvent struct {
	*fakeEvent
	waits atomic.Int32
}

func (p *panicOnceEvent) Query() (bool, error) { return false, nil }

func (p *panicOnceEvent) Synchronize() error {
	if p.waits.Add(1) == 1 {
		panic("boom in the watcher")
	}
	return nil
}

// TestBufferPoolWatcherPanic: a panic in the goroutine that waits on a
// returned buffer's event is that buffer's wait error (the waiting Get
// returns it, with the panic and its stack), not the end of the process;
// the waiter is woken, and the pool still closes.
func TestBufferPoolWatcherPanic(t *testing.T) {
	a := newAllocator(t, 0, 0)
	p := newPool(t, a, memory.PoolConfig{Size: 16, Initial: 1, Max: 1, Policy: memory.Block})
	b, err := p.GetTimeout(0)
	require.NoError(t, err)
	require.NoError(t, p.Put(b, &panicOnceEvent{fakeEvent: newFakeEvent()}))
	got := make(chan error, 1)
	go func() { _, err := p.GetTimeout(-1); got <- err }()
	select {
	case err := <-got:
		require.ErrorContains(t, err, "memory.BufferPool: event watcher: internal error (Go panic: boom in the watcher)")
		require.ErrorContains(t, err, "goroutine ", "the stack is in the error")
	case <-time.After(10 * time.Second):
		t.Fatal("the waiter was not woken")
	}
	require.NoError(t, p.Close())
}
