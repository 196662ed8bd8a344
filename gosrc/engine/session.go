package engine

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/guard"
	"github.com/vortexgo/vortexgo/gosrc/internal/spin"
	"github.com/vortexgo/vortexgo/gosrc/internal/turn"
)

// session is the state of one Start ... Stop run (vortex's session_t): the
// stop signal, the stage channels, the event queue and the run's error.
// Prepare allocates the blocks, streams and stage resources once; every
// Start makes a new session over them, so an engine runs any number of
// sessions. The stage goroutines of a session use only its own channels,
// and a Start waits until the previous session has finished (its
// goroutines have exited), so no goroutine ever sees two sessions.
// Callers on other goroutines (Python's threads: RequestStop, Status,
// NextRecords) load the current session atomically (Engine.sess); a call
// that races with the session's end acts on the ended session, harmlessly.
type session struct {
	stopping chan struct{} // closed by the first stop request
	stopOnce sync.Once
	// abandon is closed when the session stops delivering what it formats:
	// an interrupt or a broken pipeline. A plain stop does not close it:
	// after a stop the blocks already acquired are still formatted and
	// their callbacks run (vortex's stop), so the format stage keeps
	// waiting for the dispatcher's acknowledgements, which a running
	// dispatcher always gives.
	abandon     chan struct{}
	abandonOnce sync.Once
	shutOnce    sync.Once // EngineShutdown is posted once
	acqStop     sync.Once
	acqErr      error
	interrupt   atomic.Bool // shutdown(interrupt=true): acquired blocks are dropped, not processed
	done        chan struct{}
	wg          sync.WaitGroup
	t0          time.Time
	startMono   int64

	errMu  sync.Mutex
	err    error
	taken  atomic.Bool // TakeErr handed err out
	broken atomic.Bool // a device stage failed: drop the blocks behind it
	// panicked: a stage recovered a panic (recoverStage); the blocks it
	// held or drained are out of the pool until finish reclaims them.
	panicked atomic.Bool

	events                   *eventQueue
	toProc, toFmt, toRecycle chan *Block
	jobs                     bool // post an EventJob per recycled block (Python's job_callback)
	prof                     *profiler
	// spin is how long a hot stage polls its input before it parks
	// (internal/spin: VORTEXGO_STAGE_SPIN; 0, parking at once, unless set);
	// each stage goroutine makes its own Waiter from it.
	spin time.Duration
	// freeWait is the acquire loop's Waiter on the pool (takeFree): its
	// window is pollWindow's, or VORTEXGO_POOL_SPIN's.
	freeWait *spin.Waiter
	// hostWait is the acquire loop's Waiter on the host sets (takeHost),
	// with freeWait's window.
	hostWait *spin.Waiter
	// procWait is the acquire loop's Waiter on a full toProc (toProcess),
	// with freeWait's window.
	procWait *spin.Waiter
	// recycleSpin is the recycle loop's window (pollWindow's, or
	// VORTEXGO_RECYCLE_SPIN).
	recycleSpin time.Duration

	// work holds each slot's submitter's input when slots have submitters
	// of their own (slotSubmitters), else nil. On the direct path
	// (slotPath) the acquire loop routes each block to them and to the
	// format loop itself; no process loop between. nextSlot is the slot of
	// the next block processed, the router's (or the process loop's).
	// On the inline path (SlotPathEnv=inline) the acquire loop submits
	// every block itself: no submitters, no process loop.
	direct, inline bool
	work           []chan *Block
	nextSlot       int
	// lanes describes the remote devices' lanes (work past the slots'):
	// per remote device its first lane and how many it has, and the
	// router's next one; laneStreams and laneSlots are every submitter's
	// stream and, for a remote lane of one processor slot, that slot (-1:
	// the device's rotation, processRemote).
	lanes       []remoteLanes
	laneStreams []backend.Stream
	laneSlots   []int
}

