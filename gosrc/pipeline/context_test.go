package pipeline

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/vortexgo/vortexgo/gosrc/backend"
)

// TestTripleBufferedStep streams frames through a context's triple buffer
// and checks each result lands in the Dst of the step two rounds later.
func TestTripleBufferedStep(t *testing.T) {
	for _, streams := range []bool{true, false} {
		t.Run(map[bool]string{true: "streams", false: "sequential"}[streams], func(t *testing.T) {
			dev := newFakeDevice(backend.CUDA)
			dev.copyDelay = time.Millisecond
			x, err := NewManagedGpuContext(dev, streams)
			require.NoError(t, err)
			require.Equal(t, streams, x.StreamsEnabled())
			require.Equal(t, !streams, x.AsyncCoordinator().Sequential())
			tb, err := x.CreateTripleBuffer(4, backend.Uint8)
			require.NoError(t, err)

			const frames = 7
			var ins, outs []backend.Buffer
			for f := range frames + 2 {
				ins = append(ins, pinned(t, dev, []byte{byte(f), byte(f), byte(f), byte(f)}))
				outs = append(outs, pinned(t, dev, make([]byte, 4)))
			}
			negate := StageOp{Func: func(sc StageContext) error {
				b := sc.Inputs[0].Ptr()
				return sc.Stream.(backend.HostStream).Enqueue(func() {
					v := dev.read(b, 4)
					for i := range v {
						v[i] = ^v[i]
					}
					dev.write(b, v)
				})
			}}
			var last OpID
			for f := range frames + 2 {
				io := StepIO{Dst: HostOf(outs[f]), Op: negate}
				if f < frames {
					io.Src = HostOf(ins[f])
				}
				rep, err := x.TripleBufferedStep(tb, io)
				require.NoError(t, err)
				require.Equal(t, uint64(f), rep.Round)
				require.Equal(t, f >= 2, rep.Download != 0, "frame %d", f)
				if rep.Download != 0 {
					require.Equal(t, uint64(f-2), rep.DownloadedRound)
					last = rep.Download
				}
			}
			require.Zero(t, dev.hostSync.Load(), "steps synchronised the host")
			require.NoError(t, x.AsyncCoordinator().Wait(last, time.Second))
			require.NoError(t, x.AsyncCoordinator().SynchronizeAll())
			for f := 2; f < frames+2; f++ {
				v := byte(^byte(f - 2))
				require.Equal(t, []byte{v, v, v, v}, dev.read(outs[f].Ptr(), 4), "frame %d", f-2)
			}
			require.Equal(t, [3]BufferState{Free, Free, Free}, tb.States())
			m, err := x.CreatePipelineManager()
			require.NoError(t, err)
			require.Same(t, x.AsyncCoordinator(), m.Coordinator())
			require.NoError(t, x.Close())
			require.ErrorIs(t, x.Close(), backend.ErrClosed)
			_, err = x.CreateTripleBuffer(4, backend.Uint8)
			require.ErrorIs(t, err, backend.ErrClosed)
		})
	}
}

func TestTripleBufferedStepErrors(t *testing.T) {
	dev := newFakeDevice(backend.CPU)
	x, err := NewManagedGpuContext(dev, true)
	require.NoError(t, err)
	defer x.Close()
	tb, err := x.CreateTripleBuffer(4, backend.Uint8)
	require.NoError(t, err)
	in := pinned(t, dev, make([]byte, 4))
	noop := StageOp{Func: func(StageContext) error { return nil }}
	_, err = x.TripleBufferedStep(nil, StepIO{Op: noop})
	require.ErrorContains(t, err, "triple buffer is nil")
	_, err = x.TripleBufferedStep(tb, StepIO{Src: HostOf(in), N: 5, Op: noop})
	require.ErrorContains(t, err, "nbytes=5, expected 0 <= nbytes <= 4")
	_, err = x.TripleBufferedStep(tb, StepIO{Src: HostOf(in)})
	require.ErrorContains(t, err, "neither Func nor Kernel")
	for range 2 {
		_, err = x.TripleBufferedStep(tb, StepIO{Src: HostOf(in), Op: noop})
		require.NoError(t, err)
	}
	before := tb.States()
	_, err = x.TripleBufferedStep(tb, StepIO{Src: HostOf(in), Op: noop})
	require.ErrorContains(t, err, "round 2 has the result of round 0 to download, expected dst")
	require.Equal(t, before, tb.States(), "a refused step leaves the buffer untouched")
	_, err = NewManagedGpuContext(dev, true, CoordinatorOptions{}, CoordinatorOptions{})
	require.ErrorContains(t, err, "2 options")
}
