// Package handle is the one registry of objects that cross the Python
// boundary: every call path (gopy's methods and the int fast path) names an
// object by the same generation-tagged ID.
//
// # Why generations
//
// The fast path used to hand out small ints and reuse freed ones last-in
// first-out, so a closed coordinator's id named whatever object was created
// next, and a stale Python wrapper silently drove it. An ID here carries the
// generation of its slot: once released, it never names another object.
//
// # Owners and borrowers
//
// An object can be registered as borrowed from an owner (an endpoint's
// stream, a view of a tensor). Releasing the owner releases every handle
// borrowed from it, recursively, so a cached wrapper of a closed endpoint's
// stream fails with ErrStale instead of reaching a destroyed CUDA handle.
// Keeping memory alive while borrowed is the memory package's job
// (memory.Shared); this package only names things.
//
// # The C-visible table
//
// A registry also keeps a table that C code reads without entering Go:
// the C fast path of gosrc/cuda (fastpath.h), which python/vortexgo's
// extension calls with a registry ID for the per-call stream and event
// operations. An entry opts in by being registered with RegisterNative:
// its slot of the table, the slot of the same index, then holds the
// entry's generation and the two words C needs (a context and a native
// handle). So an object has one ID on every path; there is no second
// registry in C.
//
// The protocol, with C's half in gosrc/cuda/shim.c (acquire, release):
// a C call adds one to the slot's InUse, then checks that Gen is still its
// ID's generation (else it takes its one back and answers -1: the caller
// falls back to Go, which raises); Release stores Gen = 0, then waits
// until InUse is 0 before it returns (and before the slot can be reused),
// so whoever destroys the native object after Release never does so under
// a C call. Both sides' atomics are sequentially consistent: either the C
// call sees Gen = 0, or Release sees its InUse.
//
// The table lives outside the Go heap (an anonymous mapping, never
// unmapped: a C reader may hold its address for the life of the process).
// Only slots below TableSlots are published; an entry beyond takes Go's
// paths, as does every entry that did not opt in.
package handle

import (
	"fmt"
	"sync"

	"github.com/vortexgo/vortexgo/gosrc/backend"
)

// ID names a registered object: the slot index plus one in the low 32 bits,
// the slot's generation in the next 31. Zero is never a valid ID, so the zero
// value of a field means "not registered".
type ID int64

const slotBits = 32

func makeID(slot int, gen uint32) ID { return ID(int64(gen)<<slotBits | int64(slot+1)) }

func (id ID) split() (slot int, gen uint32) {
	return int(uint32(id)) - 1, uint32(uint64(id) >> slotBits)
}

// ErrStale is returned (wrapped) for an ID that was released, was borrowed
// from an owner that was released, or was never issued. It wraps
// backend.ErrClosed, so Python sees a ClosedError.
var ErrStale = fmt.Errorf("%w (stale handle: the object or its owner was closed)", backend.ErrClosed)

type entry struct {
	gen      uint32
	live     bool
	obj      any
	owner    ID
	borrowed []ID
	native   bool // published in the C-visible table (RegisterNative)
}

// Registry maps IDs to objects. Lookups take a read lock (the Go fast path's
// cost is one RLock and a slice index); registration and release are rare.
// The zero value is ready to use.
type Registry struct {
	mu    sync.RWMutex
	slots []entry
	// free holds released slots first-in first-out, so a slot rests as long
	// as possible before reuse (generations make reuse safe regardless). A
	// published slot joins it only once no C call holds it (Release).
	free []int
	// tab is the C-visible table (table.go), nil until mapped.
	tab []Slot
}

// Register adds obj as an owned object and returns its ID.
func (r *Registry) Register(obj any) ID {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.addLocked(obj, 0)
}

// Borrow adds obj as borrowed from owner: releasing owner releases it too.
// It fails with ErrStale when owner is not live.
func (r *Registry) Borrow(owner ID, obj any) (ID, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	oe := r.entryLocked(owner)
	if oe == nil {
		return 0, fmt.Errorf("handle: borrow from %v: %w", owner, ErrStale)
	}
	id := r.addLocked(obj, owner)
	// addLocked may grow r.slots: look the owner up again.
	oe = r.entryLocked(owner)
	oe.borrowed = append(oe.borrowed, id)
	return id, nil
}