// remoteLanes is one remote device's lanes in a session.
type remoteLanes struct {
	first, count, next int
}

// EngineEvent is vortex's Engine.Event: the session's lifecycle, posted as
// EventEngine events (Event.ScanIdx holds the value) in vortex's order.
type EngineEvent int64

// The lifecycle events with vortex's values (vortex/engine/common.hpp).
const (
	// EngineLaunch: the session is starting up (Start was called).
	EngineLaunch EngineEvent = iota
	// EngineStart: the acquisition and every IO have started.
	EngineStart
	// EngineRun: the session's stage goroutines are running.
	EngineRun
	// EngineStop: dispatching ended; the session waits for the blocks in flight.
	EngineStop
	// EngineComplete: the last block was dispatched (the scan completed,
	// the block limit was reached, or a stop made the next block the last).
	EngineComplete
	// EngineShutdown: a stop was requested before the session completed
	// (Stop, Shutdown, an error, or the acquisition's end of data).
	EngineShutdown
	// EngineExit: the session's goroutines have exited; nothing follows.
	EngineExit
	// EngineError: a stage failed; Event.Message says how.
	EngineError
	// EngineAbort: a device stage failed and the blocks behind it are
	// dropped (vortex's abort: the session cannot continue).
	EngineAbort
)

// sess is the current (or last) session; nil before the first Start.
func (e *Engine) sess() *session { return e.cur.Load() }

// newSession makes the state of a run. The event queue and the stage
// channels are made here, once per session: Start is not a hot path, and
// a closed channel cannot be reopened.
func (e *Engine) newSession() (*session, error) {
	cfg := &e.cfg
	window, err := spin.Configured()
	if err != nil {
		return nil, err
	}
	recycle, recycleSet, err := spin.RecycleConfigured()
	if err != nil {
		return nil, err
	}
	pool, poolSet, err := spin.PoolConfigured()
	if err != nil {
		return nil, err
	}
	path, err := slotPath()
	if err != nil {
		return nil, err
	}
	perSlot, err := remoteLanesPerSlot()
	if err != nil {
		return nil, err
	}
	procs := runtime.GOMAXPROCS(0)
	asked := path
	if path == "" {
		path = e.defaultSlotPath(procs)
	}
	turnWindow, set, err := turn.Configured()
	if err != nil {
		return nil, err
	}
	if !set {
		turnWindow = e.turnWindow(procs)
	}
	for _, p := range e.procs {
		if op, ok := p.(OrderedProcessor); ok {
			op.SetTurnWindow(turnWindow)
		}
	}
	events, err := newEventQueue(cfg.queueSize(), cfg.EventPolicy, cfg.DispatchSpin)
	if err != nil {
		return nil, err
	}
	s := &session{
		stopping: make(chan struct{}), done: make(chan struct{}), abandon: make(chan struct{}),
		events:      events,
		toProc:      make(chan *Block, cfg.preload()),
		toFmt:       make(chan *Block, e.poolSize),
		toRecycle:   make(chan *Block, e.poolSize),
		jobs:        e.jobEvents.Load(),
		spin:        window,
		recycleSpin: recycle,
		freeWait:    spin.NewWaiter(pool),
		hostWait:    spin.NewWaiter(pool),
		procWait:    spin.NewWaiter(pool),
	}
	switch {
	case e.oneSlotInline(asked):
		s.inline = true
	case e.slotSubmitters():
		if path == slotPathInline {
			s.inline = true
		} else {
			e.makeLanes(s, perSlot)
			s.work = make([]chan *Block, len(s.laneStreams))
			for i := range s.work {
				// Never full: a slot cannot hold more blocks than there are.
				s.work[i] = make(chan *Block, len(e.blocks))
			}
			s.direct = path == slotPathDirect
		}
	}
	if !recycleSet {
		s.recycleSpin = pollWindow(recycleSpin, e.dev.Kind(), window, procs, s.stageGoroutines())
	}
	if !poolSet {
		s.freeWait = spin.NewWaiter(pollWindow(poolSpin, e.dev.Kind(), window, procs, s.stageGoroutines()))
		s.hostWait = spin.NewWaiter(s.freeWait.Window())
		s.procWait = spin.NewWaiter(s.freeWait.Window())
	}
	return s, nil
}

