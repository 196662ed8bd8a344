package engine

import (
	"fmt"
	"reflect"
	"strings"
	"sync"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/claim"
	"github.com/vortexgo/vortexgo/gosrc/format"
)

// Claim is claim.Claim, named here too for the stage packages above the
// engine (acquire, process), which meet it beside Claimer; the storage
// package, below the engine, names it claim.Claim.
type Claim = claim.Claim

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
				keys = append(keys, stageKey{key: cl, name: cl.Label(name)})
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
			if n := cs[0].Label(""); n != "" {
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
