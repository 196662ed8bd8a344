package engine_test

import (
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/cpu"
	"github.com/vortexgo/vortexgo/gosrc/endpoint"
	"github.com/vortexgo/vortexgo/gosrc/engine"
	"github.com/vortexgo/vortexgo/gosrc/format"
)

// meeting tells whether two processors' first blocks ran at once: the
// near one's first block waits (up to two seconds) for the far one's first
// to start, which happens only when another goroutine submits it.
type meeting struct {
	far        chan struct{}
	farOnce    sync.Once
	nearFirst  atomic.Bool
	concurrent atomic.Bool
}

func newMeeting() *meeting { return &meeting{far: make(chan struct{})} }

// nearProc is an orderedProc on the engine's device that waits at its
// first block for the far processor's (meeting).
type nearProc struct {
	*orderedProc
	m *meeting
}

func (p nearProc) Process(slot int, s backend.Stream, in uintptr, records int, out, out8 uintptr) error {
	return p.ProcessTicket(p.Ticket(), slot, s, in, records, out, out8)
}

func (p nearProc) ProcessTicket(t uint64, slot int, s backend.Stream, in uintptr, records int, out, out8 uintptr) error {
	if p.m.nearFirst.CompareAndSwap(false, true) {
		select {
		case <-p.m.far:
			p.m.concurrent.Store(true)
		case <-time.After(2 * time.Second): // as orderedProc's rendezvous: ample on a loaded CI machine
		}
	}
	return p.orderedProc.ProcessTicket(t, slot, s, in, records, out, out8)
}

// farProc is an orderedProc on another device (otherDevice).
type farProc struct {
	*orderedProc
	dev backend.Device
	m   *meeting
}

func (p farProc) Device() backend.Device { return p.dev }

func (p farProc) Process(slot int, s backend.Stream, in uintptr, records int, out, out8 uintptr) error {
	return p.ProcessTicket(p.Ticket(), slot, s, in, records, out, out8)
}

func (p farProc) ProcessTicket(t uint64, slot int, s backend.Stream, in uintptr, records int, out, out8 uintptr) error {
	p.m.farOnce.Do(func() { close(p.m.far) })
	return p.orderedProc.ProcessTicket(t, slot, s, in, records, out, out8)
}

