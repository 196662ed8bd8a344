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
			e.giveHost(first, up, false)
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
			require.Empty(t, h.after, "a taken set has nothing left to wait for")
		})
	}
}

// TestTakeHostWaitsForEveryUpload: a block processed on other devices too
// gives its set back with every upload that reads it (the engine's, and
// each active remote processor's); the set is taken again only once all
// are done, whichever finishes last.
func TestTakeHostWaitsForEveryUpload(t *testing.T) {
	// processors: #0 on the engine's device, #1 and #2 on others; #2 does
	// not process this block.
	tests := []struct {
		name string
		last int // the upload that finishes last: 0 the engine's, 1 processor #1's
	}{
		{"the engine's upload last", 0},
		{"the remote upload last", 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e, s, h := poolRig(t, 10*time.Microsecond)
			e.procDev = []int{-1, 0, 1}
			first := &Block{raws: []rawBuf{{values: 4}}, active: []bool{true, true, false}}
			require.True(t, e.takeHost(s, first))
			ups := []*gateEvent{newGateEvent(), newGateEvent()}
			idle := newGateEvent() // processor #2's: never waited for
			first.rem = []remoteBuf{{}, {uploaded: ups[1]}, {uploaded: idle}}
			e.giveHost(first, ups[0], true)
			require.Len(t, h.after, 2, "the engine's upload and processor #1's")

			next := &Block{raws: []rawBuf{{values: 4}}}
			took := make(chan bool, 1)
			go func() { took <- e.takeHost(s, next) }()
			ups[1-tc.last].open()
			time.Sleep(20 * time.Millisecond)
			select {
			case <-took:
				t.Fatal("takeHost handed the set over while an upload from it was still running")
			default:
			}
			ups[tc.last].open()
			select {
			case ok := <-took:
				require.True(t, ok)
			case <-time.After(5 * time.Second):
				t.Fatal("takeHost did not return once every upload was done")
			}
			require.Same(t, h, next.host)
			require.Zero(t, idle.queries.Load(), "an inactive processor's upload is not waited for")
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
	require.Empty(t, (<-e.hosts).after)
}

func TestTakeHostWithoutHostSets(t *testing.T) {
	e := &Engine{}
	b := &Block{raws: []rawBuf{{values: 4}}}
	require.True(t, e.takeHost(&session{}, b), "every acquisition lends: nothing to take")
	require.Nil(t, b.host)
	e.giveHost(b, nil, false) // nothing to give back
}

// scarceDevice is the CPU whose device memory runs out after left
// allocations (pinned memory does not); live counts its buffers not freed.
type scarceDevice struct {
	backend.Device
	left, live int
}

func (d *scarceDevice) Alloc(n int) (backend.Buffer, error) {
	if d.left <= 0 {
		return nil, errors.New("out of device memory")
	}
	buf, err := d.Device.Alloc(n)
	if err == nil {
		d.left--
		d.live++
		buf = countedBuffer{Buffer: buf, live: &d.live}
	}
	return buf, err
}

// countedBuffer is a scarceDevice's buffer: freeing it counts.
type countedBuffer struct {
	backend.Buffer
	live *int
}

func (b countedBuffer) Free() error {
	*b.live--
	return b.Buffer.Free()
}

// TestPoolShrinksToWhatFits: a deeper ring the engine picked itself ends
// where a device runs out (the engine's, or a remote processor's), at no
// fewer blocks than the user allocated; a count asked for (least = n) or
// the user's own blocks that do not fit fail.
func TestPoolShrinksToWhatFits(t *testing.T) {
	// one acquisition, one processor: 5 device buffers a block on the
	// engine's device (raw, float32 and int8 outputs, target and actual
	// positions); a remote processor's part is 3 (raw, float32, int8)
	const perBlock, perRemote = 5, 3
	sh := blockShape{records: 4, rawSamples: []int{8}, procAcq: []int{0}, outSamples: []int{8}, endpoints: 1,
		galvoOut: 2, galvoIn: 2, leads: 1, markers: 8}
	const roomy = 1000
	tests := []struct {
		name        string
		fits        int // whole blocks the engine's device holds
		remoteFits  int // whole remote parts the other device holds; 0: no remote processor
		n, least    int
		wantBlocks  int
		wantFailure bool
	}{
		{"the ring fits", 12, 0, 8, 2, 8, false},
		{"the ring shrinks to what fits", 3, 0, 8, 2, 3, false},
		{"down to the blocks allocated", 2, 0, 8, 2, 2, false},
		{"the blocks allocated do not fit", 1, 0, 8, 2, 0, true},
		{"a count asked for does not fit", 3, 0, 8, 8, 0, true},
		{"the ring fits both devices", roomy, 12, 8, 2, 8, false},
		{"the ring shrinks to what the other device holds", roomy, 5, 8, 2, 5, false},
		{"the blocks allocated do not fit the other device", roomy, 1, 8, 2, 0, true},
		{"a count asked for does not fit the other device", roomy, 5, 8, 8, 0, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dev := &scarceDevice{Device: cpu.Default(), left: tc.fits*perBlock + 2} // a partial block past them
			e := &Engine{cfg: Config{RecordsPerBlock: 4, BlocksToAllocate: 2}, dev: dev, poolSize: tc.n}
			var far *scarceDevice
			if tc.remoteFits > 0 {
				far = &scarceDevice{Device: cpu.Default(), left: tc.remoteFits*perRemote + 1}
				e.acqs = []acqRun{{raw: 8}}
				e.procs, e.procAcq, e.procDev = make([]Processor, 1), []int{0}, []int{0}
				e.remote = []remoteDevice{{dev: far}}
			}
			t.Cleanup(func() { require.NoError(t, e.release()) })
			err := e.preparePool(sh, tc.n, tc.least)
			if tc.wantFailure {
				require.ErrorContains(t, err, "out of device memory")
				return
			}
			require.NoError(t, err)
			require.Len(t, e.blocks, tc.wantBlocks)
			require.Equal(t, tc.wantBlocks, e.poolSize)
			require.Len(t, e.free, tc.wantBlocks)
			require.Len(t, e.hostSets, 2, "the acquisition's pinned memory: the blocks allocated")
			require.Equal(t, tc.wantBlocks*perBlock, dev.live, "the partial block past the pool was freed")
			if far != nil {
				for _, b := range e.blocks {
					require.NotNil(t, b.rem[0].out8, "every block in the pool has its remote part")
				}
				require.Equal(t, tc.wantBlocks*perRemote, far.live, "the partial remote part past the pool was freed")
			}
		})
	}
}

// TestSingleDeviceBlocks: the lanes need every block processed on one
// device, over every acquisition's rotation (the union of their sets for a
// block's ID).
func TestSingleDeviceBlocks(t *testing.T) {
	// processors: #0 on the engine's device, #1 and #2 on remote device 0,
	// #3 on remote device 1
	procDev := []int{-1, 0, 0, 1}
	tests := []struct {
		name      string
		rotations [][][]int // per acquisition: its rotation sets
		want      bool
	}{
		{"a cycle over two devices", [][][]int{{{0}, {1}}}, true},
		{"a cycle over three", [][][]int{{{0}, {1}, {3}}}, true},
		{"two processors of one remote device", [][][]int{{{1, 2}, {0}}}, true},
		{"one set over two devices", [][][]int{{{0, 1}}}, false},
		{"two acquisitions in step", [][][]int{{{0}, {1}}, {{0}, {2}}}, true},
		{"two acquisitions out of step", [][][]int{{{0}, {1}}, {{0}}}, false},
		{"rotations of 2 and 3 blocks meet at the sixth", [][][]int{{{1}, {3}}, {{1}, {3}, {1}}}, false},
		{"an acquisition with no processor", [][][]int{{{0}, {1}}, {}}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := &Engine{procDev: procDev}
			for _, r := range tc.rotations {
				e.acqs = append(e.acqs, acqRun{rotation: r})
			}
			require.Equal(t, tc.want, e.singleDeviceBlocks())
		})
	}
}

