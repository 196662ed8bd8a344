//go:build invariants || race

package invariants

import (
	"fmt"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
)

// Enabled is true only in builds with the "invariants" or "race" tag.
const Enabled = true

// Obj tracks one object: where it was made and, once closed, where.
type Obj struct{ s *state }

type state struct {
	kind    string
	id      uintptr
	seq     uint64
	created []uintptr
	closed  atomic.Pointer[[]uintptr]
}

type lockKey struct {
	obj       any
	owner     int64
	exclusive bool
}

type lockState struct {
	kind  string
	seq   uint64
	depth int
	n     int
	stack [24]uintptr // of the first, outermost acquisition: stack[:n]
}

var (
	// mu guards live and locks. Only invariant builds take it: the hooks
	// are compiled out of the user-facing extension.
	mu    sync.Mutex
	live  = map[*state]struct{}{}
	locks = map[lockKey]*lockState{}
	// freeLocks recycles lock records: the engine takes tensor locks per
	// block, and its allocation test must hold in invariant builds too.
	freeLocks []*lockState
	seq       atomic.Uint64
	allowed   atomic.Int32 // > 0 while a test checks misuse's user-facing error
)

func callers(skip int) []uintptr {
	pc := make([]uintptr, 32)
	return pc[:runtime.Callers(skip+1, pc)]
}

// Track records a live object of kind (e.g. "cpu.Stream") with handle or
// id, and the stack that made it, until Release.
func Track(kind string, id uintptr) Obj {
	s := &state{kind: kind, id: id, seq: seq.Add(1), created: callers(2)}
	mu.Lock()
	live[s] = struct{}{}
	mu.Unlock()
	return Obj{s}
}

// Release marks the object closed: it is no longer live, and later misuse
// reports where it was closed. The first Release wins.
func (o Obj) Release() {
	if o.s == nil {
		return
	}
	st := callers(2)
	o.s.closed.CompareAndSwap(nil, &st)
	mu.Lock()
	delete(live, o.s)
	mu.Unlock()
}

// Misuse panics with a *Violation wrapping err (the error the object
// would return to a user: use after close or a second close), naming where
// the object was made and closed. Under AllowMisuse it returns err.
func (o Obj) Misuse(err error) error {
	if allowed.Load() > 0 {
		return err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "invariants: %v", err)
	if o.s != nil {
		fmt.Fprintf(&b, "\n%s %#x created at:\n%s", o.s.kind, o.s.id, formatStack(o.s.created))
		if c := o.s.closed.Load(); c != nil {
			fmt.Fprintf(&b, "closed at:\n%s", formatStack(*c))
		}
	}
	panic(&Violation{Err: err, Report: b.String()})
}

// Acquired records that owner took obj's lock (a tensor's), shared or
// exclusive; nested acquisitions count.
func Acquired(kind string, obj any, owner int64, exclusive bool) {
	k := lockKey{obj, owner, exclusive}
	mu.Lock()
	defer mu.Unlock()
	if l := locks[k]; l != nil {
		l.depth++
		return
	}
	var l *lockState
	if n := len(freeLocks); n > 0 {
		l, freeLocks = freeLocks[n-1], freeLocks[:n-1]
	} else {
		l = new(lockState)
	}
	l.kind, l.seq, l.depth = kind, seq.Add(1), 1
	l.n = runtime.Callers(2, l.stack[:])
	locks[k] = l
}

// Released records one Unlock of a lock Acquired recorded.
func Released(obj any, owner int64, exclusive bool) {
	k := lockKey{obj, owner, exclusive}
	mu.Lock()
	defer mu.Unlock()
	if l := locks[k]; l != nil {
		if l.depth--; l.depth == 0 {
			delete(locks, k)
			freeLocks = append(freeLocks, l)
		}
	}
}

// Live returns the tracked objects not yet closed and the locks still
// held, oldest first.
func Live() []Leak {
	mu.Lock()
	defer mu.Unlock()
	type item struct {
		seq  uint64
		leak Leak
	}
	var items []item
	for s := range live {
		items = append(items, item{s.seq, Leak{Kind: s.kind, ID: s.id, Stack: formatStack(s.created)}})
	}
	for k, l := range locks {
		mode := "shared"
		if k.exclusive {
			mode = "exclusive"
		}
		items = append(items, item{l.seq, Leak{
			Kind: fmt.Sprintf("%s %s lock held %d deep by owner %d", l.kind, mode, l.depth, k.owner),
			ID:   0, Lock: true, Stack: formatStack(l.stack[:l.n]),
		}})
	}
	sort.Slice(items, func(i, j int) bool { return items[i].seq < items[j].seq })
	out := make([]Leak, len(items))
	for i, it := range items {
		out[i] = it.leak
	}
	return out
}

func allowMisuse(delta int32) { allowed.Add(delta) }

// formatStack writes frames of our code and the tests, one per line,
// leaving out the runtime and testing machinery.
func formatStack(pcs []uintptr) string {
	var b strings.Builder
	frames := runtime.CallersFrames(pcs)
	for {
		f, more := frames.Next()
		if !strings.HasPrefix(f.Function, "runtime.") && !strings.HasPrefix(f.Function, "testing.") {
			fmt.Fprintf(&b, "\t%s\n\t\t%s:%d\n", f.Function, f.File, f.Line)
		}
		if !more {
			break
		}
	}
	return b.String()
}
