package engine

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// EventKind says what an Event reports.
type EventKind uint8

const (
	// EventUpdate: a block was formatted into the endpoint (vortex's
	// update_callback).
	EventUpdate EventKind = iota
	// EventSegment: a B-scan is complete (segment_callback).
	EventSegment
	// EventVolume: a volume is complete (volume_callback).
	EventVolume
	// EventScan: the scan is complete (scan_callback).
	EventScan
	// EventDone: the engine finished; no event follows.
	EventDone
	// EventMarker: an Event marker reached the endpoint (vortex's endpoint
	// event_callback(sample, id)); the id travels in ScanIdx.
	EventMarker
	// EventQueue: the scan queue recorded callback events while the
	// Generate stage played it (a scan started or finished); the
	// dispatcher runs the scans' Python callbacks. Endpoint is -1.
	EventQueue
	// EventQueueEmpty: the scan queue ran dry and an empty callback is
	// wanted; the Generate stage waits until the dispatcher has handled
	// it (ScanQueue.SetEmptyWaiter). Endpoint is -1.
	EventQueueEmpty
	// EventEngine: a session lifecycle event (vortex's Engine.Event, its
	// value in ScanIdx: EngineEvent); Message holds the error of
	// EngineError, EngineAbort and an EngineShutdown caused by one.
	// Endpoint is -1.
	EventEngine
	// EventJob: a block left the pipeline (vortex's job_callback; posted
	// only after SetJobEvents(true)): ScanIdx is the job (block) id,
	// Sample the blocks in flight, VolumeIdx the jobs dispatched, Times
	// the block's stage times. Endpoint is -1.
	EventJob

	eventKinds = iota // the number of kinds
)

// String returns the kind's name as the Python layer spells it.
func (k EventKind) String() string {
	switch k {
	case EventUpdate:
		return "update"
	case EventSegment:
		return "segment"
	case EventVolume:
		return "volume"
	case EventScan:
		return "scan"
	case EventDone:
		return "done"
	case EventMarker:
		return "event"
	case EventQueue:
		return "queue"
	case EventQueueEmpty:
		return "queue_empty"
	case EventEngine:
		return "engine"
	case EventJob:
		return "job"
	}
	return "EventKind(?)"
}

// Event is one record of the queue the Python dispatcher drains. Events of
// a block are posted once its formatting has been dispatched (enqueued on
// the endpoint streams, not necessarily finished), in block order.
type Event struct {
	// Kind says what happened.
	Kind EventKind
	// Endpoint is the endpoint's index in wiring order (AddFormatter
	// calls, then endpoint order), or -1 for engine-wide events.
	Endpoint int
	// Sample is the record index (since start) one past the event.
	Sample int64
	// ScanIdx is vortex's scan_index: the scan's sequence number (from its
	// ScanBoundary marker), or -1 before any; an EventMarker's id.
	ScanIdx int64
	// VolumeIdx is vortex's volume_index: the volume's index in its scan.
	VolumeIdx int64
	// BscanIdx is vortex's segment_index_buffer: the segment's index in
	// the volume buffer.
	BscanIdx int64
	// Timestamp is nanoseconds since Engine.Start (monotonic clock).
	Timestamp int64
	// Message is the error of an EventEngine's EngineError or EngineAbort
	// (and of an EngineShutdown an error caused).
	Message string
	// Seq numbers the events the queue accepted (1, 2, ...).
	Seq uint64
	// Times are an EventJob's stage times, ns since Start (vortex's
	// JobTiming: create, service, scan, acquire, process, format,
	// recycle; see the mark* constants).
	Times [blockMarks]int64
}

// eventBurst is a block's events for one endpoint, posted together
// (postBurst): one lock and one publication for the block, so a spinning
// consumer takes the block's events in one batch instead of half of them
// (docs/design.md, "Dispatch latency"). Bursts are recycled through their
// queue's free list, so a streaming engine allocates none per block.
type eventBurst struct {
	evs []Event
}

