package memory_test

import (
	"errors"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/cpu"
	"github.com/vortexgo/vortexgo/gosrc/memory"
)

// fakeEvent reports not-complete until complete is called, like a CUDA
// event behind a long copy.
type fakeEvent struct {
	once    sync.Once
	doneCh  chan struct{}
	mu      sync.Mutex
	queries int
}

func newFakeEvent() *fakeEvent { return &fakeEvent{doneCh: make(chan struct{})} }

func (f *fakeEvent) complete() { f.once.Do(func() { close(f.doneCh) }) }

func (f *fakeEvent) Handle() uintptr { return 42 }
func (f *fakeEvent) Timing() bool    { return false }
func (f *fakeEvent) Query() (bool, error) {
	f.mu.Lock()
	f.queries++
	f.mu.Unlock()
	select {
	case <-f.doneCh:
		return true, nil
	default:
		return false, nil
	}
}
func (f *fakeEvent) Synchronize() error                         { <-f.doneCh; return nil }
func (f *fakeEvent) ElapsedTime(backend.Event) (float32, error) { return 0, nil }
func (f *fakeEvent) Close() error                               { return nil }

func (f *fakeEvent) queryCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.queries
}

// failingDevice is the CPU device whose allocations fail, to check that a
// failed native allocation gives its reservation back.
type failingDevice struct{ backend.Device }

var errNoMemory = errors.New("out of memory (fake)")

func (failingDevice) Alloc(int) (backend.Buffer, error)       { return nil, errNoMemory }
func (failingDevice) AllocPinned(int) (backend.Buffer, error) { return nil, errNoMemory }

func newAllocator(t *testing.T, deviceLimit, pinnedLimit int64) *memory.Allocator {
	t.Helper()
	b, err := memory.NewBudget(deviceLimit, pinnedLimit)
	require.NoError(t, err)
	a, err := memory.NewAllocator(cpu.Default(), b)
	require.NoError(t, err)
	return a
}

// requireNoUsage checks that everything charged to a's budget was given back.
func requireNoUsage(t *testing.T, a *memory.Allocator) {
	t.Helper()
	u := a.Budget().Usage()
	require.Zero(t, u.Device.Current, "device bytes still reserved: %v", u.Device.ByPurpose)
	require.Zero(t, u.Pinned.Current, "pinned bytes still reserved: %v", u.Pinned.ByPurpose)
	require.Zero(t, u.Device.Active+u.Pinned.Active, "live allocations")
	require.Empty(t, u.Device.ByPurpose)
	require.Empty(t, u.Pinned.ByPurpose)
}
