package engine

import (
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/require"
)

// cTake is python/vortexgo/_fastcall.c's ring_next in Go, word for word
// (the C consumer cannot run in a Go test): acknowledge, report waiters
// when the acknowledgement moved (-2), spin up to spin for the first record, take up to len(dst)/EventFields
// records; 0 when the spin ran out, -1 once closed and drained.
func cTake(r *eventRing, dst []int64, spin time.Duration) int {
	tail := r.tail().Load()
	prev := r.acked().Swap(tail)
	if prev != tail && r.waiters().Load() != 0 {
		return -2
	}
	h := r.head().Load()
	deadline := time.Now().Add(spin)
	for h == tail && r.closed().Load() == 0 && time.Now().Before(deadline) {
		h = r.head().Load()
	}
	if h == tail {
		if r.closed().Load() != 0 && r.head().Load() == tail {
			return -1
		}
		return 0
	}
	n := int(min(h-tail, uint64(len(dst)/EventFields)))
	for i := range n {
		copy(dst[i*EventFields:], r.record(tail+uint64(i)))
	}
	r.tail().Store(tail + uint64(n))
	return n
}

// TestRingConsumerAlternatesWithGo: the dispatcher's loop with a fixed
// spin, C's wait (cTake) then Go's park (nextRecords without the spin),
// against producers posting bursts and single events, one of them waiting
// for each of its bursts to be acknowledged as the format stage waits for a
// volume's callbacks: every event arrives once, in order per producer,
// then EventDone; no producer hangs.
func TestRingConsumerAlternatesWithGo(t *testing.T) {
	for _, tc := range []struct {
		name  string
		spin  time.Duration
		size  int
		batch int
		inC   bool // the C-side wait must have taken records (its spin covers the gaps)
	}{
		{"spin covers the gaps", 20 * time.Millisecond, 64, 256, true},
		{"spin shorter than the gaps", 20 * time.Microsecond, 64, 256, false},
		{"small queue, small batches", 50 * time.Microsecond, 4, 3, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const bursts, burst, singles = 40, 17, 200
			q := mustQueue(t, tc.size, QueueBlock, tc.spin)
			var acks atomic.Int64
			producers := make(chan struct{}, 2)
			go func() { // a format stage: bursts, each waited for
				defer func() { producers <- struct{}{} }()
				for b := range bursts {
					time.Sleep(time.Duration(b%3) * 100 * time.Microsecond)
					bu := q.newBurst()
					for i := range burst {
						bu.evs = append(bu.evs, Event{Kind: EventSegment, Endpoint: 0, Sample: int64(b*burst + i)})
					}
					seq, ok := q.postBurst(bu, burst-1, nil)
					if ok && q.waitAcked(seq, nil) {
						acks.Add(1)
					}
				}
			}()
			go func() { // another stage: single events
				defer func() { producers <- struct{}{} }()
				for i := range singles {
					if i%50 == 0 {
						time.Sleep(300 * time.Microsecond)
					}
					q.post(Event{Kind: EventJob, Endpoint: -1, Sample: int64(i)}, nil)
				}
			}()
			go func() {
				<-producers
				<-producers
				q.close()
			}()
			dst := make([]int64, tc.batch*EventFields)
			var segs, jobs []int64
			wakes, inC := 0, 0
			for done := false; !done; {
				n := cTake(q.r, dst, tc.spin)
				switch {
				case n == -2:
					q.wakeAcked()
					wakes++
					continue
				case n > 0:
					inC++
				default:
					n = q.nextRecords(dst, time.Second, false)
				}
				for i := range n {
					ev := eventOf(dst[i*EventFields:])
					switch ev.Kind {
					case EventDone:
						done = true
					case EventSegment:
						segs = append(segs, ev.Sample)
					case EventJob:
						jobs = append(jobs, ev.Sample)
					}
				}
			}
			require.Len(t, segs, bursts*burst)
			for i, s := range segs {
				require.Equal(t, int64(i), s, "segment %d in order", i)
			}
			require.Len(t, jobs, singles)
			for i, s := range jobs {
				require.Equal(t, int64(i), s, "job %d in order", i)
			}
			require.Equal(t, int64(bursts), acks.Load(), "every burst was acknowledged")
			if tc.inC {
				require.Positive(t, inC, "records were taken by the C-side wait")
			}
			require.Zero(t, q.dropped.Load())
			t.Logf("%d batches taken by the C-side wait, %d wakes for waiters", inC, wakes)
		})
	}
}

