package cuda

/*
#include "shim.h"
*/
import "C"

import (
	"fmt"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/internal/invariants"
)

// Graph is an instantiated capture (CUgraph plus its CUgraphExec).
type Graph struct {
	dev   *Device
	ctx   C.uintptr_t
	graph C.uintptr_t
	exec  C.uintptr_t
	nodes int
	g     guard // launches in flight; Close waits for them
	inv   invariants.Obj
}

var _ backend.Graph = (*Graph)(nil)

// Launch replays the graph on s (cuGraphLaunch).
func (g *Graph) Launch(s backend.Stream) error {
	const op = "cuda.Graph.Launch"
	if !g.g.enter() {
		return g.inv.Misuse(errClosed(op))
	}
	defer g.g.exit()
	cs, ok := s.(*Stream)
	if !ok || cs == nil {
		return fmt.Errorf("%s: s is %T, expected a non-nil *cuda.Stream", op, s)
	}
	if !cs.g.enter() {
		return cs.inv.Misuse(errClosed(op + ": stream"))
	}
	defer cs.g.exit()
	return errOf(C.vg_graph_launch(g.ctx, g.exec, cs.h))
}

// Nodes returns the number of nodes in the captured graph.
func (g *Graph) Nodes() int { return g.nodes }

// Close destroys the executable graph and the graph once launches in flight
// returned. Closing twice returns an error wrapping backend.ErrClosed.
func (g *Graph) Close() error {
	if !g.g.shut() {
		return g.inv.Misuse(errClosed("cuda.Graph.Close"))
	}
	g.inv.Release()
	return errOf(C.vg_graph_destroy(g.ctx, g.graph, g.exec))
}
