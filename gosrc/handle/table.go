package handle

import (
	"fmt"
	"reflect"
	"runtime"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"
)

// Slot is one entry of the C-visible table, declared once here: LayoutC
// writes it as C's vg_handle_slot (the `c` tags are its comments), and
// TestGeneratedLayoutIsFresh (gosrc/engine) keeps the header in step.
type Slot struct {
	Gen   uint32 `c:"the entry's generation while published, 0 otherwise (atomic)"`
	InUse int32  `c:"C calls between acquire and release (atomic; C writes it)"`
	Kind  int32  `c:"the publisher's code of what the entry is (Native)"`
	_     int32
	Ctx   uint64 `c:"the native context the call runs in"`
	Ptr   uint64 `c:"the native handle"`
}

// TableSlots is the capacity of a registry's C-visible table (2 MiB of
// address space; pages are touched only as far as slots are used).
const TableSlots = 1 << 16

// SlotBits is the width of an ID's slot field: an ID is the slot index
// plus one in the low SlotBits bits, the slot's generation in the next 31.
const SlotBits = slotBits

// Native is implemented by an object whose per-call operations C may run
// without Go (a CUDA stream or event): NativeSlot gives the kind code the
// C reader checks and the two words it uses. The publisher keeps the
// object alive until Release of its ID has returned.
type Native interface {
	NativeSlot() (kind int32, ctx, ptr uintptr)
}

// RegisterNative is Register that also publishes n in the C-visible table
// (a nil n publishes nothing: Register). An entry the table cannot hold
// (its slot past TableSlots, or no table mapped) is registered all the
// same and takes Go's paths.
func (r *Registry) RegisterNative(obj any, n Native) ID {
	r.mu.Lock()
	defer r.mu.Unlock()
	id := r.addLocked(obj, 0)
	if n == nil {
		return id
	}
	slot, gen := id.split()
	if slot >= TableSlots || r.mapLocked() != nil {
		return id
	}
	kind, ctx, ptr := n.NativeSlot()
	s := &r.tab[slot]
	s.Kind, s.Ctx, s.Ptr = kind, uint64(ctx), uint64(ptr)
	atomic.StoreUint32(&s.Gen, gen) // publishes: a reader that sees Gen sees the rest
	r.slots[slot].native = true
	return id
}

// Table is the address of the registry's C-visible table and its length in
// slots, mapping it at the first call; 0, 0 when it cannot be mapped (C
// then names nothing and every call takes Go's paths).
func (r *Registry) Table() (addr uintptr, slots int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.mapLocked() != nil {
		return 0, 0
	}
	return uintptr(unsafe.Pointer(&r.tab[0])), len(r.tab)
}

// mapLocked maps the table once; it stays mapped for the process's life.
func (r *Registry) mapLocked() error {
	if r.tab != nil {
		return nil
	}
	size := TableSlots * int(unsafe.Sizeof(Slot{}))
	mem, err := syscall.Mmap(-1, 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		return fmt.Errorf("handle: mapping the C-visible table (%d bytes): %w", size, err)
	}
	r.tab = unsafe.Slice((*Slot)(unsafe.Pointer(&mem[0])), TableSlots)
	return nil
}

// retireLocked unpublishes slot: no C call acquires it from now on.
func (r *Registry) retireLocked(slot int) { atomic.StoreUint32(&r.tab[slot].Gen, 0) }

// waitIdle returns once no C call holds s: a few yields, then sleeps
// backing off to 1 ms (a stream synchronize in flight can take long; a
// Release waits at most that long past its end and costs no busy core).
func waitIdle(s *Slot) {
	wait := 10 * time.Microsecond
	for i := 0; atomic.LoadInt32(&s.InUse) != 0; i++ {
		if i < 64 {
			runtime.Gosched()
			continue
		}
		time.Sleep(wait)
		wait = min(2*wait, time.Millisecond)
	}
}

// LayoutC is the C declaration of the table and of IDs (VG_ID_SLOT_BITS,
// vg_handle_slot with static checks of its size and offsets against Go's),
// for the C fast path's generated header (gosrc/cuda/fastpath.h).
func LayoutC() string {
	var b strings.Builder
	fmt.Fprintf(&b, "/* IDs (gosrc/handle): the slot index + 1 in the low VG_ID_SLOT_BITS bits, the slot's\n"+
		" * generation in the next 31; 0 and negative IDs name nothing. */\n#define VG_ID_SLOT_BITS %d\n\n", SlotBits)
	b.WriteString("/* One slot of a registry's C-visible table (handle.Slot): slot i holds the entry of IDs whose\n" +
		" * slot index is i while Go publishes it. */\ntypedef struct {\n")
	t := reflect.TypeOf(Slot{})
	var checks []string
	for i := range t.NumField() {
		f := t.Field(i)
		name := cName(f.Name, i)
		fmt.Fprintf(&b, "\t%s %s;", cType(f.Type.Kind()), name)
		if doc := f.Tag.Get("c"); doc != "" {
			fmt.Fprintf(&b, " /* %s */", doc)
		}
		b.WriteString("\n")
		if f.Name != "_" {
			checks = append(checks, fmt.Sprintf("_Static_assert(offsetof(vg_handle_slot, %s) == %d, \"vg_handle_slot.%s moved\");\n",
				name, f.Offset, name))
		}
	}
	fmt.Fprintf(&b, "} vg_handle_slot;\n_Static_assert(sizeof(vg_handle_slot) == %d, \"vg_handle_slot is not handle.Slot\");\n",
		t.Size())
	for _, c := range checks {
		b.WriteString(c)
	}
	return b.String()
}

// cName is a field's C name: InUse -> in_use; blank fields are padding.
func cName(name string, i int) string {
	if name == "_" {
		return fmt.Sprintf("_pad%d", i)
	}
	var b strings.Builder
	for j, c := range name {
		if c >= 'A' && c <= 'Z' {
			if j > 0 {
				b.WriteByte('_')
			}
			c += 'a' - 'A'
		}
		b.WriteRune(c)
	}
	return b.String()
}

// cType is the C type of a field of Slot's kinds.
func cType(k reflect.Kind) string {
	switch k {
	case reflect.Uint32:
		return "uint32_t"
	case reflect.Int32:
		return "int32_t"
	case reflect.Uint64:
		return "uint64_t"
	}
	panic(fmt.Sprintf("handle: a Slot field of kind %v has no C type", k))
}
