package engine_test

import (
	"errors"
	"io"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/vortexgo/vortexgo/gosrc/backend"
)

// rawValue is what the fake acquisition writes for sample s of record r:
// distinct per record and sample, so tests can tell where each landed.
func rawValue(record int64, s int) uint16 { return uint16((record*16 + int64(s)) % 65536) }

// fakeAcq writes rawValue spectra; it never allocates in Fill.
type fakeAcq struct {
	samples int
	records int64 // total before io.EOF; 0 = endless
	delay   time.Duration
	failAt  int64 // fail when this many records were sent (0 = never)
	offset  int64 // record r is written as record r+offset (tells acquisitions apart)

	sent     int64
	stop     chan struct{}
	stopOnce sync.Once
	started  atomic.Bool
	stopped  atomic.Int32
}

func newFakeAcq(samples int) *fakeAcq {
	return &fakeAcq{samples: samples, stop: make(chan struct{})}
}

func (a *fakeAcq) Prepare() error { return nil }

// Start begins a session: a stopped acquisition can start again (the
// engine's sessions), with a fresh stop signal.
func (a *fakeAcq) Start() error {
	if a.started.Swap(true) {
		a.stop, a.stopOnce = make(chan struct{}), sync.Once{}
	}
	return nil
}
func (a *fakeAcq) SamplesPerRecord() int { return a.samples }
func (a *fakeAcq) Stop() error {
	a.stopped.Add(1)
	a.stopOnce.Do(func() { close(a.stop) })
	return nil
}

var errFakeAcq = errors.New("fake acquisition failure")

func (a *fakeAcq) Fill(dst []uint16, records int) (int, error) {
	if a.delay > 0 {
		select {
		case <-time.After(a.delay):
		case <-a.stop:
			return 0, errors.New("stopped")
		}
	}
	if a.failAt > 0 && a.sent >= a.failAt {
		return 0, errFakeAcq
	}
	n := records
	if a.records > 0 {
		n = int(min(int64(n), a.records-a.sent))
	}
	for r := range n {
		rec := a.sent + int64(r) + a.offset
		for s := range a.samples {
			dst[r*a.samples+s] = rawValue(rec, s)
		}
	}
	a.sent += int64(n)
	if a.records > 0 && a.sent >= a.records {
		return n, io.EOF
	}
	return n, nil
}

func hostSlice[T any](p uintptr, n int) []T {
	ptr := *(*unsafe.Pointer)(unsafe.Pointer(&p))
	return unsafe.Slice((*T)(ptr), n)
}

// fakeProc converts each raw sample to float32 and to int8 (value % 128),
// on the stream through HostStream.Enqueue with a prebound method value so
// that it does not allocate.
type fakeProc struct {
	samples int
	args    struct {
		in, out, out8 uintptr
		records       int
	}
	run   func()
	calls atomic.Int64 // Process calls (blocks processed)
}

func newFakeProc(samples int) *fakeProc {
	p := &fakeProc{samples: samples}
	p.run = p.exec
	return p
}

func (p *fakeProc) Prepare() error     { return nil }
func (p *fakeProc) OutputSamples() int { return p.samples }
func (p *fakeProc) Close() error       { return nil }

func (p *fakeProc) Process(slot int, s backend.Stream, in uintptr, records int, out, out8 uintptr) error {
	hs, ok := s.(backend.HostStream)
	if !ok {
		return errors.New("fakeProc: needs a host stream")
	}
	p.calls.Add(1)
	// The CPU backend's streams run what is enqueued at once, so one set of
	// arguments serves every call.
	p.args.in, p.args.out, p.args.out8, p.args.records = in, out, out8, records
	return hs.Enqueue(p.run)
}

func (p *fakeProc) exec() {
	n := p.args.records * p.samples
	in := hostSlice[uint16](p.args.in, n)
	out := hostSlice[float32](p.args.out, n)
	out8 := hostSlice[int8](p.args.out8, n)
	for i, v := range in {
		out[i] = float32(v)
		out8[i] = int8(v % 128)
	}
}
