package engine

import (
	"fmt"
	"os"
	"runtime"
	"sync/atomic"
	"syscall"
	"unsafe"
)

// eventRing is the event queue's storage: event records (EventFields
// int64s each, the layout Python reads) in a ring, with the positions that
// producers and the consumer exchange in a header, all in memory mapped
// outside the Go heap. The Python dispatcher's C loop (_fastcall.c
// ring_next) takes records from it directly, with the GIL released and no
// call into Go, when a fixed Config.DispatchSpin asks for a spinning
// dispatcher (docs/design.md, "Dispatch latency": every trip through Go
// added microseconds to the callback latency); Go's own consumer (next,
// nextRecords) reads the same ring. The header's layout is declared once,
// ringHeaderWords (layout.go); go generate writes it as eventring.h, which
// the C side includes (TestGeneratedLayoutIsFresh).
//
// Positions count records from the session's start: head is how many
// producers have published, tail how many the consumer took, acked how
// many it had taken when it last came back for more (their handlers have
// returned). A record's Seq is its position + 1. The memory is unmapped by
// a cleanup once the queue is unreachable: a C consumer holds the queue
// through the EventRing it got the address from, so the address stays
// valid while any consumer may read it.
type eventRing struct {
	mem   []byte
	w     []int64 // mem as int64 words
	slots uint64
}

// The header's words (int64 index): the offsets of ringHeaderWords
// (layout.go), which go generate also writes as eventring.h's VG_RING_*.
const (
	ringMagicW   = int(unsafe.Offsetof(ringHeaderWords{}.Magic) / 8)   // ringMagic
	ringVersionW = int(unsafe.Offsetof(ringHeaderWords{}.Version) / 8) // ringVersion
	ringSlotsW   = int(unsafe.Offsetof(ringHeaderWords{}.Slots) / 8)   // capacity in records
	ringFieldsW  = int(unsafe.Offsetof(ringHeaderWords{}.Fields) / 8)  // EventFields
	ringHeadW    = int(unsafe.Offsetof(ringHeaderWords{}.Head) / 8)    // records published (producers, under eventQueue.mu)
	ringTailW    = int(unsafe.Offsetof(ringHeaderWords{}.Tail) / 8)    // records taken (the consumer)
	ringAckedW   = int(unsafe.Offsetof(ringHeaderWords{}.Acked) / 8)   // records taken before the consumer's last call: handled
	ringParkedW  = int(unsafe.Offsetof(ringHeaderWords{}.Parked) / 8)  // 1 while the consumer is parked in Go: producers wake it
	ringWaitersW = int(unsafe.Offsetof(ringHeaderWords{}.Waiters) / 8) // producers waiting for acked (waitAcked): the consumer wakes them
	ringClosedW  = int(unsafe.Offsetof(ringHeaderWords{}.Closed) / 8)  // 1 once no record follows head
	ringHeader   = int(unsafe.Sizeof(ringHeaderWords{}) / 8)           // header words; the records follow
)

// maxRingBytes bounds the ring's mapping: the largest EventQueueSize
// (MaxEventQueue) with its reserve fits. The mapping reserves no memory
// (MAP_NORESERVE): pages are touched only as far as records are written.
const maxRingBytes = (ringHeader + (MaxEventQueue+lifecycleReserve+burstRoom)*EventFields) * 8

// newEventRing maps a ring of slots records.
func newEventRing(slots int) (*eventRing, error) {
	size := (ringHeader + slots*EventFields) * 8
	if slots <= 0 || size > maxRingBytes {
		return nil, Invalid("event queue of %d records, expected 1 to %d", slots, MaxEventQueue+lifecycleReserve+burstRoom)
	}
	mem, err := syscall.Mmap(-1, 0, size, syscall.PROT_READ|syscall.PROT_WRITE,
		syscall.MAP_ANON|syscall.MAP_PRIVATE|syscall.MAP_NORESERVE)
	if err != nil {
		return nil, fmt.Errorf("engine: mapping the event queue (%d bytes): %w", size, err)
	}
	r := &eventRing{mem: mem, w: unsafe.Slice((*int64)(unsafe.Pointer(&mem[0])), len(mem)/8), slots: uint64(slots)}
	r.w[ringMagicW], r.w[ringVersionW], r.w[ringSlotsW], r.w[ringFieldsW] = ringMagic, ringVersion, int64(slots), EventFields
	return r, nil
}

