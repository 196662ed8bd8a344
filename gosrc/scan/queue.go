package scan

import (
	"fmt"
	"sync"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/marker"
)

// QueueEvent is what a ScanQueue tells a queued scan's callback (vortex's
// ScanQueue.Event).
type QueueEvent uint8

// The events of vortex's scan_queue_t::event_t.
const (
	// QueueStart: the scan became the active one.
	QueueStart QueueEvent = iota
	// QueueFinish: the scan ran out of samples (a scan without loop).
	QueueFinish
	// QueueInterrupt: Interrupt replaced the scan.
	QueueInterrupt
	// QueueAbort: Clear, Reset or Interrupt dropped the scan.
	QueueAbort
)

var queueEventNames = [...]string{"Start", "Finish", "Interrupt", "Abort"}

// String is vortex's name of the event.
func (e QueueEvent) String() string {
	if int(e) < len(queueEventNames) {
		return queueEventNames[e]
	}
	return fmt.Sprintf("QueueEvent(%d)", uint8(e))
}

// QueueCallback receives a queued scan's events with the sample at which
// they happen. It runs on the goroutine calling the queue (Generate, or
// the caller of Interrupt/Clear/Reset) with the queue locked: it must not
// call the queue back (the empty callback gets an OnlineScanQueue for
// that) and should only record or post the event.
type QueueCallback func(sample int64, event QueueEvent)

// Streamer is what a ScanQueue needs of a scan; every scan type has it
// (through its SegmentedScan).
type Streamer interface {
	// Next fills buf with up to n samples and appends their markers.
	Next(markers *[]marker.Marker, buf []float64, n int) (int, error)
	// Last is the last released position and velocity.
	Last() (position, velocity []float64, posOK, velOK bool)
	// RestartAt continues the scan from the given sample and state.
	RestartAt(sample int64, position, velocity []float64, includeStart bool) error
	// Channels is channels_per_sample.
	Channels() int
}

type queued struct {
	scan     Streamer
	callback QueueCallback
	marker   marker.Marker
}

// ScanQueue plays scans one after another into the Generate stage's
// blocks, vortex's ScanQueue: each scan starts from where the previous one
// left off (its path in is planned from the last position and velocity),
// so appending or interrupting never jumps. When the queue runs dry it
// asks its empty callback for more and otherwise holds the last position.
type ScanQueue struct {
	// mu serialises Generate (the engine's goroutine) with the user's
	// Append/Interrupt/Clear/Reset; uncontended on the hot path.
	mu sync.Mutex

	active   *queued
	queue    []queued
	empty    func(*OnlineScanQueue)
	inactive bool // the hold after the last scan is marked
	// includeStart: the next scan emits its starting state's own sample
	// (only before anything was generated, as vortex has it)
	includeStart     bool
	lastSample       int64
	lastPos, lastVel []float64 // nil = unknown; may alias posBuf, velBuf
	posBuf, velBuf   []float64 // takeLast's buffers, reused block after block

	// emitted counts the callback calls (Emitted): the engine posts an
	// event for its dispatcher when it moved during a Generate.
	emitted int64
	// emptyWait is the engine's hook (SetEmptyWaiter) and emptyWanted
	// whether a binding's empty callback wants it (SetEmptyWanted).
	emptyWait   func()
	emptyWanted bool

	// player is the engine playing the queue (Play), nil outside a run;
	// held counts each scan's occurrences (active and queued) while
	// played (queue_play.go).
	player any
	held   map[Streamer]int
}

// NewScanQueue is vortex's ScanQueue(): at sample 0, state unknown (the
// first scan starts from the origin at rest).
func NewScanQueue() *ScanQueue { return &ScanQueue{includeStart: true} }

// NewScanQueueAt is vortex's ScanQueue(sample, position, velocity): one
// value per channel each.
func NewScanQueueAt(sample int64, position, velocity []float64) (*ScanQueue, error) {
	if err := checkState("ScanQueue", position, velocity); err != nil {
		return nil, err
	}
	q := NewScanQueue()
	q.lastSample = sample
	q.lastPos = append([]float64(nil), position...)
	q.lastVel = append([]float64(nil), velocity...)
	return q, nil
}