// TestSlotSubmittersWithRemoteDevices: with a processor on another device
// the blocks get submitters (the slots' and a lane per device) only below
// sharedSlotBytes a block, and only where each block is one device's;
// without one, from two slots.
func TestSlotSubmittersWithRemoteDevices(t *testing.T) {
	cycle := [][]int{{0}, {1}}
	tests := []struct {
		name     string
		slots    int
		remote   bool
		small    bool
		rotation [][]int
		want     bool
	}{
		{"a cycle over two devices, small blocks", 2, true, true, cycle, true},
		{"one slot, small blocks: the lane", 1, true, true, cycle, true},
		{"a cycle over two devices, large blocks: the process loop", 2, true, false, cycle, false},
		{"every block on both devices", 2, true, true, [][]int{{0, 1}}, false},
		{"one device, two slots", 2, false, false, [][]int{{0}}, true},
		{"one device, one slot", 1, false, true, [][]int{{0}}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := &Engine{slots: make([]backend.Stream, tc.slots), smallBlocks: tc.small,
				acqs: []acqRun{{rotation: tc.rotation}}}
			e.procs = []Processor{orderedStub{}, orderedStub{}}
			e.procDev = []int{-1, -1}
			if tc.remote {
				e.procDev[1] = 0
				e.remote = make([]remoteDevice, 1)
			}
			require.Equal(t, tc.want, e.slotSubmitters())
		})
	}
}

// orderedStub is an OrderedProcessor that is never called.
type orderedStub struct{ OrderedProcessor }

// devProc is a processor bound to dev (DeviceProcessor).
type devProc struct {
	Processor
	dev backend.Device
}

func (p devProc) Device() backend.Device { return p.dev }

// TestRemoteProcessors: the pool's size is chosen before prepareDevices
// finds the remote devices, from the processors themselves.
func TestRemoteProcessors(t *testing.T) {
	engineDev, other := cpu.Default(), &scarceDevice{Device: cpu.Default()}
	tests := []struct {
		name  string
		procs []Processor
		want  bool
	}{
		{"no processor", nil, false},
		{"a processor of no device", []Processor{orderedStub{}}, false},
		{"a processor of no device in particular", []Processor{devProc{dev: nil}}, false},
		{"on the engine's device", []Processor{devProc{dev: engineDev}}, false},
		{"one on another device", []Processor{devProc{dev: engineDev}, devProc{dev: other}}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := &Engine{dev: engineDev, procs: tc.procs}
			require.Equal(t, tc.want, e.remoteProcessors())
		})
	}
}
