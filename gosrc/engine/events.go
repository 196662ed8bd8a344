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
	// EventError: a stage failed; Message says how. The engine stops.
	EventError
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
	case EventError:
		return "error"
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
	// Message explains an EventError.
	Message string
	// Seq numbers the events the queue accepted (1, 2, ...).
	Seq uint64
	// Times are an EventJob's stage times, ns since Start (vortex's
	// JobTiming: create, service, scan, acquire, process, format,
	// recycle; see the mark* constants).
	Times [blockMarks]int64

	// burst, on a queue item only, carries a block's events (postBurst);
	// the consumer hands out its events, never the item itself.
	burst *eventBurst
}

// eventBurst is a block's events for one endpoint, queued as one item:
// one channel send for the poster and one receive for the consumer
// instead of one each per event, and a spinning consumer never takes
// half a burst (docs/design.md, "Dispatch latency"). Bursts are recycled
// through their queue's free list: the consumer returns each once it has
// copied its events out, so a streaming engine allocates none per block.
type eventBurst struct {
	evs []Event
}

// freeBursts is how many spare bursts a queue keeps: more than are in
// flight at once in practice (one per endpoint and block queued).
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

// eventQueue is a bounded queue between the format stage and Python. A
// buffered channel gives a lock-free-looking, allocation-free post and a
// receive with timeout; closing it tells the consumer the engine is done.
type eventQueue struct {
	ch     chan Event
	size   int // the room for ordinary events; lifecycle events use the reserve above it
	policy QueuePolicy
	seq    atomic.Uint64 // last Seq assigned (errors post from any stage)
	// queued counts the events in ch, a burst's all of them (an item
	// counts once in len(ch)): the room is in events.
	queued atomic.Int64
	// rest is the part of a burst the consumer's last batch had no room
	// for, handed out first by the next call; restOf is that burst, back
	// to the pool once rest is empty (consumer side: no lock).
	rest   []Event
	restOf *eventBurst
	free   chan *eventBurst // spare bursts (newBurst, release)

	// Acknowledgement: the single consumer (the Python dispatcher) calls
	// next again only after every handler of the previous batch returned,
	// so entering next acknowledges that batch.
	returned uint64 // last Seq handed to the consumer
	ackMu    sync.Mutex
	acked    uint64
	waiters  int
	ackWake  chan struct{} // closed and replaced on ack when waiters > 0
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
	// signal counts the posts a spinning consumer should look for. The
	// consumer spins on it, on a cache line of its own, instead of polling
	// the channel: a consumer polling the channel contends with every send
	// for the channel's lock and lines (BenchmarkNextLatency's post-ns:
	// 0.76-1.1 us per post on the H100 host, against 0.18 to a parked one),
	// which made a block's burst of events take 10-15 us to post. A burst
	// (postBurst) signals once.
	_        [64]byte
	signal   atomic.Uint64
	_        [56]byte
	dropped  atomic.Int64
	doneSent atomic.Bool
}

func newEventQueue(size int, policy QueuePolicy, spin time.Duration) *eventQueue {
	adaptive := spin == 0
	switch {
	case spin == 0:
		spin = defaultSpin
	case spin < 0:
		spin = 0
	}
	return &eventQueue{ch: make(chan Event, size+lifecycleReserve), size: size, policy: policy, spinFor: spin,
		adaptive: adaptive, ackWake: make(chan struct{}), free: make(chan *eventBurst, freeBursts)}
}

// markReturned notes the largest Seq handed to the consumer: posts from
// several stages may reach the channel out of Seq order.
func (q *eventQueue) markReturned(evs []Event) {
	for i := range evs {
		q.returned = max(q.returned, evs[i].Seq)
	}
}

// ack records that every event up to seq has been handled; released is
// true when that woke a poster waiting for it (waitAcked), whose events
// are then about to follow.
func (q *eventQueue) ack(seq uint64) (released bool) {
	q.ackMu.Lock()
	if seq > q.acked {
		q.acked = seq
		if q.waiters > 0 {
			close(q.ackWake)
			q.ackWake = make(chan struct{})
			released = true
		}
	}
	q.ackMu.Unlock()
	return released
}

