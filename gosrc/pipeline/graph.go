package pipeline

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/vortexgo/vortexgo/gosrc/backend"
)

// maxCaptureIterations bounds the iterations one graph holds.
const maxCaptureIterations = 1024

// PipelineGraph is a captured cycle of pipeline iterations, replayable with
// one graph launch instead of a launch per stage.
type PipelineGraph struct {
	m      *PipelineStageManager
	g      backend.Graph
	iters  int
	evs    []backend.Event // recorded by the graph on host backends
	mu     sync.Mutex
	closed bool
}

// Capture records the ordered stages into a graph without running them.
// The graph holds one full cycle of buffer versions, lcm of the version
// counts iterations (3 for triple-buffered pipelines), so replays stay
// consistent with the buffers' rotation and overlap within the graph.
//
// On CUDA, stages keep their streams: the capture forks from the compute
// stream to the others through an event and joins them back, so the graph
// has parallel branches. Elsewhere (the CPU backend, or a sequential
// coordinator) everything is captured on the compute stream.
//
// Stage Funcs run during capture and must only enqueue work (no host
// access to results); that is the rule of stream capture.
func (m *PipelineStageManager) Capture() (*PipelineGraph, error) { return m.CaptureIterations(0) }

// CaptureIterations is Capture with n iterations per graph, a positive
// multiple of the buffer cycle (0 means one cycle). More iterations per
// replay spread its fixed cost (joins, timing events, the launch) thinner.
func (m *PipelineStageManager) CaptureIterations(n int) (*PipelineGraph, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, fmt.Errorf("Capture: pipeline manager: %w", backend.ErrClosed)
	}
	if len(m.order) == 0 {
		return nil, fmt.Errorf("Capture: no stages, expected AddStage first: %w", backend.ErrInvalid)
	}
	cycle := 1
	for _, b := range m.bufs {
		cycle = lcm(cycle, len(b))
	}
	if n == 0 {
		n = cycle
	}
	if n < 0 || n%cycle != 0 || n > maxCaptureIterations {
		return nil, fmt.Errorf("Capture: iterations=%d, expected 0 or a positive multiple of the buffer cycle %d (the lcm of the buffers' versions), at most %d: %w", n, cycle, maxCaptureIterations, backend.ErrInvalid)
	}
	c := m.c
	origin := c.streams[OpCompute]
	multi := c.dev.Kind() == backend.CUDA && c.nlanes > 1
	streams, lanes := c.streams, c.lanes
	if !multi {
		for r := range numRoles {
			streams[r], lanes[r] = origin, lanes[OpCompute]
		}
	}
	// Hazards inside the graph start clean: the graph is ordered after all
	// earlier work at replay time, and a capture may not wait on events
	// recorded outside it.
	state := make([][]verState, len(m.bufs))
	for b := range state {
		state[b] = make([]verState, len(m.bufs[b]))
	}
	// The events recorded during capture stay with the graph: on CUDA they
	// only carried dependencies, but a host backend replays their records,
	// so recycling them would let a replay overwrite another op's timing.
	var evs []backend.Event

	if err := origin.BeginCapture(); err != nil {
		return nil, fmt.Errorf("Capture: %w", err)
	}
	err := func() error {
		if multi {
			fork, err := c.getEvent()
			if err != nil {
				return err
			}
			evs = append(evs, fork)
			if err := origin.Record(fork); err != nil {
				return err
			}
			for r := range numRoles {
				if lanes[r] != lanes[OpCompute] {
					if err := streams[r].WaitEvent(fork); err != nil {
						return err
					}
				}
			}
		}
		for k := range n {
			for _, si := range m.order {
				if err := m.runStageLocked(si, k, streams, lanes, state, nil, &evs); err != nil {
					return err
				}
			}
		}
		if multi {
			for r := range numRoles {
				if lanes[r] == lanes[OpCompute] {
					continue
				}
				join, err := c.getEvent()
				if err != nil {
					return err
				}
				evs = append(evs, join)
				if err := streams[r].Record(join); err != nil {
					return err
				}
				if err := origin.WaitEvent(join); err != nil {
					return err
				}
			}
		}
		return nil
	}()
	// EndCapture always runs: the stream must leave capture mode.
	g, endErr := origin.EndCapture()
	if err != nil || endErr != nil {
		if g != nil {
			_ = g.Close() // a partial graph is useless; the capture error is the one to report
		}
		closeEvents(evs) // no graph can replay them
		return nil, fmt.Errorf("Capture: %w", errors.Join(err, endErr))
	}
	return &PipelineGraph{m: m, g: g, iters: n, evs: evs}, nil
}

