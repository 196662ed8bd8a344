// Package turn hands out places in an order (tickets) and lets each holder
// run its ordered part in turn, whatever goroutine it runs on: the engine's
// slot submitters submit blocks concurrently, while a processor's rolling
// average must see them in the order they were acquired.
package turn

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/vortexgo/vortexgo/gosrc/internal/spin"
)

// Order is one order of tickets; the zero value is not usable (New).
type Order struct {
	mu   sync.Mutex
	cond sync.Cond
	next uint64
	// turn is written under mu and read without it by wait's polling: an
	// atomic, so that what the previous holder did happens before.
	turn atomic.Uint64
	// window is how long Wait polls the turn before parking on cond
	// (internal/spin): a turn passes a few microseconds after the holder's
	// ordered part, less than a parked goroutine's wake-up on the GPU VMs.
	window time.Duration
}

// New returns an order whose first ticket has the turn; Wait polls for
// window before it parks (0: parks at once).
func New(window time.Duration) *Order {
	o := &Order{window: window}
	o.cond.L = &o.mu
	return o
}

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
	if o.window > 0 {
		spin.Until(o.window, func() bool { return o.turn.Load() == t })
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	for o.turn.Load() != t {
		o.cond.Wait()
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