// freeBursts is how many spare bursts a queue keeps: more than are in
// flight at once in practice (one per endpoint being formatted).
const freeBursts = 64

// newBurst returns an empty burst, for postBurst.
func (q *eventQueue) newBurst() *eventBurst {
	select {
	case b := <-q.free:
		return b
	default:
		return &eventBurst{evs: make([]Event, 0, 32)}
	}
}

// release empties b and keeps it for newBurst; nothing may use it
// afterwards.
func (q *eventQueue) release(b *eventBurst) {
	clear(b.evs) // drop the Messages' strings
	b.evs = b.evs[:0]
	select {
	case q.free <- b:
	default: // enough spares: the collector takes it
	}
}

// eventQueue is a bounded queue of event records between the engine's
// stages (any number of producers) and one consumer, the Python
// dispatcher, in an eventRing. Producers write under mu and publish by
// storing head; the consumer takes records by storing tail, in Go (next,
// nextRecords) or in C (EventRing): it spins on head while events are
// expected and parks on wake otherwise.
type eventQueue struct {
	r      *eventRing
	mu     sync.Mutex // producers: head, the records, msgs
	size   int        // the room for ordinary events; lifecycle events use the reserve above it
	policy QueuePolicy
	// msgs holds the Messages of the records that carry one (lifecycle
	// events: a few per session), by Seq, for Go's consumer: a record
	// holds numbers only.
	msgs map[uint64]string
	wake chan struct{} // a token for a parked consumer (ringParkedW)
	free chan *eventBurst

	// Acknowledgement: the single consumer calls next again only after
	// every handler of the previous batch returned, so entering next
	// acknowledges that batch (ringAckedW). Producers that wait for it
	// count themselves in ringWaitersW and sleep on ackWake, closed and
	// replaced when the consumer finds waiters; ackMu guards both.
	ackMu    sync.Mutex
	ackWake  chan struct{}
	spinFor  time.Duration // see Config.DispatchSpin
	adaptive bool          // Config.DispatchSpin 0: spin through the gaps between arrivals (adaptiveSpin)
	// Consumer-side arrival tracking for the adaptive spin (next's caller
	// is the single consumer: no lock).
	lastArrival time.Time
	gap         time.Duration // the longest gap between arrivals in this window and the last (arrived)
	gapCur      time.Duration // the longest gap in the current window
	gapPrev     time.Duration // the longest gap in the previous window
	gapSet      time.Time     // when the current window began
	// lastSched is when the consumer's goroutine last went through the
	// scheduler (a park or a yield in spin): see yieldAfter.
	lastSched time.Time
	noYield   bool // BenchmarkNextLatency: the spin without its yields, for comparison
	dropped   atomic.Int64
	doneSent  atomic.Bool
	scratch   []int64 // next's records (consumer side)
}

// burstRoom is the ring's room beyond size and the reserve for the one
// burst that may start in the last free slot of the ordinary room: an
// item is accepted while the ordinary room is not used up, as single
// events always were. A burst longer than burstRoom is posted in parts.
const burstRoom = 256

func newEventQueue(size int, policy QueuePolicy, spin time.Duration) (*eventQueue, error) {
	r, err := newEventRing(size + lifecycleReserve + burstRoom)
	if err != nil {
		return nil, err
	}
	adaptive := spin == 0
	switch {
	case spin == 0:
		spin = defaultSpin
	case spin < 0:
		spin = 0
	}
	q := &eventQueue{r: r, size: size, policy: policy, spinFor: spin, adaptive: adaptive,
		msgs: map[uint64]string{}, wake: make(chan struct{}, 1), ackWake: make(chan struct{}),
		free: make(chan *eventBurst, freeBursts)}
	// The mapping goes once nothing reaches the queue: not the session,
	// not a consumer's EventRing (a C consumer holds one while it reads).
	runtime.AddCleanup(q, (*eventRing).unmap, r)
	return q, nil
}

// used is how many records are queued (published, not yet taken).
func (q *eventQueue) used() uint64 { return q.r.head().Load() - q.r.tail().Load() }

