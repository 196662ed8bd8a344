//go:build !gpu

package replay_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vortexgo/vortexgo/gosrc/cuda"
	"github.com/vortexgo/vortexgo/gosrc/internal/fakecudatest"
	"github.com/vortexgo/vortexgo/gosrc/replay"
)

// The cache's rules (capture on the second sighting, the bounds, a
// failed capture turning it off, a caller's own capture, Close) run here
// against gosrc/cuda's fake driver, which counts its calls and keeps the
// driver's capture rules; the users of the cache (the processor's slots,
// the tensor endpoints) test their work's replay on the GPU.

const childEnv = "VORTEXGO_REPLAY_FAKE_CHILD"

func TestCacheOnTheFakeDriver(t *testing.T) {
	fakecudatest.Run(t, filepath.Join("..", "cuda", "testdata"), "TestCacheOnTheFakeDriverChild", childEnv)
}

func TestCacheOnTheFakeDriverChild(t *testing.T) {
	if os.Getenv(childEnv) == "" {
		t.Skip("only runs as the child of TestCacheOnTheFakeDriver")
	}
	require.NoError(t, cuda.Init())
	calls := fakecudatest.Sym[[13]int64](t, cuda.DriverPathEnv, "fake_calls")
	refuseCapture := fakecudatest.Sym[int32](t, cuda.DriverPathEnv, "fake_refuse_capture")
	const memsets, graphs = 3, 11 // fake_call_names' indices
	dev, err := cuda.GetDevice(0)
	require.NoError(t, err)
	stream := func(t *testing.T) *cuda.Stream {
		s, err := dev.CreateStream(0)
		require.NoError(t, err)
		t.Cleanup(func() { s.Close() })
		return s
	}
	buf, err := dev.Malloc(64)
	require.NoError(t, err)
	defer buf.Free()
	// The work of key k: a memset of k+1 bytes (what a launch would be).
	work := func(k int) func(*cuda.Stream) error {
		return func(s *cuda.Stream) error { return s.Memset(buf.Ptr(), 0, k+1) }
	}
	type delta struct{ direct, replayed int64 }
	run := func(t *testing.T, c *replay.Cache[int], cs, capture *cuda.Stream, k int) delta {
		c0 := *calls
		require.NoError(t, c.Run(cs, capture, k, work(k)))
		c1 := *calls
		return delta{c1[memsets] - c0[memsets], c1[graphs] - c0[graphs]}
	}

	t.Run("once direct, twice captured and replayed, then replayed", func(t *testing.T) {
		c := replay.New[int](4, 8)
		cs, capture := stream(t), stream(t)
		require.Equal(t, delta{1, 0}, run(t, c, cs, capture, 0))
		require.Equal(t, delta{1, 1}, run(t, c, cs, capture, 0), "the capture's memset (counted, not run), then the graph")
		require.Equal(t, delta{0, 1}, run(t, c, cs, capture, 0))
		require.Equal(t, replay.Stats{Captures: 1, Replays: 1, Graphs: 1}, c.Stats())
		require.False(t, capture.Capturing())
	})

	t.Run("bounded: graphs, then direct; keys seen once forgotten", func(t *testing.T) {
		c := replay.New[int](2, 3)
		cs, capture := stream(t), stream(t)
		for k := range 3 { // each twice: two captured, the third past the bound
			run(t, c, cs, capture, k)
			run(t, c, cs, capture, k)
		}
		st := c.Stats()
		require.Equal(t, 2, st.Graphs)
		require.Equal(t, 2, st.Captures)
		require.Equal(t, delta{1, 0}, run(t, c, cs, capture, 2), "past the bound: direct")
		require.Equal(t, delta{0, 1}, run(t, c, cs, capture, 1), "captured: replayed")
		c2 := replay.New[int](100, 3)
		for k := range 10 {
			run(t, c2, cs, capture, k)
		}
		require.LessOrEqual(t, c2.Stats().Seen, 3)
	})

	t.Run("no capture stream, or the caller capturing, launches directly", func(t *testing.T) {
		c := replay.New[int](4, 8)
		cs, capture := stream(t), stream(t)
		for range 3 {
			require.Equal(t, delta{1, 0}, run(t, c, cs, nil, 0))
		}
		require.NoError(t, cs.BeginCapture())
		run(t, c, cs, capture, 1) // seen
		run(t, c, cs, capture, 1) // second sighting, but cs captures: into the caller's graph
		g, err := cs.EndCaptureGraph()
		require.NoError(t, err)
		require.NoError(t, g.Close())
		require.Zero(t, c.Stats().Captures)
	})

	t.Run("a refused capture turns the cache off, work still runs", func(t *testing.T) {
		c := replay.New[int](4, 8)
		cs, capture := stream(t), stream(t)
		*refuseCapture = 1
		run(t, c, cs, capture, 0)
		require.Equal(t, delta{1, 0}, run(t, c, cs, capture, 0), "the refused capture falls back")
		*refuseCapture = 0
		require.Equal(t, delta{1, 0}, run(t, c, cs, capture, 0), "off for good")
		require.Error(t, c.Stats().Failed)
	})

	t.Run("the work's error is returned, nothing cached", func(t *testing.T) {
		c := replay.New[int](4, 8)
		cs, capture := stream(t), stream(t)
		bad := errors.New("work failed")
		fail := func(*cuda.Stream) error { return bad }
		require.ErrorIs(t, c.Run(cs, capture, 0, fail), bad)
		require.ErrorIs(t, c.Run(cs, capture, 0, fail), bad) // the capture fails: off, then direct
		require.Zero(t, c.Stats().Graphs)
		require.False(t, capture.Capturing(), "the capture ended")
	})

	t.Run("Close destroys the graphs and forgets the keys; the cache stays usable", func(t *testing.T) {
		c := replay.New[int](4, 8)
		cs, capture := stream(t), stream(t)
		for range 2 {
			run(t, c, cs, capture, 0)
		}
		require.NoError(t, c.Close())
		st := c.Stats()
		require.Zero(t, st.Graphs)
		require.Zero(t, st.Seen)
		require.Equal(t, delta{1, 0}, run(t, c, cs, capture, 0), "seen again for the first time")
	})

	t.Run("GraphsEnv: 0 off, 1 or unset on, anything else refused naming it", func(t *testing.T) {
		for _, tc := range []struct {
			v  string
			on bool
			ok bool
		}{{"", true, true}, {"1", true, true}, {"0", false, true}, {"off", false, false}} {
			t.Setenv(replay.GraphsEnv, tc.v)
			on, err := replay.Enabled()
			if !tc.ok {
				require.ErrorContains(t, err, replay.GraphsEnv)
				require.ErrorContains(t, err, `"off"`)
				continue
			}
			require.NoError(t, err)
			require.Equal(t, tc.on, on, "%q", tc.v)
		}
	})
}