// unmap releases the mapping: only from the queue's cleanup, once nothing
// can reach the ring.
func (r *eventRing) unmap() {
	if f := ringUnmapped.Load(); f != nil {
		(*f)(r.addr())
	}
	_ = syscall.Munmap(r.mem)
}

// ringUnmapped, when set, is told each ring's address as it is unmapped
// (tests: the cleanup ran).
var ringUnmapped atomic.Pointer[func(uintptr)]

// drop gives the records' pages back to the system, keeping the mapping
// (and the header's page): once the session's last event is out nothing
// reads a record again, and the mapping itself waits for the collector
// (unmap), which a host-memory-only ring does not prompt: without this a
// loop of sessions would hold every ring's touched pages until a
// collection. A page dropped reads as zeros if touched again.
func (r *eventRing) drop() {
	page := os.Getpagesize()
	if from := (ringHeader*8 + page - 1) / page * page; from < len(r.mem) {
		_ = syscall.Madvise(r.mem[from:], syscall.MADV_DONTNEED)
	}
}

// word is header word i as an atomic: every header word is shared with
// another thread (and possibly C), so all of them are read and written
// atomically.
func (r *eventRing) word(i int) *atomic.Uint64 { return (*atomic.Uint64)(unsafe.Pointer(&r.w[i])) }

func (r *eventRing) head() *atomic.Uint64    { return r.word(ringHeadW) }
func (r *eventRing) tail() *atomic.Uint64    { return r.word(ringTailW) }
func (r *eventRing) acked() *atomic.Uint64   { return r.word(ringAckedW) }
func (r *eventRing) parked() *atomic.Uint64  { return r.word(ringParkedW) }
func (r *eventRing) waiters() *atomic.Uint64 { return r.word(ringWaitersW) }
func (r *eventRing) closed() *atomic.Uint64  { return r.word(ringClosedW) }

// record is the record at position pos.
func (r *eventRing) record(pos uint64) []int64 {
	o := ringHeader + int(pos%r.slots)*EventFields
	return r.w[o : o+EventFields : o+EventFields]
}

// addr is the ring's address, for the C consumer.
func (r *eventRing) addr() uintptr { return uintptr(unsafe.Pointer(&r.mem[0])) }

// EventRing lends the engine's current event queue to a consumer outside
// Go (the Python dispatcher's C loop, _fastcall.c ring_next): Addr is the
// ring's address (eventring.h's layout). It keeps the queue's memory
// mapped as long as it is reachable, so the holder must keep it for as
// long as it reads the address. One consumer at a time: its calls and
// NextRecords alternate on the dispatcher's thread, never overlap.
type EventRing struct {
	q *eventQueue
}

// EventRing returns the current session's queue for a C consumer (Addr,
// Ack); an error before the first Start.
func (e *Engine) EventRing() (*EventRing, error) {
	s := e.sess()
	if s == nil {
		return nil, Invalid("engine.EventRing: the engine has no session, expected a call after start()")
	}
	return &EventRing{q: s.events}, nil
}

// Addr is the ring's address.
func (r *EventRing) Addr() uintptr {
	addr := r.q.r.addr()
	runtime.KeepAlive(r)
	return addr
}

// Ack wakes the producers waiting for an acknowledgement, after the C
// consumer stored acked and found waiters (ring_next's -2).
func (r *EventRing) Ack() { r.q.wakeAcked() }
