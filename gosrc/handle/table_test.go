package handle

import (
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// native is a Native of kind k with two recognisable words.
type native struct {
	kind     int32
	ctx, ptr uintptr
}

func (n native) NativeSlot() (int32, uintptr, uintptr) { return n.kind, n.ctx, n.ptr }

// table is r's C-visible table, at the address Table hands to C.
func table(t *testing.T, r *Registry) []Slot {
	addr, n := r.Table()
	require.NotZero(t, addr)
	require.Equal(t, TableSlots, n)
	require.Equal(t, addr, uintptr(unsafe.Pointer(&r.tab[0])))
	addr2, _ := r.Table()
	require.Equal(t, addr, addr2, "mapped once")
	return r.tab
}

// cAcquire and cRelease are gosrc/cuda/shim.c's acquire and release in
// Go, word for word (the C reader cannot run in this package's tests):
// refuse an unpublished slot at a glance, else mark the slot in use, then
// check the generation and kind.
func cAcquire(tab []Slot, id ID, kind int32) *Slot {
	idx := uint32(id) - 1
	gen := uint32(uint64(id) >> SlotBits)
	if id <= 0 || int(idx) >= len(tab) || gen == 0 {
		return nil
	}
	s := &tab[idx]
	if atomic.LoadUint32(&s.Gen) != gen {
		return nil
	}
	atomic.AddInt32(&s.InUse, 1)
	if atomic.LoadUint32(&s.Gen) != gen || s.Kind != kind {
		atomic.AddInt32(&s.InUse, -1)
		return nil
	}
	return s
}

func cRelease(s *Slot) { atomic.AddInt32(&s.InUse, -1) }

func TestNativeTable(t *testing.T) {
	t.Run("a published entry is readable by its id, and only while live", func(t *testing.T) {
		var r Registry
		tab := table(t, &r)
		plain := r.Register("plain")
		id := r.RegisterNative("stream", native{1, 0xc0, 0x5e})
		none := r.RegisterNative("cpu stream", nil)
		s := cAcquire(tab, id, 1)
		require.NotNil(t, s)
		assert.Equal(t, [2]uint64{0xc0, 0x5e}, [2]uint64{s.Ctx, s.Ptr})
		cRelease(s)
		assert.Nil(t, cAcquire(tab, id, 2), "another kind")
		assert.Nil(t, cAcquire(tab, plain, 0), "not published")
		assert.Nil(t, cAcquire(tab, none, 0), "a nil Native publishes nothing")
		for _, bad := range []ID{0, -id, id&(1<<SlotBits-1) | ID(uint64(id)>>SlotBits+1)<<SlotBits, 1<<SlotBits | TableSlots + 1} {
			assert.Nil(t, cAcquire(tab, bad, 1), "id %v", bad)
		}
		v, err := Get[string](&r, id)
		require.NoError(t, err)
		assert.Equal(t, "stream", v, "the Go paths name it by the same id")
		require.NoError(t, r.Close("stream", id))
		assert.Nil(t, cAcquire(tab, id, 1), "released")
		assert.Zero(t, tab[0].InUse+tab[1].InUse+tab[2].InUse)
		// The slot's next entry, native or not, is never reached by the old id.
		fresh := r.RegisterNative("next", native{1, 1, 2})
		assert.Nil(t, cAcquire(tab, id, 1))
		require.NotNil(t, cAcquire(tab, fresh, 1))
	})

	t.Run("release waits for a C call in flight", func(t *testing.T) {
		var r Registry
		tab := table(t, &r)
		id := r.RegisterNative("stream", native{1, 1, 1})
		s := cAcquire(tab, id, 1)
		require.NotNil(t, s)
		released := make(chan []any)
		go func() { released <- r.Release(id) }()
		select {
		case <-released:
			t.Fatal("Release returned while a C call held the slot")
		case <-time.After(30 * time.Millisecond):
		}
		assert.False(t, r.Live(id), "the id is dead at once")
		assert.Nil(t, cAcquire(tab, id, 1), "no new C call acquires it")
		other := r.RegisterNative("other", native{1, 2, 2})
		assert.NotEqual(t, slotOf(id), slotOf(other), "a draining slot is not reused")
		cRelease(s)
		assert.Equal(t, []any{"stream"}, <-released)
	})

	t.Run("releasing an owner retires its published borrowers", func(t *testing.T) {
		var r Registry
		tab := table(t, &r)
		owner := r.Register("endpoint")
		// Borrowed entries are not published (Borrow has no Native); an
		// owner's release retires whatever it reaches all the same.
		b, err := r.Borrow(owner, "stream")
		require.NoError(t, err)
		n := r.RegisterNative("event", native{2, 1, 1})
		assert.Equal(t, []any{"endpoint", "stream"}, r.Release(owner))
		assert.Nil(t, cAcquire(tab, b, 1))
		assert.NotNil(t, cAcquire(tab, n, 2), "an unrelated entry stays")
	})

	t.Run("entries past the table take Go's paths", func(t *testing.T) {
		var r Registry
		tab := table(t, &r)
		for range TableSlots {
			r.Register(0)
		}
		id := r.RegisterNative("far", native{1, 1, 1})
		assert.Equal(t, TableSlots, slotOf(id))
		assert.Nil(t, cAcquire(tab, id, 1))
		assert.True(t, r.Live(id))
		assert.Len(t, r.Release(id), 1)
	})

	t.Run("racing calls and releases never hold a retired slot", func(t *testing.T) {
		var r Registry
		tab := table(t, &r)
		const workers, rounds = 6, 300
		var inside, stale atomic.Int64
		var wg sync.WaitGroup
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range rounds {
					ptr := uintptr(w*rounds + i + 1)
					id := r.RegisterNative(ptr, native{1, 7, ptr})
					var calls sync.WaitGroup
					for range 2 {
						calls.Add(1)
						go func() {
							defer calls.Done()
							for range 20 {
								if s := cAcquire(tab, id, 1); s != nil {
									if s.Ptr != uint64(ptr) {
										stale.Add(1) // a later entry's words: the slot was reused under us
									}
									inside.Add(1)
									cRelease(s)
								}
							}
						}()
					}
					r.Release(id)
					calls.Wait()
				}
			}()
		}
		wg.Wait()
		assert.Zero(t, stale.Load())
		assert.Zero(t, r.Len())
		t.Logf("%d C calls acquired a live slot", inside.Load())
	})
}

func slotOf(id ID) int { s, _ := id.split(); return s }

func TestLayoutC(t *testing.T) {
	c := LayoutC()
	for _, want := range []string{
		"#define VG_ID_SLOT_BITS 32\n",
		"\tuint32_t gen;", "\tint32_t in_use;", "\tint32_t kind;", "\tint32_t _pad3;", "\tuint64_t ctx;", "\tuint64_t ptr;",
		"} vg_handle_slot;\n",
		`_Static_assert(sizeof(vg_handle_slot) == 32, `,
		`_Static_assert(offsetof(vg_handle_slot, ptr) == 24, `,
	} {
		assert.Contains(t, c, want)
	}
	assert.Equal(t, 5, strings.Count(c, "offsetof("), "one check per named field")
}