// full reports whether the ordinary room is used up.
func (q *eventQueue) full() bool { return q.used() >= uint64(q.size) }

// write queues evs if there is room, without waiting: ordinary items
// while the ordinary room is not used up (they may overshoot it by up to
// burstRoom - 1), reserved ones while the ring has room. It numbers the
// events (Seq = position + 1), publishes them in one store of head and
// wakes a parked consumer.
func (q *eventQueue) write(evs []Event, reserved bool) bool {
	n := uint64(len(evs))
	q.mu.Lock()
	h := q.r.head().Load()
	used := h - q.r.tail().Load()
	if used+n > q.r.slots || (!reserved && used >= uint64(q.size)) {
		q.mu.Unlock()
		return false
	}
	for i := range evs {
		ev := &evs[i]
		ev.Seq = h + uint64(i) + 1
		ev.Record(q.r.record(h + uint64(i)))
		if ev.Message != "" {
			q.msgs[ev.Seq] = ev.Message
		}
	}
	q.r.head().Store(h + n) // publishes the records (sequentially consistent)
	q.mu.Unlock()
	q.wakeConsumer()
	return true
}

// wakeConsumer hands a parked consumer a token. The consumer stores
// parked before it checks head, and write stores head before it loads
// parked: one of the two sees the other's store.
func (q *eventQueue) wakeConsumer() {
	if q.r.parked().Load() != 0 {
		select {
		case q.wake <- struct{}{}:
		default: // a token is waiting already
		}
	}
}

// lifecycleReserve is the room kept in the queue for lifecycle events
// (postReserved): a session posts at most 8 of them (Launch, Run, Start,
// Error, Abort, Shutdown, Complete, Stop, Exit, one Error), and the
// ordinary posters that may overshoot size at once (the acquire, format
// and recycle stages) take at most one slot each.
const lifecycleReserve = 16

// postReserved queues a lifecycle event without waiting: they are few per
// session and the queue keeps room for them, so they are never dropped
// (a full reserve, which the bound above rules out, counts a drop).
func (q *eventQueue) postReserved(ev Event) {
	if !q.write([]Event{ev}, true) {
		q.dropped.Add(1)
	}
}

// post queues ev and returns its Seq (0: dropped). Under QueueBlock it
// waits for room (backpressure) unless stopping is closed: once a stop is
// requested, delivery becomes best-effort so that a dispatcher that
// stopped draining cannot hang Stop.
func (q *eventQueue) post(ev Event, stopping <-chan struct{}) uint64 {
	evs := []Event{ev}
	if q.enqueue(evs, stopping) {
		return evs[0].Seq
	}
	return 0
}

// enqueue queues evs by the queue's policy: at once if there is room,
// else dropped under QueueDrop, else once the consumer makes room, unless
// stopping closes first. Dropped events are counted.
func (q *eventQueue) enqueue(evs []Event, stopping <-chan struct{}) bool {
	if q.write(evs, false) {
		return true
	}
	if q.policy == QueueDrop {
		q.dropped.Add(int64(len(evs)))
		return false
	}
	return q.writeWhenRoom(evs, stopping)
}

// postBurst queues b's events together, as posting each with post would,
// under one lock and one publication, and returns the Seq of b.evs[at]
// (0 when at is out of range or that event was dropped); ok is false when
// any event was dropped (QueueDrop with the queue full, or stopping
// closed while waiting for room). A burst longer than burstRoom goes in
// parts of burstRoom (another producer's events may come between them):
// under QueueDrop a later part may be dropped after an earlier one was
// queued. b belongs to the queue from the call on, whatever the outcome.
func (q *eventQueue) postBurst(b *eventBurst, at int, stopping <-chan struct{}) (seq uint64, ok bool) {
	defer q.release(b)
	if len(b.evs) == 0 {
		return 0, false
	}
	for i := 0; i < len(b.evs); i += burstRoom {
		part := b.evs[i:min(i+burstRoom, len(b.evs))]
		if !q.enqueue(part, stopping) {
			q.dropped.Add(int64(len(b.evs) - i - len(part))) // the parts not tried
			return 0, false
		}
		if at >= i && at < i+len(part) {
			seq = part[at-i].Seq
		}
	}
	return seq, true
}

