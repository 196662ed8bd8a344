package acquire

import (
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/cpu"
	"github.com/vortexgo/vortexgo/gosrc/driver/alazar"
	"github.com/vortexgo/vortexgo/gosrc/internal/virtualtest"
)

// pinnedBlocks allocates n blocks of values uint16 each outside the Go
// heap (the board writes them from its own thread).
func pinnedBlocks(t *testing.T, n, values int) [][]uint16 {
	mem, err := cpu.Default().AllocPinned(n * values * 2)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, mem.Free()) })
	all := unsafe.Slice((*uint16)(ptrOf(mem.Ptr())), n*values)
	out := make([][]uint16, n)
	for i := range out {
		out[i] = all[i*values : (i+1)*values]
	}
	return out
}

func addr(b []uint16) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(b))) }

// standaloneBlock acquires one block of channels through the standalone
// calls (prepare, post, start, wait, stop).
func standaloneBlock(t *testing.T, samples, records int, channels ...alazar.Channel) []uint16 {
	cfg := alazarConfig(samples, records)
	cfg.Inputs = nil
	for _, c := range channels {
		cfg.Inputs = append(cfg.Inputs, AlazarInput{Channel: c, RangeMillivolts: 400, ImpedanceOhms: 50, Coupling: alazar.CouplingDC})
	}
	a, err := NewAlazarAcquisition(cfg)
	require.NoError(t, err)
	defer func() { require.NoError(t, a.Close()) }()
	require.Equal(t, len(channels), a.ChannelsPerSample())
	require.Equal(t, samples*len(channels), a.SamplesPerRecord(), "the engine's raw values per record")
	buf := pinnedBlocks(t, 1, records*samples*len(channels))[0]
	require.NoError(t, a.PrepareStandalone())
	require.NoError(t, a.StartStandalone())
	n, err := a.Next(buf, records)
	require.NoError(t, err)
	require.Equal(t, records, n)
	require.NoError(t, a.StopStandalone())
	return append([]uint16(nil), buf...)
}

// TestAlazarChannelsAreInterleavedBySample: a block is records x samples x
// channels (vortex's layout); the virtual board digitizes the phantom on
// every channel.
func TestAlazarChannelsAreInterleavedBySample(t *testing.T) {
	virtualtest.Require(t, alazarEnv)
	const samples, records = 256, 16
	one := standaloneBlock(t, samples, records, alazar.ChannelA)
	cases := []struct {
		name     string
		channels []alazar.Channel
	}{
		{"A and B", []alazar.Channel{alazar.ChannelA, alazar.ChannelB}},
		{"B and A", []alazar.Channel{alazar.ChannelB, alazar.ChannelA}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			two := standaloneBlock(t, samples, records, c.channels...)
			require.Len(t, two, 2*len(one))
			for i, v := range one {
				require.Equal(t, v, two[2*i], "value %d, first channel", i)
				require.Equal(t, v, two[2*i+1], "value %d, second channel", i)
			}
		})
	}
}

// TestAlazarStandaloneCalls: vortex's order and errors outside an engine.
func TestAlazarStandaloneCalls(t *testing.T) {
	virtualtest.Require(t, alazarEnv)
	const samples, records = 256, 16
	cfg := alazarConfig(samples, records)
	cfg.AcquireTimeout = 200 * time.Millisecond
	a, err := NewAlazarAcquisition(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, a.Close()) })
	bufs := pinnedBlocks(t, 3, records*samples)

	errs := []struct {
		name string
		call func() error
		msg  string
	}{
		{"post before prepare", func() error { return a.PostStandalone(addr(bufs[0]), 2*len(bufs[0])) }, "no capture is prepared, expected prepare() first"},
		{"start before prepare", a.StartStandalone, "no capture is prepared, expected prepare() first"},
		{"a short buffer", func() error { return a.PostStandalone(addr(bufs[0]), 2*len(bufs[0])-2) }, "output buffer is not appropriately sized: 8190 < 8192"},
		{"next of another size", func() error { _, err := a.Next(bufs[0], records-1); return err }, "block is not exactly equal to the configured size: 15 != 16"},
	}
	for _, c := range errs {
		t.Run(c.name, func(t *testing.T) { require.ErrorContains(t, c.call(), c.msg) })
	}
	n, err := a.WaitStandalone(addr(bufs[0]))
	require.NoError(t, err, "a wait with no capture reports an aborted block")
	require.Zero(t, n)

	// posted before the start, waited in order
	require.NoError(t, a.PrepareStandalone())
	for _, b := range bufs {
		require.NoError(t, a.PostStandalone(addr(b), 2*len(b)))
	}
	require.False(t, a.Running())
	require.NoError(t, a.StartStandalone())
	require.True(t, a.Running())
	require.NoError(t, a.StartStandalone(), "start while running does nothing")
	require.ErrorContains(t, a.PrepareStandalone(), "the board is acquiring, expected stop() first")
	for _, b := range bufs {
		n, err := a.WaitStandalone(addr(b))
		require.NoError(t, err)
		require.Equal(t, records, n)
	}

	// a stop ends a wait in progress: 0 records, no error
	require.NoError(t, a.PostStandalone(addr(bufs[0]), 2*len(bufs[0])))
	require.NoError(t, a.PostStandalone(addr(bufs[1]), 2*len(bufs[1])))
	n, err = a.WaitStandalone(addr(bufs[0]))
	require.NoError(t, err)
	require.Equal(t, records, n)
	require.NoError(t, a.StopStandalone())
	n, err = a.WaitStandalone(addr(bufs[1]))
	require.NoError(t, err)
	require.Zero(t, n)
	require.False(t, a.Running())

	// a timeout (never started) is the SDK's error and stops the board (StopOnError)
	require.NoError(t, a.PrepareStandalone())
	_, err = a.Next(bufs[0], records)
	require.ErrorIs(t, err, alazar.ErrWaitTimeout)
	require.ErrorContains(t, a.StartStandalone(), "no capture is prepared")
}

// TestAlazarStandaloneWaitEndsAtClose: a wait pending in another goroutine
// returns (0, nil) when the source is closed, and standalone calls are
// refused while an engine holds the source.
func TestAlazarStandaloneWaitEndsAtClose(t *testing.T) {
	virtualtest.Require(t, alazarEnv)
	const samples, records = 256, 16
	cfg := alazarConfig(samples, records)
	cfg.AcquireTimeout = time.Minute
	a, err := NewAlazarAcquisition(cfg)
	require.NoError(t, err)
	buf := pinnedBlocks(t, 1, records*samples)[0]

	require.NoError(t, a.claim.Take())
	require.ErrorIs(t, a.StartStandalone(), backend.ErrInUse)
	require.ErrorIs(t, a.PostStandalone(addr(buf), 2*len(buf)), backend.ErrInUse)
	require.NoError(t, a.PrepareStandalone(), "an engine's prepare")
	a.claim.Drop()

	require.NoError(t, a.PrepareStandalone())
	require.NoError(t, a.PostStandalone(addr(buf), 2*len(buf)))
	var wg sync.WaitGroup
	var n int
	var werr error
	wg.Add(1)
	go func() { defer wg.Done(); n, werr = a.WaitStandalone(addr(buf)) }()
	time.Sleep(50 * time.Millisecond)
	start := time.Now()
	require.NoError(t, a.Close())
	wg.Wait()
	require.Less(t, time.Since(start), 5*time.Second)
	require.NoError(t, werr)
	require.Zero(t, n)
	require.ErrorIs(t, a.StartStandalone(), backend.ErrClosed)
}