func (r *Registry) addLocked(obj any, owner ID) ID {
	var slot int
	if len(r.free) > 0 {
		slot = r.free[0]
		r.free = r.free[1:]
	} else {
		r.slots = append(r.slots, entry{})
		slot = len(r.slots) - 1
	}
	e := &r.slots[slot]
	e.gen = (e.gen + 1) & (1<<31 - 1)
	if e.gen == 0 {
		e.gen = 1
	}
	e.live, e.obj, e.owner, e.borrowed, e.native = true, obj, owner, nil, false
	return makeID(slot, e.gen)
}

func (r *Registry) entryLocked(id ID) *entry {
	slot, gen := id.split()
	if id <= 0 || slot < 0 || slot >= len(r.slots) {
		return nil
	}
	e := &r.slots[slot]
	if !e.live || e.gen != gen {
		return nil
	}
	return e
}

// Lookup returns the object id names, or false if id is not live.
func (r *Registry) Lookup(id ID) (any, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	e := r.entryLocked(id)
	if e == nil {
		return nil, false
	}
	return e.obj, true
}

// Live reports whether id names a registered object.
func (r *Registry) Live(id ID) bool {
	_, ok := r.Lookup(id)
	return ok
}

// Check fails with an error naming what and wrapping ErrStale once id is
// not live: the first step of every method of a registered wrapper, so a
// closed one never reaches its native handle.
func (r *Registry) Check(what string, id ID) error {
	if !r.Live(id) {
		return fmt.Errorf("%s %v: %w", what, id, ErrStale)
	}
	return nil
}

// Close releases id for the Close of the object it names. It fails like
// Check when id was not live, so of two racing Close calls exactly one goes
// on to destroy the native object.
func (r *Registry) Close(what string, id ID) error {
	if len(r.Release(id)) == 0 {
		return fmt.Errorf("%s %v: %w", what, id, ErrStale)
	}
	return nil
}

// Get returns the object id names as a T, or an error wrapping ErrStale
// (not live) or naming the type it found instead.
func Get[T any](r *Registry, id ID) (T, error) {
	var zero T
	obj, ok := r.Lookup(id)
	if !ok {
		return zero, fmt.Errorf("handle %v: %w", id, ErrStale)
	}
	v, ok := obj.(T)
	if !ok {
		return zero, fmt.Errorf("handle %v names a %T, expected a %T", id, obj, zero)
	}
	return v, nil
}

// Release removes id and, recursively, every handle borrowed from it. It
// returns the objects removed, id's first, so the caller can close the
// borrowed ones; releasing a stale id returns nil. It returns once no C
// call holds a published one (waiting, without the registry's lock, for
// calls in flight), so the caller may destroy what they name.
func (r *Registry) Release(id ID) []any {
	var out []any
	var drain []int
	r.mu.Lock()
	r.releaseLocked(id, &out, &drain)
	tab := r.tab
	r.mu.Unlock()
	if len(drain) > 0 {
		for _, slot := range drain {
			waitIdle(&tab[slot])
		}
		r.mu.Lock()
		r.free = append(r.free, drain...)
		r.mu.Unlock()
	}
	return out
}

// releaseLocked releases id and its borrowers; a published slot is retired
// and goes to drain instead of free.
func (r *Registry) releaseLocked(id ID, out *[]any, drain *[]int) {
	e := r.entryLocked(id)
	if e == nil {
		return
	}
	*out = append(*out, e.obj)
	borrowed := e.borrowed
	slot, _ := id.split()
	if e.native {
		r.retireLocked(slot)
		*drain = append(*drain, slot)
	} else {
		r.free = append(r.free, slot)
	}
	e.live, e.obj, e.borrowed, e.native = false, nil, nil, false
	for _, b := range borrowed {
		r.releaseLocked(b, out, drain)
	}
}

// Len is the number of live handles (leak checks in tests).
func (r *Registry) Len() int {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return len(r.slots) - len(r.free)
}

// String renders the ID as slot@generation, the form error messages use.
func (id ID) String() string {
	slot, gen := id.split()
	return fmt.Sprintf("#%d@%d", slot+1, gen)
}
