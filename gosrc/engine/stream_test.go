package engine_test

import (
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/endpoint"
	"github.com/vortexgo/vortexgo/gosrc/engine"
)

// streamEndpoint is a NullEndpoint that records the processing stream each
// formatted block reports (BlockData.Stream).
type streamEndpoint struct {
	*endpoint.NullEndpoint
	mu      sync.Mutex
	streams []backend.Stream
	info    engine.EndpointInfo
}

func (e *streamEndpoint) Prepare(info engine.EndpointInfo) error {
	e.info = info
	return e.NullEndpoint.Prepare(info)
}

func (e *streamEndpoint) Format(b *engine.BlockData, plan *engine.FormatPlan) error {
	e.mu.Lock()
	e.streams = append(e.streams, b.Stream)
	e.mu.Unlock()
	return e.NullEndpoint.Format(b, plan)
}

// TestBlockDataStreamIsTheProcessingSlot: every processed block tells the
// endpoints the stream it was processed on, one of the engine's slot
// streams in rotation, so that an endpoint can queue its formatting in
// stream order after the processing. With VORTEXGO_SLOT_STREAMS=n the
// slots run on n streams, slot i on stream i mod n (the CPU backend's
// default: one a slot).
func TestBlockDataStreamIsTheProcessingSlot(t *testing.T) {
	t.Setenv(engine.DeviceBlocksEnv, "") // the pool as allocated: this test asserts its size
	tests := []struct {
		name          string
		slots         int
		env, active   string
		used, streams int
	}{
		{"one slot", 1, "", "", 1, 1},
		{"two slots", 2, "", "", 2, 2},
		{"three slots", 3, "", "", 3, 3},
		{"four slots", 4, "", "", 4, 4},
		{"four slots on two streams", 4, "2", "", 4, 2},
		{"three slots on two streams", 3, "2", "", 3, 2},
		{"four slots on one stream", 4, "1", "", 4, 1},
		{"three slots, 0: one a slot", 3, "0", "", 3, 3},
		{"two slots, more streams than slots", 2, "5", "", 2, 2},
		{"four slots, two used", 4, "", "2", 2, 2},
		{"four slots, one used", 4, "", "1", 1, 1},
		{"three slots, 0: every one used", 3, "", "0", 3, 3},
		{"two slots, more used than there are", 2, "", "7", 2, 2},
		{"four slots, three used on two streams", 4, "2", "3", 3, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(engine.SlotStreamsEnv, tc.env)
			t.Setenv(engine.ActiveSlotsEnv, tc.active)
			ep := &streamEndpoint{NullEndpoint: endpoint.NewNullEndpoint()}
			closeEndpoint(t, ep)
			r := newRig(t, 4, raster{AscansPerBscan: 5, BscansPerVolume: 2, Volumes: 3}, ep)
			r.cfg.Slots = tc.slots
			e := r.engine(t)
			require.NoError(t, e.Prepare())
			d := startDrain(e)
			require.NoError(t, e.Start())
			require.NoError(t, e.Wait())
			d.wait(t)
			slots := e.SlotStreams()
			require.Len(t, slots, tc.used, "the slots the blocks cycle through")
			require.Equal(t, tc.used, ep.info.Slots, "EndpointInfo.Slots: the slots used")
			require.Equal(t, r.cfg.BlocksToAllocate/tc.used, ep.info.BlocksPerSlot)
			distinct := map[backend.Stream]bool{}
			for _, s := range slots {
				distinct[s] = true
			}
			require.Len(t, distinct, tc.streams, "distinct slot streams")
			require.GreaterOrEqual(t, len(ep.streams), 6, "one Format per block: 3 volumes of 2 blocks")
			for i, s := range ep.streams {
				require.NotNil(t, s, "block %d: a processed block names its stream", i)
				require.Equal(t, i%tc.used%tc.streams, slices.Index(slots, s), "block %d: slot streams in rotation", i)
			}
		})
	}
}

// TestDefaultActiveSlots: on a GPU, blocks under 2 MiB of raw spectra
// cycle through at most two slots; from 2 MiB, and on the CPU backend,
// through every slot.
func TestDefaultActiveSlots(t *testing.T) {
	tests := []struct {
		kind               backend.Kind
		slots, bytes, want int
	}{
		{backend.CUDA, 4, 512 << 10, 2}, // 256 x 1024
		{backend.CUDA, 4, 2<<20 - 1, 2}, // just under 2 MiB (1024 x 512 and 2048 x 256 are 1 MiB)
		{backend.CUDA, 3, 1 << 20, 2},
		{backend.CUDA, 4, 2 << 20, 4}, // 1024 x 1024: every slot, on two streams
		{backend.CUDA, 8, 16 << 20, 8},
		{backend.CUDA, 2, 512 << 10, 2},
		{backend.CUDA, 1, 512 << 10, 1},
		{backend.CPU, 4, 512 << 10, 4},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%v/%d slots/%d bytes", tc.kind, tc.slots, tc.bytes), func(t *testing.T) {
			assert.Equal(t, tc.want, engine.DefaultActiveSlots(tc.kind, tc.slots, tc.bytes))
		})
	}
}

// TestSlotEnvRefused: a VORTEXGO_SLOT_STREAMS or VORTEXGO_ACTIVE_SLOTS
// that is not a count fails Prepare naming the variable and the value;
// nothing is left prepared, and the next Prepare with a good value runs.
func TestSlotEnvRefused(t *testing.T) {
	for _, env := range []string{engine.SlotStreamsEnv, engine.ActiveSlotsEnv} {
		for _, bad := range []string{"two", "-1", "2.5", " 2"} {
			t.Run(env+"="+bad, func(t *testing.T) {
				ep := &streamEndpoint{NullEndpoint: endpoint.NewNullEndpoint()}
				closeEndpoint(t, ep)
				r := newRig(t, 4, raster{AscansPerBscan: 5, BscansPerVolume: 2, Volumes: 1}, ep)
				r.cfg.Slots = 4
				e := r.engine(t)
				t.Setenv(env, bad)
				err := e.Prepare()
				require.Error(t, err)
				require.ErrorContains(t, err, env)
				require.ErrorContains(t, err, fmt.Sprintf("%q", bad))
				require.Empty(t, e.SlotStreams(), "a failed Prepare keeps no stream")
				t.Setenv(env, "2")
				require.NoError(t, e.Prepare())
				d := startDrain(e)
				require.NoError(t, e.Start())
				require.NoError(t, e.Wait())
				d.wait(t)
			})
		}
	}
}

// TestDefaultSlotStreams: more than two slots share two streams on a GPU
// from 2 MiB of raw spectra a block; otherwise, and on the CPU backend
// always, each slot has its own.
func TestDefaultSlotStreams(t *testing.T) {
	tests := []struct {
		kind               backend.Kind
		slots, bytes, want int
	}{
		{backend.CUDA, 4, 2 << 20, 2},
		{backend.CUDA, 4, 16 << 20, 2},
		{backend.CUDA, 3, 2 << 20, 2},
		{backend.CUDA, 4, 2<<20 - 1, 4}, // 1024 x 512 and 2048 x 256 keep theirs
		{backend.CUDA, 4, 512 << 10, 4},
		{backend.CUDA, 2, 16 << 20, 2},
		{backend.CUDA, 1, 16 << 20, 1},
		{backend.CPU, 4, 16 << 20, 4},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%v/%d slots/%d bytes", tc.kind, tc.slots, tc.bytes), func(t *testing.T) {
			assert.Equal(t, tc.want, engine.DefaultSlotStreams(tc.kind, tc.slots, tc.bytes))
		})
	}
}
