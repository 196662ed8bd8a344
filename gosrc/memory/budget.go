package memory

import (
	"fmt"
	"maps"
	"sync"

	"github.com/vortexgo/vortexgo/gosrc/backend"
)

// BudgetError reports a reservation the budget refused. The Python layer
// raises it as MemoryBudgetError.
type BudgetError struct {
	// Kind is the kind of memory requested.
	Kind backend.MemKind
	// Purpose is the label the request was made under.
	Purpose string
	// Requested, Current and Limit are in bytes: the request, the usage
	// when it was refused, and the limit it would have exceeded.
	Requested, Current, Limit int64
}

// Error names the request, the usage and the limit.
func (e *BudgetError) Error() string {
	return fmt.Sprintf("memory budget exceeded: requested %d bytes of %s memory for %q, %d bytes in use, limit %d bytes (%d available)",
		e.Requested, e.Kind, e.Purpose, e.Current, e.Limit, max(e.Limit-e.Current, 0))
}

// PurposeUsage is what is allocated under one purpose label.
type PurposeUsage struct {
	// Bytes is the total size of the live allocations.
	Bytes int64 `json:"bytes"`
	// Count is the number of live allocations.
	Count int `json:"count"`
}

// KindUsage is the usage of one kind of memory.
type KindUsage struct {
	// Current is the number of bytes reserved now.
	Current int64 `json:"current"`
	// Peak is the highest Current since the budget was created or ResetPeak.
	Peak int64 `json:"peak"`
	// Limit is the limit in bytes; 0 means unlimited.
	Limit int64 `json:"limit"`
	// Active is the number of live allocations (the sum of the counts in
	// ByPurpose).
	Active int `json:"active"`
	// ByPurpose breaks Current down by purpose label.
	ByPurpose map[string]PurposeUsage `json:"by_purpose"`
}

// Usage is a snapshot of a Budget. Its JSON form (field names in
// snake_case) is the record the Python layer reads.
type Usage struct {
	// Device is device memory (plain host memory on the CPU backend).
	Device KindUsage `json:"device"`
	// Pinned is page-locked host memory.
	Pinned KindUsage `json:"pinned"`
}

// Budget limits the bytes of device and of pinned memory reserved through
// it, and keeps usage by purpose. It is safe for concurrent use.
type Budget struct {
	mu    sync.Mutex
	kinds [2]kindState // indexed by backend.MemKind
}

type kindState struct {
	limit, current, peak int64
	purposes             map[string]PurposeUsage
}

// NewBudget returns a budget with the given limits in bytes; 0 means
// unlimited.
func NewBudget(deviceLimit, pinnedLimit int64) (*Budget, error) {
	b := &Budget{}
	for i := range b.kinds {
		b.kinds[i].purposes = map[string]PurposeUsage{}
	}
	if err := b.SetLimit(backend.DeviceMem, deviceLimit); err != nil {
		return nil, fmt.Errorf("memory.NewBudget: %w", err)
	}
	if err := b.SetLimit(backend.PinnedMem, pinnedLimit); err != nil {
		return nil, fmt.Errorf("memory.NewBudget: %w", err)
	}
	return b, nil
}

func kindIndex(op string, kind backend.MemKind) (int, error) {
	if kind != backend.DeviceMem && kind != backend.PinnedMem {
		return 0, fmt.Errorf("%s: kind=%d, expected backend.DeviceMem or backend.PinnedMem", op, int(kind))
	}
	return int(kind), nil
}

// SetLimit changes the limit for one kind of memory; 0 means unlimited. A
// limit below current usage is allowed: it refuses new reservations until
// usage falls below it, and frees nothing.
func (b *Budget) SetLimit(kind backend.MemKind, limit int64) error {
	const op = "memory.Budget.SetLimit"
	i, err := kindIndex(op, kind)
	if err != nil {
		return err
	}
	if limit < 0 {
		return fmt.Errorf("%s: limit=%d for %s memory, expected limit >= 0 (0 = unlimited): %w", op, limit, kind, backend.ErrInvalid)
	}
	b.mu.Lock()
	b.kinds[i].limit = limit
	b.mu.Unlock()
	return nil
}

// SetLimits sets both limits, or neither when one is invalid.
func (b *Budget) SetLimits(device, pinned int64) error {
	if device < 0 || pinned < 0 {
		return fmt.Errorf("memory.Budget.SetLimits: device=%d pinned=%d, expected limits >= 0 bytes (0 = unlimited): %w",
			device, pinned, backend.ErrInvalid)
	}
	b.mu.Lock()
	b.kinds[backend.DeviceMem].limit = device
	b.kinds[backend.PinnedMem].limit = pinned
	b.mu.Unlock()
	return nil
}

// Reserve charges n bytes of kind to purpose, or returns a *BudgetError if
// that would exceed the limit.
func (b *Budget) Reserve(kind backend.MemKind, n int, purpose string) error {
	const op = "memory.Budget.Reserve"
	i, err := kindIndex(op, kind)
	if err != nil {
		return err
	}
	if n < 0 {
		return fmt.Errorf("%s: n=%d, expected n >= 0", op, n)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	k := &b.kinds[i]
	if k.limit > 0 && k.current+int64(n) > k.limit {
		return &BudgetError{Kind: kind, Purpose: purpose, Requested: int64(n), Current: k.current, Limit: k.limit}
	}
	k.current += int64(n)
	k.peak = max(k.peak, k.current)
	u := k.purposes[purpose]
	u.Bytes += int64(n)
	u.Count++
	k.purposes[purpose] = u
	return nil
}

// Release gives back a reservation made by Reserve with the same kind, size
// and purpose. Releasing more than was reserved is an accounting bug and is
// reported without changing the usage.
func (b *Budget) Release(kind backend.MemKind, n int, purpose string) error {
	const op = "memory.Budget.Release"
	i, err := kindIndex(op, kind)
	if err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	k := &b.kinds[i]
	u := k.purposes[purpose]
	if n < 0 || u.Count == 0 || u.Bytes < int64(n) {
		return fmt.Errorf("%s: n=%d of %s memory for %q, expected at most a live reservation (%d bytes in %d allocations)",
			op, n, kind, purpose, u.Bytes, u.Count)
	}
	k.current -= int64(n)
	u.Bytes -= int64(n)
	u.Count--
	if u.Count == 0 {
		delete(k.purposes, purpose)
	} else {
		k.purposes[purpose] = u
	}
	return nil
}

// Usage returns a snapshot of current and peak usage and the live
// allocations by purpose.
func (b *Budget) Usage() Usage {
	b.mu.Lock()
	defer b.mu.Unlock()
	snap := func(k *kindState) KindUsage {
		active := 0
		for _, u := range k.purposes {
			active += u.Count
		}
		return KindUsage{Current: k.current, Peak: k.peak, Limit: k.limit, Active: active, ByPurpose: maps.Clone(k.purposes)}
	}
	return Usage{Device: snap(&b.kinds[backend.DeviceMem]), Pinned: snap(&b.kinds[backend.PinnedMem])}
}

// ResetPeak sets both peaks to the current usage, to measure a new phase.
func (b *Budget) ResetPeak() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for i := range b.kinds {
		b.kinds[i].peak = b.kinds[i].current
	}
}