// checkState checks a (position, velocity) state of one value per channel.
func checkState(what string, position, velocity []float64) error {
	if len(position) != len(velocity) || len(position) > maxChannels {
		return backend.Invalidf("%s: position of %d values and velocity of %d, expected one per channel each", what, len(position), len(velocity))
	}
	return nil
}

// ScanBoundary is the default marker a queued scan starts with (vortex's
// ScanBoundary(): sample 0, sequence 0, all flags); Generate moves it to the
// scan's first sample.
func ScanBoundary() marker.Marker { return marker.NewScanBoundary(0, 0, 0) }

// Append queues scan after the others (vortex's append(scan, callback,
// marker)); marker is the ScanBoundary the scan starts with.
func (q *ScanQueue) Append(scan Streamer, callback QueueCallback, boundary marker.Marker) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.enqueue(scan, callback, boundary)
}

// Interrupt drops the active and queued scans (their callbacks get
// Interrupt, then Abort) and queues scan, which starts at the next
// Generate from where the stream is.
func (q *ScanQueue) Interrupt(scan Streamer, callback QueueCallback, boundary marker.Marker) error {
	if err := checkStreamer(scan, boundary); err != nil {
		return err
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	// Held before the clear: a scan another engine plays is refused with
	// the queue untouched.
	if err := q.hold(scan); err != nil {
		return err
	}
	q.emit(QueueInterrupt)
	q.clear()
	q.push(scan, callback, boundary)
	return nil
}

func checkStreamer(scan Streamer, boundary marker.Marker) error {
	if scan == nil {
		return backend.Invalidf("scan_queue: scan is None, expected a scan")
	}
	if scan.Channels() == 0 {
		return fmt.Errorf("scan_queue: %w", notInitialized())
	}
	if boundary.Kind != marker.ScanBoundary {
		return backend.Invalidf("scan_queue: marker is a %v, expected a ScanBoundary", boundary.Kind)
	}
	return nil
}

func (q *ScanQueue) enqueue(scan Streamer, callback QueueCallback, boundary marker.Marker) error {
	if err := checkStreamer(scan, boundary); err != nil {
		return err
	}
	if err := q.hold(scan); err != nil {
		return err
	}
	q.push(scan, callback, boundary)
	return nil
}

// push queues a checked (and held) scan.
func (q *ScanQueue) push(scan Streamer, callback QueueCallback, boundary marker.Marker) {
	q.queue = append(q.queue, queued{scan: scan, callback: callback, marker: boundary})
	q.inactive = false
}

// Clear drops the active and queued scans (each callback gets Abort).
func (q *ScanQueue) Clear() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.clear()
}

func (q *ScanQueue) clear() {
	for {
		q.emit(QueueAbort)
		if q.active != nil {
			q.unhold(q.active.scan)
		}
		q.active = nil
		if len(q.queue) > 0 {
			next := q.queue[0]
			q.queue = q.queue[1:]
			q.active = &next
		}
		if q.active == nil {
			return
		}
	}
}

// Reset clears the queue and restarts it at sample 0 with the state
// unknown (vortex's reset()). While an engine plays the queue its sample
// count is the engine's stream position, which cannot go back (the
// planner would see markers from the past and fail the run): the scans
// are dropped (Abort) and the state forgotten, as vortex's reset does, and
// the count goes on, so the next scan appended or interrupted starts at
// the stream's next sample; the engine's next Start rebases it anyway.
func (q *ScanQueue) Reset() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.lastPos, q.lastVel = nil, nil
	q.clear()
	if q.player == nil {
		q.lastSample = 0
	}
}

