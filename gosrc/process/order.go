package process

import "sync"

// blockOrder hands out places in a processor's block order (tickets) and
// lets each caller run its ordered part in turn, whatever goroutine it
// runs on: the engine's slot submitters (engine.OrderedProcessor) submit
// blocks concurrently, while the rolling average's history must see them
// in the order they were acquired.
type blockOrder struct {
	mu         sync.Mutex
	cond       sync.Cond
	next, turn uint64
}

// newBlockOrder returns an order whose first ticket has the turn.
func newBlockOrder() *blockOrder {
	o := &blockOrder{}
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
	o.mu.Lock()
	defer o.mu.Unlock()
	for o.turn != t {
		o.cond.Wait()
	}
}

// done passes the turn on from t, which must hold it (wait returned).
func (o *blockOrder) done(t uint64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.turn != t {
		panic("process: blockOrder.done out of turn") // a bug of the caller, not a user's
	}
	o.turn++
	o.cond.Broadcast()
}
