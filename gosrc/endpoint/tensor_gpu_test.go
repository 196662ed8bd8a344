//go:build gpu

package endpoint

import (
	"os"
	"os/exec"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/cuda"
	"github.com/vortexgo/vortexgo/gosrc/engine"
	"github.com/vortexgo/vortexgo/gosrc/format"
)

// formatRig is a spectra device tensor endpoint (one segment of records
// raw spectra) and what its GPU tests feed it: blocks on streams of their
// own, a gigabyte to keep a stream busy, pinned memory to read back.
type formatRig struct {
	dev  *cuda.Device
	e    *StackTensorEndpoint
	host backend.Buffer
	busy backend.Buffer
	plan *engine.FormatPlan
}

const rigSamples, rigRecords = 1024, 64
const rigValues = rigSamples * rigRecords

// newFormatRig prepares the endpoint for blocks of up to recordsPerBlock
// records of rigSamples (the rig's blocks hold rigRecords): below
// ownStreamBelow samples it formats on its own stream, from it on the
// blocks' processing streams.
func newFormatRig(t *testing.T, recordsPerBlock int) *formatRig {
	return newFormatRigPerSlot(t, recordsPerBlock, 0)
}

// newFormatRigPerSlot is newFormatRig for an engine cycling blocksPerSlot
// blocks on each slot (EndpointInfo.BlocksPerSlot).
func newFormatRigPerSlot(t *testing.T, recordsPerBlock, blocksPerSlot int) *formatRig {
	dev, err := cuda.GetDevice(0)
	require.NoError(t, err)
	e, err := NewSpectraStackDeviceTensorEndpoint()
	require.NoError(t, err)
	require.NoError(t, e.Prepare(engine.EndpointInfo{Device: dev, Owner: 1, RecordsPerBlock: recordsPerBlock, RawSamples: rigSamples,
		OutputSamples: rigSamples, SegmentsPerVolume: 1, RecordsPerSegment: rigRecords, BlocksPerSlot: blocksPerSlot}))
	t.Cleanup(func() { require.NoError(t, e.Close()) })
	r := &formatRig{dev: dev, e: e, plan: &engine.FormatPlan{Actions: []format.Action{copyAction(0, rigRecords, 0, 0, false)}}}
	r.host, err = dev.AllocPinned(2 * rigValues)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, r.host.Free()) })
	r.busy, err = dev.Alloc(1 << 30)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, r.busy.Free()) })
	return r
}

// block uploads a block of raw spectra all equal to value, to be processed
// on a stream of its own (BlockData.Stream); its ready event is not
// recorded yet.
func (r *formatRig) block(t *testing.T, id int64, value uint16) *engine.BlockData {
	s, err := r.dev.NewStream(0)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	raw, err := r.dev.Alloc(2 * rigValues)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, raw.Free()) })
	ready, err := r.dev.NewEvent(false)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, ready.Close()) })
	v := hostView[uint16](r.host.Ptr(), rigValues)
	for j := range v {
		v[j] = value
	}
	require.NoError(t, s.Copy(raw.Ptr(), r.host.Ptr(), 2*rigValues))
	require.NoError(t, s.Synchronize())
	return &engine.BlockData{Block: &engine.Block{ID: id}, Records: rigRecords, Raw: raw.Ptr(), RawSamples: rigSamples,
		OutputSamples: rigSamples, Ready: ready, Stream: s}
}

// delay queues milliseconds of memsets on s.
func (r *formatRig) delay(t *testing.T, s backend.Stream) {
	for range 16 {
		require.NoError(t, s.Memset(r.busy.Ptr(), 0, 1<<30))
	}
}

// requireAll reads src (rigValues uint16s) back on the endpoint's stream
// alone and requires every value to be want.
func (r *formatRig) requireAll(t *testing.T, src uintptr, want uint16, what string) {
	s := r.e.Stream()
	require.NoError(t, s.Copy(r.host.Ptr(), src, 2*rigValues))
	require.NoError(t, s.Synchronize())
	for j, v := range hostView[uint16](r.host.Ptr(), rigValues) {
		if v != want {
			t.Fatalf("%s: cell %d = %d, expected %d", what, j, v, want)
		}
	}
}

