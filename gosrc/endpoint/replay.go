package endpoint

import (
	"errors"
	"fmt"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/cuda"
	"github.com/vortexgo/vortexgo/gosrc/engine"
	"github.com/vortexgo/vortexgo/gosrc/format"
	"github.com/vortexgo/vortexgo/gosrc/replay"
)

// A small block's formatting on a tensor endpoint's own stream (ownStream)
// is three driver calls: the wait for the block's ready event, the stack
// kernel and the engine's done event (the tensor's ready event is recorded
// only when a reader asks: memory.DeviceTensor.Written), 10.0 us a block
// of the engine's format goroutine at 32 / 16 on the H200 host (11.5 with
// the tensor's record as a fourth, in session 45; host_cost.py --stages,
// profiler on). They are the same from block to block but for the block's
// events and buffers and where the block lands in the volume, which cycle
// with the engine's ring and the volume's segments; so the endpoint can
// replay them as one graph (package replay) with the events as external
// event nodes: one driver call a block.
//
// It does only with few blocks per slot (EndpointInfo.BlocksPerSlot <= 2,
// vortex's 4 blocks on 2 slots as allocated: a GPU engine cycles 32 below
// 2 MiB a block unless engine.DeviceBlocksEnv says otherwise), where a block's round trip through the
// stages sets the pace: there 1024 x 256 blocks took 18% less time
// (interleaved on the H200, docs/bench.md "Formatting as a graph"). With 8
// blocks on 2 slots they took 3% more, with 32 6%: the graphs' launches
// follow one another on the endpoint's one stream, and a graph's own time
// on the device, not the host's calls, was then the bound.
const (
	maxFormatGraphs = 128 // a pool of 32 blocks in 32 places of a volume (its ring cycles, not every pair)
	maxFormatSeen   = 512
	maxGraphCopies  = 4 // a block's copies into the volume after merging (stackRuns): one in a raster
)

// formatKey is what differs between two blocks' formatting graphs.
type formatKey struct {
	ready, done           *cuda.Event
	vol, raw, proc, int8s uintptr
	records               int
	copies                [maxGraphCopies]copyKey
}

// copyKey is a Copy action's part of the launch (its sample and indices
// are the notifications', not the kernel's).
type copyKey struct {
	count, blockOffset, bufferSegment, bufferRecord int
	reverse                                         bool
}

// formatGraphs is the endpoint's graphs and the stream they are captured
// on (not the endpoint's: users chain work there).
type formatGraphs struct {
	cache   *replay.Cache[formatKey]
	capture *cuda.Stream
}

// resetGraphs drops the graphs of the previous engine (its events and
// buffers) and makes the capture stream on s's device when the endpoint
// formats on its own CUDA stream with few blocks per slot (fewBlocks) and
// graphs enabled (replay.Enabled).
func (e *StackTensorEndpoint) resetGraphs() error {
	err := e.closeGraphs()
	cs, ok := e.stream.(*cuda.Stream)
	if !ok || !e.ownStream || e.hostSrc != nil {
		return err
	}
	on, eerr := replay.Enabled()
	if eerr != nil {
		return errors.Join(err, backend.Invalidf("%s.Prepare: %v", e.name, eerr))
	}
	if !on || !e.fewBlocks {
		return err
	}
	capture, cerr := cs.CUDADevice().CreateStream(0)
	if cerr != nil {
		return errors.Join(err, fmt.Errorf("%s.Prepare: capture stream: %w", e.name, cerr))
	}
	e.graphs = &formatGraphs{cache: replay.New[formatKey](maxFormatGraphs, maxFormatSeen), capture: capture}
	return err
}

// closeGraphs destroys the graphs and the capture stream.
func (e *StackTensorEndpoint) closeGraphs() error {
	g := e.graphs
	if g == nil {
		return nil
	}
	e.graphs = nil
	return errors.Join(g.cache.Close(), g.capture.Close())
}

// graphKey is the key of b's formatting by plan with the engine's done
// event (nil: none to record), and whether the block can be replayed: on
// the endpoint's own CUDA stream, with the stack executor, its events the
// driver's, at most maxGraphCopies copies.
func (e *StackTensorEndpoint) graphKey(b *engine.BlockData, plan *engine.FormatPlan, done backend.Event) (formatKey, bool) {
	var k formatKey
	if e.graphs == nil {
		return k, false
	}
	if _, stack := e.f.exec.(*format.StackFormatExecutor); !stack {
		return k, false
	}
	ready, ok := b.Ready.(*cuda.Event)
	if !ok {
		return k, false
	}
	k.ready = ready
	if done != nil {
		if k.done, ok = done.(*cuda.Event); !ok {
			return k, false
		}
	}
	n := 0
	for i := range plan.Actions {
		a := &plan.Actions[i]
		if a.Kind != format.Copy || a.Count == 0 {
			continue
		}
		if n == maxGraphCopies {
			return k, false
		}
		k.copies[n] = copyKey{a.Count, a.BlockOffset, a.BufferSegment, a.BufferRecord, a.Reverse}
		n++
	}
	k.vol, k.raw, k.proc, k.int8s, k.records = e.tensor.Ptr(), b.Raw, b.Processed, b.Int8, b.Records
	return k, true
}

// FormatDone is Format recording the engine's done event too
// (engine.DoneFormatter): where the block can be replayed (graphKey), the
// wait for the block, its kernels and the record of done go
// out as one graph launch on the endpoint's stream.
func (e *StackTensorEndpoint) FormatDone(b *engine.BlockData, plan *engine.FormatPlan, done backend.Event) (bool, error) {
	k, ok := e.graphKey(b, plan, done)
	if !ok {
		return false, e.Format(b, plan)
	}
	cs := e.stream.(*cuda.Stream)                                        // resetGraphs made graphs for a CUDA stream only
	if err := lockFormat(e.ctx, e.name, e.tensor, e.owner); err != nil { // as Format
		return false, err
	}
	err := e.graphs.cache.Run(cs, e.graphs.capture, k, func(s *cuda.Stream) error {
		return e.formatWork(s, s == e.graphs.capture, b, plan, k.done)
	})
	if err := publish(e.name, e.tensor, e.stream, e.owner, err); err != nil {
		return false, err
	}
	return k.done != nil, nil
}

// formatWork enqueues a block's formatting on s: the wait for the block's
// ready event, the kernels, then the record of done (when not nil); into a
// capture (external) the events are external event nodes, recorded and
// waited for at each launch. The tensor's ready event is publish's, which
// defers it (memory.DeviceTensor.Written).
func (e *StackTensorEndpoint) formatWork(s *cuda.Stream, external bool, b *engine.BlockData, plan *engine.FormatPlan, done *cuda.Event) error {
	if err := replay.Wait(s, b.Ready.(*cuda.Event), external); err != nil { // graphKey checked the type
		return err
	}
	if err := e.format(s, b, plan); err != nil {
		return err
	}
	if done != nil {
		return replay.Record(s, done, external)
	}
	return nil
}

var _ engine.DoneFormatter = (*StackTensorEndpoint)(nil)
