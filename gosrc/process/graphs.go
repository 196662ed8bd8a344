package process

import "github.com/vortexgo/vortexgo/gosrc/cuda"

// A block's device work (the rolling average, the clock phase, the
// spectrum kernel, the inverse FFT and the output kernel) is 3-8 driver
// launches whose arguments are the same from block to block but for the
// input and output addresses and the average's ring position, and an
// engine cycles through a fixed ring of those. Each launch costs the
// submitting thread about 4 us on the H200 host (docs/bench.md), a graph
// launch of the same kernels about one launch's price; so each slot keeps
// the graphs of the address sets it has seen repeat (package replay: a
// set captured on its second sighting, on a capture stream of the slot's
// own) and replays them instead of launching the kernels one by one
// (issue 29: the host cost per block limits small blocks).
//
// A graph is captured with exactly the arguments a direct launch would
// pass, so replaying it is the same work: nothing in it can go stale while
// its state lives (the tables, scratch, plans and events it names are the
// state's, freed with it, after the graphs). The rolling average is in the
// graph with its ring position in the key (CUDAProcessor.averagedGraph):
// that position advances with every block, but through a short cycle.
//
// Sizes are bounded: a caller that passes new arrays every call, as a
// standalone next on fresh CuPy arrays, never pays a capture; a slot keeps
// at most maxSlotGraphs graphs and remembers at most maxSlotSeen address
// sets, and past that it launches directly.
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
// prev is the event of the history's previous update, which the graph
// waits on as an external event node (another slot's averaged event).
type graphKey struct {
	in, avg, out, outInt8         uintptr
	records                       int
	histIndex, histCnt, histCount int
	prev                          *cuda.Event
}
