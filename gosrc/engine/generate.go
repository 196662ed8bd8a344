package engine

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/vortexgo/vortexgo/gosrc/internal/spin"
	"github.com/vortexgo/vortexgo/gosrc/marker"
	"github.com/vortexgo/vortexgo/gosrc/scan"
)

// The Generate stage (vortex's acquire loop, engine/detail/session.hpp):
// per block, the scan queue writes the waveform of the IO with the largest
// lead and the block's markers; every other lead gets that waveform
// delayed through its leadLine, so each IO leads the acquisition by its
// lead_samples; markers generated past the block wait for the next one.
// The first PreloadCount blocks go to the IOs before they are started
// (IOConfig.Preload), and the acquisition fills each block once the IOs
// hold the blocks up to PreloadCount ahead of it.

// blockMarkers is the marker capacity reserved per block: a scan emits a
// few markers per segment boundary; segments shorter than a sample or two
// are not scans anyone runs, and a block that needs more only grows its
// slice once.
func blockMarkers(records int) int { return 2*records + 16 }

// prepareIOs sorts out the leads and prepares every IO.
func (e *Engine) prepareIOs() error {
	cfg := &e.cfg
	e.ios = cfg.ios
	leads := []int{0}
	for _, n := range e.ios {
		if !slices.Contains(leads, n.cfg.LeadSamples) {
			leads = append(leads, n.cfg.LeadSamples)
		}
	}
	slices.Sort(leads)
	e.maxLead = leads[len(leads)-1]
	out := cfg.outChannels()
	e.leads = make([]leadLine, len(leads))
	for i, l := range leads {
		d := e.maxLead - l
		if _, ok := MulSize(d+cfg.RecordsPerBlock, out, 16); !ok {
			return TooLarge("engine.Prepare: lead_samples %d: delay line too large", e.maxLead)
		}
		e.leads[i] = leadLine{lead: l, delay: d}
		if d > 0 {
			e.leads[i].ring = make([]float64, d*out)
			e.leads[i].tmp = make([]float64, (d+cfg.RecordsPerBlock)*out)
			e.leads[i].sring = make([]uint32, d)
			e.leads[i].stmp = make([]uint32, d+cfg.RecordsPerBlock)
		}
	}
	e.strobes = newStrobeGen(cfg.Strobes, blockMarkers(cfg.RecordsPerBlock))
	e.warped = cfg.ScannerWarp.Kind != scan.WarpNone
	e.ioLead = make([]int, len(e.ios))
	e.ioGiven = make([]int64, len(e.ios))
	for i, n := range e.ios {
		e.ioLead[i] = slices.Index(leads, n.cfg.LeadSamples)
		info := IOInfo{RecordsPerBlock: cfg.RecordsPerBlock, OutputChannels: out, InputChannels: cfg.inChannels(), LeadSamples: n.cfg.LeadSamples}
		if err := n.io.Prepare(info); err != nil {
			return fmt.Errorf("engine.Prepare: io #%d: %w", i, err)
		}
	}
	return nil
}

// startGenerate moves the scan queue ahead by the largest lead (so that
// the lead-0 waveform, delayed by it, lines up with the acquisition from
// sample 0) and fills the delay lines with the queue's position.
func (e *Engine) startGenerate() error {
	if err := e.queue.Rebase(int64(e.maxLead)); err != nil {
		return fmt.Errorf("scan_queue: %w (the last session stopped in the middle of a scan: call "+
			"scan_queue.reset() or scan_queue.clear() before starting again, as in vortex)", err)
	}
	_, pos, _ := e.queue.State()
	out := e.cfg.outChannels()
	for i := range e.leads {
		l := &e.leads[i]
		for r := 0; r < l.delay; r++ {
			row := l.ring[r*out : (r+1)*out]
			clear(row)
			if len(pos) == out {
				copy(row, pos)
			}
			l.sring[r] = e.cfg.LeadStrobes
		}
	}
	e.strobes.ongoing = e.strobes.ongoing[:0]
	e.queueSeen = e.queue.Emitted()
	e.future = append(e.future[:0], e.cfg.leadMarker(), marker.NewInactiveLines(0))
	e.postScan = e.cfg.PostScanRecords
	return nil
}