// TestRingSurvivesItsSessionWhileLent: an EventRing keeps the queue, and so
// its mapping, while it is reachable; once nothing reaches the queue the
// cleanup unmaps it.
func TestRingSurvivesItsSessionWhileLent(t *testing.T) {
	var mu sync.Mutex
	unmapped := map[uintptr]bool{}
	f := func(addr uintptr) {
		mu.Lock()
		unmapped[addr] = true
		mu.Unlock()
	}
	ringUnmapped.Store(&f)
	t.Cleanup(func() { ringUnmapped.Store(nil) })
	gone := func(addr uintptr) bool {
		mu.Lock()
		defer mu.Unlock()
		return unmapped[addr]
	}
	q := mustQueue(t, 8, QueueBlock, -1)
	lent := &EventRing{q: q}
	addr := lent.Addr()
	q.post(Event{Kind: EventUpdate, Sample: 7}, nil)
	q.close()
	q = nil //nolint:ineffassign // the queue is now reachable only through lent
	for range 3 {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	require.False(t, gone(addr), "the lent ring is still mapped")
	dst := make([]int64, 4*EventFields)
	require.Equal(t, 1, cTake(lent.q.r, dst, 0), "and still readable")
	require.Equal(t, int64(7), dst[2])
	runtime.KeepAlive(lent)
	lent = nil //nolint:ineffassign
	for i := 0; i < 200 && !gone(addr); i++ {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	require.True(t, gone(addr), "the mapping goes once nothing reaches the queue")
}

// TestRingBounds: the ring's size is checked before it is mapped, naming
// the bound.
func TestRingBounds(t *testing.T) {
	for _, slots := range []int{0, -1, MaxEventQueue + lifecycleReserve + burstRoom + 1} {
		_, err := newEventRing(slots)
		require.ErrorContains(t, err, "event queue of", "slots=%d", slots)
	}
	r, err := newEventRing(MaxEventQueue + lifecycleReserve + burstRoom)
	require.NoError(t, err, "the largest queue maps (no memory is reserved)")
	r.unmap()
}

// TestEventRingBindings: the bindings' view of a lent ring: no ring before
// a session, Addr is the ring's address, Ack wakes a stage waiting for an
// acknowledgement the C consumer stored.
func TestEventRingBindings(t *testing.T) {
	_, err := (&Engine{}).EventRing()
	require.ErrorContains(t, err, "expected a call after start()")

	q := mustQueue(t, 8, QueueBlock, -1)
	r := &EventRing{q: q}
	require.Equal(t, q.r.addr(), r.Addr())

	seq := q.post(Event{Kind: EventVolume}, nil)
	woke := make(chan bool)
	go func() { woke <- q.waitAcked(seq, nil) }()
	dst := make([]int64, 4*EventFields)
	require.Equal(t, 1, cTake(q.r, dst, 0))
	for q.r.waiters().Load() == 0 { // the stage is about to sleep on its acknowledgement
		time.Sleep(time.Millisecond)
	}
	// The acknowledgement moved and finds the stage waiting (-2), unless the
	// stage saw it first on its own second look and left (0).
	n := cTake(q.r, dst, 0)
	require.Contains(t, []int{-2, 0}, n)
	if n == -2 {
		r.Ack()
	}
	require.True(t, <-woke)
}

// TestRingGivesItsPagesBackWhenDone: the records' pages a session touched
// go back to the system once its EventDone is out, before the collector
// unmaps the ring (mincore: the ring's resident pages; /proc's maps cannot
// tell, as the kernel merges the mapping with its neighbours).
func TestRingGivesItsPagesBackWhenDone(t *testing.T) {
	resident := func(r *eventRing) int {
		page := os.Getpagesize()
		vec := make([]byte, (len(r.mem)+page-1)/page)
		_, _, errno := syscall.Syscall(syscall.SYS_MINCORE, r.addr(), uintptr(len(r.mem)), uintptr(unsafe.Pointer(&vec[0])))
		require.Zero(t, errno, "mincore")
		n := 0
		for _, v := range vec {
			n += int(v & 1)
		}
		return n
	}
	q := mustQueue(t, 4096, QueueBlock, -1)
	dst := make([]int64, 256*EventFields)
	for i := range 4096 { // every slot written once: about 450 KiB of records
		q.post(Event{Kind: EventSegment, Sample: int64(i)}, nil)
		if q.used() >= 256 {
			q.nextRecords(dst, 0, false)
		}
	}
	for q.used() > 0 {
		q.nextRecords(dst, 0, false)
	}
	before := resident(q.r)
	require.Greater(t, before, 100, "the records' pages are resident")
	q.close()
	require.Equal(t, 1, q.nextRecords(dst, 0, false), "EventDone")
	require.Equal(t, int64(EventDone), dst[0])
	require.LessOrEqual(t, resident(q.r), 1, "only the header's page stays (was %d pages)", before)
	require.Zero(t, q.nextRecords(dst, 0, false), "a later call reads the header, not the records")
	runtime.KeepAlive(q)
}
