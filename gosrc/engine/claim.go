package engine

import (
	"fmt"
	"reflect"
	"strings"
	"sync"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/format"
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

// Claimer is implemented by stages whose Close must wait for the engines
// using them: the engine takes every claim a stage reports at Prepare and
// drops them when its run ends. A stage that uses another (a storage
// endpoint its file) reports both claims.
type Claimer interface {
	Claims() []*Claim
}

// Claimed reports whether an engine holds any claim that stage reports (a
// stage that is no Claimer never is): a wrapper asks before invalidating
// the names of a stage whose Close an engine's run would refuse.
func Claimed(stage any) bool {
	if c, ok := stage.(Claimer); ok {
		for _, cl := range c.Claims() {
			if cl.InUse() {
				return true
			}
		}
	}
	return false
}

// A stage serves one engine at a time (DESIGN.md section 9): an engine owns
// every stage of its configuration from its Prepare (or Own) until it is
// closed, and another engine's Prepare is refused meanwhile. A Claim alone
// could not say this: it counts the engines that run a stage so that its
// Close waits for them, and two engines sharing a stage each held one.
// They must not share: an acquisition re-pinned by a second engine's
// Prepare freed the memory the first uploaded from (a crash), and a
// processor, planner or storage driven by two running engines interleaved
// their blocks (30-75% of the stored volumes wrong, silently).
//
// The owners are kept here, keyed by the stage itself and by each Claim
// it reports, rather than in the stages: a planner or IO need not
// implement anything to be owned, and a storage two endpoints write into
// is one key (its Claim) however it is reached.
var stageOwners = ownerTable{by: map[any]int64{}}

// ownerTable maps a stage (or a Claim) to the token of the engine that
// owns it.
type ownerTable struct {
	mu sync.Mutex
	by map[any]int64
}

// stageKey is one thing an engine owns and the name its refusal gives.
type stageKey struct {
	key  any
	name string
}

// take makes owner the owner of every key, all or nothing: a key another
// owner holds fails the whole take with backend.ErrInUse naming it. Keys
// owner holds already are fine (the same engine, or a stage listed twice
// in one configuration).
func (t *ownerTable) take(owner int64, keys []stageKey) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, k := range keys {
		if o, ok := t.by[k.key]; ok && o != owner {
			return fmt.Errorf("%s belongs to another engine, which prepared it and is not closed: "+
				"a stage serves one engine at a time; close that engine (engine.close(), or drop every "+
				"reference to it) to release it, or give this engine its own %s: %w",
				k.name, k.name, backend.ErrInUse)
		}
	}
	for _, k := range keys {
		t.by[k.key] = owner
	}
	return nil
}

// release gives up every key owner holds among keys.
func (t *ownerTable) release(owner int64, keys []stageKey) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, k := range keys {
		if o, ok := t.by[k.key]; ok && o == owner {
			delete(t.by, k.key)
		}
	}
}

// owns reports whether owner holds key.
func (t *ownerTable) owns(owner int64, key any) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	o, ok := t.by[key]
	return ok && o == owner
}

// stageKeys lists what an engine over the stages owns: each stage that can
// be a map key (every stage is a pointer in practice; another kind is
// skipped rather than panicking the map) and each Claim a stage reports.
func stageKeys(stages []any) []stageKey {
	var keys []stageKey
	for _, st := range stages {
		if st == nil {
			continue
		}
		name := stageName(st)
		if v := reflect.ValueOf(st); v.Comparable() {
			keys = append(keys, stageKey{key: st, name: name})
		}
		if c, ok := st.(Claimer); ok {
			for _, cl := range c.Claims() {
				keys = append(keys, stageKey{key: cl, name: cl.label(name)})
			}
		}
		// An endpoint's executor is held with it: re-initializing it would
		// not fit the volume the endpoint was prepared with.
		if x, ok := st.(interface{ Executor() any }); ok {
			if ex := x.Executor(); ex != nil {
				if v := reflect.ValueOf(ex); v.Comparable() && !(v.Kind() == reflect.Pointer && v.IsNil()) {
					keys = append(keys, stageKey{key: ex, name: stageName(ex)})
				}
			}
		}
	}
	return keys
}

func init() {
	// The executors and planners ask through a hook: package format cannot
	// import this one, which imports it.
	format.EngineHolds = func(x any) bool {
		if x == nil || !reflect.ValueOf(x).Comparable() {
			return false
		}
		stageOwners.mu.Lock()
		defer stageOwners.mu.Unlock()
		_, ok := stageOwners.by[x]
		return ok
	}
}

// stageName is the stage's class name in messages: its Claim's name (the
// one Python shows, "StackHostTensorEndpoint"), else its Go type's.
func stageName(st any) string {
	if c, ok := st.(Claimer); ok {
		if cs := c.Claims(); len(cs) > 0 {
			if n := cs[0].label(""); n != "" {
				return n
			}
		}
	}
	n := fmt.Sprintf("%T", st)
	if i := strings.LastIndexByte(n, '.'); i >= 0 {
		n = n[i+1:]
	}
	return strings.TrimLeft(n, "*")
}

// label is the claim's name, or def when it has none.
func (c *Claim) label(def string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.what == "" {
		return def
	}
	return c.what
}
