package memory

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/guard"
)

// ErrPoolExhausted is wrapped by the error of a Get that found no buffer in
// time (or at once, for a Get that may not wait). It declares itself a
// timeout (Timeout() bool), so the boundary maps it without matching text.
var ErrPoolExhausted error = exhaustedError{}

type exhaustedError struct{}

func (exhaustedError) Error() string { return "buffer pool exhausted" }

// Timeout reports true: the wait for a buffer ran out.
func (exhaustedError) Timeout() bool { return true }

// Pool bounds, checked before allocating: a count of buffers over
// MaxPoolBuffers is a bad argument (backend.ErrInvalid, a ValueError naming
// it and the range, as pipeline.MaxBuffers is); a size in bytes over
// MaxPoolBytes, alone or in total, cannot be allocated
// (backend.ErrTooLarge, a MemoryError).
const (
	MaxPoolBuffers = 1 << 16
	MaxPoolBytes   = 1 << 48
)

// Policy says what Get does when no buffer is free.
type Policy int

const (
	// Grow allocates a new buffer while the pool has fewer than Max (0 =
	// no limit), then waits.
	Grow Policy = iota
	// Block never allocates after construction: Get waits for a buffer to
	// be returned and its event to complete.
	Block
)

// String returns "grow" or "block".
func (p Policy) String() string {
	if p == Block {
		return "block"
	}
	return "grow"
}

// PoolConfig configures a BufferPool.
type PoolConfig struct {
	// Size is the size of every buffer in bytes (> 0).
	Size int
	// Initial buffers are allocated by NewBufferPool.
	Initial int
	// Max caps the buffers a Grow pool allocates; 0 means no cap.
	Max int
	// Policy says whether an empty pool grows or makes Get wait.
	Policy Policy
}

// PoolStats counts a pool's buffers.
type PoolStats struct {
	// Allocated is the number of live buffers of the pool.
	Allocated int
	// Free buffers can be handed out at once.
	Free int
	// Pending buffers were returned with an event that had not completed
	// when last checked.
	Pending int
	// InUse buffers are handed out and not returned.
	InUse int
}

// pendingBuf is a returned buffer waiting for its event.
type pendingBuf struct {
	buf    backend.Buffer
	after  backend.Event
	pooled bool // after came from the pool's EventPool (PutStream)
	// watching is set while a goroutine blocks in after.Synchronize; the
	// entry is then resolved only by that goroutine, so nobody else touches
	// after (which the caller may close once the buffer is reused).
	watching bool
	done     bool
	err      error
}

// BufferPool recycles pinned buffers of one size. Buffers are handed out by
// Get and returned by Put with an event after which the buffer's last use
// (a copy on some stream) is complete; the buffer is reused only once that
// event completes. It is safe for concurrent use.
//
// Every buffer is Shared. A view of a buffer in use (Lend) holds a
// reference: a returned buffer is not handed out again while it is lent,
// and Close frees a lent buffer only when its last view lets go.
type BufferPool struct {
	alloc *Allocator
	cfg   PoolConfig

	mu        sync.Mutex
	mem       map[backend.Buffer]*Shared // every live buffer
	free      []backend.Buffer
	pending   []*pendingBuf // in return order
	inUse     map[backend.Buffer]struct{}
	allocated int // live buffers, including ones being allocated
	waiters   int
	changed   chan struct{} // closed and replaced on state changes while waiters > 0
	events    *backend.EventPool
	closed    bool
	watchers  sync.WaitGroup
}

