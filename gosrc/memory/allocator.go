package memory

import (
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/vortexgo/vortexgo/gosrc/backend"
)

// DefaultPurpose labels allocations made without a purpose.
const DefaultPurpose = "general"

// Allocator allocates from a device and charges every allocation to a
// Budget under a purpose label. It is safe for concurrent use; WithPurpose
// derives allocators that share the device and the budget.
type Allocator struct {
	dev     backend.Device
	budget  *Budget
	purpose string
}

// NewAllocator returns an allocator on dev charging budget. A nil budget
// means a fresh unlimited one, which still counts usage.
func NewAllocator(dev backend.Device, budget *Budget) (*Allocator, error) {
	if dev == nil {
		return nil, errors.New("memory.NewAllocator: dev=nil, expected a device")
	}
	if budget == nil {
		var err error
		if budget, err = NewBudget(0, 0); err != nil {
			return nil, err
		}
	}
	return &Allocator{dev: dev, budget: budget, purpose: DefaultPurpose}, nil
}

// WithPurpose returns an allocator that shares a's device and budget and
// labels its allocations purpose ("readback", "endpoint volume").
func (a *Allocator) WithPurpose(purpose string) *Allocator {
	if purpose == "" {
		purpose = DefaultPurpose
	}
	return &Allocator{dev: a.dev, budget: a.budget, purpose: purpose}
}

// Device returns the device allocated from.
func (a *Allocator) Device() backend.Device { return a.dev }

// Budget returns the budget charged.
func (a *Allocator) Budget() *Budget { return a.budget }

// Purpose returns the label of this allocator's allocations.
func (a *Allocator) Purpose() string { return a.purpose }

// Alloc allocates n bytes of device memory. It returns a *BudgetError
// (wrapped) when the budget refuses.
func (a *Allocator) Alloc(n int) (backend.Buffer, error) {
	return a.alloc("memory.Allocator.Alloc", backend.DeviceMem, n)
}

// AllocPinned allocates n bytes of pinned host memory. It returns a
// *BudgetError (wrapped) when the budget refuses.
func (a *Allocator) AllocPinned(n int) (backend.Buffer, error) {
	return a.alloc("memory.Allocator.AllocPinned", backend.PinnedMem, n)
}

// AllocKind allocates n bytes of the given kind.
func (a *Allocator) AllocKind(kind backend.MemKind, n int) (backend.Buffer, error) {
	if kind == backend.PinnedMem {
		return a.AllocPinned(n)
	}
	return a.Alloc(n)
}

func (a *Allocator) alloc(op string, kind backend.MemKind, n int) (backend.Buffer, error) {
	// Bound the request before the budget or the driver sees it: an
	// impossible size is the caller's error, never a fatal one.
	if n < 0 {
		return nil, fmt.Errorf("%s: n=%d, expected n >= 0 bytes: %w", op, n, backend.ErrInvalid)
	}
	if n > backend.MaxBytes {
		return nil, fmt.Errorf("%s: n=%d, expected at most %d bytes: %w", op, n, backend.MaxBytes, backend.ErrTooLarge)
	}
	if err := a.budget.Reserve(kind, n, a.purpose); err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	var (
		buf backend.Buffer
		err error
	)
	if kind == backend.PinnedMem {
		buf, err = a.dev.AllocPinned(n)
	} else {
		buf, err = a.dev.Alloc(n)
	}
	if err != nil {
		// Give the reservation back so a failed allocation leaks nothing.
		return nil, errors.Join(fmt.Errorf("%s: %w", op, err), a.budget.Release(kind, n, a.purpose))
	}
	return &budgetBuffer{Buffer: buf, budget: a.budget, purpose: a.purpose}, nil
}

// budgetBuffer gives its reservation back when freed.
type budgetBuffer struct {
	backend.Buffer
	budget  *Budget
	purpose string
	freed   atomic.Bool
}

// Unwrap returns the native buffer (a *cpu.Buffer or the CUDA buffer).
func (b *budgetBuffer) Unwrap() backend.Buffer { return b.Buffer }

// Free frees the native buffer and releases the reservation, even when the
// native free fails: the memory is then in an unknown state, and keeping
// it charged would make the budget drift for the rest of the process.
func (b *budgetBuffer) Free() error {
	if !b.freed.CompareAndSwap(false, true) {
		return fmt.Errorf("memory: buffer of %d bytes for %q already freed: %w", b.Size(), b.purpose, backend.ErrClosed)
	}
	return errors.Join(b.Buffer.Free(), b.budget.Release(b.Kind(), b.Size(), b.purpose))
}

// Unwrap returns the native buffer behind one from an Allocator, or buf
// itself.
func Unwrap(buf backend.Buffer) backend.Buffer {
	if w, ok := buf.(interface{ Unwrap() backend.Buffer }); ok {
		return w.Unwrap()
	}
	return buf
}