// stageGoroutines is the number of goroutines that move the session's
// blocks (Start starts them).
func (s *session) stageGoroutines() int {
	return stageGoroutines(len(s.work), !s.direct && !s.inline)
}

// stageGoroutines counts a session's block-moving goroutines: acquire,
// format and recycle, the slots' submitters, and the process loop when
// blocks do not go to the slots from the acquire loop.
func stageGoroutines(submitters int, processLoop bool) int {
	n := 3 + submitters
	if processLoop {
		n++
	}
	return n
}

// Start starts a session: the acquisition, the IOs and the stage
// goroutines. The engine must be prepared and its previous session, if
// any, finished (Stop or Wait returned, or Done is true): vortex's
// start() after stop().
func (e *Engine) Start() error {
	e.stateMu.Lock()
	defer e.stateMu.Unlock()
	if e.state != statePrepared && e.state != stateFinished {
		return fmt.Errorf("engine.Start: engine is %s, expected prepared or a finished session (call Prepare once, then Start ... Stop any number of times)", e.stateName())
	}
	s, err := e.newSession()
	if err != nil {
		return fmt.Errorf("engine.Start: %w", err)
	}
	// A Start that fails releases the claims and leaves the engine as
	// after a session, so that the next Start claims the stages again: a
	// stage closed in between is then refused, never used.
	abort := func(err error) error {
		_ = s.prof.close() // the start's error is the one to report
		e.queue.StopPlaying(e.owner)
		e.dropClaims()
		e.state = stateFinished
		return fmt.Errorf("engine.Start: %w", err)
	}
	if e.state == stateFinished {
		// The previous session dropped its claims when it ended, so its
		// stages could be closed since: claim them again, or refuse.
		if err := e.takeClaims(); err != nil {
			return abort(err)
		}
	}
	prof, err := openProfiler(e.profilePath())
	if err != nil {
		return abort(err)
	}
	s.prof = prof
	e.resetCounters()
	e.sentLast, e.nextID, e.nextStart = false, 0, 0
	clear(e.ioGiven)
	for _, ep := range e.eps {
		ep.pendingAck = 0
	}
	for _, ep := range e.endpoints {
		if sc, ok := ep.(SessionChecker); ok {
			if err := sc.CheckSession(); err != nil {
				return abort(err)
			}
		}
	}
	// The queue and its scans serve this run alone until its Generate
	// stage is over (scan.ScanQueue.Play): another engine's play of them
	// would move the scans under this one.
	if err := e.queue.Play(e.owner); err != nil {
		return abort(err)
	}
	if err := e.startGenerate(); err != nil {
		return abort(err)
	}
	for _, ep := range e.endpoints {
		if se, ok := ep.(SessionEndpoint); ok {
			se.BeginSession(s.stopping)
		}
	}
	s.startMono = MonotonicNs()
	s.t0 = time.Now()
	e.cur.Store(s)
	e.lifecycle(s, EngineLaunch, nil)
	if err := e.startAcquisitions(); err != nil {
		// The session never ran: end it as one that exited at once, so
		// a dispatcher already waiting gets its events and EventDone.
		e.lifecycle(s, EngineError, err)
		e.lifecycle(s, EngineExit, nil)
		s.events.close()
		close(s.done)
		return abort(err)
	}
	e.startMono.Store(s.startMono)
	// Only a run that started waits for an empty callback: its finish
	// removes the waiter again, so a queue never keeps one that no
	// dispatcher answers.
	e.queue.SetEmptyWaiter(e.waitEmpty)
	e.state = stateRunning
	e.active.Store(true)
	// Posted before the goroutines start, so that it precedes the
	// acquire loop's EngineStart (vortex's order: Launch, Run, Start).
	e.lifecycle(s, EngineRun, nil)
	s.wg.Add(3 + len(s.work))
	go e.acquireLoop(s)
	for i, w := range s.work {
		go e.submitLoop(s, i, w)
	}
	if !s.direct && !s.inline {
		s.wg.Add(1)
		go e.processLoop(s)
	}
	go e.formatLoop(s)
	go e.recycleLoop(s)
	go e.finish(s)
	return nil
}