// ResetAt clears the queue and restarts it at sample in the given state
// (vortex's reset(sample, position, velocity); one value per channel
// each). It is refused with
// backend.ErrInUse while an engine plays the queue: the sample is the
// engine's stream position then, which cannot be moved (see Reset).
func (q *ScanQueue) ResetAt(sample int64, position, velocity []float64) error {
	if err := checkState("ScanQueue.reset", position, velocity); err != nil {
		return err
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.player != nil {
		return fmt.Errorf("scan_queue.reset(sample, position, velocity): a running engine plays this queue and "+
			"its sample count is the engine's stream position (%d), which cannot be moved; call "+
			"scan_queue.reset() (drops the scans and forgets the position), clear() or interrupt(scan) "+
			"while it runs, or stop the engine first: %w", q.lastSample, backend.ErrInUse)
	}
	q.lastPos = append([]float64(nil), position...)
	q.lastVel = append([]float64(nil), velocity...)
	q.clear()
	q.lastSample = sample
	return nil
}

// Rebase moves the queue's sample counter (the engine aligns it with its
// lead samples before starting); refused while a scan is active.
func (q *ScanQueue) Rebase(sample int64) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.active != nil {
		return fmt.Errorf("scan_queue: cannot rebase with an active scan: %w", backend.ErrInUse)
	}
	q.lastSample = sample
	return nil
}

// SetEmptyCallback sets the function Generate calls when the queue has run
// dry, to append more scans through the OnlineScanQueue it is given (nil:
// none). It runs with the queue locked, like QueueCallback.
func (q *ScanQueue) SetEmptyCallback(f func(*OnlineScanQueue)) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.empty = f
}

// SetEmptyWaiter sets the function Generate calls, with the queue
// unlocked, when it has run dry and SetEmptyWanted(true) was called (nil:
// none). The engine sets it while it plays the queue: it waits there until
// a binding's empty callback (which cannot run on the engine's goroutine)
// has had its chance to Append, as vortex's empty_callback appends inline.
func (q *ScanQueue) SetEmptyWaiter(f func()) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.emptyWait = f
}

// SetEmptyWanted says whether Generate calls the empty waiter when it has
// run dry (a binding sets it with its empty callback).
func (q *ScanQueue) SetEmptyWanted(on bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.emptyWanted = on
}

// Emitted counts the callback calls the queue has made (every event of a
// scan queued with a callback).
func (q *ScanQueue) Emitted() int64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.emitted
}

// State is the sample count and the last position and velocity (nil when
// unknown), vortex's state().
func (q *ScanQueue) State() (sample int64, position, velocity []float64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.lastSample, append([]float64(nil), q.lastPos...), append([]float64(nil), q.lastVel...)
}

// OnlineScanQueue is the queue as its empty callback sees it (already
// locked): it can only append.
type OnlineScanQueue struct{ q *ScanQueue }

// Append queues scan (see ScanQueue.Append).
func (o *OnlineScanQueue) Append(scan Streamer, callback QueueCallback, boundary marker.Marker) error {
	return o.q.enqueue(scan, callback, boundary)
}

func (q *ScanQueue) emit(e QueueEvent) {
	if q.active != nil && q.active.callback != nil {
		q.emitted++
		q.active.callback(q.lastSample, e)
	}
}