// waitAcked blocks until the consumer has handled event seq; false if
// stopping closed first.
func (q *eventQueue) waitAcked(seq uint64, stopping <-chan struct{}) bool {
	q.ackMu.Lock()
	for q.acked < seq {
		w := q.ackWake
		q.waiters++
		q.ackMu.Unlock()
		select {
		case <-w:
		case <-stopping:
			q.ackMu.Lock()
			q.waiters--
			q.ackMu.Unlock()
			return false
		}
		q.ackMu.Lock()
		q.waiters--
	}
	q.ackMu.Unlock()
	return true
}

// lifecycleReserve is the room kept in the queue for lifecycle events
// (postReserved): a session posts at most 8 of them (Launch, Run, Start,
// Error, Abort, Shutdown, Complete, Stop, Exit, one Error), and the
// ordinary posters that may overshoot size at once (the acquire, format
// and recycle stages) take at most one slot each.
const lifecycleReserve = 16

// full reports whether the ordinary room is used up. Posters racing past
// it overshoot into the reserve by at most one event each.
func (q *eventQueue) full() bool { return q.queued.Load() >= int64(q.size) }

// postReserved queues a lifecycle event without waiting: they are few per
// session and the queue keeps room for them, so they are never dropped
// (a full reserve, which the bound above rules out, counts a drop).
func (q *eventQueue) postReserved(ev Event) {
	ev.Seq = q.seq.Add(1)
	q.queued.Add(1)
	select {
	case q.ch <- ev:
	default:
		q.queued.Add(-1)
		q.dropped.Add(1)
	}
	q.flush()
}

// post queues ev. Under QueueBlock it waits for room (backpressure) unless
// stopping is closed: once a stop is requested, delivery becomes
// best-effort so that a dispatcher that stopped draining cannot hang Stop.
func (q *eventQueue) post(ev Event, stopping <-chan struct{}) uint64 {
	defer q.flush()
	// A dropped event leaves a gap in Seq: acknowledgement compares with
	// the largest Seq handed out, so gaps are harmless.
	ev.Seq = q.seq.Add(1)
	if q.enqueue(ev, stopping) {
		return ev.Seq
	}
	return 0
}

// enqueue queues the item ev (an event or a burst) by the queue's policy:
// at once if there is room, else dropped under QueueDrop, else once the
// consumer makes room, unless stopping closes first. A dropped item
// counts all its events as dropped.
func (q *eventQueue) enqueue(ev Event, stopping <-chan struct{}) bool {
	if q.send(ev) {
		return true
	}
	if q.policy == QueueDrop {
		q.dropped.Add(ev.items())
		return false
	}
	return q.postWhenRoom(ev, stopping) != 0
}

// flush wakes a spinning consumer to the events posted so far.
func (q *eventQueue) flush() { q.signal.Add(1) }

// items is how many events a queue item carries.
func (ev *Event) items() int64 {
	if ev.burst != nil {
		return int64(len(ev.burst.evs))
	}
	return 1
}

// send queues the item ev if there is room, without waiting.
func (q *eventQueue) send(ev Event) bool {
	if q.full() {
		return false
	}
	n := ev.items()
	q.queued.Add(n)
	select {
	case q.ch <- ev:
		return true
	default:
		q.queued.Add(-n)
		return false
	}
}

// postBurst queues b's events as one item and wakes a spinning consumer,
// as posting each with post would, in one channel send and one signal. The
// events get consecutive Seqs, base+1 .. base+len; ok is false
// when they were dropped (QueueDrop with the queue full, or stopping
// closed while waiting for room). b belongs to the queue from the call
// on, whatever the outcome.
func (q *eventQueue) postBurst(b *eventBurst, stopping <-chan struct{}) (base uint64, ok bool) {
	n := len(b.evs)
	if n == 0 {
		q.release(b)
		return 0, false
	}
	defer q.flush()
	base = q.seq.Add(uint64(n)) - uint64(n)
	for i := range b.evs {
		b.evs[i].Seq = base + uint64(i) + 1
	}
	if q.enqueue(Event{burst: b, Seq: base + uint64(n)}, stopping) {
		return base, true
	}
	q.release(b)
	return 0, false
}

