package cpu

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/internal/invariants"
)

// firstStreamHandle is the first handle NewStream hands out. Small values
// are avoided because CUDA gives 0, 1 and 2 special meanings (legacy and
// per-thread default streams), and code that wraps foreign handles may
// pass them.
const firstStreamHandle = 0x1000

// Device is the host as a compute device. There is one; Default returns it.
type Device struct {
	mu      sync.Mutex
	streams map[uintptr]*streamCore // live streams by handle, owned and wrapped
	nextID  uintptr                 // next candidate stream handle
}

var (
	defaultDevice = &Device{streams: map[uintptr]*streamCore{}, nextID: firstStreamHandle}
	// nextEventID numbers events; only uniqueness matters.
	nextEventID atomic.Uintptr
)

// Default returns the CPU device.
func Default() backend.Device { return defaultDevice }

var _ backend.Device = (*Device)(nil)

// Kind returns backend.CPU.
func (d *Device) Kind() backend.Kind { return backend.CPU }

// Ordinal returns 0: there is one CPU device.
func (d *Device) Ordinal() int { return 0 }

// Name returns "cpu".
func (d *Device) Name() string { return "cpu" }

// ComputeCapability returns (0, 0).
func (d *Device) ComputeCapability() (major, minor int) { return 0, 0 }

// String returns "cpu", the spec that devices.Get accepts for it.
func (d *Device) String() string { return "cpu" }

// MemInfo returns an estimate of available host memory and the total
// physical memory.
func (d *Device) MemInfo() (free, total uint64, err error) { return memInfo() }

// StreamPriorityRange returns (0, 0): the CPU has no stream priorities.
func (d *Device) StreamPriorityRange() (least, greatest int) { return 0, 0 }

// NewStream creates an owned stream. The priority is clamped to 0.
func (d *Device) NewStream(priority int) (backend.Stream, error) {
	_ = priority // the only priority in range is 0
	d.mu.Lock()
	defer d.mu.Unlock()
	// Skip handles taken by wrapped foreign streams so handles stay unique.
	for d.streams[d.nextID] != nil {
		d.nextID++
	}
	c := &streamCore{handle: d.nextID, refs: 1}
	d.nextID++
	d.streams[c.handle] = c
	return &Stream{dev: d, core: c, owned: true, inv: invariants.Track("cpu.Stream", c.handle)}, nil
}

// WrapStream adopts a stream by handle without owning it. Wrapping the
// handle of a live stream of this device shares that stream's order and
// capture state; any other handle gets a fresh stream that lives until the
// last wrapper of it is closed.
func (d *Device) WrapStream(handle uintptr) (backend.Stream, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	c := d.streams[handle]
	if c == nil {
		c = &streamCore{handle: handle}
		d.streams[handle] = c
	}
	c.refs++
	return &Stream{dev: d, core: c, owned: false, inv: invariants.Track("cpu.Stream (wrapped)", handle)}, nil
}

// release drops one reference to c; the owner's Close unregisters c at once
// so that later wrappers of the handle do not see a destroyed stream.
func (d *Device) release(c *streamCore, owner bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	c.refs--
	if (owner || c.refs == 0) && d.streams[c.handle] == c {
		delete(d.streams, c.handle)
	}
}

// NewEvent creates an event. Events with timing record a timestamp.
func (d *Device) NewEvent(timing bool) (backend.Event, error) {
	id := nextEventID.Add(1)
	return &Event{id: id, timing: timing, inv: invariants.Track("cpu.Event", id)}, nil
}

// Alloc allocates n bytes of host memory outside the Go heap.
func (d *Device) Alloc(n int) (backend.Buffer, error) {
	return d.alloc("cpu.Device.Alloc", n, backend.DeviceMem)
}

// AllocPinned allocates n bytes of host memory outside the Go heap and
// labels it pinned. It is not mlock'ed: on the CPU backend nothing DMAs
// from it, and RLIMIT_MEMLOCK would make large pools fail.
func (d *Device) AllocPinned(n int) (backend.Buffer, error) {
	return d.alloc("cpu.Device.AllocPinned", n, backend.PinnedMem)
}

// Synchronize waits for work that other goroutines are running on this
// device's streams. Work issued by the caller is already complete.
func (d *Device) Synchronize() error {
	d.mu.Lock()
	cores := make([]*streamCore, 0, len(d.streams))
	for _, c := range d.streams {
		cores = append(cores, c)
	}
	d.mu.Unlock()
	for _, c := range cores {
		// Taking the stream mutex waits for the operation in progress.
		c.mu.Lock()
		c.mu.Unlock() //nolint:staticcheck // empty critical section on purpose
	}
	return nil
}

func checkSize(op string, n int) error {
	if n < 0 {
		return fmt.Errorf("%s: n=%d, expected n >= 0", op, n)
	}
	return nil
}