// Iterations is the number of pipeline iterations one Replay runs.
func (pg *PipelineGraph) Iterations() int { return pg.iters }

// Nodes is the number of operations in the graph.
func (pg *PipelineGraph) Nodes() int { return pg.g.Nodes() }

// Replay launches the graph on the compute stream, after all work issued
// so far on the three streams and before any issued later, and counts its
// iterations in the manager's stats. It does not block the host.
func (pg *PipelineGraph) Replay() error {
	t0 := time.Now()
	pg.mu.Lock()
	defer pg.mu.Unlock()
	if pg.closed {
		return fmt.Errorf("PipelineGraph.Replay: %w", backend.ErrClosed)
	}
	m := pg.m
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return fmt.Errorf("PipelineGraph.Replay: pipeline manager: %w", backend.ErrClosed)
	}
	c := m.c
	origin := c.streams[OpCompute]
	lane := c.lanes[OpCompute]
	// Join: the graph follows everything queued on the other streams.
	for r := range numRoles {
		if c.lanes[r] == lane {
			continue
		}
		tail, err := c.getEvent()
		if err != nil {
			return fmt.Errorf("PipelineGraph.Replay: %w", err)
		}
		err = c.streams[r].Record(tail)
		if err == nil {
			err = origin.WaitEvent(tail)
		}
		c.putEvent(tail) // the wait captured the record; the event is free again
		if err != nil {
			return fmt.Errorf("PipelineGraph.Replay: joining %v stream: %w", OpType(r), err)
		}
	}
	start, err := c.getEvent()
	if err != nil {
		return fmt.Errorf("PipelineGraph.Replay: %w", err)
	}
	end, err := c.getEvent()
	if err != nil {
		c.putEvent(start)
		return fmt.Errorf("PipelineGraph.Replay: %w", err)
	}
	if err := origin.Record(start); err != nil {
		c.putEvent(start, end)
		return fmt.Errorf("PipelineGraph.Replay: recording start: %w", err)
	}
	launchErr := pg.g.Launch(origin)
	if err := origin.Record(end); err != nil {
		return fmt.Errorf("PipelineGraph.Replay: recording end: %w", errors.Join(launchErr, err))
	}
	sr, er := &evRef{ev: start, lane: lane, refs: 1}, &evRef{ev: end, lane: lane, refs: 1}
	m.inflight = append(m.inflight, &iterRec{runs: []stageRun{{stage: -1, start: sr, end: er}}, graphIters: pg.iters})
	// Fork: later work on the other streams, and every later writer or
	// reader of a buffer version, follows the graph.
	for r := range numRoles {
		if c.lanes[r] != lane {
			if err := c.streams[r].WaitEvent(end); err != nil {
				return fmt.Errorf("PipelineGraph.Replay: forking to %v stream: %w", OpType(r), err)
			}
		}
	}
	for b := range m.ver {
		for v := range m.ver[b] {
			vs := &m.ver[b][v]
			m.release(vs.write, nil)
			for _, r := range vs.reads {
				m.release(r, nil)
			}
			vs.write, vs.reads = er, vs.reads[:0]
			er.refs++
		}
	}
	m.iter += pg.iters
	m.acc.graphNs += time.Since(t0).Nanoseconds()
	m.acc.graphIssued += pg.iters
	if launchErr != nil {
		return fmt.Errorf("PipelineGraph.Replay: %w", launchErr)
	}
	return nil
}

// Close releases the graph and its capture events. Closing twice is an
// error.
func (pg *PipelineGraph) Close() error {
	pg.mu.Lock()
	defer pg.mu.Unlock()
	if pg.closed {
		return fmt.Errorf("PipelineGraph.Close: %w", backend.ErrClosed)
	}
	pg.closed = true
	// No host wait for queued replays: CUDA keeps a launched graph alive
	// and its capture events are no nodes of it, and the CPU backend runs
	// replays at launch (and ignores records of closed events).
	return errors.Join(pg.g.Close(), closeEvents(pg.evs))
}

func closeEvents(evs []backend.Event) error {
	var errs []error
	for _, ev := range evs {
		errs = append(errs, ev.Close())
	}
	return errors.Join(errs...)
}

func lcm(a, b int) int {
	x, y := a, b
	for y != 0 {
		x, y = y, x%y
	}
	return a / x * b
}