// NewBufferPool allocates cfg.Initial pinned buffers through a.
func NewBufferPool(a *Allocator, cfg PoolConfig) (*BufferPool, error) {
	const op = "memory.NewBufferPool"
	inv := backend.ErrInvalid
	switch {
	case a == nil:
		return nil, fmt.Errorf("%s: a=nil, expected an allocator: %w", op, inv)
	case cfg.Size <= 0:
		return nil, fmt.Errorf("%s: buffer_size=%d, expected > 0: %w", op, cfg.Size, inv)
	case cfg.Initial < 0:
		return nil, fmt.Errorf("%s: pool_size=%d, expected >= 0: %w", op, cfg.Initial, inv)
	case cfg.Max < 0:
		return nil, fmt.Errorf("%s: max_size=%d, expected >= 0 (0 = no cap): %w", op, cfg.Max, inv)
	case cfg.Max > 0 && cfg.Initial > cfg.Max:
		return nil, fmt.Errorf("%s: pool_size=%d, expected pool_size <= max_size (%d): %w", op, cfg.Initial, cfg.Max, inv)
	case cfg.Policy != Grow && cfg.Policy != Block:
		return nil, fmt.Errorf("%s: Policy=%d, expected Grow or Block: %w", op, int(cfg.Policy), inv)
	case cfg.Policy == Block && cfg.Initial == 0:
		return nil, fmt.Errorf("%s: pool_size=0 with policy 'block', expected pool_size > 0 (a block pool never allocates later): %w", op, inv)
	case cfg.Initial > MaxPoolBuffers:
		return nil, fmt.Errorf("%s: pool_size=%d, expected 0 <= pool_size <= %d: %w", op, cfg.Initial, MaxPoolBuffers, inv)
	case cfg.Max > MaxPoolBuffers:
		return nil, fmt.Errorf("%s: max_size=%d, expected 0 <= max_size <= %d (0 = no cap): %w", op, cfg.Max, MaxPoolBuffers, inv)
	case cfg.Size > MaxPoolBytes || cfg.Initial > 0 && cfg.Size > MaxPoolBytes/cfg.Initial:
		return nil, fmt.Errorf("%s: pool_size=%d max_size=%d of buffer_size=%d, expected at most %d buffers and %d bytes: %w",
			op, cfg.Initial, cfg.Max, cfg.Size, MaxPoolBuffers, int64(MaxPoolBytes), backend.ErrTooLarge)
	}
	p := &BufferPool{alloc: a, cfg: cfg, mem: map[backend.Buffer]*Shared{}, inUse: map[backend.Buffer]struct{}{},
		changed: make(chan struct{})}
	for range cfg.Initial {
		buf, err := a.AllocPinned(cfg.Size)
		if err != nil {
			// Name both arguments: either may be why the memory is not there.
			return nil, errors.Join(fmt.Errorf("%s: buffer_size=%d: allocating buffer %d of pool_size=%d: %w",
				op, cfg.Size, len(p.free)+1, cfg.Initial, err), freeAll(p.free))
		}
		p.free = append(p.free, buf)
		p.mem[buf] = NewShared(buf)
		p.allocated++
	}
	return p, nil
}

// Lend is one view's reference to a buffer of a BufferPool.
type Lend struct {
	b *Borrow
	p *BufferPool
}

// Release gives the reference back (idempotent); the buffer may then be
// reused, or freed if the pool was closed and the buffer returned.
func (l *Lend) Release() error {
	err := l.b.Release()
	l.p.mu.Lock()
	l.p.broadcastLocked() // a waiting Get may now take the buffer
	l.p.mu.Unlock()
	return err
}

// Lend takes a reference to buf, which must be in use (handed out by Get
// and not returned): the buffer then stays allocated, and out of the
// pool, until the reference is released, even if it is returned or the
// pool closed meanwhile.
func (p *BufferPool) Lend(buf backend.Buffer) (*Lend, error) {
	const op = "memory.BufferPool.Lend"
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.inUse[buf]; !ok || buf == nil {
		return nil, fmt.Errorf("%s: the buffer is not in use from this pool (returned already?): %w", op, backend.ErrClosed)
	}
	b, err := p.mem[buf].Borrow()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	return &Lend{b: b, p: p}, nil
}

// lentLocked reports whether a view still holds buf.
func (p *BufferPool) lentLocked(buf backend.Buffer) bool { return p.mem[buf].Borrowers() > 0 }

// release drops the pool's reference to buf: it is freed now, or by its
// last view's Release.
func (p *BufferPool) releaseLocked(buf backend.Buffer) error {
	sh := p.mem[buf]
	delete(p.mem, buf)
	return sh.Close()
}

func freeAll(bufs []backend.Buffer) error {
	var errs []error
	for _, b := range bufs {
		errs = append(errs, b.Free())
	}
	return errors.Join(errs...)
}