// Generate fills buf (n samples of channels values) from the queued scans
// and appends their markers, vortex's generate: each scan starts with its
// ScanBoundary, runs until it ends (a scan that loops never does), and the
// next takes over from its last state. When the queue runs dry,
// zeroOrderHold fills the rest with the last position (marked
// InactiveLines once). It returns the samples that came from scans and
// the samples written.
func (q *ScanQueue) Generate(markers *[]marker.Marker, buf []float64, channels, n int, zeroOrderHold bool) (scanSamples, released int, err error) {
	if channels < 1 || channels > maxChannels {
		return 0, 0, backend.Invalidf("ScanQueue.generate: %d channels, expected in [1, %d]", channels, maxChannels)
	}
	if n < 0 || len(buf) < n*channels {
		return 0, 0, backend.Invalidf("scan_queue.generate: buffer of %d values for %d samples of %d channels, expected at least %d", len(buf), n, channels, max(n, 0)*max(channels, 0))
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	start := q.lastSample
	for released < n {
		boundary := false
		if q.active == nil {
			if len(q.queue) == 0 && q.empty != nil {
				q.empty(&OnlineScanQueue{q})
			}
			if len(q.queue) == 0 && q.empty == nil && q.emptyWanted && q.emptyWait != nil {
				// Unlocked, so that the callback behind the waiter can
				// Append: the queue is consistent here (nothing active,
				// nothing queued) and Generate re-reads it after.
				wait := q.emptyWait
				q.mu.Unlock()
				wait()
				q.mu.Lock()
			}
			if len(q.queue) > 0 {
				next := q.queue[0]
				q.queue = q.queue[1:]
				q.active = &next
				boundary = true
				if ch := next.scan.Channels(); ch != channels {
					q.unhold(next.scan)
					q.active = nil
					return released, released, backend.Invalidf("scan_queue.generate: the next scan has %d channels, the buffer %d", ch, channels)
				}
				if err := q.restartActive(channels); err != nil {
					return released, released, err
				}
				q.emit(QueueStart)
			}
		}
		if q.active == nil {
			break
		}
		mark := len(*markers)
		added, err := q.active.scan.Next(markers, buf[released*channels:n*channels], n-released)
		if err != nil {
			return released, released, err
		}
		if added > 0 {
			q.includeStart = false
		}
		released += added
		if boundary && added > 0 {
			// the boundary goes before the scan's own markers of its first sample
			m := q.active.marker
			m.Sample = q.lastSample
			*markers = append(*markers, marker.Marker{})
			copy((*markers)[mark+1:], (*markers)[mark:])
			(*markers)[mark] = m
		}
		q.lastSample = start + int64(released)
		q.takeLast(channels)
		if released < n {
			q.emit(QueueFinish)
			q.unhold(q.active.scan)
			q.active = nil
		}
	}
	scanSamples = released
	if released < n && zeroOrderHold {
		for i := released; i < n; i++ {
			row := buf[i*channels : (i+1)*channels]
			if len(q.lastPos) == channels {
				copy(row, q.lastPos)
			} else {
				clear(row)
			}
		}
		released = n
		if !q.inactive {
			*markers = append(*markers, marker.NewInactiveLines(q.lastSample))
			q.inactive = true
		}
		q.lastSample = start + int64(released)
		clear(q.lastVel)
	}
	return scanSamples, released, nil
}

// takeLast reads the active scan's last position and velocity into
// q.lastPos and q.lastVel (nil when unknown). A scan with LastInto fills
// the queue's own buffers: this runs with every generated block, and
// allocating two slices there was the Generate stage's only per-block
// garbage.
func (q *ScanQueue) takeLast(channels int) {
	if li, ok := q.active.scan.(interface {
		LastInto(pos, vel []float64) (posOK, velOK bool)
	}); ok {
		if len(q.posBuf) != channels {
			q.posBuf, q.velBuf = make([]float64, channels), make([]float64, channels)
		}
		posOK, velOK := li.LastInto(q.posBuf, q.velBuf)
		q.lastPos, q.lastVel = nil, nil
		if posOK {
			q.lastPos = q.posBuf
		}
		if velOK {
			q.lastVel = q.velBuf
		}
		return
	}
	pos, vel, posOK, velOK := q.active.scan.Last()
	q.lastPos, q.lastVel = nil, nil
	if posOK {
		q.lastPos = pos
	}
	if velOK {
		q.lastVel = vel
	}
}

func (q *ScanQueue) restartActive(channels int) error {
	// Copies: q.lastPos and q.lastVel may be the queue's reused buffers,
	// which the next block overwrites, and a scan may keep what it gets.
	// A restart happens once per scan, not per block.
	pos, vel := make([]float64, channels), make([]float64, channels)
	if len(q.lastPos) == channels {
		copy(pos, q.lastPos)
	}
	if len(q.lastVel) == channels {
		copy(vel, q.lastVel)
	}
	return q.active.scan.RestartAt(q.lastSample, pos, vel, q.includeStart)
}
