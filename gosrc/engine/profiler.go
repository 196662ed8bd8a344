package engine

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vortexgo/vortexgo/gosrc/internal/dl"
)

// The profiler log is vortex's (vortex/engine/common.hpp, read by
// vortex-oct-tools' vortex_tools.profiler): a flat file of 32-byte
// little-endian records (code, index, job, timestamp), all uint64, the
// timestamp in nanoseconds of the wall clock (vortex's
// high_resolution_clock on Linux). The first record is the version:
// code 2^64-1, then vortexgo's version as index 0 and profiler version 0.
// Codes: 0-8 the lifecycle events (EngineEvent); 0x100 + a job mark
// (ProfJob*) of block `job`; 0x10000 + a task mark (ProfTask*) of task
// `index` (the formatter, or 0 for the acquisition) of block `job`.
//
// A session opens the log at Start when Engine.SetProfilerLog named a file
// or the VORTEX_PROFILER_LOG environment variable is set (as vortex: the
// directories are created, the file truncated). Marks go through a
// bounded queue to a writer goroutine, so the stages never wait on the
// disk; if the writer falls behind by profQueue records, marks are
// dropped and counted (Status.ProfilerDropped) rather than slowing the
// engine.

// ProfilerEnv is the environment variable vortex reads for the profiler
// log's path.
const ProfilerEnv = "VORTEX_PROFILER_LOG"

// Job marks (code 0x100 + mark), vortex's profiler_job_mark_t.
const (
	ProfJobCreate = 0x100 + iota
	ProfJobClearance
	ProfJobGenerateScan
	ProfJobGenerateStrobe
	ProfJobAcquireDispatchBegin
	ProfJobAcquireDispatchEnd
	ProfJobAcquireJoin
	ProfJobProcessDispatchBegin
	ProfJobProcessDispatchEnd
	ProfJobFormatJoin
	ProfJobRecycle
)

// Task marks (code 0x10000 + mark), vortex's profiler_task_mark_t.
const (
	ProfTaskAcquireComplete = 0x10000 + iota
	ProfTaskProcessComplete
	ProfTaskFormatBegin
	ProfTaskFormatPlan
	ProfTaskFormatEnd
)

// profMeta is the version record's code; ProfilerVersion its format.
const (
	profMeta        = ^uint64(0)
	ProfilerVersion = 0
	profQueue       = 1 << 16
	profRecordSize  = 32
)

type profRecord struct{ code, index, job, ts uint64 }

// profiler writes one session's marks. A nil *profiler is off: its
// methods do nothing, so the stages call it unconditionally.
type profiler struct {
	ch      chan profRecord
	dropped atomic.Int64
	wg      sync.WaitGroup
	f       *os.File
	err     error // the writer's first error, reported by close
	base    time.Time
	wall    int64
}

// profilePath is the log the next session writes, or "".
func (e *Engine) profilePath() string {
	e.profMu.Lock()
	p := e.profLog
	e.profMu.Unlock()
	if p == "" {
		p, _ = dl.Getenv(ProfilerEnv) // live: a notebook may set it after import
	}
	return p
}

// openProfiler opens path for a session's marks; nil (off) for "".
func openProfiler(path string) (*profiler, error) {
	if path == "" {
		return nil, nil
	}
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("profiler log %q: %w", path, err)
		}
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("profiler log %q: %w", path, err)
	}
	p := &profiler{ch: make(chan profRecord, profQueue), f: f, base: time.Now()}
	p.wall = p.base.UnixNano()
	p.ch <- profRecord{code: profMeta, index: 0, job: ProfilerVersion}
	p.wg.Add(1)
	go p.write()
	return p, nil
}

// mark records code for (index, job) now. It never waits.
func (p *profiler) mark(code, index, job uint64) {
	if p == nil {
		return
	}
	// The wall clock is read once at open and advanced by the monotonic
	// clock, so marks are ordered even if the wall clock is stepped.
	ts := uint64(p.wall + int64(time.Since(p.base)))
	select {
	case p.ch <- profRecord{code, index, job, ts}:
	default:
		p.dropped.Add(1)
	}
}

// job marks a job mark of block id.
func (p *profiler) job(code int, id int64) { p.mark(uint64(code), 0, uint64(id)) }

// task marks a task mark of task index of block id.
func (p *profiler) task(code, index int, id int64) { p.mark(uint64(code), uint64(index), uint64(id)) }

func (p *profiler) write() {
	defer p.wg.Done()
	w := bufio.NewWriterSize(p.f, 1<<16)
	var buf [profRecordSize]byte
	for r := range p.ch {
		if p.err != nil {
			continue // keep draining so mark never blocks
		}
		binary.LittleEndian.PutUint64(buf[0:], r.code)
		binary.LittleEndian.PutUint64(buf[8:], r.index)
		binary.LittleEndian.PutUint64(buf[16:], r.job)
		binary.LittleEndian.PutUint64(buf[24:], r.ts)
		if _, err := w.Write(buf[:]); err != nil {
			p.err = err
		}
	}
	if err := w.Flush(); err != nil && p.err == nil {
		p.err = err
	}
}

// close flushes and closes the log after the session's last mark.
func (p *profiler) close() error {
	if p == nil {
		return nil
	}
	close(p.ch)
	p.wg.Wait()
	if err := p.f.Close(); err != nil && p.err == nil {
		p.err = err
	}
	return p.err
}

// droppedMarks is how many marks were not written (0 when off).
func (p *profiler) droppedMarks() int64 {
	if p == nil {
		return 0
	}
	return p.dropped.Load()
}