// Config returns the pool's configuration.
func (p *BufferPool) Config() PoolConfig { return p.cfg }

// Stats returns the pool's counts.
func (p *BufferPool) Stats() PoolStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return PoolStats{Allocated: p.allocated, Free: len(p.free), Pending: len(p.pending), InUse: len(p.inUse)}
}

func (p *BufferPool) broadcastLocked() {
	if p.waiters > 0 {
		close(p.changed)
		p.changed = make(chan struct{})
	}
}

// GetTimeout returns a buffer: timeout < 0 waits forever, 0 does not wait,
// > 0 waits at most that long; then the error wraps ErrPoolExhausted.
func (p *BufferPool) GetTimeout(timeout time.Duration) (backend.Buffer, error) {
	var deadline <-chan time.Time
	if timeout > 0 {
		timer := time.NewTimer(timeout)
		defer timer.Stop()
		deadline = timer.C
	}
	return p.get("memory.BufferPool.GetTimeout", nil, timeout, deadline)
}

// Get returns a buffer, waiting until ctx is done if the pool is empty and
// may not grow.
func (p *BufferPool) Get(ctx context.Context) (backend.Buffer, error) {
	if ctx == nil {
		return nil, errors.New("memory.BufferPool.Get: ctx=nil, expected a context")
	}
	return p.get("memory.BufferPool.Get", ctx, -1, nil)
}

func (p *BufferPool) get(op string, ctx context.Context, timeout time.Duration, deadline <-chan time.Time) (backend.Buffer, error) {
	var done <-chan struct{}
	if ctx != nil {
		done = ctx.Done()
	}
	p.mu.Lock()
	for {
		if p.closed {
			p.mu.Unlock()
			return nil, fmt.Errorf("%s: pool: %w", op, backend.ErrClosed)
		}
		buf, err := p.takeLocked(op)
		if buf != nil || err != nil {
			p.mu.Unlock()
			return buf, err
		}
		if p.cfg.Policy == Grow && (p.cfg.Max == 0 || p.allocated < p.cfg.Max) {
			// Count the buffer before allocating, outside the lock, so
			// concurrent Gets respect Max while the driver call runs.
			p.allocated++
			p.mu.Unlock()
			return p.grow(op)
		}
		if timeout == 0 {
			err := fmt.Errorf("%s: no buffer free without waiting (%s): %w", op, p.describeLocked(), ErrPoolExhausted)
			p.mu.Unlock()
			return nil, err
		}
		p.watchLocked()
		ch := p.changed
		p.waiters++
		p.mu.Unlock()
		var timedOut, cancelled bool
		select {
		case <-ch:
		case <-deadline:
			timedOut = true
		case <-done:
			cancelled = true
		}
		p.mu.Lock()
		p.waiters--
		switch {
		case timedOut:
			err := fmt.Errorf("%s: no buffer free after %v (%s): %w", op, timeout, p.describeLocked(), ErrPoolExhausted)
			p.mu.Unlock()
			return nil, err
		case cancelled:
			err := fmt.Errorf("%s: stopped waiting for a buffer (%s): %w", op, p.describeLocked(), ctx.Err())
			p.mu.Unlock()
			return nil, err
		}
	}
}

func (p *BufferPool) describeLocked() string {
	limit := "no cap"
	if p.cfg.Policy == Block {
		limit = "block policy"
	} else if p.cfg.Max > 0 {
		limit = fmt.Sprintf("max %d", p.cfg.Max)
	}
	return fmt.Sprintf("%d allocated, %s, %d pending, %d in use", p.allocated, limit, len(p.pending), len(p.inUse))
}

