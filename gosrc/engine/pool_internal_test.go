package engine

import (
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