// formatPlaces are the two places a device tensor endpoint formats a
// block: its own stream (small blocks) and the block's processing stream.
var formatPlaces = []struct {
	name            string
	recordsPerBlock int
	own             bool
}{
	{"small blocks, the endpoint's stream", rigRecords, true},
	{"large blocks, the processing streams", ownStreamBelow / rigSamples, false},
}

// TestDeviceTensorFormatsInBlockOrderAcrossStreams: two blocks writing the
// same cells, processed on two streams, land in block order, the second
// block's values winning while the first block's stream is busy, and work
// queued on the endpoint's own stream afterwards (a user's readback) sees
// both; whether the endpoint formats on its own stream (small blocks) or on
// each block's processing stream (BlockData.Stream).
func TestDeviceTensorFormatsInBlockOrderAcrossStreams(t *testing.T) {
	for _, tc := range formatPlaces {
		t.Run(tc.name, func(t *testing.T) {
			r := newFormatRig(t, tc.recordsPerBlock)
			require.Equal(t, tc.own, r.e.ownStream)
			blocks := []*engine.BlockData{r.block(t, 0, 1), r.block(t, 1, 2)}
			// Milliseconds of work ahead of the first block on its stream:
			// without the order between the endpoint's blocks, the second
			// block (on an idle stream) would be formatted first and then
			// overwritten.
			r.delay(t, blocks[0].Stream)
			for _, b := range blocks {
				require.NoError(t, b.Stream.Record(b.Ready))
				require.NoError(t, r.e.Format(b, r.plan))
			}
			// Where the second block is formatted: after the first block's
			// formatting, so that stream is still busy; the second block's
			// own processing stream is idle when formatting is not there.
			done, err := blocks[1].Stream.Query()
			require.NoError(t, err)
			require.Equal(t, tc.own, done, "the second block's processing stream runs its formatting only for large blocks")
			done, err = r.e.Stream().Query()
			require.NoError(t, err)
			require.False(t, done, "the endpoint's stream follows the formatting")
			// Only the endpoint's stream is synchronized: it must follow both.
			r.requireAll(t, r.e.Tensor().Ptr(), 2, "the tensor (the second block's value)")
		})
	}
}

// TestDeviceTensorFormatFollowsChainedWork: work a user chained on the
// endpoint's stream (a volume_callback's reduction of the volume, delayed
// here behind milliseconds of memsets) reads the tensor before the next
// block overwrites it, wherever that block is formatted.
func TestDeviceTensorFormatFollowsChainedWork(t *testing.T) {
	for _, tc := range formatPlaces {
		t.Run(tc.name, func(t *testing.T) {
			r := newFormatRig(t, tc.recordsPerBlock)
			snap, err := r.dev.Alloc(2 * rigValues)
			require.NoError(t, err)
			t.Cleanup(func() { require.NoError(t, snap.Free()) })
			for i := range 2 {
				b := r.block(t, int64(i), uint16(i+1))
				require.NoError(t, b.Stream.Record(b.Ready))
				require.NoError(t, r.e.Format(b, r.plan))
				if i == 0 {
					// The user's handler: a slow reduction of the first
					// volume, chained on the endpoint's stream.
					us := r.e.Stream()
					r.delay(t, us)
					require.NoError(t, us.Copy(snap.Ptr(), r.e.Tensor().Ptr(), 2*rigValues))
				}
			}
			r.requireAll(t, snap.Ptr(), 1, "the chained read (the first block's value)")
			r.requireAll(t, r.e.Tensor().Ptr(), 2, "the tensor after both blocks")
		})
	}
}