// writeWhenRoom waits until the ordinary room has a slot (the consumer
// drains), unless stopping closes first (the events then count as
// dropped), polling with a back-off from microseconds to a millisecond: a
// full queue means the consumer is far behind, and this poster is the
// backpressure on the engine.
func (q *eventQueue) writeWhenRoom(evs []Event, stopping <-chan struct{}) bool {
	var t *time.Timer
	for wait := time.Microsecond; ; wait = min(2*wait, time.Millisecond) {
		if q.write(evs, false) {
			return true
		}
		if t == nil {
			t = time.NewTimer(wait)
			defer t.Stop()
		} else {
			t.Reset(wait)
		}
		select {
		case <-stopping:
			q.dropped.Add(int64(len(evs)))
			return false
		case <-t.C:
		}
	}
}

// postWait queues ev whatever the policy, waiting for room unless
// stopping closes: for an event the engine then waits on (its 0 return
// means it was not queued).
func (q *eventQueue) postWait(ev Event, stopping <-chan struct{}) uint64 {
	evs := []Event{ev}
	if q.writeWhenRoom(evs, stopping) {
		return evs[0].Seq
	}
	return 0
}

// close ends the queue; call after the last post.
func (q *eventQueue) close() {
	q.mu.Lock()
	q.r.closed().Store(1)
	q.mu.Unlock()
	q.wakeConsumer()
}

// ack is the consumer's acknowledgement on entering next: every record
// taken so far has been handled. When that moved the acknowledgement it
// wakes the producers waiting for one (waitAcked); released is true when
// it did, their events then about to follow. An acknowledgement that did
// not move cannot have satisfied a waiter: waking it would only make it
// check and sleep again, once per consumer call.
func (q *eventQueue) ack() (released bool) {
	tail := q.r.tail().Load()
	if q.r.acked().Swap(tail) == tail || q.r.waiters().Load() == 0 {
		return false
	}
	return q.wakeAcked()
}

// wakeAcked wakes the producers waiting in waitAcked to check acked again.
func (q *eventQueue) wakeAcked() bool {
	q.ackMu.Lock()
	defer q.ackMu.Unlock()
	if q.r.waiters().Load() == 0 {
		return false
	}
	close(q.ackWake)
	q.ackWake = make(chan struct{})
	return true
}

// waitAcked blocks until the consumer has handled event seq; false if
// stopping closed first. The waiter count is published before acked is
// read again, and the consumer stores acked before it reads the count, so
// one of them sees the other (the C consumer then asks Go to wake it:
// EventRing.Ack).
func (q *eventQueue) waitAcked(seq uint64, stopping <-chan struct{}) bool {
	const leave = ^uint64(0) // adds -1
	q.ackMu.Lock()
	defer q.ackMu.Unlock()
	for q.r.acked().Load() < seq {
		w := q.ackWake
		q.r.waiters().Add(1)
		if q.r.acked().Load() >= seq {
			q.r.waiters().Add(leave)
			break
		}
		q.ackMu.Unlock()
		var stopped bool
		select {
		case <-w:
		case <-stopping:
			stopped = true
		}
		q.ackMu.Lock()
		q.r.waiters().Add(leave)
		if stopped {
			return false
		}
	}
	return true
}

