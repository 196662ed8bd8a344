package engine

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/cpu"
	"github.com/vortexgo/vortexgo/gosrc/internal/spin"
)

// gateEvent is an upload still running until open is called: Query reports
// it incomplete and Synchronize blocks until then, as a GPU event does.
type gateEvent struct {
	backend.Event
	done    chan struct{}
	queries atomic.Int64
}

func newGateEvent() *gateEvent { return &gateEvent{done: make(chan struct{})} }

func (g *gateEvent) open() { close(g.done) }

func (g *gateEvent) Query() (bool, error) {
	g.queries.Add(1)
	select {
	case <-g.done:
		return true, nil
	default:
		return false, nil
	}
}

func (g *gateEvent) Synchronize() error { <-g.done; return nil }

// poolRig is an engine with one host set of one pinned buffer and a
// session's waiters, enough for takeHost and giveHost.
func poolRig(t *testing.T, window time.Duration) (*Engine, *session, *hostSet) {
	t.Helper()
	buf, err := cpu.Default().AllocPinned(64)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, buf.Free()) })
	h := &hostSet{bufs: []backend.Buffer{buf}}
	e := &Engine{hosts: make(chan *hostSet, 1), hostSets: []*hostSet{h}}
	e.hosts <- h
	s := &session{hostWait: spin.NewWaiter(window), stopping: make(chan struct{})}
	return e, s, h
}

func TestTakeHostWaitsForTheUpload(t *testing.T) {
	for _, window := range []time.Duration{0, 50 * time.Microsecond} {
		t.Run(window.String(), func(t *testing.T) {
			e, s, h := poolRig(t, window)
			first := &Block{raws: []rawBuf{{values: 4}}}
			require.True(t, e.takeHost(s, first))
			require.Same(t, h, first.host)
			require.Len(t, first.raws[0].host, 32, "the set's buffer, viewed as uint16")

			// The upload from the set is queued but not done: the next block
			// gets the set only once it is.
			up := newGateEvent()
			e.giveHost(first, up)
			require.Nil(t, first.host)
			require.Nil(t, first.raws[0].host, "a block that gave its set back no longer views it")
			next := &Block{raws: []rawBuf{{values: 4}}}
			took := make(chan bool, 1)
			go func() { took <- e.takeHost(s, next) }()
			time.Sleep(20 * time.Millisecond)
			select {
			case <-took:
				t.Fatal("takeHost handed the set over while its upload was still running")
			default:
			}
			assert.Positive(t, up.queries.Load(), "the upload's state was asked")
			up.open()
			select {
			case ok := <-took:
				require.True(t, ok)
			case <-time.After(5 * time.Second):
				t.Fatal("takeHost did not return once the upload was done")
			}
			require.Same(t, h, next.host)
			require.Nil(t, h.after, "a taken set has nothing left to wait for")
		})
	}
}

func TestTakeHostReturnsOnStop(t *testing.T) {
	e, s, _ := poolRig(t, 0)
	holder := &Block{raws: []rawBuf{{values: 4}}}
	require.True(t, e.takeHost(s, holder)) // the only set
	b := &Block{raws: []rawBuf{{values: 4}}}
	took := make(chan bool, 1)
	go func() { took <- e.takeHost(s, b) }()
	time.Sleep(10 * time.Millisecond)
	close(s.stopping)
	select {
	case ok := <-took:
		require.False(t, ok, "a stop ends the wait for a set")
	case <-time.After(5 * time.Second):
		t.Fatal("takeHost ignored the stop")
	}
	require.Nil(t, b.host)

	// The set comes back with its holder (toPool), with nothing to wait for.
	e.free = make(chan *Block, 1)
	e.toPool(holder)
	require.Nil(t, holder.host)
	require.Len(t, e.hosts, 1)
	require.Nil(t, (<-e.hosts).after)
}

func TestTakeHostWithoutHostSets(t *testing.T) {
	e := &Engine{}
	b := &Block{raws: []rawBuf{{values: 4}}}
	require.True(t, e.takeHost(&session{}, b), "every acquisition lends: nothing to take")
	require.Nil(t, b.host)
	e.giveHost(b, nil) // nothing to give back
}

// scarceDevice is the CPU whose device memory runs out after left
// allocations (pinned memory does not).
type scarceDevice struct {
	backend.Device
	left int
}

func (d *scarceDevice) Alloc(n int) (backend.Buffer, error) {
	if d.left <= 0 {
		return nil, errors.New("out of device memory")
	}
	d.left--
	return d.Device.Alloc(n)
}

// TestPoolShrinksToWhatFits: a deeper ring the engine picked itself ends
// where the device runs out, at no fewer blocks than the user allocated; a
// count asked for (least = n) or the user's own blocks that do not fit fail.
func TestPoolShrinksToWhatFits(t *testing.T) {
	// one acquisition, one processor: 5 device buffers a block (raw, float32
	// and int8 outputs, target and actual positions)
	const perBlock = 5
	sh := blockShape{records: 4, rawSamples: []int{8}, procAcq: []int{0}, outSamples: []int{8}, endpoints: 1,
		galvoOut: 2, galvoIn: 2, leads: 1, markers: 8}
	tests := []struct {
		name        string
		fits        int // whole blocks the device holds
		n, least    int
		wantBlocks  int
		wantFailure bool
	}{
		{"the ring fits", 12, 8, 2, 8, false},
		{"the ring shrinks to what fits", 3, 8, 2, 3, false},
		{"down to the blocks allocated", 2, 8, 2, 2, false},
		{"the blocks allocated do not fit", 1, 8, 2, 0, true},
		{"a count asked for does not fit", 3, 8, 8, 0, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dev := &scarceDevice{Device: cpu.Default(), left: tc.fits*perBlock + 2} // a partial block past them
			e := &Engine{cfg: Config{RecordsPerBlock: 4, BlocksToAllocate: 2}, dev: dev, poolSize: tc.n}
			t.Cleanup(func() { require.NoError(t, e.release()) })
			err := e.preparePool(sh, tc.n, tc.least, false)
			if tc.wantFailure {
				require.ErrorContains(t, err, "out of device memory")
				return
			}
			require.NoError(t, err)
			require.Len(t, e.blocks, tc.wantBlocks)
			require.Equal(t, tc.wantBlocks, e.poolSize)
			require.Len(t, e.free, tc.wantBlocks)
			require.Len(t, e.hostSets, 2, "the acquisition's pinned memory: the blocks allocated")
		})
	}
}