// TestGPUPrepareCompilesTheFormatKernel: an endpoint's format kernel is
// compiled when it is prepared, not when the engine formats its first
// block (format.Prepare): with the driver's JIT cache empty that compile
// held the first block for 2 s on an H100 host. Modules are cached per
// process, so the check runs in a fresh one: nothing is compiled before
// Prepare, the format module is after it.
func TestGPUPrepareCompilesTheFormatKernel(t *testing.T) {
	if os.Getenv("VORTEXGO_FRESH_PREPARE") == "" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestGPUPrepareCompilesTheFormatKernel$", "-test.count=1")
		cmd.Env = append(os.Environ(), "VORTEXGO_FRESH_PREPARE=1")
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
		return
	}
	dev, err := cuda.GetDevice(0)
	require.NoError(t, err)
	require.False(t, dev.Loaded("kernels/format"), "a fresh process has compiled nothing")
	e, err := NewSpectraStackDeviceTensorEndpoint()
	require.NoError(t, err)
	require.NoError(t, e.Prepare(engine.EndpointInfo{Device: dev, Owner: 1, RecordsPerBlock: rigRecords, RawSamples: rigSamples,
		OutputSamples: rigSamples, SegmentsPerVolume: 1, RecordsPerSegment: rigRecords}))
	t.Cleanup(func() { require.NoError(t, e.Close()) })
	require.True(t, dev.Loaded("kernels/format"), "Prepare compiled the format kernels")
}

// TestDeviceTensorFormatGraphs: small blocks' formatting replayed as
// graphs (replay.go) waits for each block's ready event at each launch
// (the block's values are written behind milliseconds of work on its
// stream), and the done event it records covers the kernel (the tensor is
// read on a third stream after done alone); two blocks alternating are
// each captured once and replayed after.
func TestDeviceTensorFormatGraphs(t *testing.T) {
	r := newFormatRigPerSlot(t, rigRecords, 2)
	require.True(t, r.e.ownStream)
	require.NotNil(t, r.e.graphs, "graphs on the endpoint's own CUDA stream, with few blocks per slot")
	blocks := []*engine.BlockData{r.block(t, 0, 0), r.block(t, 1, 0)}
	var dones []backend.Event
	for range blocks {
		ev, err := r.dev.NewEvent(false)
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, ev.Close()) })
		dones = append(dones, ev)
	}
	reader, err := r.dev.NewStream(0)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, reader.Close()) })
	for round := range 6 {
		b, done := blocks[round%2], dones[round%2]
		val := byte(round + 1)
		r.delay(t, b.Stream)
		require.NoError(t, b.Stream.Memset(b.Raw, val, 2*rigValues))
		require.NoError(t, b.Stream.Record(b.Ready))
		recorded, err := r.e.FormatDone(b, r.plan, done)
		require.NoError(t, err)
		require.True(t, recorded, "round %d: the endpoint records done", round)
		how := "after done"
		if round%2 == 0 {
			require.NoError(t, done.Synchronize())
		} else {
			// A reader on its own stream, no host wait: the tensor's ready
			// event, deferred by the endpoint, is recorded by this wait
			// behind the graph still waiting for the block's milliseconds.
			how = "after the tensor's WaitReady"
			require.NoError(t, r.e.Tensor().WaitReady(reader))
		}
		require.NoError(t, reader.Copy(r.host.Ptr(), r.e.Tensor().Ptr(), 2*rigValues))
		require.NoError(t, reader.Synchronize())
		want := uint16(val)<<8 | uint16(val)
		for j, v := range hostView[uint16](r.host.Ptr(), rigValues) {
			if v != want {
				t.Fatalf("round %d: cell %d = %d, expected %d (the block's values, %s)", round, j, v, want, how)
			}
		}
	}
	st := r.e.graphs.cache.Stats()
	require.NoError(t, st.Failed)
	require.Equal(t, 2, st.Captures, "each block's key captured on its second sighting")
	require.Equal(t, 2, st.Replays)
	// Without a done event (a sync endpoint's earlier parts) the endpoint
	// records none and says so.
	b := blocks[0]
	require.NoError(t, b.Stream.Record(b.Ready))
	recorded, err := r.e.FormatDone(b, r.plan, nil)
	require.NoError(t, err)
	require.False(t, recorded)
	require.NoError(t, r.e.Stream().Synchronize())
}