// resetCounters starts the status counters and the timings of a session
// from zero: Status describes the current (or last) session, as vortex's.
func (e *Engine) resetCounters() {
	for _, c := range []*atomic.Int64{&e.acquired, &e.processed, &e.formatted, &e.dropped, &e.volumes, &e.callbackErrs, &e.dispatched} {
		c.Store(0)
	}
	e.timings.reset()
}

// lifecycle posts a lifecycle event (and its profiler mark). It never
// waits and is never dropped: the queue keeps room for them
// (eventQueue.postReserved).
func (e *Engine) lifecycle(s *session, ev EngineEvent, err error) {
	msg, hasErr := "", int64(0)
	if err != nil {
		msg, hasErr = err.Error(), 1
	}
	s.prof.mark(uint64(ev), 0, 0)
	// Sample says whether the event carries an error (records carry no text).
	s.events.postReserved(Event{Kind: EventEngine, Endpoint: -1, Sample: hasErr, ScanIdx: int64(ev), Timestamp: e.now(s), Message: msg})
}

// quit ends session s's dispatching once (vortex's quit): it closes the
// stop channel and stops the acquisition, which unblocks a Fill waiting on
// hardware.
func (e *Engine) quit(s *session) {
	s.stopOnce.Do(func() {
		close(s.stopping)
		e.stopAcquisition(s)
	})
}

// RequestStop asks the session to stop without waiting: the acquisition
// stops, blocks already acquired are still processed and formatted. Safe
// from any goroutine, including a Python handler on the dispatcher thread
// (which must not wait for a session that waits for its events).
//
// With no session running it is a no-op: a stop of a session that has not
// begun must not poison the session that follows.
func (e *Engine) RequestStop() { e.Shutdown(false) }

// Shutdown is vortex's shutdown(interrupt): RequestStop, and with
// interrupt the blocks acquired but not yet processed are dropped
// (counted in BlocksDropped) instead of being processed and formatted.
// Blocks already processed are still formatted and every completed volume
// is stored; the formatters are finished as after a stop. It does not
// wait: Stop or Wait does.
func (e *Engine) Shutdown(interrupt bool) {
	// Under the state lock: finish closes the event queue under it, so a
	// request racing with the session's end posts before or not at all.
	e.stateMu.Lock()
	defer e.stateMu.Unlock()
	s := e.sess()
	if e.state != stateRunning || s == nil {
		return
	}
	if interrupt {
		s.interrupt.Store(true)
		s.giveUp()
	}
	// The event before the stop: the acquire loop posts EngineStop as soon
	// as the stop ends its dispatching (lifecycle posts never wait).
	e.shutdownEvent(s, nil)
	e.quit(s)
}

// shutdownEvent posts EngineShutdown once per session: the session is
// ending before it completed (a stop, an error, or the acquisition's end
// of data, which vortex also treats as a shutdown).
func (e *Engine) shutdownEvent(s *session, err error) {
	s.shutOnce.Do(func() { e.lifecycle(s, EngineShutdown, err) })
}

// fail records the session's first error, posts it and stops the session.
func (e *Engine) fail(s *session, err error) { e.failAs(s, err, false) }

// failPipeline is fail for errors of the device stages: the blocks behind
// the failure are dropped rather than pushed through a broken pipeline
// (EngineAbort). An acquisition error only ends the input; blocks already
// acquired are still delivered.
func (e *Engine) failPipeline(s *session, err error) {
	s.broken.Store(true)
	s.giveUp()
	e.failAs(s, err, true)
}

