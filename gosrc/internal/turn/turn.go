// Package turn hands out places in an order (tickets) and lets each holder
// run its ordered part in turn, whatever goroutine it runs on: the engine's
// slot submitters submit blocks concurrently, while a processor's rolling
// average must see them in the order they were acquired.
package turn

import (
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vortexgo/vortexgo/gosrc/internal/dl"
	"github.com/vortexgo/vortexgo/gosrc/internal/spin"
)

// Order is one order of tickets; the zero value is not usable (New).
type Order struct {
	mu   sync.Mutex
	cond sync.Cond
	next uint64
	// turn is written under mu and read without it by Wait's polling: an
	// atomic, so that what the previous holder did happens before.
	turn atomic.Uint64
	// window is how long Wait polls the turn before parking on cond while
	// the order is hot: the last wait that parked (or polled) ended within
	// the window. A turn passes a few microseconds after the holder's
	// ordered part, less than a parked goroutine's wake-up on the GPU VMs
	// (issue 29); when the holder itself is slow to come (few blocks in
	// flight), polling would only burn a CPU the holder may need, so a
	// wait that outlasted the window makes the next ones park at once
	// until a parked one is short again (internal/spin's Waiter does the
	// same for the stages' channels).
	window atomic.Int64 // time.Duration
	hot    atomic.Bool
}

// New returns an order whose first ticket has the turn; Wait polls for
// up to window before it parks (0: parks at once).
func New(window time.Duration) *Order {
	o := &Order{}
	o.cond.L = &o.mu
	o.window.Store(int64(window))
	return o
}

// SetWindow changes how long Wait polls (0: parks at once); safe while
// others wait.
func (o *Order) SetWindow(window time.Duration) { o.window.Store(int64(window)) }

// Take reserves the next place.
func (o *Order) Take() uint64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	t := o.next
	o.next++
	return t
}

// Wait returns when every earlier ticket is done.
func (o *Order) Wait(t uint64) {
	if o.turn.Load() == t {
		return // its turn already: no wait to learn from
	}
	window := time.Duration(o.window.Load())
	if window > 0 && o.hot.Load() && spin.Until(window, func() bool { return o.turn.Load() == t }) {
		return
	}
	var start time.Time
	if window > 0 {
		start = time.Now()
	}
	o.mu.Lock()
	for o.turn.Load() != t {
		o.cond.Wait()
	}
	o.mu.Unlock()
	if window > 0 {
		o.hot.Store(time.Since(start) <= window)
	}
}

// Done passes the turn on from t, which must hold it (Wait returned).
func (o *Order) Done(t uint64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.turn.Load() != t {
		panic("turn: Done out of turn") // a bug of the caller, not a user's
	}
	o.turn.Add(1)
	o.cond.Broadcast()
}

// Window is how long Wait polls (tests).
func (o *Order) Window() time.Duration { return time.Duration(o.window.Load()) }

// Hot reports whether the next Wait would poll first (tests).
func (o *Order) Hot() bool { return o.hot.Load() }

// WindowEnv is the environment variable that sets the window of the
// processors' orders in microseconds, in place of the engine's choice
// (engine.OrderedProcessor's SetTurnWindow).
const WindowEnv = "VORTEXGO_TURN_SPIN"

// maxWindow bounds WindowEnv: a window that long is a typo, not a tuning.
const maxWindow = 10 * time.Millisecond

// Configured returns WindowEnv's window and whether it is set (not empty;
// 0: park at once). A value that is not an integer number of microseconds
// in [0, 10000] is an error naming the variable. It reads the live
// environment (dl.Getenv).
func Configured() (window time.Duration, set bool, err error) {
	v, _ := dl.Getenv(WindowEnv)
	if v == "" {
		return 0, false, nil
	}
	us, err := strconv.Atoi(v)
	if err != nil || us < 0 || time.Duration(us)*time.Microsecond > maxWindow {
		return 0, false, fmt.Errorf("%s=%q: expected an integer number of microseconds in [0, %d] (0: a turn's waiter parks at once; unset: the engine chooses)",
			WindowEnv, v, maxWindow.Microseconds())
	}
	return time.Duration(us) * time.Microsecond, true, nil
}