// generate fills block b (ID, Start and Records set) with the waveforms
// and markers of its samples. last reports that the scan queue ran out and
// the post-scan records are covered (vortex's job.last).
func (e *Engine) generate(s *session, b *Block) (last bool, err error) {
	out := e.cfg.outChannels()
	n := b.Records
	refIdx := len(e.leads) - 1
	ref := b.galvo[refIdx][:n*out]
	b.Markers = append(b.Markers[:0], e.future...)
	e.future = e.future[:0]
	scanned, total, err := e.queue.Generate(&b.Markers, ref, out, n, true)
	if err != nil {
		return false, fmt.Errorf("engine: block %d: scan_queue.generate: %w", b.ID, err)
	}
	s.prof.job(ProfJobGenerateScan, b.ID)
	if total != n {
		return false, fmt.Errorf("engine: block %d: scan_queue.generate wrote %d samples, expected %d", b.ID, total, n)
	}
	// Markers at or past the block's end belong to the next block.
	end := b.Start + int64(n)
	k := len(b.Markers)
	for k > 0 && b.Markers[k-1].Sample >= end {
		k--
	}
	e.future = append(e.future, b.Markers[k:]...)
	b.Markers = b.Markers[:k]
	// Only IOs and the strobe endpoints (StrobeReader) read strobes:
	// without one they are not computed (vortex always computes them).
	strobes := b.strobes[refIdx][:n]
	if len(e.ios) > 0 || e.needsStrobes() {
		e.strobes.generate(strobes, b.Start, b.Markers)
	}
	s.prof.job(ProfJobGenerateStrobe, b.ID)
	for i := range refIdx {
		l := &e.leads[i]
		delayRows(b.galvo[i][:n*out], ref, l.ring, l.tmp, n, out)
		delayRows(b.strobes[i][:n], strobes, l.sring, l.stmp, n, 1)
	}
	if e.warped {
		// vortex's sample_target: the lead-0 waveform in sample coordinates.
		e.cfg.ScannerWarp.Forward(b.galvo[0][:n*out], b.sampleTarget[:n*out])
	}
	if c := e.queue.Emitted(); c != e.queueSeen {
		// The queue's scans changed (Start, Finish): their Python
		// callbacks run on the dispatcher, vortex runs them on its
		// acquire thread at this point.
		e.queueSeen = c
		s.events.post(Event{Kind: EventQueue, Endpoint: -1, Sample: b.Start, Timestamp: e.now(s)}, s.stopping)
	}
	if scanned < total {
		over := total - scanned
		if over >= e.postScan {
			return true, nil
		}
		e.postScan -= over
	}
	return false, nil
}

// delayRows writes ref (n rows of ch) delayed by len(ring)/ch rows into
// dst: the rows held from earlier blocks first, then ref's, keeping the
// last rows in ring for the next block (tmp: scratch of len(ring)+n*ch).
func delayRows[T any](dst, ref, ring, tmp []T, n, ch int) {
	d := len(ring)
	copy(tmp[:d], ring)
	copy(tmp[d:d+n*ch], ref[:n*ch])
	copy(dst[:n*ch], tmp[:n*ch])
	copy(ring, tmp[n*ch:n*ch+d])
}

// waitEmpty is the scan queue's empty waiter while the engine plays it:
// the queue ran dry and a Python empty_callback is set, so the engine
// posts EventQueueEmpty and waits until the dispatcher has run the
// callback (which may append) before the queue goes on. vortex calls the
// callback inline on its acquire thread; Go never calls Python, so the
// Generate stage waits for the dispatcher instead. This sync is off the
// hot path: it happens only while the queue is empty and a callback is
// set, and a stop ends it.
func (e *Engine) waitEmpty() {
	s := e.sess()
	if seq := s.events.postWait(Event{Kind: EventQueueEmpty, Endpoint: -1, Timestamp: e.now(s)}, s.stopping); seq > 0 {
		s.events.waitAcked(seq, s.stopping)
	}
}

// dispatchIO hands block b to IO i.
func (e *Engine) dispatchIO(i int, b *Block) error {
	out, in := e.cfg.outChannels(), e.cfg.inChannels()
	b.io = IOBlock{ID: b.ID, Sample: b.Start, Records: b.Records,
		GalvoTarget: b.galvo[e.ioLead[i]][:b.Records*out], GalvoActual: b.actual[:b.Records*in],
		Strobes: b.strobes[e.ioLead[i]][:b.Records]}
	e.ioGiven[i] = b.ID + 1
	if err := e.ios[i].io.Next(&b.io); err != nil {
		return fmt.Errorf("engine: block %d: io #%d: %w", b.ID, i, err)
	}
	return nil
}

// startIOs starts the IOs, non-masters first, each followed by the blocks
// it did not take before its start.
func (e *Engine) startIOs() error {
	for _, master := range [...]bool{false, true} {
		for i, n := range e.ios {
			if n.cfg.Master != master {
				continue
			}
			if err := n.io.Start(); err != nil {
				return fmt.Errorf("engine: io #%d: start: %w", i, err)
			}
			for _, b := range e.pending {
				if b.ID >= e.ioGiven[i] {
					if err := e.dispatchIO(i, b); err != nil {
						return err
					}
				}
			}
		}
	}
	return nil
}