func (e *Engine) failAs(s *session, err error, abort bool) {
	s.errMu.Lock()
	first := s.err == nil
	if first {
		s.err = err
	}
	s.errMu.Unlock()
	// The events before the stop, so that they precede the acquire loop's
	// EngineStop; lifecycle posts never wait on the dispatcher.
	if first {
		e.lifecycle(s, EngineError, err)
		if abort {
			e.lifecycle(s, EngineAbort, err)
		}
	}
	e.shutdownEvent(s, err)
	e.quit(s)
}

func (e *Engine) failed(s *session) bool {
	s.errMu.Lock()
	defer s.errMu.Unlock()
	return s.err != nil
}

// now is nanoseconds since session s started.
func (e *Engine) now(s *session) int64 { return int64(time.Since(s.t0)) }

// giveUp closes abandon once: the format stage stops waiting for the
// dispatcher and the blocks it waited with are dropped.
func (s *session) giveUp() { s.abandonOnce.Do(func() { close(s.abandon) }) }

func (s *session) stopRequested() bool {
	select {
	case <-s.stopping:
		return true
	default:
		return false
	}
}

// stopAcquisition stops the acquisition and the IOs once per session;
// the stop request and the natural end of the run may both get here.
func (e *Engine) stopAcquisition(s *session) {
	s.acqStop.Do(func() {
		// Guarded: a panicking Stop must still leave the session able
		// to end (finish calls this too).
		errs := []error{guard.Call("engine: stopping the IOs", e.stopIOs)}
		for a := range e.acqs {
			if err := guard.Call("acquisition.Stop", e.acqs[a].acq.Stop); err != nil {
				errs = append(errs, fmt.Errorf("acquisition #%d: %w", a, err))
			}
		}
		s.acqErr = errors.Join(errs...)
	})
}

// startAcquisitions starts every acquisition, non-masters first (vortex's
// order, as for the IOs); on a failure it stops those it started.
func (e *Engine) startAcquisitions() error {
	var started []Acquisition
	for _, master := range [...]bool{false, true} {
		for a, run := range e.acqs {
			if e.cfg.acqMaster(a) != master {
				continue
			}
			if err := run.acq.Start(); err != nil {
				for _, st := range started {
					_ = st.Stop() // the start's error is the one to report
				}
				return fmt.Errorf("acquisition #%d: %w", a, err)
			}
			started = append(started, run.acq)
		}
	}
	return nil
}

// recoverStage, deferred by each stage goroutine after the defers of its
// exit protocol (so that it runs first when the stage panics), makes the
// panic the session's error (EngineError, EngineAbort: the stage's block
// is lost, the session cannot go on) instead of the end of the process.
// The exit protocol then runs as after any failure: the stage closes its
// output and signals the WaitGroup. Before that it drains in, the stage's
// input, until the stage upstream closes it: that stage may be blocked
// sending to this one and would otherwise never exit, and finish would
// wait for it forever. The drained blocks, and the one the stage held,
// are reclaimed by finish (reclaimBlocks).
func (e *Engine) recoverStage(s *session, stage string, in <-chan *Block) {
	r := recover()
	if r == nil {
		return
	}
	s.panicked.Store(true)
	e.failPipeline(s, guard.Error("engine: "+stage+" stage", r))
	if in != nil { // the acquire stage has no input channel (ranging nil would block)
		for range in {
		}
	}
}

