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
// near one's first block waits (up to a second) for the far one's first
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
		case <-time.After(time.Second):
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
		slots     int
		both      bool // every block on both devices: no lanes
		farFailAt int  // the far processor's block that fails, -1 none
		wantLanes bool
		wantErr   string
	}{
		{"direct, one slot", "direct", 1, false, -1, true, ""},
		{"direct, two slots", "direct", 2, false, -1, true, ""},
		{"stages, two slots", "stages", 2, false, -1, true, ""},
		{"inline: the acquire loop submits every block", "inline", 2, false, -1, false, ""},
		{"every block on both devices: the process loop", "direct", 2, true, -1, false, ""},
		{"a failing block on the lane", "direct", 2, false, 3, true, "orderedProc: failing block 3"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(engine.SlotPathEnv, tc.path)
			t.Setenv(engine.DeviceBlocksEnv, "12")
			scan := raster{AscansPerBscan: 4, BscansPerVolume: 5, Volumes: 4}
			const samples, rpb = 8, 3
			m := newMeeting()
			near := nearProc{newOrderedProc(samples), m}
			var peers []backend.Device
			far := farProc{newOrderedProc(samples), otherDevice{Device: cpu.Default(), peers: &peers}, m}
			near.alone, far.alone = true, true // no rendezvous of their own slots
			far.failAt = tc.farFailAt

			ep, err := endpoint.NewStackHostTensorEndpoint(backend.Float32)
			require.NoError(t, err)
			require.NoError(t, ep.SetExecutor(sliced(t, 0, samples), nil))
			closeEndpoint(t, ep)
			planner, err := format.NewFormatPlanner(format.DefaultFormatPlannerConfig(scan.BscansPerVolume, scan.AscansPerBscan))
			require.NoError(t, err)
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
			e, err := engine.New(cfg, cpu.Default())
			require.NoError(t, err)
			t.Cleanup(func() { require.NoError(t, e.Close()) })
			queueRaster(t, e, scan)
			require.NoError(t, e.Prepare())

			d := startDrain(e)
			require.NoError(t, e.Start())
			err = waitOr(t, e, 30*time.Second, "the run hung")
			d.wait(t)
			require.Equal(t, tc.wantLanes, e.SessionLanes() > tc.slots, "a lane for the other device")
			assert.Equal(t, tc.wantLanes, m.concurrent.Load(), "the far device's first block submitted while the near one's waited")
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