// next fills dst with up to len(dst) events, waiting up to timeout for the
// first (timeout < 0 waits forever, 0 only polls). After the queue closes
// and drains it returns one EventDone, then nothing.
func (q *eventQueue) next(dst []Event, timeout time.Duration) int {
	if need := len(dst) * EventFields; cap(q.scratch) < need {
		q.scratch = make([]int64, need)
	}
	recs := q.scratch[:len(dst)*EventFields]
	tail := q.r.tail().Load()
	n := q.nextRecords(recs, timeout, true)
	for i := range n {
		dst[i] = eventOf(recs[i*EventFields : (i+1)*EventFields])
		if dst[i].Kind == EventDone {
			continue
		}
		dst[i].Seq = tail + uint64(i) + 1
		if dst[i].Kind == EventEngine {
			q.mu.Lock()
			dst[i].Message = q.msgs[dst[i].Seq]
			delete(q.msgs, dst[i].Seq)
			q.mu.Unlock()
		}
	}
	return n
}

// eventOf is the event of record rec (Event.Record's inverse, without
// Seq and Message).
func eventOf(rec []int64) Event {
	ev := Event{Kind: EventKind(rec[0]), Endpoint: int(rec[1]), Sample: rec[2], ScanIdx: rec[3],
		VolumeIdx: rec[4], BscanIdx: rec[5], Timestamp: rec[6]}
	copy(ev.Times[:], rec[7:EventFields])
	return ev
}

// nextRecords is next writing records (EventFields int64s each) into dst,
// up to len(dst)/EventFields of them. spin false skips the spin before
// parking: the C consumer spun already (EventRing).
func (q *eventQueue) nextRecords(dst []int64, timeout time.Duration, spin bool) int {
	max := len(dst) / EventFields
	if max == 0 {
		return 0
	}
	released := q.ack() // the previous batch's handlers have all returned
	if timeout != 0 && !q.ready() && !q.await(timeout, released, spin) {
		return 0
	}
	n := 0
	if q.used() > 0 {
		q.arrived(time.Now())
		n = q.take(dst, max)
	}
	if n < max && q.isClosed() && q.used() == 0 { // drained: EventDone, after the last records
		n += q.done(dst[n*EventFields:])
	}
	return n
}

// isClosed reports whether the producers are done. Read before head: a
// record published before the close is then seen by the used() that
// follows.
func (q *eventQueue) isClosed() bool { return q.r.closed().Load() != 0 }

// take copies up to max records from the ring into dst and frees their
// slots.
func (q *eventQueue) take(dst []int64, max int) int {
	t := q.r.tail().Load()
	n := int(min(q.r.head().Load()-t, uint64(max)))
	for i := range n {
		copy(dst[i*EventFields:(i+1)*EventFields], q.r.record(t+uint64(i)))
	}
	q.r.tail().Store(t + uint64(n))
	return n
}

// await waits up to timeout (< 0: forever) until a record is queued or
// the queue has closed, by the spin policy: the adaptive spin or
// prediction, or the fixed spin (when spin is set), then parked. It
// reports whether one of the two happened.
func (q *eventQueue) await(timeout time.Duration, released, spin bool) bool {
	now := time.Now()
	var deadline time.Time
	if timeout > 0 {
		deadline = now.Add(timeout)
	}
	// left is what is left of the timeout after a phase of d (d itself
	// without a timeout), and whether that ran it out.
	phase := func(d time.Duration) (time.Duration, bool) {
		if deadline.IsZero() {
			return d, false
		}
		left := time.Until(deadline)
		return min(d, left), left <= 0
	}
	if spin && q.spinFor > 0 {
		wait, s, planned := time.Duration(0), q.spinFor, false
		var tail time.Duration
		if q.adaptive {
			// A poster this call released (a volume's callbacks ran: the
			// format stage goes on with the block) posts again within a
			// few hundred microseconds: spin for it rather than park.
			tail = defaultSpin - now.Sub(q.lastArrival)
			if released {
				tail = max(tail, releasedSpin)
			}
			if wait, s, planned = q.predict(now); !planned {
				s = max(q.adaptiveSpin(now), tail)
			}
		}
		if planned && wait > 0 {
			// The tail of the last burst first: a block's items come
			// microseconds apart, and parking would cost each a wake-up.
			if tail = min(tail, wait); tail > 0 {
				d, out := phase(tail)
				if out {
					return false
				}
				if q.spin(d) {
					return true
				}
				wait -= tail
			}
			// Then sleep through most of a long, regular gap, parked, to
			// spin from just before the next arrival is due.
			if d, out := phase(wait); out {
				return false
			} else if q.park(d) {
				return true
			}
		}
		d, out := phase(s)
		if out {
			return false
		}
		if q.spin(d) {
			return true
		}
	}
	if deadline.IsZero() {
		return q.park(-1)
	}
	d, out := phase(time.Until(deadline))
	return !out && q.park(d)
}