// stopIOs stops every IO, joining the errors.
func (e *Engine) stopIOs() error {
	var errs []error
	for i, n := range e.ios {
		if err := n.io.Stop(); err != nil {
			errs = append(errs, fmt.Errorf("io #%d: stop: %w", i, err))
		}
	}
	return errors.Join(errs...)
}

// takeFree takes a block from the pool, with a host set to acquire into
// (takeHost); false when the engine stops (or the wait for the set fails)
// first.
func (e *Engine) takeFree(s *session) (*Block, bool) {
	b, stopped := spin.RecvOr(s.freeWait, e.free, s.stopping)
	if stopped {
		return nil, false
	}
	if !e.takeHost(s, b) {
		e.toPool(b)
		return nil, false
	}
	return b, true
}

// posting reports whether an acquisition DMAs into posted blocks.
func (e *Engine) posting() bool {
	for a := range e.acqs {
		if e.acqs[a].poster != nil {
			return true
		}
	}
	return false
}

// post hands block b's raw buffers to the acquisitions that DMA into them
// (Poster), in block order.
func (e *Engine) post(b *Block) error {
	for a := range e.acqs {
		if p := e.acqs[a].poster; p != nil {
			if err := p.Post(b.raws[a].host); err != nil {
				return fmt.Errorf("engine: acquisition #%d: block %d: posting its buffer: %w", a, b.ID, err)
			}
		}
	}
	return nil
}

// dropPending returns the generated blocks that will not be acquired.
func (e *Engine) dropPending() {
	for _, b := range e.pending {
		e.toPool(b)
	}
	e.pending = e.pending[:0]
}

// acquireLoop is the Generate and Acquire stages: it generates blocks up
// to the preload depth ahead, hands them to the IOs, and fills the oldest
// with the acquisition.
func (e *Engine) acquireLoop(s *session) {
	defer s.wg.Done()
	defer e.endAcquire(s)
	defer e.endDispatch(s)
	defer e.sendFinish(s)
	defer e.dropPending()
	defer e.recoverStage(s, "acquire", nil)
	// IOs are handed blocks up to the preload depth ahead of the
	// acquisition; one block of the pool stays out of it, so that the
	// generated blocks never hold the whole pool while the oldest waits.
	depth, startAt := 0, 1
	if len(e.ios) > 0 || e.posting() {
		// A Poster's hardware fills the generated blocks, so it too
		// needs them the preload depth ahead.
		depth = min(e.cfg.preload(), e.cfg.BlocksToAllocate-1)
		startAt = min(e.cfg.preload(), depth+1)
	}
	ioStarted := len(e.ios) == 0
	// Without IOs, EngineStart follows the first block's dispatch (the
	// acquisitions started in Start): vortex posts it once the preload
	// is dispatched, and profiler readers look for a job before it.
	startPosted := !ioStarted
	var id, start int64
	generating := true
	for {
		for generating && len(e.pending) <= depth {
			if e.limit > 0 && start >= e.limit {
				generating = false
				break
			}
			created := e.markTime(s)
			e.dispatched.Add(1)
			s.prof.job(ProfJobCreate, id)
			b, ok := e.takeFree(s)
			if !ok {
				return
			}
			s.prof.job(ProfJobClearance, id)
			b.times = [blockMarks]int64{markCreate: created, markService: e.markTime(s)}
			want := e.cfg.RecordsPerBlock
			if e.limit > 0 {
				want = int(min(int64(want), e.limit-start))
			}
			b.ID, b.Start, b.Records, b.Last, b.finishOnly = id, start, want, false, false
			last, err := e.generate(s, b)
			if err != nil {
				e.toPool(b)
				e.fail(s, err)
				return
			}
			b.Last = last || (e.limit > 0 && start+int64(want) >= e.limit)
			if err := e.post(b); err != nil {
				e.toPool(b)
				e.ioFailed(s, err)
				return
			}
			id++
			start += int64(want)
			e.nextID, e.nextStart = id, start
			e.stamp(s, b, markScan)
			e.pending = append(e.pending, b)
			s.prof.job(ProfJobAcquireDispatchBegin, b.ID)
			for i := range e.ios {
				if ioStarted || e.ios[i].cfg.Preload {
					if err := e.dispatchIO(i, b); err != nil {
						e.ioFailed(s, err)
						return
					}
				}
			}
			generating = !b.Last
			if !ioStarted && (len(e.pending) >= startAt || !generating) {
				ioStarted = true
				if err := e.startIOs(); err != nil {
					e.ioFailed(s, err)
					return
				}
				e.lifecycle(s, EngineStart, nil)
			}
			s.prof.job(ProfJobAcquireDispatchEnd, b.ID)
			if !startPosted {
				startPosted = true
				e.lifecycle(s, EngineStart, nil)
			}
		}
		if len(e.pending) == 0 || s.stopRequested() {
			return
		}
		b := e.pending[0]
		copy(e.pending, e.pending[1:])
		e.pending = e.pending[:len(e.pending)-1]
		if !e.acquire(s, b) {
			return
		}
	}
}

