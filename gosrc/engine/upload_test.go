package engine_test

import (
	"bytes"
	"errors"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/cpu"
	"github.com/vortexgo/vortexgo/gosrc/endpoint"
	"github.com/vortexgo/vortexgo/gosrc/engine"
	"github.com/vortexgo/vortexgo/gosrc/format"
)

// goid is the calling goroutine's id (from its stack's header): which
// goroutine made a call, for tests only.
func goid() int64 {
	var buf [64]byte
	n := runtime.Stack(buf[:], false)
	f := bytes.Fields(buf[:n])
	id, _ := strconv.ParseInt(string(f[1]), 10, 64)
	return id
}

// callers is a set of goroutine ids, safe for concurrent use.
type callers struct {
	mu  sync.Mutex
	ids map[int64]bool
}

func (c *callers) add() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ids == nil {
		c.ids = map[int64]bool{}
	}
	c.ids[goid()] = true
}

func (c *callers) set() map[int64]bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[int64]bool{}
	for k := range c.ids {
		out[k] = true
	}
	return out
}

// uploadWatch is the CPU under a wrapper that notes which goroutines copy
// size bytes on its streams: a raw block's upload.
type uploadWatch struct {
	backend.Device
	size    int
	copiers *callers
	// failFrom, if set, fails the raw copies from the one it counts down
	// to (0: the first).
	failFrom *atomic.Int64
}

func (d uploadWatch) NewStream(priority int) (backend.Stream, error) {
	s, err := d.Device.NewStream(priority)
	if err != nil {
		return nil, err
	}
	return watchedStream{HostStream: s.(backend.HostStream), d: d}, nil
}

type watchedStream struct {
	backend.HostStream
	d uploadWatch
}

func (s watchedStream) Copy(dst, src uintptr, n int) error {
	if n == s.d.size {
		s.d.copiers.add()
		if s.d.failFrom != nil && s.d.failFrom.Add(-1) < 0 {
			return errors.New("watchedStream: copy failed")
		}
	}
	return s.HostStream.Copy(dst, src, n)
}

// processCallers is an orderedProc that notes which goroutines process.
type processCallers struct {
	*orderedProc
	by *callers
}

func (p processCallers) Process(slot int, s backend.Stream, in uintptr, records int, out, out8 uintptr) error {
	return p.ProcessTicket(p.Ticket(), slot, s, in, records, out, out8)
}

func (p processCallers) ProcessTicket(t uint64, slot int, s backend.Stream, in uintptr, records int, out, out8 uintptr) error {
	p.by.add()
	return p.orderedProc.ProcessTicket(t, slot, s, in, records, out, out8)
}

// TestUploadQueuedBySubmitter: the goroutine that submits a block's
// processing queues its upload too, on every path (the acquisition thread
// queueing them instead measured level on an H200, docs/bench.md session
// 52); each volume is whole and the processor sees the blocks in order.
func TestUploadQueuedBySubmitter(t *testing.T) {
	tests := []struct {
		name, path string
		slots      int
	}{
		{"one slot (the process loop)", "stages", 1},
		{"two slots, direct", "direct", 2},
		{"two slots, stages", "stages", 2},
		{"inline: the acquire loop submits everything", "inline", 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(engine.SlotPathEnv, tc.path)
			t.Setenv(engine.DeviceBlocksEnv, "12")
			scan := raster{AscansPerBscan: 4, BscansPerVolume: 5, Volumes: 3}
			const samples, rpb = 8, 3
			proc := processCallers{newOrderedProc(samples), &callers{}}
			proc.alone = true
			dev := uploadWatch{Device: cpu.Default(), size: rpb * samples * 2, copiers: &callers{}}
			ep, planner := floatStack(t, scan, samples)
			cfg := engine.Config{RecordsPerBlock: rpb, BlocksToAllocate: 4, PreloadCount: 2, Slots: tc.slots}
			cfg.AddAcquisition(newFakeAcq(samples), proc)
			cfg.AddProcessor(proc, planner)
			cfg.AddFormatter(planner, ep)
			e, err := runToEnd(t, cfg, dev, scan, "the run hung")
			require.NoError(t, err)
			st := e.Status()
			require.EqualValues(t, scan.Volumes, st.Volumes)
			require.Equal(t, st.BlocksAcquired, st.BlocksFormatted)

			copiers, processors := dev.copiers.set(), proc.by.set()
			require.NotEmpty(t, copiers)
			if tc.path == "inline" {
				require.Equal(t, processors, copiers, "the acquire loop does both")
				require.Len(t, copiers, 1)
			}
			for id := range copiers {
				require.True(t, processors[id], "each upload is queued by a goroutine that processes blocks")
			}
			proc.mu.Lock()
			seen := append([]int64(nil), proc.seen...)
			proc.mu.Unlock()
			for i := 1; i < len(seen); i++ {
				require.Equal(t, seen[i-1]+rpb, seen[i], "ordered parts out of block order at %d", i)
			}
			got := hostSlice[float32](ep.Tensor().Ptr(), scan.BscansPerVolume*scan.AscansPerBscan*samples)
			for b := range scan.BscansPerVolume {
				for a := range scan.AscansPerBscan {
					for s := range samples {
						require.Equal(t, float32(expected(scan, scan.Volumes-1, b, a, s)), got[(b*scan.AscansPerBscan+a)*samples+s])
					}
				}
			}
		})
	}
}

// TestUploadFails: an upload that fails fails the run, naming the upload,
// on every path, without a hang; the blocks after it are dropped.
func TestUploadFails(t *testing.T) {
	for _, path := range []string{"stages", "direct", "inline"} {
		t.Run(path, func(t *testing.T) {
			t.Setenv(engine.SlotPathEnv, path)
			scan := raster{AscansPerBscan: 4, BscansPerVolume: 5, Volumes: 3}
			const samples, rpb = 8, 3
			proc := newOrderedProc(samples)
			proc.alone = true
			fail := &atomic.Int64{}
			fail.Store(4)
			dev := uploadWatch{Device: cpu.Default(), size: rpb * samples * 2, copiers: &callers{}, failFrom: fail}
			ep := endpoint.NewNullEndpoint()
			closeEndpoint(t, ep)
			planner, err := format.NewFormatPlanner(format.DefaultFormatPlannerConfig(scan.BscansPerVolume, scan.AscansPerBscan))
			require.NoError(t, err)
			cfg := engine.Config{RecordsPerBlock: rpb, BlocksToAllocate: 4, PreloadCount: 2, Slots: 2}
			cfg.AddAcquisition(newFakeAcq(samples), proc)
			cfg.AddProcessor(proc, planner)
			cfg.AddFormatter(planner, ep)
			e, err := runToEnd(t, cfg, dev, scan, "the run hung after a failed upload")
			require.ErrorContains(t, err, "upload (acquisition #0): watchedStream: copy failed")
			require.Positive(t, e.Status().BlocksDropped)
		})
	}
}
