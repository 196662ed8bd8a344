// Package claim marks a stage (acquisition, processor, endpoint, storage)
// as used by an engine, so that closing it while the engine runs is
// refused instead of freeing what the engine still reads and writes.
//
// It sits below both the engine, which takes and drops the claims, and the
// stage packages (storage, acquire, process, endpoint), whose Close goes
// through one: a storage file needs no import of the engine to refuse it.
package claim

import (
	"fmt"
	"sync"

	"github.com/vortexgo/vortexgo/gosrc/backend"
)

// Claim marks a stage (acquisition, processor, endpoint, storage) as used
// by an engine, from the engine's Prepare until its run ends (or the engine
// is closed without running). While claimed, the stage's Close refuses with
// backend.ErrInUse instead of freeing memory or streams the engine still
// reads and writes: closing something in use raises, it never frees under
// a user (DESIGN.md section 7). The zero value is an unclaimed, open stage.
//
// Refusing was chosen over deferring the close until the engine stops: a
// deferred close would leave the user's call returning while the object is
// still half alive, and a storage file closed "later" would lose the
// volumes its caller expected to be final.
type Claim struct {
	mu     sync.Mutex
	what   string // the stage's name in messages
	users  int
	closed bool
}

// Name sets the stage's name used in messages ("SimulatedAcquisition").
func (c *Claim) Name(what string) {
	c.mu.Lock()
	c.what = what
	c.mu.Unlock()
}

// Take claims the stage for an engine; it fails with backend.ErrClosed
// once the stage was closed.
func (c *Claim) Take() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return fmt.Errorf("%s is closed, expected an open one: %w", c.name(), backend.ErrClosed)
	}
	c.users++
	return nil
}

// Err is nil while the stage is open and wraps backend.ErrClosed, naming
// op and the stage, once it was closed: the stage's own methods check it
// so that a closed stage is told apart from one never prepared.
func (c *Claim) Err(op string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return fmt.Errorf("%s: %s is closed: %w", op, c.name(), backend.ErrClosed)
	}
	return nil
}

// Drop releases one Take.
func (c *Claim) Drop() {
	c.mu.Lock()
	if c.users > 0 {
		c.users--
	}
	c.mu.Unlock()
}

// InUse reports whether an engine holds the claim.
func (c *Claim) InUse() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.users > 0
}

// Users reports how many engines hold the claim: a stage that replaces
// memory an engine uploads from (a source re-pinned by a second engine's
// Prepare) may do so only while the engine asking is the one user.
func (c *Claim) Users() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.users
}

// Close runs release (the stage's freeing) unless an engine holds the
// claim, in which case it returns backend.ErrInUse naming the stage and
// what to do. release runs under the claim's lock, so no engine can take
// the stage while it is being freed; after a successful Close, Take fails.
// Closing a closed stage is a no-op.
func (c *Claim) Close(release func() error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	if c.users > 0 {
		return fmt.Errorf("closing %s: it is used by an engine that has not finished; "+
			"stop the engine first (engine.stop(), or wait() for the end of its run; engine.close() "+
			"for an engine that was prepared but never started), then close it: %w",
			c.name(), backend.ErrInUse)
	}
	if err := release(); err != nil {
		return err
	}
	c.closed = true
	return nil
}

// Reopen marks a closed stage open again (a storage file opened anew).
func (c *Claim) Reopen() {
	c.mu.Lock()
	c.closed = false
	c.mu.Unlock()
}

func (c *Claim) name() string {
	if c.what == "" {
		return "the stage"
	}
	return c.what
}

// Label is the claim's name, or def when it has none (the engine names
// the stages it refuses by it).
func (c *Claim) Label(def string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.what == "" {
		return def
	}
	return c.what
}