// sendFinish ends a run whose last acquired block was not marked last (a
// stop, or a source that ended between blocks) with a block of no records
// that only finishes the formatters: the planner reports the segment,
// volume and scan still open, as vortex's does when a stop makes its next
// block the last (its format loop then calls finish). A failed run is not
// finished (vortex's neither).
func (e *Engine) sendFinish(s *session) {
	if e.sentLast || e.failed(s) || s.broken.Load() {
		return
	}
	// The pipeline behind keeps draining into the pool (a stop makes the
	// endpoints give up waiting on users' locks), so a block comes back.
	b := <-e.free
	b.ID, b.Start, b.Records, b.Last, b.finishOnly = e.nextID, e.nextStart, 0, true, true
	b.Markers = b.Markers[:0]
	e.toProcess(s, b)
}

// ioFailed reports an IO error, unless it is an IO interrupted by a stop.
func (e *Engine) ioFailed(s *session, err error) {
	if !s.stopRequested() {
		e.fail(s, err)
	}
}

// fill has every acquisition fill (or lend) its raw spectra of block b,
// in AddAcquisition order on this goroutine (vortex's single acquire
// thread). The block holds the records all of them delivered: the least
// count, as vortex's; io.EOF from any ends the session after this block.
func (e *Engine) fill(b *Block, want int) (n int, err error) {
	n = want
	var eof bool
	for a := range e.acqs {
		run, r := &e.acqs[a], &b.raws[a]
		var got int
		var ferr error
		if run.lender != nil {
			r.src, got, ferr = run.lender.Lend(want)
		} else {
			r.src = r.hostBuf.Ptr()
			got, ferr = run.acq.Fill(r.host[:want*r.values], want)
		}
		switch {
		case errors.Is(ferr, io.EOF):
			eof = true
		case ferr != nil:
			if len(e.acqs) > 1 {
				ferr = fmt.Errorf("acquisition #%d: %w", a, ferr)
			}
			return 0, ferr
		}
		if got < 0 || got > want {
			return 0, fmt.Errorf("engine: acquisition #%d Fill returned n=%d, expected 0 <= n <= %d", a, got, want)
		}
		n = min(n, got)
	}
	if eof {
		return n, io.EOF
	}
	return n, nil
}

// acquire fills block b and sends it on; false ends the loop.
func (e *Engine) acquire(s *session, b *Block) bool {
	want := b.Records
	t := time.Now()
	n, err := e.fill(b, want)
	b.acquired = float64(time.Since(t)) / float64(time.Millisecond)
	s.prof.task(ProfTaskAcquireComplete, 0, b.ID)
	s.prof.job(ProfJobAcquireJoin, b.ID)
	e.stamp(s, b, markAcquire)
	eof := errors.Is(err, io.EOF)
	if err != nil && !eof {
		e.toPool(b)
		if !s.stopRequested() {
			// An error after Stop is the acquisition being
			// interrupted, not a failure.
			e.fail(s, fmt.Errorf("engine: acquisition: block %d: %w", b.ID, err))
		}
		return false
	}
	if eof {
		// The source's end of data ends the session early: vortex's
		// shutdown. Dispatch ends, but nothing is cut short (no stop).
		e.shutdownEvent(s, nil)
	}
	if n == 0 {
		e.toPool(b)
		return !eof && !s.stopRequested()
	}
	if n < want {
		// The source ended inside the block: its markers past the data go.
		end := b.Start + int64(n)
		k := len(b.Markers)
		for k > 0 && b.Markers[k-1].Sample >= end {
			k--
		}
		b.Markers = b.Markers[:k]
	}
	if e.warped {
		// vortex's sample_actual: the measured positions in sample
		// coordinates, once the IOs have written them.
		in := e.cfg.inChannels()
		e.cfg.ScannerWarp.Forward(b.actual[:n*in], b.sampleActual[:n*in])
	}
	b.Records = n
	// After a stop this block is the last: the formatters finish with it
	// (sendFinish covers a stop between blocks).
	b.Last = b.Last || eof || s.stopRequested()
	e.sentLast = b.Last
	e.acquired.Add(1)
	e.toProcess(s, b)
	return !b.Last && !s.stopRequested()
}