// TestRemoteLanes: with processors cycling over the engine's device and
// another (vortex's cycle over GPUs), the other device's blocks are
// submitted from a goroutine of their own (its lane) beside the engine's
// slots, on every path but inline; each processor's ordered parts still
// see its blocks in order, and the volumes are whole. A block processed on
// both devices rules the lanes out (the process loop submits every block);
// a failing block on the lane fails the run without a hang.
func TestRemoteLanes(t *testing.T) {
	tests := []struct {
		name      string
		path      string // engine.SlotPathEnv
		perSlot   bool   // engine.RemoteLanesEnv=slot: a lane per slot of the far device
		slots     int
		both      bool // every block on both devices: no lanes
		farFailAt int  // the far processor's block that fails, -1 none
		wantLanes int  // the far device's lanes
		wantErr   string
		farPanics bool // the far processor panics at its block farFailAt instead
	}{
		{"direct, one slot", "direct", false, 1, false, -1, 1, "", false},
		{"direct, two slots", "direct", false, 2, false, -1, 1, "", false},
		{"stages, two slots", "stages", false, 2, false, -1, 1, "", false},
		{"a lane per slot", "direct", true, 2, false, -1, 2, "", false},
		{"a lane per slot, three slots, stages", "stages", true, 3, false, -1, 3, "", false},
		{"inline: the acquire loop submits every block", "inline", false, 2, false, -1, 0, "", false},
		{"every block on both devices: the process loop", "direct", false, 2, true, -1, 0, "", false},
		{"a failing block on the lane", "direct", false, 2, false, 3, 1, "orderedProc: failing block 3", false},
		{"a failing block on a lane of a slot", "direct", true, 2, false, 3, 2, "orderedProc: failing block 3", false},
		{"a panicking block on a lane", "direct", false, 2, false, 2, 1, "orderedProc: panic at block 2", true},
		{"a panicking block on a lane of a slot", "stages", true, 2, false, 4, 2, "orderedProc: panic at block 4", true},
	}
	// (A far processor that does not keep its order gets one lane whatever
	// is asked: TestRemoteLanesUnordered.)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(engine.SlotPathEnv, tc.path)
			lanes := "device"
			if tc.perSlot {
				lanes = "slot"
			}
			t.Setenv(engine.RemoteLanesEnv, lanes)
			t.Setenv(engine.DeviceBlocksEnv, "12")
			scan := raster{AscansPerBscan: 4, BscansPerVolume: 5, Volumes: 4}
			const samples, rpb = 8, 3
			m := newMeeting()
			near := nearProc{newOrderedProc(samples), m}
			var peers []backend.Device
			far := farProc{newOrderedProc(samples), otherDevice{Device: cpu.Default(), peers: &peers}, m}
			near.alone, far.alone = true, true // no rendezvous of their own slots
			if tc.farPanics {
				far.panicAt = tc.farFailAt
			} else {
				far.failAt = tc.farFailAt
			}

			ep, planner := floatStack(t, scan, samples)
			cfg := engine.Config{RecordsPerBlock: rpb, BlocksToAllocate: 4, PreloadCount: 2, Slots: tc.slots}
			cfg.AddAcquisition(newFakeAcq(samples), near, far)
			if !tc.both {
				cfg.SetRotation([]engine.Processor{near}, []engine.Processor{far})
			}
			cfg.AddProcessor(near, planner)
			cfg.AddFormatter(planner, ep)
			if tc.both { // the far outputs formatted apart
				other, err := format.NewFormatPlanner(format.DefaultFormatPlannerConfig(scan.BscansPerVolume, scan.AscansPerBscan))
				require.NoError(t, err)
				null := endpoint.NewNullEndpoint()
				closeEndpoint(t, null)
				cfg.AddProcessor(far, other)
				cfg.AddFormatter(other, null)
			} else {
				cfg.AddProcessor(far, planner)
			}
			e, err := runToEnd(t, cfg, cpu.Default(), scan, "the run hung")
			if tc.wantLanes > 0 {
				require.Equal(t, tc.slots+tc.wantLanes, e.SessionLanes(), "the engine's slots, then the far device's lanes")
			} else {
				require.Zero(t, e.SessionLanes(), "no submitters")
			}
			assert.Equal(t, tc.wantLanes > 0, m.concurrent.Load(), "the far device's first block submitted while the near one's waited")
			if tc.wantErr == "" {
				used := 0
				far.goroutines.Range(func(any, any) bool { used++; return true })
				assert.Equal(t, tc.slots, used, "every slot of the far device processed blocks")
			}
			for _, p := range []*orderedProc{near.orderedProc, far.orderedProc} {
				p.mu.Lock()
				seen := slices.Clone(p.seen)
				p.mu.Unlock()
				step := int64(2 * rpb) // every other block
				if tc.both {
					step = rpb
				}
				for i := 1; i < len(seen); i++ {
					require.Equal(t, seen[i-1]+step, seen[i], "a processor's ordered parts out of block order at %d: %v", i, seen)
				}
			}
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				require.Positive(t, e.Status().BlocksDropped)
				return
			}
			require.NoError(t, err)
			st := e.Status()
			require.Equal(t, st.BlocksAcquired, st.BlocksFormatted)
			require.EqualValues(t, scan.Volumes, st.Volumes)
			n := scan.BscansPerVolume * scan.AscansPerBscan * samples
			got := hostSlice[float32](ep.Tensor().Ptr(), n)
			for b := range scan.BscansPerVolume {
				for a := range scan.AscansPerBscan {
					for s := range samples {
						want := expected(scan, scan.Volumes-1, b, a, s)
						require.Equal(t, float32(want), got[(b*scan.AscansPerBscan+a)*samples+s], "bscan %d ascan %d sample %d", b, a, s)
					}
				}
			}
		})
	}
}

// TestRemoteLanesUnordered: a processor on another device that is not an
// OrderedProcessor gets one lane, a lane per slot asked or not (two lanes
// would call it at once, out of block order), and the volumes are whole.
func TestRemoteLanesUnordered(t *testing.T) {
	t.Setenv(engine.SlotPathEnv, "direct")
	t.Setenv(engine.RemoteLanesEnv, "slot")
	t.Setenv(engine.DeviceBlocksEnv, "12")
	ep, err := endpoint.NewStackHostTensorEndpoint(backend.Uint16)
	require.NoError(t, err)
	closeEndpoint(t, ep)
	scan := raster{AscansPerBscan: 4, BscansPerVolume: 3, Volumes: 3}
	r := newRig(t, 8, scan, ep)
	near := newOrderedProc(8)
	near.alone = true
	var peers []backend.Device
	far := remoteProc{newFakeProc(8), otherDevice{Device: cpu.Default(), peers: &peers}}
	r.cfg = engine.Config{RecordsPerBlock: 5, BlocksToAllocate: 4, PreloadCount: 2, Slots: 2}
	r.cfg.AddAcquisition(r.acq, near, far)
	r.cfg.SetRotation([]engine.Processor{near}, []engine.Processor{far})
	r.cfg.AddProcessor(near, r.fmt)
	r.cfg.AddProcessor(far, r.fmt)
	r.cfg.AddFormatter(r.fmt, ep)
	e := r.engine(t)
	require.NoError(t, e.Prepare())
	d := startDrain(e)
	require.NoError(t, e.Start())
	require.NoError(t, waitOr(t, e, 30*time.Second, "the run hung"))
	d.wait(t)
	require.Equal(t, 2+1, e.SessionLanes(), "the engine's two slots and one lane")
	require.Positive(t, far.calls.Load())
	require.EqualValues(t, scan.Volumes, e.Status().Volumes)
}
