package memory

import (
	"fmt"
	"sync"

	"github.com/vortexgo/vortexgo/gosrc/backend"
)

// One budget for the whole process (forge3d's model): every allocation the
// Python layer makes, on any device and for any purpose, is charged to it,
// so a user sets one limit and reads one usage.
var process struct {
	once       sync.Once
	budget     *Budget
	mu         sync.Mutex
	allocators map[backend.Device]*Allocator
}

// Process returns the process-wide budget.
func Process() *Budget {
	process.once.Do(func() {
		b, err := NewBudget(0, 0)
		if err != nil {
			panic(err) // unreachable: zero limits are always valid
		}
		process.budget = b
		process.allocators = map[backend.Device]*Allocator{}
	})
	return process.budget
}

// AllocatorFor returns the allocator of dev charging the process budget,
// labelled purpose ("array", "tensor", "readback", ...).
func AllocatorFor(dev backend.Device, purpose string) (*Allocator, error) {
	b := Process()
	process.mu.Lock()
	defer process.mu.Unlock()
	a, ok := process.allocators[dev]
	if !ok {
		var err error
		if a, err = NewAllocator(dev, b); err != nil {
			return nil, err
		}
		process.allocators[dev] = a
	}
	return a.WithPurpose(purpose), nil
}

// Kind is PinnedMem when pinned, else DeviceMem.
func Kind(pinned bool) backend.MemKind {
	if pinned {
		return backend.PinnedMem
	}
	return backend.DeviceMem
}

// AllocShared allocates n bytes of kind as Shared memory, the form every
// allocation handed to Python takes (borrowers keep it alive). n == 0 gives
// empty memory: address 0 and nothing to free, as NumPy and CuPy allow
// empty arrays while drivers refuse 0-byte allocations.
func (a *Allocator) AllocShared(kind backend.MemKind, n int) (*Shared, error) {
	if n == 0 {
		if _, err := kindIndex("memory.Allocator.AllocShared", kind); err != nil {
			return nil, err
		}
		return NewShared(&emptyBuffer{dev: a.dev, kind: kind}), nil
	}
	buf, err := a.AllocKind(kind, n)
	if err != nil {
		return nil, err
	}
	return NewShared(buf), nil
}

// emptyBuffer is the memory of a zero-size array: address 0, nothing to free.
type emptyBuffer struct {
	dev   backend.Device
	kind  backend.MemKind
	freed bool // only Shared frees it, once, under its lock
}

func (b *emptyBuffer) Ptr() uintptr           { return 0 }
func (b *emptyBuffer) Size() int              { return 0 }
func (b *emptyBuffer) Kind() backend.MemKind  { return b.kind }
func (b *emptyBuffer) Device() backend.Device { return b.dev }
func (b *emptyBuffer) Free() error {
	if b.freed {
		return fmt.Errorf("memory: empty buffer already freed: %w", backend.ErrClosed)
	}
	b.freed = true
	return nil
}
