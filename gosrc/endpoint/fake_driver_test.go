//go:build !gpu

package endpoint

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/cuda"
	"github.com/vortexgo/vortexgo/gosrc/engine"
	"github.com/vortexgo/vortexgo/gosrc/format"
	"github.com/vortexgo/vortexgo/gosrc/internal/fakecudatest"
	"github.com/vortexgo/vortexgo/gosrc/replay"
)

// The formatting graphs (replay.go) are host logic around driver calls:
// which block captures, which replays, when an endpoint has graphs at all.
// They run here without a GPU against gosrc/cuda's fake driver, which
// counts its calls and keeps the driver's capture rules; the values and the
// waits are checked on the GPU (TestDeviceTensorFormatGraphs).

const fakeChildEnv = "VORTEXGO_ENDPOINT_FAKE_CHILD"

func TestFormatGraphsOnTheFakeDriver(t *testing.T) {
	fakecudatest.Run(t, filepath.Join("..", "cuda", "testdata"), "TestFormatGraphsOnTheFakeDriverChild", fakeChildEnv)
}

func TestFormatGraphsOnTheFakeDriverChild(t *testing.T) {
	if os.Getenv(fakeChildEnv) == "" {
		t.Skip("only runs as the child of TestFormatGraphsOnTheFakeDriver")
	}
	require.NoError(t, cuda.Init())
	calls := fakecudatest.Sym[[13]int64](t, cuda.DriverPathEnv, "fake_calls")
	const (
		launch, record, wait, graph = 0, 4, 7, 11 // fake_call_names' indices
	)
	dev, err := cuda.GetDevice(0)
	require.NoError(t, err)
	const samples, records = 256, 16

	blocksPerSlot := 2 // vortex's 4 blocks on 2 slots: graphs
	prepare := func(t *testing.T, owner int64, e *StackTensorEndpoint) error {
		return e.Prepare(engine.EndpointInfo{Device: dev, Owner: owner, RecordsPerBlock: records, RawSamples: samples,
			OutputSamples: samples, SegmentsPerVolume: 2, RecordsPerSegment: records, BlocksPerSlot: blocksPerSlot})
	}
	newEndpoint := func(t *testing.T) *StackTensorEndpoint {
		e, err := NewSpectraStackDeviceTensorEndpoint()
		require.NoError(t, err)
		require.NoError(t, prepare(t, 1, e))
		t.Cleanup(func() { require.NoError(t, e.Close()) })
		return e
	}
	newBlock := func(t *testing.T) *engine.BlockData {
		raw, err := dev.Alloc(2 * samples * records)
		require.NoError(t, err)
		ready, err := dev.NewEvent(false)
		require.NoError(t, err)
		t.Cleanup(func() {
			require.NoError(t, ready.Close())
			require.NoError(t, raw.Free())
		})
		return &engine.BlockData{Block: &engine.Block{}, Records: records, Raw: raw.Ptr(), RawSamples: samples, OutputSamples: samples, Ready: ready}
	}
	newEvent := func(t *testing.T) backend.Event {
		ev, err := dev.NewEvent(false)
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, ev.Close()) })
		return ev
	}
	type delta struct{ launches, records, waits, graphs int64 }
	count := func(f func()) delta {
		c0 := *calls
		f()
		c1 := *calls
		return delta{c1[launch] - c0[launch], c1[record] - c0[record], c1[wait] - c0[wait], c1[graph] - c0[graph]}
	}
	plan := func(seg int) *engine.FormatPlan {
		return &engine.FormatPlan{Actions: []format.Action{copyAction(0, records, seg, 0, false)}}
	}

	t.Run("seen once formats directly, twice captures, then replays", func(t *testing.T) {
		e := newEndpoint(t)
		require.NotNil(t, e.graphs)
		b, done := newBlock(t), newEvent(t)
		for i, want := range []delta{
			{1, 1, 1, 0}, // the wait, the kernel, the engine's record (the tensor's is deferred)
			{0, 0, 0, 1}, // captured (not counted: the capture's calls are subtracted), replayed
			{0, 0, 0, 1},
		} {
			var recorded bool
			got := count(func() {
				var err error
				recorded, err = e.FormatDone(b, plan(0), done)
				require.NoError(t, err)
			})
			if i == 1 { // the capture's calls: the wait, the kernel, the record
				got.launches, got.records, got.waits = got.launches-1, got.records-1, got.waits-1
			}
			require.Equal(t, want, got, "call %d", i)
			require.True(t, recorded)
		}
		st := e.graphs.cache.Stats()
		require.Equal(t, replay.Stats{Captures: 1, Replays: 1, Graphs: 1}, st)
	})

	t.Run("another place in the volume or another done event is another graph", func(t *testing.T) {
		e := newEndpoint(t)
		b, d1, d2 := newBlock(t), newEvent(t), newEvent(t)
		for range 2 {
			for _, c := range []struct {
				seg  int
				done backend.Event
			}{{0, d1}, {1, d1}, {0, d2}} {
				_, err := e.FormatDone(b, plan(c.seg), c.done)
				require.NoError(t, err)
			}
		}
		require.Equal(t, 3, e.graphs.cache.Stats().Captures)
	})

	t.Run("without a done event none is recorded", func(t *testing.T) {
		e := newEndpoint(t)
		b := newBlock(t)
		for range 3 {
			got := count(func() {
				recorded, err := e.FormatDone(b, plan(0), nil)
				require.NoError(t, err)
				require.False(t, recorded)
			})
			require.Zero(t, got.records, "replayed or direct: %+v", got)
		}
	})

	t.Run("a reader's wait records the tensor's ready event, once", func(t *testing.T) {
		e := newEndpoint(t)
		b, done := newBlock(t), newEvent(t)
		reader, err := dev.NewStream(0)
		require.NoError(t, err)
		defer func() { require.NoError(t, reader.Close()) }()
		for range 5 { // direct, captured, replayed
			_, err := e.FormatDone(b, plan(0), done)
			require.NoError(t, err)
		}
		require.Equal(t, delta{records: 1, waits: 1}, count(func() { require.NoError(t, e.Tensor().WaitReady(reader)) }))
		require.Equal(t, delta{waits: 1}, count(func() { require.NoError(t, e.Tensor().WaitReady(reader)) }), "nothing formatted since")
	})

	t.Run("a new engine's Prepare drops the graphs", func(t *testing.T) {
		e := newEndpoint(t)
		b, done := newBlock(t), newEvent(t)
		for range 3 {
			_, err := e.FormatDone(b, plan(0), done)
			require.NoError(t, err)
		}
		require.Equal(t, 1, e.graphs.cache.Stats().Graphs)
		require.NoError(t, prepare(t, 2, e)) // same shape: the tensor stays
		require.Equal(t, replay.Stats{}, e.graphs.cache.Stats())
	})

	t.Run("many blocks per slot format directly", func(t *testing.T) {
		blocksPerSlot = 4
		defer func() { blocksPerSlot = 2 }()
		e := newEndpoint(t)
		require.True(t, e.ownStream)
		require.Nil(t, e.graphs)
		recorded, err := e.FormatDone(newBlock(t), plan(0), newEvent(t))
		require.NoError(t, err)
		require.False(t, recorded, "the engine records done")
	})

	t.Run("VORTEXGO_CUDA_GRAPHS=0 formats directly, a misspelt value is refused", func(t *testing.T) {
		t.Setenv(replay.GraphsEnv, "0")
		e := newEndpoint(t)
		require.Nil(t, e.graphs)
		b, done := newBlock(t), newEvent(t)
		for range 3 {
			recorded, err := e.FormatDone(b, plan(0), done)
			require.NoError(t, err)
			require.False(t, recorded, "the engine records done")
		}
		t.Setenv(replay.GraphsEnv, "off")
		e2, err := NewSpectraStackDeviceTensorEndpoint()
		require.NoError(t, err)
		err = prepare(t, 3, e2)
		require.ErrorContains(t, err, replay.GraphsEnv)
		require.ErrorContains(t, err, `"off"`)
		require.ErrorIs(t, err, backend.ErrInvalid)
		require.NoError(t, e2.Close())
	})
}
