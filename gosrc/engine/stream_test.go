package engine_test

import (
	"slices"
	"sync"
	"testing"

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
// stream order after the processing.
func TestBlockDataStreamIsTheProcessingSlot(t *testing.T) {
	tests := []struct {
		name  string
		slots int
	}{
		{"one slot", 1},
		{"two slots", 2},
		{"three slots", 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
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
			require.Len(t, slots, tc.slots)
			require.GreaterOrEqual(t, len(ep.streams), 6, "one Format per block: 3 volumes of 2 blocks")
			for i, s := range ep.streams {
				require.NotNil(t, s, "block %d: a processed block names its stream", i)
				require.Equal(t, i%tc.slots, slices.Index(slots, s), "block %d: slot streams in rotation", i)
			}
		})
	}
}
