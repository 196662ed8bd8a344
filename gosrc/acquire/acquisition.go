package acquire

import (
	"errors"
	"fmt"
	"io"
	"sync"
	"time"
	"unsafe"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/engine"
)

// ErrNotStarted is returned by Fill before the first Start.
var ErrNotStarted = errors.New("acquire: Fill before Start")

// acquisition is the engine's contract; the assertions below keep every
// source in step with it without importing the engine.
type acquisition interface {
	Prepare() error
	Start() error
	Stop() error
	SamplesPerRecord() int
	Fill(dst []uint16, records int) (int, error)
}

var (
	_ acquisition = (*SimulatedAcquisition)(nil)
	_ acquisition = (*FileAcquisition)(nil)
	_ acquisition = (*NullAcquisition)(nil)
)

// burstWindow is how much acquisition time a consumer that fell behind may
// catch up in one burst. A real card buffers a few blocks; 20 ms is a few
// blocks at typical OCT rates and keeps the long-run rate honest.
const burstWindow = 20 * time.Millisecond

// tokenBucket throttles records to a rate. Tokens are records; the bucket
// starts empty at Start, so the first block becomes available only after it
// would have been acquired.
type tokenBucket struct {
	rate   float64 // records per second; <= 0 disables throttling
	tokens float64
	last   time.Time
}

func (b *tokenBucket) reset(now time.Time) {
	b.tokens = 0
	b.last = now
}

// take reserves n records and waits, at most once, until they are covered.
// It returns false when stop is closed during the wait.
func (b *tokenBucket) take(n int, stop <-chan struct{}) bool {
	if b.rate <= 0 {
		return true
	}
	now := time.Now()
	capacity := max(b.rate*burstWindow.Seconds(), float64(n))
	b.tokens = min(b.tokens+now.Sub(b.last).Seconds()*b.rate, capacity)
	b.last = now
	b.tokens -= float64(n)
	if b.tokens >= 0 {
		return true
	}
	// A debt: wait until the rate has paid it off. The tokens stay negative
	// so the next call accounts from b.last (before the wait) correctly.
	t := time.NewTimer(time.Duration(-b.tokens / b.rate * float64(time.Second)))
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-stop:
		return false
	}
}

// runState is the Start/Stop bookkeeping shared by the sources. Fill runs on
// the engine's acquisition goroutine while Stop may come from any
// goroutine, so the state sits behind a mutex and Stop signals a waiting
// Fill through a channel instead of the mutex (Fill never holds the mutex
// while it waits).
type runState struct {
	mu      sync.Mutex
	started bool // Start was called at least once
	running bool
	stop    chan struct{}
	bucket  tokenBucket
}

func (r *runState) start(rate float64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.running {
		return
	}
	r.started, r.running = true, true
	r.stop = make(chan struct{})
	r.bucket.rate = rate
	r.bucket.reset(time.Now())
}

func (r *runState) halt() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.running {
		r.running = false
		close(r.stop)
	}
}

// admit checks the state before a Fill of n records and waits for the rate
// limiter. It returns io.EOF when stopped and ErrNotStarted before Start.
func (r *runState) admit(n int) error {
	r.mu.Lock()
	if !r.started {
		r.mu.Unlock()
		return ErrNotStarted
	}
	if !r.running {
		r.mu.Unlock()
		return io.EOF
	}
	stop := r.stop
	r.mu.Unlock()
	// The bucket is only touched by Fill (one goroutine by contract) and by
	// start, which cannot run while a Fill is in flight on a running source.
	if !r.bucket.take(n, stop) {
		return io.EOF
	}
	return nil
}

// checkFill validates Fill's arguments against the record length.
func checkFill(dst []uint16, records, samples int) error {
	if records < 0 {
		return engine.Invalid("acquire: Fill: records=%d, expected records >= 0", records)
	}
	if need := records * samples; len(dst) < need {
		return engine.Invalid("acquire: Fill: len(dst)=%d, expected >= records*SamplesPerRecord = %d*%d = %d",
			len(dst), records, samples, need)
	}
	return nil
}

// checkRate validates a rate field.
func checkRate(rate float64) error {
	if rate < 0 || rate != rate { // NaN fails rate == rate
		return engine.Invalid("acquire: Rate=%v, expected >= 0 (A-scans per second; 0 = unlimited)", rate)
	}
	return nil
}

// hostBytes views n bytes of memory that is not on the Go heap (pinned, a
// backend's) as a slice.
func hostBytes(addr uintptr, n int) []byte {
	if n == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(ptrOf(addr)), n)
}

// notInUse refuses a standalone call (next, start, stop from Python) while
// an engine has prepared the source: the engine's blocks would lose
// records to the caller, and its run would be started or stopped behind
// its back.
func notInUse(c *engine.Claim, op string) error {
	if c.InUse() {
		return fmt.Errorf("acquire: %s: an engine that prepared the source has not finished its run; "+
			"stop the engine first: %w", op, backend.ErrInUse)
	}
	return nil
}