// ready reports whether a record is queued or the queue has closed.
func (q *eventQueue) ready() bool { return q.isClosed() || q.used() > 0 }

// park waits up to d (< 0: forever) for ready, parked on the wake token.
func (q *eventQueue) park(d time.Duration) bool {
	q.r.parked().Store(1)
	defer func() {
		q.r.parked().Store(0)
		q.lastSched = time.Now() // it parked: the scheduler ran it afresh
	}()
	var tc <-chan time.Time
	if d >= 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		tc = t.C
	}
	for {
		if q.ready() {
			return true
		}
		select {
		case <-q.wake: // a token may be stale: check again
		case <-tc:
			return q.ready()
		}
	}
}

// spin waits up to d for ready, polling head (its own cache line: the
// producers write it once per item).
func (q *eventQueue) spin(d time.Duration) bool {
	deadline := time.Now().Add(d)
	for i := 0; ; i++ {
		if q.ready() {
			return true
		}
		// Read the clock every 64 polls: a poll is a few ns, a clock read more.
		if i&63 == 63 {
			now := time.Now()
			if now.After(deadline) {
				return false
			}
			if now.Sub(q.lastSched) >= yieldAfter && now.Sub(q.lastArrival) >= yieldQuiet && !q.noYield {
				runtime.Gosched()
				q.lastSched = time.Now()
			}
		}
	}
}

// done writes the final EventDone record once, and gives the records'
// pages back: the queue is closed and drained, so no record follows.
func (q *eventQueue) done(dst []int64) int {
	if !q.doneSent.CompareAndSwap(false, true) {
		return 0
	}
	q.r.drop()
	ev := Event{Kind: EventDone, Endpoint: -1}
	ev.Record(dst)
	return 1
}

// defaultSpin bounds how long next polls the queue before parking. The caller
// is the Python dispatcher thread: its goroutine is locked to that foreign
// thread, and waking it from a park costs a futex wake plus a context switch
// (dispatch-to-handler latency p50 77 us, p99 383 us measured on an H200
// host without spinning), while a streaming engine posts events every few
// hundred microseconds. Spinning costs at most spinFor of one core per idle
// gap. Config.DispatchSpin overrides it.
const defaultSpin = 200 * time.Microsecond

// maxAdaptiveSpin bounds the adaptive spin: events further apart than
// this are not a stream worth a core, and the dispatcher parks.
const maxAdaptiveSpin = 10 * time.Millisecond

// gapMemory is how long a window of the gap's memory lasts (arrived).
const gapMemory = 100 * time.Millisecond

// arrived notes that the consumer received an event at now. The gap
// remembered is the longest in the current window of gapMemory and the
// one before it: a block's burst of events (short gaps) never hides the
// gap between blocks, even when the blocks are further apart than a window
// (a window that saw only a burst's short gaps still has the previous
// window's long one), and a rate that changes is followed within two
// windows.
func (q *eventQueue) arrived(now time.Time) {
	if !q.lastArrival.IsZero() {
		if now.Sub(q.gapSet) > gapMemory {
			q.gapPrev, q.gapCur, q.gapSet = q.gapCur, 0, now
		}
		q.gapCur = max(q.gapCur, now.Sub(q.lastArrival))
		q.gap = max(q.gapCur, q.gapPrev)
	}
	q.lastArrival = now
}

