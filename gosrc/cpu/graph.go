package cpu

import (
	"fmt"
	"sync"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/internal/invariants"
)

// Graph is a recorded sequence of host operations, replayed in order by
// Launch.
type Graph struct {
	ops []func() // immutable after EndCapture

	mu     sync.Mutex
	closed bool
	inv    invariants.Obj
}

var _ backend.Graph = (*Graph)(nil)

// Launch replays the graph on s, which must be a host stream (a CPU stream
// or any backend.HostStream). The whole replay is one operation in s's
// order; if s is capturing, the replay is recorded into its graph as one
// node, like a child graph node on CUDA.
func (g *Graph) Launch(s backend.Stream) error {
	const op = "cpu.Graph.Launch"
	g.mu.Lock()
	closed := g.closed
	g.mu.Unlock()
	if closed {
		return g.inv.Misuse(fmt.Errorf("%s: %w", op, backend.ErrClosed))
	}
	hs, ok := s.(backend.HostStream)
	if !ok {
		return fmt.Errorf("%s: stream is a %T, expected a host stream (backend.HostStream)", op, s)
	}
	ops := g.ops
	return hs.Enqueue(func() {
		for _, f := range ops {
			f()
		}
	})
}

// Nodes returns the number of recorded operations.
func (g *Graph) Nodes() int { return len(g.ops) }

// Close releases the graph; a second Close returns an error wrapping
// backend.ErrClosed.
func (g *Graph) Close() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return g.inv.Misuse(fmt.Errorf("cpu.Graph.Close: graph already closed: %w", backend.ErrClosed))
	}
	g.closed = true
	g.inv.Release()
	return nil
}