// takeLocked hands out a free buffer, or else the oldest returned buffer
// whose event has completed. Events are queried (never waited for), so Get
// does not block the host while some buffer is reusable.
func (p *BufferPool) takeLocked(op string) (backend.Buffer, error) {
	for i := len(p.free) - 1; i >= 0; i-- {
		buf := p.free[i]
		if p.lentLocked(buf) {
			continue // a view of its last use is still alive
		}
		p.free = append(p.free[:i], p.free[i+1:]...)
		p.inUse[buf] = struct{}{}
		return buf, nil
	}
	for i, e := range p.pending {
		if p.lentLocked(e.buf) {
			continue
		}
		if !e.done {
			if e.watching {
				continue // its watcher will resolve it
			}
			complete, err := e.after.Query()
			if err != nil {
				return nil, fmt.Errorf("%s: querying the event of a returned buffer: %w", op, err)
			}
			if !complete {
				continue
			}
		}
		if e.err != nil {
			return nil, fmt.Errorf("%s: waiting for the event of a returned buffer: %w", op, e.err)
		}
		p.pending = append(p.pending[:i], p.pending[i+1:]...)
		if err := p.recycleEvent(e); err != nil {
			// The buffer is reusable; only the event's return failed.
			p.free = append(p.free, e.buf)
			return nil, fmt.Errorf("%s: %w", op, err)
		}
		p.inUse[e.buf] = struct{}{}
		return e.buf, nil
	}
	return nil, nil
}

func (p *BufferPool) recycleEvent(e *pendingBuf) error {
	if e.pooled {
		return p.events.Put(e.after)
	}
	return nil
}

// watchLocked starts a goroutine per pending buffer that blocks in its
// event's Synchronize and wakes waiters when it completes: a waiting Get
// then sleeps on a channel instead of polling events.
func (p *BufferPool) watchLocked() {
	for _, e := range p.pending {
		if e.done || e.watching {
			continue
		}
		e.watching = true
		p.watchers.Add(1)
		go func() {
			defer p.watchers.Done()
			// A panic is this buffer's wait error (Get reports it), and
			// the waiters are still woken below.
			err := guard.Call("memory.BufferPool: event watcher", e.after.Synchronize)
			p.mu.Lock()
			e.done, e.err, e.watching = true, err, false
			p.broadcastLocked()
			p.mu.Unlock()
		}()
	}
}

func (p *BufferPool) grow(op string) (backend.Buffer, error) {
	buf, err := p.alloc.AllocPinned(p.cfg.Size)
	p.mu.Lock()
	defer p.mu.Unlock()
	if err != nil {
		p.allocated--
		p.broadcastLocked() // a waiter may grow instead
		return nil, fmt.Errorf("%s: growing the pool by a buffer of buffer_size=%d: %w", op, p.cfg.Size, err)
	}
	if p.closed {
		p.allocated--
		return nil, errors.Join(fmt.Errorf("%s: pool: %w", op, backend.ErrClosed), buf.Free())
	}
	p.mem[buf] = NewShared(buf)
	p.inUse[buf] = struct{}{}
	return buf, nil
}

// Put returns buf, reusable once after completes. after == nil means the
// buffer is reusable now. The pool keeps after and queries it; the caller
// must not close or re-record it until the pool hands the buffer out again
// or is closed. After Close, Put waits for after and frees buf.
func (p *BufferPool) Put(buf backend.Buffer, after backend.Event) error {
	return p.put("memory.BufferPool.Put", buf, after, false)
}

// PutAfter returns buf, reusable once the work issued so far to s is done
// (PutStream) when s is given, else once after completes (Put; both nil:
// now): the one entry for callers that hold either.
func (p *BufferPool) PutAfter(buf backend.Buffer, after backend.Event, s backend.Stream) error {
	if s != nil {
		return p.PutStream(buf, s)
	}
	return p.Put(buf, after)
}

// PutStream returns buf, reusable once the work issued so far to s is
// complete. The pool records an event of its own on s, so the caller has no
// event lifetime to manage.
func (p *BufferPool) PutStream(buf backend.Buffer, s backend.Stream) error {
	const op = "memory.BufferPool.PutStream"
	if s == nil {
		return fmt.Errorf("%s: s=nil, expected the stream of the buffer's last use", op)
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return p.putAfterClose(op, buf, s)
	}
	if p.events == nil {
		var err error
		if p.events, err = backend.NewEventPool(p.alloc.Device(), false); err != nil {
			p.mu.Unlock()
			return fmt.Errorf("%s: %w", op, err)
		}
	}
	events := p.events
	p.mu.Unlock()
	ev, err := events.Get()
	if errors.Is(err, backend.ErrClosed) {
		return p.putAfterClose(op, buf, s) // Close ran meanwhile
	}
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	if err := s.Record(ev); err != nil {
		return errors.Join(fmt.Errorf("%s: %w", op, err), events.Put(ev))
	}
	if err := p.put(op, buf, ev, true); err != nil {
		return errors.Join(err, events.Put(ev))
	}
	return nil
}

