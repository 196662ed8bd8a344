// Package replay keeps the CUDA graphs of a stream's repeated per-block
// work, keyed by what differs from block to block, and replays them in
// place of the launches they captured.
//
// An engine cycles through a fixed ring of buffers and events, so a
// stage's work for a block (a processor slot's kernels, an endpoint's
// formatting) repeats with a few argument sets. On the GPU hosts a driver
// call costs the submitting thread 2-4 us (docs/bench.md), and one graph
// launch replaces several: a wait on the block's event, the kernels, the
// records after them (issue 29: the host's calls, not the GPU, set the
// pace of small blocks).
//
// Sizes are bounded: a key is captured the second time it is seen (a
// caller that passes new arguments every call never pays a capture), a
// cache keeps at most its graph limit and remembers at most its seen
// limit, and past that it launches directly. A failed capture turns the
// cache off for the rest of its life (a driver that cannot capture a step
// works as before, only without the saving).
package replay

import (
	"fmt"
	"sync"

	"github.com/vortexgo/vortexgo/gosrc/cuda"
	"github.com/vortexgo/vortexgo/gosrc/internal/dl"
)

// Cache is one stream's graphs by key. The zero value is not usable: New.
type Cache[K comparable] struct {
	// mu serialises Run and Close; a cache's calls come in order from one
	// goroutine, so it is uncontended.
	mu                 sync.Mutex
	graphs             map[K]*cuda.Graph
	seen               map[K]struct{}
	maxGraphs, maxSeen int
	failed             error
	captures, replays  int
	// hook, when set (tests), runs while a key is captured.
	hook func()
}

// New returns a cache that keeps up to maxGraphs graphs and remembers up
// to maxSeen keys seen once.
func New[K comparable](maxGraphs, maxSeen int) *Cache[K] {
	return &Cache[K]{maxGraphs: maxGraphs, maxSeen: maxSeen}
}

// Run enqueues k's work on cs: its graph when the cache has one, else
// enqueue's work on cs directly, captured on capture into a graph first
// (then replayed on cs) when k was seen before. A nil capture stream, or
// cs capturing already (a caller's graph of these calls), launches
// directly. enqueue must enqueue the same work for the same key: the
// cache cannot tell otherwise.
//
// The capture is on a stream of the caller's own, never cs: another
// goroutine may enqueue on cs meanwhile (an engine's format stage on a
// slot stream), which a capture there would take into the graph (seen on
// the H200: a segfault in cuEventRecord). Capturing runs nothing, so the
// stream it happens on does not matter to the replay.
func (c *Cache[K]) Run(cs, capture *cuda.Stream, k K, enqueue func(*cuda.Stream) error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if g := c.graphs[k]; g != nil {
		c.replays++
		return g.Launch(cs)
	}
	if capture == nil || c.failed != nil || len(c.graphs) >= c.maxGraphs {
		return enqueue(cs)
	}
	if _, again := c.seen[k]; !again {
		if c.seen == nil || len(c.seen) >= c.maxSeen {
			c.seen = make(map[K]struct{})
		}
		c.seen[k] = struct{}{}
		return enqueue(cs)
	}
	// One driver query, on a miss only.
	if cs.Capturing() {
		return enqueue(cs)
	}
	g, err := Capture(capture, func(s *cuda.Stream) error {
		if c.hook != nil {
			c.hook()
		}
		return enqueue(s)
	})
	if err != nil {
		c.failed = err
		return enqueue(cs)
	}
	if c.graphs == nil {
		c.graphs = make(map[K]*cuda.Graph)
	}
	c.graphs[k] = g
	delete(c.seen, k)
	c.captures++
	return g.Launch(cs)
}

// Capture records enqueue's work on cs into an instantiated graph.
// Nothing runs: a failed capture leaves the stream as it was.
func Capture(cs *cuda.Stream, enqueue func(*cuda.Stream) error) (*cuda.Graph, error) {
	if err := cs.BeginCapture(); err != nil {
		return nil, err
	}
	werr := enqueue(cs)
	g, err := cs.EndCaptureGraph()
	if werr != nil {
		if g != nil {
			g.Close()
		}
		return nil, werr
	}
	return g, err
}

// Close destroys the graphs (one in flight finishes first: the driver
// frees an executable graph once it completes) and forgets the keys; the
// cache stays usable.
func (c *Cache[K]) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var first error
	for k, g := range c.graphs {
		if err := g.Close(); err != nil && first == nil {
			first = err
		}
		delete(c.graphs, k)
	}
	c.seen = nil
	return first
}

// Stats is a cache's counts, for tests and benchmarks.
type Stats struct {
	Captures, Replays, Graphs, Seen int
	// Failed is the capture error that turned the cache off, or nil.
	Failed error
}

// Stats reports the cache's counts.
func (c *Cache[K]) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return Stats{Captures: c.captures, Replays: c.replays, Graphs: len(c.graphs), Seen: len(c.seen), Failed: c.failed}
}

// SetCaptureHook sets a function run inside each capture, before the
// work (tests: what other goroutines do meanwhile).
func (c *Cache[K]) SetCaptureHook(hook func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.hook = hook
}

// GraphsEnv is the environment variable that turns the replayed graphs
// off: "0" launches every block's work directly, as before them (an
// escape hatch should a driver replay a graph wrongly, and the baseline
// benchmarks compare with); "1" or unset replays. Read live (dl.Getenv).
const GraphsEnv = "VORTEXGO_CUDA_GRAPHS"

// Enabled reads GraphsEnv; any other value than 0, 1 or none is an error
// naming the variable: a misspelt "off" must not leave graphs on
// unnoticed.
func Enabled() (bool, error) {
	v, _ := dl.Getenv(GraphsEnv)
	switch v {
	case "0":
		return false, nil
	case "", "1":
		return true, nil
	}
	return false, fmt.Errorf("%s=%q in the environment, expected 0 (launch the kernels directly) or 1 (replay graphs, the default)", GraphsEnv, v)
}

// Record records ev on s: as an external event node when s is capturing a
// cache's graph (external: each launch records ev when the node is
// reached, and a stream that waits on ev after the launch waits for that
// point), else at once. A plain record in a capture would take ev into the
// graph, and a later wait on it from another stream would join the
// capture.
func Record(s *cuda.Stream, ev *cuda.Event, external bool) error {
	if external {
		return s.RecordExternal(ev)
	}
	return s.Record(ev)
}

// Wait makes s wait for ev: as an external event wait node when s is
// capturing a cache's graph (external: each launch waits for ev's latest
// record as of that launch), else at once. A plain wait in a capture on an
// event recorded outside it is refused (the capture's isolation).
func Wait(s *cuda.Stream, ev *cuda.Event, external bool) error {
	if external {
		return s.WaitExternal(ev)
	}
	return s.WaitEvent(ev)
}
