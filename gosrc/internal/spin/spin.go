// Package spin lets the engine's pipeline stages poll for their next item
// for a short window before they park. It is off unless VORTEXGO_STAGE_SPIN
// sets the window.
//
// Why (issue 29): a block passes through five goroutines (acquire,
// process, a slot's submitter, format, recycle), and a channel hand-off to
// a parked goroutine costs the receiver a wake-up. On the GPU machines (VMs)
// an execution trace of 256-record blocks showed 2.2 s of scheduler delay in
// 3 s of run, about 20 us a block, more than the block's 12 us of copy. A
// stage still running when its next block is sent takes it from the
// channel's buffer at once. So a stage whose items come within the window
// (hot) polls its channel for up to the window first; one whose items come
// slower (a scanner's 2.5 ms blocks) parks at once and costs no CPU.
//
// Why off by default: measured on an H200 VM (16 vCPUs, one thread per
// core), a 50 us window took 256 x 1024 blocks with 32 blocks / preload 16
// from 26 to 19-21 us each, but slowed vortex's defaults (4 / 2) by up to
// 1.5x and 2048-sample blocks by up to 2.6x, from run to run: on a VM,
// vCPUs that spin take physical time from the ones doing the work. Where
// the cores are the machine's own, a window may pay; measure first.
package spin

import (
	"fmt"
	"strconv"
	"time"

	"github.com/vortexgo/vortexgo/gosrc/internal/dl"
)

// Env is the environment variable that sets the window in microseconds:
// unset or 0: no polling.
const Env = "VORTEXGO_STAGE_SPIN"

// hints is the spin-loop hints between two polls: about 0.2 us on a
// current x86 core, short against a wake-up's microseconds.
const hints = 4

// maxWindow bounds Env: a window that long is a typo, not a tuning.
const maxWindow = 10 * time.Millisecond

// Configured returns the window set by Env, 0 when it is unset or empty.
// A value that is not an integer number of microseconds in [0, 10000] is
// an error naming the variable. It reads the live environment (dl.Getenv),
// so a value a notebook sets with os.environ before start() counts.
func Configured() (time.Duration, error) {
	w, _, err := configured(Env, "the stages park at once")
	return w, err
}

// RecycleEnv is the environment variable that sets the recycle stage's
// window in microseconds, over Env and the engine's default for it (see
// engine.recycleWindow): 0 parks at once.
const RecycleEnv = "VORTEXGO_RECYCLE_SPIN"

// RecycleConfigured returns the window set by RecycleEnv and whether it is
// set (an empty value is unset); errors as Configured's.
func RecycleConfigured() (time.Duration, bool, error) {
	return configured(RecycleEnv, "the recycle stage parks at once")
}

// PoolEnv is the environment variable that sets the window, in
// microseconds, for which the acquire loop polls the pool of free blocks
// when it is empty, over Env and the engine's default for it (see
// engine.pollWindow): 0 parks at once.
const PoolEnv = "VORTEXGO_POOL_SPIN"

// PoolConfigured returns the window set by PoolEnv and whether it is set
// (an empty value is unset); errors as Configured's.
func PoolConfigured() (time.Duration, bool, error) {
	return configured(PoolEnv, "the acquire loop parks at once")
}

// configured reads variable name as a window in microseconds; zero says
// what 0 means, for the error.
func configured(name, zero string) (time.Duration, bool, error) {
	v, _ := dl.Getenv(name)
	if v == "" {
		return 0, false, nil
	}
	us, err := strconv.Atoi(v)
	if err != nil || us < 0 || time.Duration(us)*time.Microsecond > maxWindow {
		return 0, true, fmt.Errorf("%s=%q: expected an integer number of microseconds in [0, %d] (0: %s)",
			name, v, maxWindow.Microseconds(), zero)
	}
	return time.Duration(us) * time.Microsecond, true, nil
}

// Window returns Configured's window, or 0 when Env is invalid (the
// engine reports that error where it starts a session; a processor
// created alone just does not poll).
func Window() time.Duration {
	w, err := Configured()
	if err != nil {
		return 0
	}
	return w
}

// Waiter is one stage's receive side: it remembers whether the stage is
// hot. Not safe for concurrent use: one per receiving goroutine.
type Waiter struct {
	window time.Duration
	hot    bool
}

// NewWaiter returns a waiter polling for up to window (0: never).
func NewWaiter(window time.Duration) *Waiter { return &Waiter{window: window} }

// Window is how long the waiter polls (0: never).
func (w *Waiter) Window() time.Duration { return w.window }

// Recv is `v, ok := <-ch`, polling ch first for up to the window when the
// stage is hot. The stage is hot after a wait no longer than the window.
func Recv[T any](w *Waiter, ch <-chan T) (v T, ok bool) {
	if w.window <= 0 { // off: a plain receive, no clock read
		v, ok = <-ch
		return v, ok
	}
	if w.hot && Until(w.window, func() bool {
		select {
		case v, ok = <-ch:
			return true
		default:
			return false
		}
	}) {
		return v, ok
	}
	start := time.Now()
	v, ok = <-ch
	w.hot = time.Since(start) <= w.window
	return v, ok
}

// Send is `ch <- v`, polling a full ch first for up to the window when
// the stage is hot, as Recv does on the receiving side: the receiver that
// makes room then finds no parked sender to wake, a wake-up it would pay
// on its own thread. The stage is hot after a wait no longer than the
// window.
func Send[T any](w *Waiter, ch chan<- T, v T) {
	if w.window <= 0 { // off: a plain send, no clock read
		ch <- v
		return
	}
	select { // room at once: no clock read either
	case ch <- v:
		w.hot = true
		return
	default:
	}
	if w.hot && Until(w.window, func() bool {
		select {
		case ch <- v:
			return true
		default:
			return false
		}
	}) {
		return
	}
	start := time.Now()
	ch <- v
	w.hot = time.Since(start) <= w.window
}

// RecvOr is Recv on ch that also returns, with stopped true, once stop is
// closed; ch wins when both are ready, as a select would choose either.
func RecvOr[T any](w *Waiter, ch <-chan T, stop <-chan struct{}) (v T, stopped bool) {
	if w.window <= 0 { // off: a plain select, no clock read
		select {
		case v = <-ch:
			return v, false
		case <-stop:
			return v, true
		}
	}
	// One channel per select: a single case with a default is the
	// runtime's lock-free empty check, where a select of two locks both
	// channels on every poll (and the pool's sender with them).
	if w.hot && Until(w.window, func() bool {
		select {
		case v = <-ch:
			return true
		default:
		}
		select {
		case <-stop:
			stopped = true
			return true
		default:
			return false
		}
	}) {
		return v, stopped
	}
	start := time.Now()
	select {
	case v = <-ch:
	case <-stop:
		stopped = true
	}
	w.hot = time.Since(start) <= w.window
	return v, stopped
}

// Until polls done for up to window and reports whether it became true:
// the caller parks on its own condition when it did not. The one polling
// loop of the package (Recv, RecvOr and the rolling average's turn use it).
func Until(window time.Duration, done func() bool) bool {
	if window <= 0 {
		return done()
	}
	deadline := time.Now().Add(window)
	for i := 1; ; i++ {
		if done() {
			return true
		}
		pause(hints)
		// time.Now costs more than a poll: read it every 16th
		if i&15 == 0 && time.Now().After(deadline) {
			return done()
		}
	}
}