// adaptiveSpin is how long next spins at now with the default
// Config.DispatchSpin: while events arrive (the last one within
// maxAdaptiveSpin, at gaps below it), until twice the recent gap after the
// last arrival, so that the next block's events find the dispatcher awake
// (a parked one takes 50-300 us to wake on a VM: the callback latency's
// p99); otherwise defaultSpin, then park. The cost is up to one core while
// an engine streams events; an idle engine's dispatcher spins at most
// defaultSpin per wait.
func (q *eventQueue) adaptiveSpin(now time.Time) time.Duration {
	if q.lastArrival.IsZero() || q.gap <= 0 || q.gap > maxAdaptiveSpin {
		return defaultSpin
	}
	since := now.Sub(q.lastArrival)
	if since >= maxAdaptiveSpin {
		return defaultSpin
	}
	return min(max(2*q.gap-since, defaultSpin), maxAdaptiveSpin-since)
}

// predict plans the adaptive spin at now for gaps between arrivals too long
// to spin through (over maxAdaptiveSpin, up to maxPredictGap): a source
// that delivers a block every 20 or 50 ms (a camera, a slow scan) would
// otherwise find the dispatcher parked every time, and a wake-up costs tens
// to hundreds of microseconds on a VM (the callback latency). The next
// arrival is due one gap after the last; next parks until predictMargin
// before it (wait), then spins until predictMargin after it (spin), then
// parks: the spin costs a core for 2 x predictMargin per gap (under 15%
// at 40 ms, under 1% at 1 s). An arrival earlier than that finds the
// dispatcher parked, as before; ok is false when there is no such
// gap to predict from (adaptiveSpin then decides).
func (q *eventQueue) predict(now time.Time) (wait, spin time.Duration, ok bool) {
	g := q.gap
	if q.lastArrival.IsZero() || g <= maxAdaptiveSpin || g > maxPredictGap {
		return 0, 0, false
	}
	m := predictMargin(g)
	since := now.Sub(q.lastArrival)
	if since >= g+m {
		return 0, 0, false // late past the window: the stream may have stopped
	}
	if since < g-m {
		wait = g - m - since
	}
	return wait, g + m - max(since, g-m), true
}

// releasedSpin is how long the adaptive dispatcher spins after its call
// released a poster waiting for an acknowledgement (ack), before it would
// park: the format stage wakes, formats the rest of the block and posts
// it, which took 0.1-1.1 ms on the 2-core development machine (the
// spinning dispatcher holds one of its two cores).
const releasedSpin = 5 * time.Millisecond

// maxPredictGap bounds the gaps predict plans for; the memory of the gap
// (gapMemory) keeps the last one at least, however long.
const maxPredictGap = 2 * time.Second

// predictMargin is how far before and after the predicted arrival the
// dispatcher spins for gap g: g/16, at least 1 ms (a timer's wake-up and
// the arrivals' jitter) and at most 5 ms.
func predictMargin(g time.Duration) time.Duration {
	return min(max(g/16, time.Millisecond), 5*time.Millisecond)
}

// yieldAfter and yieldQuiet time the spinning consumer's own trips
// through the scheduler. The Go runtime's sysmon preempts a goroutine that
// has run on one scheduling slice for 10 ms (forcePreemptNS), and the
// consumer's goroutine is locked to the Python dispatcher's thread (a cgo
// callback): its preemption hands its P to another thread and back, which
// measured 25 us to several ms (BenchmarkNextLatency under go test -trace
// shows the spinning consumer "preempted" every 10-20 ms), and it lands at
// a random moment, so on the events of a block too: the callback latency's
// p99 with a dispatcher that never parks. The spin therefore yields itself
// (runtime.Gosched: the same trip) after yieldAfter without one, in a quiet
// moment: yieldQuiet after the last arrival, when a block's burst is over
// and the next is furthest away. Half the runtime's 10 ms keeps sysmon
// from ever seeing one slice for 10 ms; yieldQuiet is well above the gaps
// inside a block's burst (microseconds) and below any block gap worth
// spinning through.
const (
	yieldAfter = 5 * time.Millisecond
	yieldQuiet = 100 * time.Microsecond
)