// reclaimBlocks returns to the pool the blocks a panicking stage took out
// of the pipeline (the one it held, those it drained), once every stage has
// exited: the next session needs the whole pool (the acquire loop keeps
// one block out of the IOs' reach, sendFinish waits for one). A reclaimed
// block's device work may still run, so its events are waited for first,
// as recycleLoop does; their errors are the failed session's, already
// reported.
func (e *Engine) reclaimBlocks() {
	inPool := make(map[*Block]bool, len(e.blocks))
	for len(e.free) > 0 {
		inPool[<-e.free] = true
	}
	for _, b := range e.blocks {
		if !inPool[b] {
			for _, ev := range append([]backend.Event{b.uploaded, b.ready}, b.epDone...) {
				if ev != nil {
					_ = guard.Call("engine: reclaiming a block", ev.Synchronize)
				}
			}
		}
		e.free <- b // cannot block: the pool has room for every block
	}
	e.reclaimHosts()
}

// finish waits for the session's stages to drain, flushes the endpoints
// so that every completed volume is stored, and ends the session. The end
// (endSession) is deferred: a panic here still ends the session, with the
// panic as its error, so that Wait and Stop return.
func (e *Engine) finish(s *session) {
	defer e.endSession(s)
	defer e.recoverStage(s, "finish", nil)
	s.wg.Wait()
	if s.panicked.Load() {
		e.reclaimBlocks()
	}
	// The Generate stage is over: the queue stops calling the engine, and
	// its scans may go to another engine (or be reset to sample 0).
	e.queue.SetEmptyWaiter(nil)
	e.queue.StopPlaying(e.owner)
	e.stopAcquisition(s)
	if s.acqErr != nil && !e.failed(s) {
		e.fail(s, fmt.Errorf("engine: stopping the acquisition: %w", s.acqErr))
	}
	for id, ep := range e.endpoints {
		// Each flush guarded: one endpoint's panic must not cost the
		// others their stored volumes.
		if err := guard.Call(fmt.Sprintf("engine: endpoint #%d: flush", id), ep.Flush); err != nil {
			e.fail(s, fmt.Errorf("engine: endpoint #%d: flush: %w", id, err))
		}
	}
}

// endSession is the end of finish: the claims go, EngineExit is posted,
// the event queue closes and Wait returns.
func (e *Engine) endSession(s *session) {
	// Under the state lock: a Shutdown from another goroutine posts
	// before the queue closes or sees the session finished.
	e.stateMu.Lock()
	defer e.stateMu.Unlock()
	// The stages may be closed from here on: nothing of the session uses
	// them until the next Start claims them again.
	e.dropClaims()
	e.lifecycle(s, EngineExit, nil)
	if err := s.prof.close(); err != nil && !e.failed(s) {
		s.errMu.Lock()
		s.err = fmt.Errorf("engine: profiler log: %w", err)
		s.errMu.Unlock()
	}
	s.events.close()
	e.state = stateFinished
	close(s.done)
}

// Stop stops the session and waits until it has drained: every acquired
// block is formatted and every completed volume flushed to storage.
// Stopping in the middle of a volume is safe; stopping twice, or an engine
// with no session, is a no-op. It returns the session's error, if any;
// the session is no longer Active afterwards.
func (e *Engine) Stop() error {
	e.RequestStop()
	if e.sess() == nil {
		return nil
	}
	err := e.Wait()
	e.active.Store(false)
	return err
}

// Wait blocks until the session ends and returns its error.
func (e *Engine) Wait() error {
	s := e.sess()
	if s == nil {
		return errors.New("engine.Wait: engine was not started, expected Start first")
	}
	<-s.done
	return e.Err()
}

// WaitFor waits up to timeout (negative: 0) for the session to end and
// reports whether it has.
func (e *Engine) WaitFor(timeout time.Duration) bool {
	s := e.sess()
	if s == nil {
		return false
	}
	if e.Done() {
		return true // a select on done and an expired timer picks at random
	}
	t := time.NewTimer(max(timeout, 0))
	defer t.Stop()
	select {
	case <-s.done:
		return true
	case <-t.C:
		return false
	}
}

