package process

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/vortexgo/vortexgo/gosrc/internal/spin"
)

// blockOrder hands out places in a processor's block order (tickets) and
// lets each caller run its ordered part in turn, whatever goroutine it
// runs on: the engine's slot submitters (engine.OrderedProcessor) submit
// blocks concurrently, while the rolling average's history must see them
// in the order they were acquired.
type blockOrder struct {
	mu   sync.Mutex
	cond sync.Cond
	next uint64
	// turn is written under mu and read without it by wait's polling: an
	// atomic, so that what the previous holder did happens before.
	turn atomic.Uint64
	// window is how long wait polls the turn before parking on cond
	// (internal/spin): the turn passes a few microseconds after a block's
	// history launch, less than a parked goroutine's wake-up on the GPU VMs.
	window time.Duration
}

// newBlockOrder returns an order whose first ticket has the turn.
func newBlockOrder() *blockOrder {
	o := &blockOrder{window: spin.Window()}
	o.cond.L = &o.mu
	return o
}

// take reserves the next place.
func (o *blockOrder) take() uint64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	t := o.next
	o.next++
	return t
}

// wait returns when every earlier ticket is done.
func (o *blockOrder) wait(t uint64) {
	if o.window > 0 {
		spin.Until(o.window, func() bool { return o.turn.Load() == t })
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	for o.turn.Load() != t {
		o.cond.Wait()
	}
}

// done passes the turn on from t, which must hold it (wait returned).
func (o *blockOrder) done(t uint64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.turn.Load() != t {
		panic("process: blockOrder.done out of turn") // a bug of the caller, not a user's
	}
	o.turn.Add(1)
	o.cond.Broadcast()
}
