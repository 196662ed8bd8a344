package process

import (
	"sync"

	"github.com/vortexgo/vortexgo/gosrc/cuda"
)

// A block's device work (the rolling average, the clock phase, the
// spectrum kernel, the inverse FFT and the output kernel) is 3-8 driver
// launches whose arguments are the same from block to block but for the
// input and output addresses and the average's ring position, and an
// engine cycles through a fixed ring of those. Each launch costs the
// submitting thread about 4 us on the H200 host (docs/bench.md), a graph
// launch of the same kernels about one launch's price; so each slot keeps the graphs of the address sets it has
// seen repeat, captured on its stream, and replays them instead of
// launching the kernels one by one (issue 29: the host cost per block
// limits small blocks).
//
// A graph is captured on a stream of the slot's own, never the caller's:
// an engine's format stage enqueues an earlier block's formatting on the
// same slot stream from another goroutine, which a capture there would
// take into the graph (seen on the H200: a segfault in cuEventRecord).
// Capturing runs nothing, so the stream it happens on does not matter to
// the replay, which goes on the caller's stream in its order.
//
// A graph is captured with exactly the arguments a direct launch would
// pass, so replaying it is the same work: nothing in it can go stale while
// its state lives (the tables, scratch, plans and events it names are the
// state's, freed with it, after the graphs). The rolling average is in the
// graph with its ring position in the key (CUDAProcessor.averagedGraph):
// that position advances with every block, but through a short cycle.
//
// Sizes are bounded: an address set is captured the second time it is seen
// (a caller that passes new arrays every call, as a standalone next on
// fresh CuPy arrays, never pays a capture), a slot keeps at most
// maxSlotGraphs graphs and remembers at most maxSlotSeen address sets, and
// past that it launches directly.
//
// Only small blocks use graphs, up to maxGraphBlockSamples samples
// (AscansPerBlock x SamplesPerRecord, 2 MiB of raw uint16): there the
// launches are a large part of a block's time (a 512 KiB block uploads in
// 12 us at the H200 host's ceiling, its four launches cost the host about
// 16 us). Beyond, the launches are a few percent of the block, and on the
// H200 host 2048 x 1024 blocks ran at 0.86 of the ceiling with graphs in 3
// of 4 runs against 0.93-1.00 without (docs/bench.md; the cause is not
// known yet), so larger blocks keep the direct launches measured at the
// ceiling.
const (
	maxSlotGraphs        = 64
	maxSlotSeen          = 256
	maxGraphBlockSamples = 1 << 20
)

// graphKey is what differs between two blocks' device work in one state.
// With the rolling average in the graph (CUDAProcessor.averagedGraph),
// avg is the slot's average record and the hist fields are the history's
// ring position, records appended and valid rows for the block.
type graphKey struct {
	in, avg, out, outInt8         uintptr
	records                       int
	histIndex, histCnt, histCount int
}

// slotGraphs is one slot's graphs.
type slotGraphs struct {
	// mu serialises a slot's calls; they come in order from one goroutine
	// (the slot's submitter, or a standalone next), so it is uncontended.
	mu     sync.Mutex
	graphs map[graphKey]*cuda.Graph
	seen   map[graphKey]struct{}
	// failed is the first capture error: the slot then launches directly
	// for the rest of the state's life (a driver or cuFFT that cannot
	// capture a step works as before, only without the saving).
	failed error
	// captures and replays count, for tests and benchmarks.
	captures, replays int
}

// run enqueues a block's work on cs: its graph when the slot has one for
// k, else enqueue's launches on cs directly, capturing them on the slot's
// own stream capture into a graph first when k was seen before (then
// replayed on cs). A nil capture stream turns graphs off (CUDAProcessor's
// noGraphs, or a block too large to gain from them).
func (g *slotGraphs) run(cs, capture *cuda.Stream, k graphKey, enqueue func(*cuda.Stream) error) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if gr := g.graphs[k]; gr != nil {
		g.replays++
		return gr.Launch(cs)
	}
	direct := func() error { return enqueue(cs) }
	if capture == nil || g.failed != nil || len(g.graphs) >= maxSlotGraphs {
		return direct()
	}
	if _, again := g.seen[k]; !again {
		if g.seen == nil || len(g.seen) >= maxSlotSeen {
			g.seen = make(map[graphKey]struct{})
		}
		g.seen[k] = struct{}{}
		return direct()
	}
	// While the caller captures cs (a graph of Process calls), launch into
	// its capture directly, as without graphs. One driver query, on a miss
	// only.
	if cs.Capturing() {
		return direct()
	}
	gr, err := captureGraph(capture, func(s *cuda.Stream) error {
		if captureHook != nil {
			captureHook(cs)
		}
		return enqueue(s)
	})
	if err != nil {
		g.failed = err
		return direct()
	}
	if g.graphs == nil {
		g.graphs = make(map[graphKey]*cuda.Graph)
	}
	g.graphs[k] = gr
	delete(g.seen, k)
	g.captures++
	return gr.Launch(cs)
}

// captureHook, when set (tests), runs while a slot captures, with the
// caller's stream: other goroutines' work on that stream must run, not be
// captured.
var captureHook func(caller *cuda.Stream)

// captureGraph records enqueue's work on cs into an instantiated graph.
// Nothing runs: a failed capture leaves the stream as it was.
func captureGraph(cs *cuda.Stream, enqueue func(*cuda.Stream) error) (*cuda.Graph, error) {
	if err := cs.BeginCapture(); err != nil {
		return nil, err
	}
	werr := enqueue(cs)
	gr, err := cs.EndCaptureGraph()
	if werr != nil {
		if gr != nil {
			gr.Close()
		}
		return nil, werr
	}
	return gr, err
}

// close destroys the slot's graphs (a launched graph finishes first: the
// driver frees an executable graph in flight once it completes).
func (g *slotGraphs) close() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	var first error
	for k, gr := range g.graphs {
		if err := gr.Close(); err != nil && first == nil {
			first = err
		}
		delete(g.graphs, k)
	}
	g.seen = nil
	return first
}
