package backend

import (
	"errors"
	"fmt"
	"sync"
)

// EventPool recycles events of one device, so that hot paths (one event
// per block or per readback) do not create and destroy native events. All
// events of a pool have the same timing flag. It is safe for concurrent use.
//
// Events handed out by Get are tracked until Put, so returning an event
// twice, or one the pool did not create, is reported instead of silently
// giving one event to two users. Events are tracked by identity, so an
// implementation must use comparable (pointer) types, as both backends do.
type EventPool struct {
	dev    Device
	timing bool

	mu     sync.Mutex
	free   []Event
	out    map[Event]struct{} // handed out by Get, not yet Put
	closed bool
}

// NewEventPool returns an empty pool creating events on dev with the given
// timing flag. Timing events cost more to record on CUDA, so pools that do
// not measure should pass false.
func NewEventPool(dev Device, timing bool) (*EventPool, error) {
	if dev == nil {
		return nil, errors.New("backend.NewEventPool: dev=nil, expected a device")
	}
	return &EventPool{dev: dev, timing: timing, out: map[Event]struct{}{}}, nil
}

// Device returns the device the pool's events belong to.
func (p *EventPool) Device() Device { return p.dev }

// Timing reports the timing flag of the pool's events.
func (p *EventPool) Timing() bool { return p.timing }

// Get returns a released event, or a new one if none is free. A reused
// event may still carry an old record; recording it again overwrites that,
// as with any CUDA event.
func (p *EventPool) Get() (Event, error) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, fmt.Errorf("backend.EventPool.Get: %w", ErrClosed)
	}
	if n := len(p.free); n > 0 {
		ev := p.free[n-1]
		p.free[n-1] = nil
		p.free = p.free[:n-1]
		p.out[ev] = struct{}{}
		p.mu.Unlock()
		return ev, nil
	}
	p.mu.Unlock()

	// Create outside the lock: a native event creation is a driver call,
	// and other goroutines should keep recycling meanwhile.
	ev, err := p.dev.NewEvent(p.timing)
	if err != nil {
		return nil, fmt.Errorf("backend.EventPool.Get: %w", err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, errors.Join(fmt.Errorf("backend.EventPool.Get: %w", ErrClosed), ev.Close())
	}
	p.out[ev] = struct{}{}
	return ev, nil
}

// Put returns ev to the pool for reuse. ev must have come from Get and not
// have been returned since. After Close, Put closes ev instead.
func (p *EventPool) Put(ev Event) error {
	const op = "backend.EventPool.Put"
	if ev == nil {
		return fmt.Errorf("%s: ev=nil, expected an event from this pool's Get", op)
	}
	p.mu.Lock()
	if _, ok := p.out[ev]; !ok {
		p.mu.Unlock()
		return fmt.Errorf("%s: event %#x is not out of this pool, expected an event from its Get that was not returned yet", op, ev.Handle())
	}
	delete(p.out, ev)
	if p.closed {
		p.mu.Unlock()
		return ev.Close()
	}
	p.free = append(p.free, ev)
	p.mu.Unlock()
	return nil
}

// Len returns the number of free events held by the pool.
func (p *EventPool) Len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.free)
}

// Outstanding returns the number of events handed out and not yet returned.
func (p *EventPool) Outstanding() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.out)
}

// Close closes the free events. Events still out are closed when they are
// returned with Put. A second Close returns an error wrapping ErrClosed.
func (p *EventPool) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return fmt.Errorf("backend.EventPool.Close: pool already closed: %w", ErrClosed)
	}
	p.closed = true
	free := p.free
	p.free = nil
	p.mu.Unlock()

	var errs []error
	for _, ev := range free {
		errs = append(errs, ev.Close())
	}
	return errors.Join(errs...)
}