// postWhenRoom waits until the ordinary room has a slot (the consumer
// drains), unless stopping closes first (the item's events then count as
// dropped). The channel's own send cannot
// express "leave the reserve free", so it polls the length, backing off
// from spinning to sleeping: a full queue means the consumer is far
// behind, and this poster is the backpressure on the engine.
func (q *eventQueue) postWhenRoom(ev Event, stopping <-chan struct{}) uint64 {
	q.flush() // a spinning consumer looks now, making room
	var t *time.Timer
	for wait := time.Microsecond; ; wait = min(2*wait, time.Millisecond) {
		if q.send(ev) {
			return ev.Seq
		}
		if t == nil {
			t = time.NewTimer(wait)
			defer t.Stop()
		} else {
			t.Reset(wait)
		}
		select {
		case <-stopping:
			q.dropped.Add(ev.items())
			return 0
		case <-t.C:
		}
	}
}

// postWait queues ev whatever the policy, waiting for room unless
// stopping closes: for an event the engine then waits on (its 0 return
// means it was not queued).
func (q *eventQueue) postWait(ev Event, stopping <-chan struct{}) uint64 {
	ev.Seq = q.seq.Add(1)
	seq := q.postWhenRoom(ev, stopping)
	q.flush()
	return seq
}

// close ends the queue; call after the last post.
func (q *eventQueue) close() {
	close(q.ch)
	q.flush()
}

// next fills dst with up to len(dst) events, waiting up to timeout for the
// first (timeout < 0 waits forever, 0 only polls). After the queue closes
// and drains it returns one EventDone, then nothing.
func (q *eventQueue) next(dst []Event, timeout time.Duration) int {
	if len(dst) == 0 {
		return 0
	}
	released := q.ack(q.returned) // the previous batch's handlers have all returned
	if len(q.rest) > 0 {
		// The rest of a burst the last batch had no room for: received
		// already, so there is nothing to wait for.
		return q.fill(dst, q.takeRest(dst))
	}
	var (
		ev Event
		ok bool
	)
	got := false
	// Read before the poll: a post the poll misses flushes after it.
	seen := q.signal.Load()
	select {
	case ev, ok = <-q.ch:
		got = true
	default:
	}
	if !got && timeout != 0 && q.spinFor > 0 {
		var expired bool
		now := time.Now()
		wait, spin, planned := time.Duration(0), q.spinFor, false
		var tail time.Duration
		if q.adaptive {
			// A poster this call released (a volume's callbacks ran: the
			// format stage goes on with the block) posts again within a
			// few hundred microseconds: spin for it rather than park.
			tail = defaultSpin - now.Sub(q.lastArrival)
			if released {
				tail = max(tail, releasedSpin)
			}
			if wait, spin, planned = q.predict(now); !planned {
				spin = max(q.adaptiveSpin(now), tail)
			}
		}
		if planned && wait > 0 {
			// The tail of the last burst first: a block's items come
			// microseconds apart, and parking would cost each a wake-up.
			if tail = min(tail, wait); tail > 0 {
				ev, ok, got, timeout, expired = q.waitPhase(tail, false, seen, timeout)
				wait -= tail
			}
			// Then sleep through most of a long, regular gap, parked, to
			// spin from just before the next arrival is due. seen stays
			// the value read before the first poll: a post the park
			// missed has raised the signal past it, so the spin takes
			// that item at once.
			if !got && !expired && wait > 0 {
				ev, ok, got, timeout, expired = q.waitPhase(wait, true, seen, timeout)
			}
		}
		if !got && !expired {
			ev, ok, got, timeout, expired = q.waitPhase(spin, false, seen, timeout)
		}
		if expired {
			return 0
		}
	}
	if !got {
		switch {
		case timeout == 0:
			return 0
		case timeout < 0:
			ev, ok = <-q.ch
		default:
			if ev, ok, got = q.park(timeout); !got {
				return 0
			}
		}
		q.lastSched = time.Now() // it parked: the scheduler ran it afresh
	}
	if !ok {
		return q.done(dst)
	}
	q.arrived(time.Now())
	return q.fill(dst, q.take(dst, ev))
}