// Done reports whether the current session has ended (false before the
// first Start).
func (e *Engine) Done() bool {
	s := e.sess()
	if s == nil {
		return false
	}
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

// Err returns the error that ended the current (or last) session, or nil.
func (e *Engine) Err() error {
	s := e.sess()
	if s == nil {
		return nil
	}
	s.errMu.Lock()
	defer s.errMu.Unlock()
	return s.err
}

// TakeErr is Err the first time the current session's error is taken,
// nil afterwards: vortex hands a session's exception out once, so of the
// bindings' wait, wait_for and stop the first that sees it raises it.
func (e *Engine) TakeErr() error {
	s := e.sess()
	if s == nil {
		return nil
	}
	err := e.Err()
	if err == nil || s.taken.Swap(true) {
		return nil
	}
	return err
}

// SetJobEvents makes the next sessions post one EventJob per block as it
// leaves the pipeline (Python's job_callback: vortex's job id, session
// status and JobTiming). Off by default: a consumer that wants no job
// callbacks is not woken per block.
func (e *Engine) SetJobEvents(on bool) { e.jobEvents.Store(on) }

// SetProfilerLog sets the file the next sessions write their profiler log
// to (see profiler.go); "" means the VORTEX_PROFILER_LOG environment
// variable's value, as vortex, or no log when it is unset.
func (e *Engine) SetProfilerLog(path string) {
	e.profMu.Lock()
	e.profLog = path
	e.profMu.Unlock()
}

// jobEvent posts block id's EventJob: vortex's job_callback(id,
// SessionStatus, JobTiming), with the session status in Sample (blocks in
// flight) and VolumeIdx (jobs dispatched) and the block's stage times.
func (e *Engine) jobEvent(s *session, id int64, times [blockMarks]int64) {
	inflight := int64(len(e.blocks) - len(e.free))
	s.events.post(Event{Kind: EventJob, Endpoint: -1, Sample: inflight, ScanIdx: id, VolumeIdx: e.dispatched.Load(),
		Timestamp: e.now(s), Times: times}, s.stopping)
}

// endDispatch ends the acquire loop's part of the session in vortex's
// order: EngineComplete (every block was dispatched; not after an
// interrupt or an abort, which leave blocks undispatched), then
// EngineStop (the session waits for the blocks in flight).
func (e *Engine) endDispatch(s *session) {
	if !s.interrupt.Load() && !s.broken.Load() {
		e.lifecycle(s, EngineComplete, nil)
	}
	e.lifecycle(s, EngineStop, nil)
}

// block stage marks: indexes of Block.times (vortex's timing_t fields).
const (
	markCreate  = iota // the acquire loop began the job
	markService        // a free block was taken for it
	markScan           // its waveforms and markers were generated
	markAcquire        // the acquisition filled it
	markProcess        // its upload and processing were dispatched
	markFormat         // its formatting was dispatched to every endpoint
	markRecycle        // the device finished with it; it went back to the pool
	blockMarks
)

// stamp records mark m of block b at the session's clock (markTime).
func (e *Engine) stamp(s *session, b *Block, m int) { b.times[m] = e.markTime(s) }

// markTime is the session's clock for a block's stage marks, or 0 where
// nothing reads them: only a session that posts job events does (jobEvent),
// and seven clock reads a block were 6% of the engine's host time in a
// fake-driver profile (bench/host_cost.py).
func (e *Engine) markTime(s *session) int64 {
	if !s.jobs {
		return 0
	}
	return e.now(s)
}

// failAsync is fail for errors reported from outside the session's
// goroutines (an endpoint's storage writer): it applies to the running
// session only. After the session's end there is nothing to stop, and the
// endpoint's Flush, which finish calls, reported any failed write.
func (e *Engine) failAsync(err error) {
	// Under the state lock, as Shutdown: finish closes the session's
	// queue under it. failPipeline never waits (lifecycle events use the
	// queue's reserve).
	e.stateMu.Lock()
	defer e.stateMu.Unlock()
	if s := e.sess(); s != nil && e.state == stateRunning {
		e.failPipeline(s, err)
	}
}