// putAfterClose frees buf once s is idle. Teardown: the buffer's last use
// may still be queued on s, and freeing pinned memory under a DMA is worse
// than a host wait.
func (p *BufferPool) putAfterClose(op string, buf backend.Buffer, s backend.Stream) error {
	if err := s.Synchronize(); err != nil {
		return fmt.Errorf("%s: waiting for the buffer's last use: %w", op, err)
	}
	return p.put(op, buf, nil, false)
}

func (p *BufferPool) put(op string, buf backend.Buffer, after backend.Event, pooled bool) error {
	if buf == nil {
		return fmt.Errorf("%s: buf=nil, expected a buffer from this pool's Get: %w", op, backend.ErrInvalid)
	}
	p.mu.Lock()
	if _, ok := p.inUse[buf]; !ok {
		p.mu.Unlock()
		return fmt.Errorf("%s: buffer %#x is not in use from this pool, expected a buffer from its Get that was not returned yet: %w",
			op, buf.Ptr(), backend.ErrInvalid)
	}
	delete(p.inUse, buf)
	if p.closed {
		p.allocated--
		sh := p.mem[buf]
		delete(p.mem, buf)
		p.mu.Unlock()
		// Teardown: the buffer's last copy may still be running, and
		// freeing pinned memory under a DMA is worse than a short wait.
		var waitErr error
		if after != nil {
			waitErr = after.Synchronize()
			if pooled {
				waitErr = errors.Join(waitErr, p.events.Put(after))
			}
		}
		return errors.Join(waitErr, sh.Close())
	}
	if after == nil {
		p.free = append(p.free, buf)
	} else {
		p.pending = append(p.pending, &pendingBuf{buf: buf, after: after, pooled: pooled})
	}
	p.broadcastLocked()
	p.mu.Unlock()
	return nil
}

// Close frees the free buffers and, after waiting for their events, the
// returned ones; buffers still in use are freed when they are Put. Waiting
// Gets fail with backend.ErrClosed. A second Close is an error.
func (p *BufferPool) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return fmt.Errorf("memory.BufferPool.Close: pool already closed: %w", backend.ErrClosed)
	}
	p.closed = true
	free, pending := p.free, p.pending
	p.free, p.pending = nil, nil
	shared := make(map[backend.Buffer]*Shared, len(free)+len(pending))
	for _, b := range free {
		shared[b] = p.mem[b]
		delete(p.mem, b)
	}
	for _, e := range pending {
		shared[e.buf] = p.mem[e.buf]
		delete(p.mem, e.buf)
	}
	p.allocated -= len(free) + len(pending)
	var unfinished []backend.Event
	for _, e := range pending {
		if !e.done {
			unfinished = append(unfinished, e.after)
		}
	}
	p.broadcastLocked()
	p.mu.Unlock()

	var errs []error
	for _, ev := range unfinished {
		// Host wait on purpose: teardown must not free pinned memory that
		// a queued copy still uses. Concurrent watchers' Synchronize calls
		// on the same event are harmless.
		errs = append(errs, ev.Synchronize())
	}
	// Watchers touch their events until they return; wait for them before
	// giving events back or letting the caller close its own.
	p.watchers.Wait()
	// Each buffer is freed now, or by the Release of its last view.
	for _, e := range pending {
		errs = append(errs, p.recycleEvent(e), shared[e.buf].Close())
	}
	for _, b := range free {
		errs = append(errs, shared[b].Close())
	}
	// No event pool is created once closed is set, so reading it now is
	// final. Events still out of it are closed when Put back.
	p.mu.Lock()
	events := p.events
	p.mu.Unlock()
	if events != nil {
		errs = append(errs, events.Close())
	}
	return errors.Join(errs...)
}