// take writes the events of the item ev into dst, which has room for one
// at least, and returns how many; a burst's events that do not fit wait in
// rest for the next call.
func (q *eventQueue) take(dst []Event, ev Event) int {
	q.queued.Add(-ev.items())
	b := ev.burst
	if b == nil {
		dst[0] = ev
		return 1
	}
	n := copy(dst, b.evs)
	if n < len(b.evs) {
		q.rest, q.restOf = b.evs[n:], b
	} else {
		q.release(b)
	}
	return n
}

// takeRest writes the waiting rest of a burst into dst and returns how
// many; the burst goes back to the pool once all of it is out.
func (q *eventQueue) takeRest(dst []Event) int {
	n := copy(dst, q.rest)
	q.rest = q.rest[n:]
	if len(q.rest) == 0 {
		q.release(q.restOf)
		q.rest, q.restOf = nil, nil
	}
	return n
}

// fill adds the items already queued to dst[:n] while it has room, without
// waiting, the final EventDone included once the queue has closed and
// drained, and returns the batch's length.
func (q *eventQueue) fill(dst []Event, n int) int {
	for n < len(dst) && len(q.rest) == 0 {
		select {
		case ev, ok := <-q.ch:
			if !ok {
				q.markReturned(dst[:n])
				return n + q.done(dst[n:])
			}
			n += q.take(dst[n:], ev)
		default:
			q.markReturned(dst[:n])
			return n
		}
	}
	q.markReturned(dst[:n])
	return n
}

// waitPhase waits up to d for an item, spinning (seen: the signal before
// the caller's last poll) or parked, within timeout (< 0: none, > 0: what
// is left of it): the item if one came, the timeout left, and whether it
// ran out.
func (q *eventQueue) waitPhase(d time.Duration, parked bool, seen uint64, timeout time.Duration) (ev Event, ok, got bool, left time.Duration, expired bool) {
	if timeout > 0 {
		d = min(d, timeout)
	}
	if parked {
		ev, ok, got = q.park(d)
	} else {
		ev, ok, got = q.spin(d, seen)
	}
	if !got && timeout > 0 {
		timeout -= d
		return ev, ok, got, timeout, timeout <= 0
	}
	return ev, ok, got, timeout, false
}

// park waits up to d for an item, parked on the channel.
func (q *eventQueue) park(d time.Duration) (ev Event, ok, got bool) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case ev, ok = <-q.ch:
		got = true
	case <-t.C:
	}
	q.lastSched = time.Now() // it parked: the scheduler ran it afresh
	return ev, ok, got
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

// spin waits up to d for a post after seen (the signal's value before the
// caller's last poll of the channel), reading the signal only, then
// receives. It polls the channel itself only every pollEvery rounds: a
// safety net that costs the posters nothing measurable.
func (q *eventQueue) spin(d time.Duration, seen uint64) (ev Event, ok, got bool) {
	deadline := time.Now().Add(d)
	for i := 0; ; i++ {
		if q.signal.Load() != seen || i%pollEvery == pollEvery-1 {
			select {
			case ev, ok = <-q.ch:
				return ev, ok, true
			default:
			}
			seen = q.signal.Load()
		}
		// Read the clock every 64 polls: a poll is ~20 ns, a clock read more.
		if i&63 == 63 {
			now := time.Now()
			if now.After(deadline) {
				return ev, false, false
			}
			if now.Sub(q.lastSched) >= yieldAfter && now.Sub(q.lastArrival) >= yieldQuiet && !q.noYield {
				runtime.Gosched()
				q.lastSched = time.Now()
			}
		}
	}
}

// pollEvery is how often spin polls the channel without a signal: about
// every 20 us at ~20 ns a round.
const pollEvery = 1024

// done writes the final EventDone once.
func (q *eventQueue) done(dst []Event) int {
	if len(dst) == 0 || !q.doneSent.CompareAndSwap(false, true) {
		return 0
	}
	dst[0] = Event{Kind: EventDone, Endpoint: -1}
	return 1
}
