package engine_test

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/cpu"
	"github.com/vortexgo/vortexgo/gosrc/endpoint"
	"github.com/vortexgo/vortexgo/gosrc/engine"
	"github.com/vortexgo/vortexgo/gosrc/format"
	"github.com/vortexgo/vortexgo/gosrc/marker"
	"github.com/vortexgo/vortexgo/gosrc/scan"
	"github.com/vortexgo/vortexgo/gosrc/storage"
)

// drain collects events on a goroutine, as the Python dispatcher does,
// until EventDone.
type drain struct {
	mu     sync.Mutex
	events []engine.Event
	done   chan struct{}
}

// runToEnd makes an engine of cfg on dev, queues scan's raster, prepares
// and starts it, and returns it with Wait's result once the run ends (its
// events drained), or fails the test (hang) when it does not end within 30
// seconds. Closed by the test.
func runToEnd(t *testing.T, cfg engine.Config, dev backend.Device, scan raster, hang string) (*engine.Engine, error) {
	t.Helper()
	e, err := engine.New(cfg, dev)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, e.Close()) })
	queueRaster(t, e, scan)
	require.NoError(t, e.Prepare())
	d := startDrain(e)
	require.NoError(t, e.Start())
	err = waitOr(t, e, 30*time.Second, hang)
	d.wait(t)
	return e, err
}

// floatStack is a host stack endpoint of float32 A-scans of samples and a
// format planner of scan's raster (the planner formats into it once the
// test adds both to its config). The endpoint is closed by the test.
func floatStack(t *testing.T, scan raster, samples int) (*endpoint.StackTensorEndpoint, *format.FormatPlanner) {
	t.Helper()
	ep, err := endpoint.NewStackHostTensorEndpoint(backend.Float32)
	require.NoError(t, err)
	require.NoError(t, ep.SetExecutor(sliced(t, 0, samples), nil))
	closeEndpoint(t, ep)
	planner, err := format.NewFormatPlanner(format.DefaultFormatPlannerConfig(scan.BscansPerVolume, scan.AscansPerBscan))
	require.NoError(t, err)
	return ep, planner
}

// waitOr is e.Wait's result, or a test failure (hang) when the run does
// not end within timeout.
func waitOr(t *testing.T, e *engine.Engine, timeout time.Duration, hang string) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- e.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(timeout):
		t.Fatal(hang)
		return nil
	}
}

func startDrain(e *engine.Engine) *drain { return drainFrom(e, nil) }

// drainFrom starts draining once ready returns true (nil: at once).
func drainFrom(e *engine.Engine, ready func() bool) *drain {
	d := &drain{done: make(chan struct{})}
	go func() {
		defer close(d.done)
		for ready != nil && !ready() {
			time.Sleep(100 * time.Microsecond)
		}
		for {
			for _, ev := range nextEvents(e, 64, 50*time.Millisecond) {
				d.mu.Lock()
				d.events = append(d.events, ev)
				d.mu.Unlock()
				if ev.Kind == engine.EventDone {
					return
				}
			}
		}
	}()
	return d
}

func (d *drain) wait(t *testing.T) []engine.Event {
	t.Helper()
	select {
	case <-d.done:
	case <-time.After(10 * time.Second):
		t.Fatal("no EventDone within 10 s")
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.events
}

// countEngine counts the lifecycle events ev among evs.
func countEngine(evs []engine.Event, ev engine.EngineEvent) int {
	n := 0
	for _, e := range evs {
		if e.Kind == engine.EventEngine && engine.EngineEvent(e.ScanIdx) == ev {
			n++
		}
	}
	return n
}

func count(evs []engine.Event, k engine.EventKind, ep int) int {
	n := 0
	for _, ev := range evs {
		if ev.Kind == k && ev.Endpoint == ep {
			n++
		}
	}
	return n
}

// raster is the scan a rig queues: Volumes one-volume raster scans (0:
// one looping scan) whose records line up with the fake acquisition's
// (indexRaster).
type raster struct {
	AscansPerBscan, BscansPerVolume int
	Bidirectional                   bool
	Volumes                         int
}

// RecordsPerVolume is AscansPerBscan * BscansPerVolume.
func (r raster) RecordsPerVolume() int64 { return int64(r.AscansPerBscan) * int64(r.BscansPerVolume) }

// indexRaster is a raster scan in which record r of the run is A-scan
// r%ascans of B-scan r/ascans: its first segment starts at the origin (so
// the queue emits no lead-in sample) and every inactive path is 0 samples
// long (FixedLinear(0, 0)).
func indexRaster(t *testing.T, r raster, loop bool) *scan.RasterScan {
	t.Helper()
	cfg := scan.NewRasterScanConfig()
	cfg.SegmentsPerVolume, cfg.SamplesPerSegment = r.BscansPerVolume, r.AscansPerBscan
	cfg.BidirectionalSegments = r.Bidirectional
	cfg.InactivePolicy = scan.FixedLinear(0, 0)
	cfg.BypassLimitsCheck = true
	cfg.Loop = loop
	s := &scan.RasterScan{}
	require.NoError(t, s.Initialize(cfg))
	buf, err := s.ScanBuffer()
	require.NoError(t, err)
	cfg.Offset = [2]float64{cfg.Offset[0] - buf[0], cfg.Offset[1] - buf[1]}
	require.NoError(t, s.Initialize(cfg))
	return s
}

type rig struct {
	cfg  engine.Config
	acq  *fakeAcq
	proc *fakeProc
	fmt  *format.FormatPlanner
	scan raster
}

// newRig wires the fake acquisition and processor to a format planner of
// scan's shape and eps; the engine (rig.engine) plays scan from its queue.
func newRig(t *testing.T, samples int, scan raster, eps ...engine.Endpoint) *rig {
	t.Helper()
	r := &rig{acq: newFakeAcq(samples), proc: newFakeProc(samples), scan: scan}
	var err error
	r.fmt, err = format.NewFormatPlanner(format.DefaultFormatPlannerConfig(scan.BscansPerVolume, scan.AscansPerBscan))
	require.NoError(t, err)
	r.cfg = engine.Config{RecordsPerBlock: 5, BlocksToAllocate: 4, PreloadCount: 2}
	r.cfg.AddAcquisition(r.acq, r.proc)
	r.cfg.AddProcessor(r.proc, r.fmt)
	r.cfg.AddFormatter(r.fmt, eps...)
	return r
}

// queueRaster appends scan to e's queue: volume i as a scan of sequence i
// (vortex's scan_index), or, for Volumes 0, one looping scan.
func queueRaster(t *testing.T, e *engine.Engine, scan raster) {
	t.Helper()
	if scan.Volumes == 0 {
		require.NoError(t, e.ScanQueue().Append(indexRaster(t, scan, true), nil, marker.NewScanBoundary(0, 0, 0)))
		return
	}
	s := indexRaster(t, scan, false)
	for i := range scan.Volumes {
		require.NoError(t, e.ScanQueue().Append(s, nil, marker.NewScanBoundary(0, int64(i), 0)))
	}
}

// queue appends the rig's scan to e's queue.
func (r *rig) queue(t *testing.T, e *engine.Engine) { queueRaster(t, e, r.scan) }

func (r *rig) engine(t *testing.T) *engine.Engine {
	t.Helper()
	e, err := engine.New(r.cfg, cpu.Default())
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, e.Close()) })
	r.queue(t, e)
	return e
}

func closeEndpoint(t *testing.T, ep engine.Endpoint) {
	t.Cleanup(func() { require.NoError(t, ep.Close()) })
}

// sliced is a stack executor keeping samples [start, stop) of each record.
func sliced(t *testing.T, start, stop int) *format.StackFormatExecutor {
	t.Helper()
	x, err := format.NewStackFormatExecutor(format.StackFormatExecutorConfig{SampleSlice: format.SimpleSlice(start, stop, 1)})
	require.NoError(t, err)
	return x
}

// expected returns the value formatted at (bscan, ascan, depth) of volume
// vol for the fake pipeline: the raw value, placed by the raster scan.
func expected(scan raster, vol, bscan, ascan, sample int) uint16 {
	a := ascan
	if scan.Bidirectional && bscan%2 == 1 {
		a = scan.AscansPerBscan - 1 - ascan
	}
	rec := int64(vol)*scan.RecordsPerVolume() + int64(bscan*scan.AscansPerBscan+a)
	return rawValue(rec, sample)
}

func TestEngineFormatsVolumesIntoTensor(t *testing.T) {
	tests := []struct {
		name  string
		dtype backend.DType
		host  bool
	}{
		{"device float32", backend.Float32, false},
		{"device uint16", backend.Uint16, false},
		{"device int8", backend.Int8, false},
		{"host float32", backend.Float32, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			newEp := endpoint.NewStackDeviceTensorEndpoint
			if tc.host {
				newEp = endpoint.NewStackHostTensorEndpoint
			}
			ep, err := newEp(tc.dtype)
			require.NoError(t, err)
			require.NoError(t, ep.SetExecutor(sliced(t, 2, 6), nil))
			closeEndpoint(t, ep)
			scan := raster{AscansPerBscan: 4, BscansPerVolume: 3, Bidirectional: true, Volumes: 2}
			r := newRig(t, 8, scan, ep)
			e := r.engine(t)
			require.NoError(t, e.Prepare())
			require.Equal(t, []int{3, 4, 4}, ep.Tensor().Shape())
			d := startDrain(e)
			require.NoError(t, e.Start())
			require.NoError(t, e.Wait())
			evs := d.wait(t)

			// The tensor holds the last volume, cropped and flipped.
			n := 3 * 4 * 4
			for b := range 3 {
				for a := range 4 {
					for s := range 4 {
						want := expected(scan, 1, b, a, s+2)
						i := (b*4+a)*4 + s
						var got float64
						switch tc.dtype {
						case backend.Float32:
							got = float64(hostSlice[float32](ep.Tensor().Ptr(), n)[i])
						case backend.Uint16:
							got = float64(hostSlice[uint16](ep.Tensor().Ptr(), n)[i])
						case backend.Int8:
							got = float64(hostSlice[int8](ep.Tensor().Ptr(), n)[i])
							want %= 128
						}
						require.Equal(t, float64(want), got, "bscan %d ascan %d sample %d", b, a, s)
					}
				}
			}

			st := e.Status()
			require.Equal(t, int64(5), st.BlocksAcquired, "24 records in blocks of 5: the queue runs dry in the fifth")
			require.Equal(t, int64(5), st.BlocksFormatted)
			require.Equal(t, int64(2), st.Volumes)
			require.Zero(t, st.BlocksDropped)
			require.True(t, st.Done)
			require.Equal(t, 6, count(evs, engine.EventSegment, 0))
			require.Equal(t, 2, count(evs, engine.EventVolume, 0))
			require.Equal(t, 2, count(evs, engine.EventScan, 0), "one scan per queued volume")
			require.Equal(t, 5, count(evs, engine.EventUpdate, 0))
			require.Equal(t, engine.EventDone, evs[len(evs)-1].Kind)

			// In order: volume 0 before volume 1, segments numbered 0..2 in
			// each; vortex's arguments: ScanIdx is the scan's sequence (one
			// scan per volume here), VolumeIdx the volume's index in its scan.
			seg := int64(0)
			for _, ev := range evs {
				if ev.Kind == engine.EventSegment {
					require.Equal(t, seg/3, ev.ScanIdx)
					require.Equal(t, seg%3, ev.BscanIdx)
					require.Equal(t, int64(0), ev.VolumeIdx)
					require.Equal(t, (seg+1)*4, ev.Sample)
					seg++
				}
			}
			sum := e.Timings()
			require.Equal(t, 5, sum.Process.Count)
			require.GreaterOrEqual(t, sum.Process.Max, sum.Process.Min)
		})
	}
}

// forEachStored calls fn for every value of vols volumes of scan stored
// depth deep, in the file's order: i is its index, (v, b, a, s) its volume,
// B-scan, A-scan and sample.
func forEachStored(scan raster, vols, depth int, fn func(i, v, b, a, s int)) {
	i := 0
	for v := range vols {
		for b := range scan.BscansPerVolume {
			for a := range scan.AscansPerBscan {
				for s := range depth {
					fn(i, v, b, a, s)
					i++
				}
			}
		}
	}
}

// SimpleStack writes vortex's 5-D shape; the channels axis here is 1.
var npyShape = regexp.MustCompile(`'shape': \((\d+), (\d+), (\d+), (\d+)(?:, 1)?\)`)

// readNPY returns the shape and data of a .npy file written by SimpleStack.
func readNPY(t *testing.T, path string) ([]int, []byte) {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, "\x93NUMPY", string(b[:6]))
	// Format 2.0 (what vortex writes) has a 4-byte header length.
	pre, hlen := 12, int(binary.LittleEndian.Uint32(b[8:12]))
	if b[6] == 1 {
		pre, hlen = 10, int(binary.LittleEndian.Uint16(b[8:10]))
	}
	m := npyShape.FindStringSubmatch(string(b[pre : pre+hlen]))
	require.NotNil(t, m, "header %q", b[pre:pre+hlen])
	shape := make([]int, 4)
	for i := range shape {
		shape[i], err = strconv.Atoi(m[i+1])
		require.NoError(t, err)
	}
	return shape, b[pre+hlen:]
}

func TestEngineStoresVolumes(t *testing.T) {
	scan := raster{AscansPerBscan: 4, BscansPerVolume: 2, Volumes: 3}
	tests := []struct {
		name    string
		spectra bool
		dtype   backend.DType
		depth   int
	}{
		{"ascans int8", false, backend.Int8, 3},
		{"spectra uint16", true, backend.Uint16, 8},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "out.npy")
			stack, err := storage.NewSimpleStack(tc.dtype)
			require.NoError(t, err)
			require.NoError(t, stack.Open(storage.SimpleStackConfig{Path: path, Shape: [3]int{2, 4, tc.depth}, Header: storage.HeaderNumPy}))
			var ep *endpoint.StackStorageEndpoint
			if tc.spectra {
				ep, err = endpoint.NewSpectraStackEndpoint(stack)
			} else {
				ep, err = endpoint.NewAscanStackEndpoint(stack)
			}
			require.NoError(t, err)
			if !tc.spectra { // spectra are stored whole
				require.NoError(t, ep.SetExecutor(sliced(t, 1, 4)))
			}
			closeEndpoint(t, ep)
			r := newRig(t, 8, scan, ep)
			e := r.engine(t)
			require.NoError(t, e.Prepare())
			d := startDrain(e)
			require.NoError(t, e.Start())
			require.NoError(t, e.Wait())
			d.wait(t)
			require.Equal(t, 3, ep.Written())
			require.NoError(t, stack.Close())

			shape, data := readNPY(t, path)
			require.Equal(t, []int{3, 2, 4, tc.depth}, shape)
			forEachStored(scan, 3, tc.depth, func(i, v, b, a, s int) {
				if tc.spectra {
					require.Equal(t, expected(scan, v, b, a, s), binary.LittleEndian.Uint16(data[2*i:]))
				} else {
					require.Equal(t, int8(expected(scan, v, b, a, s+1)%128), int8(data[i]))
				}
			})
		})
	}
}

func TestEngineStopMidVolume(t *testing.T) {
	path := filepath.Join(t.TempDir(), "stop.npy")
	stack, err := storage.NewSimpleStack(backend.Float32)
	require.NoError(t, err)
	require.NoError(t, stack.Open(storage.SimpleStackConfig{Path: path, Shape: [3]int{3, 4, 8}, Header: storage.HeaderNumPy}))
	ep, err := endpoint.NewAscanStackEndpoint(stack)
	require.NoError(t, err)
	closeEndpoint(t, ep)
	// A scan that repeats forever, acquired at a limited rate.
	r := newRig(t, 8, raster{AscansPerBscan: 4, BscansPerVolume: 3}, ep)
	r.acq.delay = 2 * time.Millisecond
	e := r.engine(t)
	require.NoError(t, e.Prepare())
	d := startDrain(e)
	require.NoError(t, e.Start())
	require.Eventually(t, func() bool { return e.Status().Volumes >= 2 }, 5*time.Second, time.Millisecond)
	// Land the stop inside a volume: 12 records per volume, 5 per block.
	require.Eventually(t, func() bool {
		st := e.Status()
		return st.BlocksAcquired*5%12 != 0
	}, 5*time.Second, 100*time.Microsecond)
	require.NoError(t, e.Stop())
	require.NoError(t, e.Stop(), "Stop is idempotent")
	require.True(t, e.Done())
	require.True(t, e.WaitFor(time.Millisecond))
	evs := d.wait(t)
	st := e.Status()
	require.True(t, st.Done)
	require.Equal(t, st.BlocksAcquired, st.BlocksFormatted, "acquired blocks are drained, not dropped")
	require.Equal(t, int(st.Volumes), count(evs, engine.EventVolume, 0))
	require.Equal(t, int(st.Volumes), ep.Written(), "every completed volume is stored by the time Stop returns")
	require.Equal(t, int32(1), r.acq.stopped.Load(), "acquisition stopped once")
	require.NoError(t, stack.Close())
	shape, data := readNPY(t, path)
	require.Equal(t, []int{int(st.Volumes), 3, 4, 8}, shape)
	require.Len(t, data, int(st.Volumes)*3*4*8*4)
}

func TestEngineBackpressureFromEventQueue(t *testing.T) {
	tests := []struct {
		name   string
		policy engine.QueuePolicy
	}{
		{"block (default)", engine.QueueBlock},
		{"drop", engine.QueueDrop},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ep := endpoint.NewNullEndpoint()
			closeEndpoint(t, ep)
			r := newRig(t, 4, raster{AscansPerBscan: 5, BscansPerVolume: 2, Volumes: 10}, ep)
			r.cfg.EventQueueSize = 4
			r.cfg.EventPolicy = tc.policy
			e := r.engine(t)
			require.NoError(t, e.Prepare())
			require.NoError(t, e.Start())
			// Nobody drains yet: a slow Python consumer.
			if tc.policy == engine.QueueBlock {
				time.Sleep(50 * time.Millisecond)
				st := e.Status()
				require.False(t, st.Done, "the engine waits for the consumer")
				require.Less(t, st.BlocksAcquired, int64(20))
				d := startDrain(e)
				require.NoError(t, e.Wait())
				evs := d.wait(t)
				require.Zero(t, e.Status().EventsDropped)
				// 100 records in 20 blocks, and the block past the scan
				// in which the queue runs dry.
				require.Equal(t, 21, count(evs, engine.EventUpdate, 0))
				require.Equal(t, 20, count(evs, engine.EventSegment, 0))
				require.Equal(t, 10, count(evs, engine.EventVolume, 0))
				require.Equal(t, 10, count(evs, engine.EventScan, 0))
				return
			}
			require.NoError(t, e.Wait())
			st := e.Status()
			require.Equal(t, int64(21), st.BlocksFormatted)
			// The queue's 4 slots hold Launch, Run and Start (lifecycle
			// events come first and are never dropped) and one block event.
			require.Equal(t, int64(21+20+10+10-1), st.EventsDropped, "all but the queue's room are dropped and counted")
		})
	}
}

func TestEngineWaitsForUserLock(t *testing.T) {
	ep, err := endpoint.NewStackDeviceTensorEndpoint(backend.Float32)
	require.NoError(t, err)
	closeEndpoint(t, ep)
	r := newRig(t, 4, raster{AscansPerBscan: 5, BscansPerVolume: 2}, ep)
	e := r.engine(t)
	require.NoError(t, e.Prepare())
	d := startDrain(e)
	const user = 42
	require.NoError(t, ep.Tensor().Lock(user, false, -1))
	require.NoError(t, e.Start())
	time.Sleep(30 * time.Millisecond)
	require.Zero(t, e.Status().BlocksFormatted, "no write while a user holds the lock")
	require.NoError(t, ep.Tensor().Unlock(user, false))
	require.Eventually(t, func() bool { return e.Status().BlocksFormatted > 3 }, 5*time.Second, time.Millisecond)

	// Holding the lock across Stop must not hang it.
	require.NoError(t, ep.Tensor().Lock(user, true, -1))
	stopped := make(chan error)
	go func() { stopped <- e.Stop() }()
	select {
	case err := <-stopped:
		require.NoError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("Stop hung on a user-held lock")
	}
	require.NoError(t, ep.Tensor().Unlock(user, true))
	d.wait(t)
	st := e.Status()
	require.Equal(t, st.BlocksAcquired, st.BlocksFormatted+st.BlocksDropped)
}

func TestEngineAcquisitionErrorEndsRun(t *testing.T) {
	ep := endpoint.NewNullEndpoint()
	closeEndpoint(t, ep)
	r := newRig(t, 4, raster{AscansPerBscan: 5, BscansPerVolume: 2}, ep)
	r.acq.failAt = 30
	e := r.engine(t)
	require.NoError(t, e.Prepare())
	d := startDrain(e)
	require.NoError(t, e.Start())
	err := e.Wait()
	require.ErrorIs(t, err, errFakeAcq)
	evs := d.wait(t)
	require.Equal(t, 1, countEngine(evs, engine.EngineError))
	require.Contains(t, e.Status().Err, "fake acquisition failure")
	require.Equal(t, int64(6), e.Status().BlocksFormatted, "blocks before the failure are delivered")
}

func TestEngineConfigErrorsNameTheField(t *testing.T) {
	acq, proc := newFakeAcq(4), newFakeProc(4)
	f, err := format.NewFormatPlanner(format.DefaultFormatPlannerConfig(2, 2))
	require.NoError(t, err)
	base := func() engine.Config {
		c := engine.Config{RecordsPerBlock: 4, BlocksToAllocate: 2}
		c.AddAcquisition(acq, proc)
		c.AddProcessor(proc, f)
		c.AddFormatter(f, endpoint.NewNullEndpoint())
		return c
	}
	tests := []struct {
		name   string
		mutate func(*engine.Config)
		want   string
	}{
		{"records", func(c *engine.Config) { c.RecordsPerBlock = 0 }, "EngineConfig.records_per_block=0, expected 1 <="},
		{"records huge", func(c *engine.Config) { c.RecordsPerBlock = 1 << 40 }, "EngineConfig.records_per_block=1099511627776"},
		{"blocks huge", func(c *engine.Config) { c.BlocksToAllocate = 1 << 40 }, "EngineConfig.blocks_to_allocate=1099511627776"},
		{"queue huge", func(c *engine.Config) { c.EventQueueSize = 1 << 40 }, "EngineConfig.event_queue_size=1099511627776"},
		{"slots huge", func(c *engine.Config) { c.Slots = 1 << 40 }, "Config.Slots: 1099511627776"},
		{"blocks", func(c *engine.Config) { c.BlocksToAllocate = -1 }, "EngineConfig.blocks_to_allocate=-1"},
		{"preload", func(c *engine.Config) { c.PreloadCount = 3 }, "EngineConfig.preload_count=3"},
		{"acquire", func(c *engine.Config) { c.BlocksToAcquire = -1 }, "EngineConfig.blocks_to_acquire=-1"},
		{"slots", func(c *engine.Config) { c.Slots = -1 }, "Config.Slots: -1"},
		{"queue", func(c *engine.Config) { c.EventQueueSize = -1 }, "EngineConfig.event_queue_size=-1"},
		{"policy", func(c *engine.Config) { c.EventPolicy = 9 }, "EngineConfig.event_policy=9"},
		{"spin negative", func(c *engine.Config) { c.DispatchSpin = -time.Millisecond }, "EngineConfig.dispatch_spin=-1ms"},
		{"spin long", func(c *engine.Config) { c.DispatchSpin = 2 * time.Second }, "EngineConfig.dispatch_spin=2s, expected 0 <= dispatch_spin <= 1s"},
		{"nil acquisition", func(c *engine.Config) { c.AddAcquisition(nil) }, "Config.AddAcquisition: acq=nil"},
		{"acquisition twice", func(c *engine.Config) { c.AddAcquisition(acq, newFakeProc(4)) }, "acquisition #1 is added twice"},
		{"acquisition without processors", func(c *engine.Config) { c.AddAcquisition(newFakeAcq(4)) }, "acquisition #1 has no processors"},
		{"empty rotation set", func(c *engine.Config) { c.SetRotation([]engine.Processor{proc}, nil) }, "Config.Rotations[0][1]: an empty set"},
		{"rotation index", func(c *engine.Config) { c.Rotations = [][][]int{{{0}, {3}}} }, "processor index 3, expected 0 <= index < 1"},
		{"rotation stranger", func(c *engine.Config) { c.SetRotation([]engine.Processor{newFakeProc(4)}) }, "set 0 lists a processor the acquisition does not feed"},
		{"processor in no set", func(c *engine.Config) {
			p2 := newFakeProc(4)
			c.AppendProcessor(p2)
			c.SetRotation([]engine.Processor{proc})
			c.AddProcessor(p2)
		}, "processor #1 of the acquisition is in no set"},
		{"formatter fed twice per block", func(c *engine.Config) {
			p2 := newFakeProc(4)
			c.AppendProcessor(p2) // divide: both processors get every block
			c.AddProcessor(p2, f)
		}, "formatter #0: 2 of its processors process the blocks of rotation set 0"},
		{"formatter missing blocks", func(c *engine.Config) {
			p2 := newFakeProc(4)
			c.AppendProcessor(p2)
			c.SetRotation([]engine.Processor{proc}, []engine.Processor{p2}) // cycle: f is fed by proc only
			c.AddProcessor(p2)
		}, "formatter #0: 0 of its processors process the blocks of rotation set 1"},
		{"formatter across acquisitions", func(c *engine.Config) {
			p2 := newFakeProc(4)
			c.AddAcquisition(newFakeAcq(4), p2)
			c.AddProcessor(p2, f)
		}, "formatter #0 is fed by processors of different acquisitions"},
		{"orphan processor", func(c *engine.Config) { c.AddProcessor(newFakeProc(4)) }, "Config.AddProcessor: processor #1 is not fed"},
		{"orphan formatter", func(c *engine.Config) { c.AddFormatter(f) }, "Config.AddFormatter: formatter #1 is added twice"},
		{"nil endpoint", func(c *engine.Config) { c.AddFormatter(f, nil) }, "Config.AddFormatter: endpoints[0]=nil"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := base()
			tc.mutate(&c)
			require.ErrorContains(t, c.Validate(), tc.want)
			require.ErrorIs(t, c.Validate(), backend.ErrInvalid, "a ValueError in Python")
			e, err := engine.New(c, cpu.Default())
			require.NoError(t, err)
			require.ErrorContains(t, e.Prepare(), tc.want, "Prepare rejects it too")
			require.NoError(t, e.Close())
		})
	}
	c := base()
	require.NoError(t, c.Validate())
}

func TestStorageEndpointRejectsUnopenedStore(t *testing.T) {
	stack, err := storage.NewSimpleStack(backend.Int8)
	require.NoError(t, err)
	// Opening a bad path fails before any engine exists...
	require.ErrorContains(t, stack.Open(storage.SimpleStackConfig{Path: "/nonexistent/dir/x.npy", Shape: [3]int{2, 4, 4}, Header: storage.HeaderNumPy}), "cannot be written")
	// ...and an engine with the unopened store fails at Prepare.
	ep, err := endpoint.NewAscanStackEndpoint(stack)
	require.NoError(t, err)
	r := newRig(t, 4, raster{AscansPerBscan: 4, BscansPerVolume: 2, Volumes: 1}, ep)
	e := r.engine(t)
	require.ErrorContains(t, e.Prepare(), "storage's volume is 0 bytes (shape [0 0 0 0]), expected 32")
	require.False(t, r.acq.started.Load(), "nothing started")
}

// TestEngineAllocationsPerBlock runs the engine for n and 3n blocks and
// checks the extra allocations per extra block: the hot path must not
// allocate (the CPU backend's own per-call allocations are bounded here).
// The Generate stage plays a looping raster and the planner plans every
// block from its markers.
func TestEngineAllocationsPerBlock(t *testing.T) {
	mallocs := func(blocks int) uint64 {
		ep, err := endpoint.NewStackDeviceTensorEndpoint(backend.Int8)
		require.NoError(t, err)
		defer func() { require.NoError(t, ep.Close()) }()
		r := newRig(t, 64, raster{AscansPerBscan: 10, BscansPerVolume: 4}, ep)
		r.cfg.RecordsPerBlock = 16
		r.cfg.BlocksToAcquire = blocks
		r.cfg.EventPolicy = engine.QueueDrop // no consumer in this test
		r.cfg.EventQueueSize = 1
		e, err := engine.New(r.cfg, cpu.Default())
		require.NoError(t, err)
		// The real raster: the queue reads its last state with every block
		// (scan.ScanQueue.takeLast), into buffers it reuses.
		require.NoError(t, e.ScanQueue().Append(indexRaster(t, r.scan, true), nil, marker.NewScanBoundary(0, 0, 0)))
		require.NoError(t, e.Prepare())
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		require.NoError(t, e.Start())
		require.NoError(t, e.Wait())
		runtime.ReadMemStats(&after)
		require.NoError(t, e.Close())
		return after.Mallocs - before.Mallocs
	}
	const n = 200
	small, large := mallocs(n), mallocs(3*n)
	perBlock := float64(int64(large)-int64(small)) / float64(2*n)
	t.Logf("allocations per block: %.2f (run of %d blocks: %d, of %d: %d)", perBlock, n, small, 3*n, large)
	// Neither the engine's stages nor the CPU backend's stream operations
	// allocate per block (cpu.Stream runs work directly unless capturing);
	// the bound leaves room only for GC noise.
	require.Less(t, perBlock, 0.5, "allocations per block")
}

// TestCallbackSyncShowsTheAnnouncedVolume: with callback sync on, when the
// consumer handles a volume event the endpoint's tensor holds exactly that
// volume, even though the consumer is slow and blocks of 5 records straddle
// the volumes of 12. Without it the engine races ahead (the control case).
func TestCallbackSyncShowsTheAnnouncedVolume(t *testing.T) {
	for _, sync := range []bool{true, false} {
		t.Run(fmt.Sprintf("sync=%v", sync), func(t *testing.T) {
			ep, err := endpoint.NewStackDeviceTensorEndpoint(backend.Uint16)
			require.NoError(t, err)
			closeEndpoint(t, ep)
			scan := raster{AscansPerBscan: 4, BscansPerVolume: 3, Volumes: 6}
			r := newRig(t, 8, scan, ep)
			e := r.engine(t)
			require.NoError(t, e.Prepare())
			require.NoError(t, e.SetCallbackSync(0, sync))
			require.ErrorContains(t, e.SetCallbackSync(7, true), "expected 0 <= id < 1")
			n := 3 * 4 * 8
			var seen, right int
			done := make(chan struct{})
			go func() {
				defer close(done)
				buf := make([]engine.Event, 16)
				for {
					k := e.NextEventsInto(buf, time.Second)
					for _, ev := range buf[:k] {
						switch ev.Kind {
						case engine.EventDone:
							return
						case engine.EventVolume:
							time.Sleep(5 * time.Millisecond) // a slow callback
							got := hostSlice[uint16](ep.Tensor().Ptr(), n)
							ok := true
							for b := range 3 {
								for a := range 4 {
									for s := range 8 {
										// one scan per volume: ScanIdx numbers them
										ok = ok && got[(b*4+a)*8+s] == expected(scan, int(ev.ScanIdx), b, a, s)
									}
								}
							}
							seen++
							if ok {
								right++
							}
						}
					}
				}
			}()
			require.NoError(t, e.Start())
			require.NoError(t, e.Wait())
			<-done
			require.Equal(t, 6, seen)
			if sync {
				require.Equal(t, 6, right, "every volume callback saw its own volume")
			} else {
				require.Less(t, right, 6, "without sync the engine overwrites volumes ahead of the consumer")
			}
		})
	}
}

// TestEventMask: only the kinds an endpoint's consumer handles are posted;
// volume events still go out under callback sync (they carry its ack).
func TestEventMask(t *testing.T) {
	tests := []struct {
		name  string
		sync  bool
		kinds []engine.EventKind
		want  map[engine.EventKind]int
	}{
		{"segments only", false, []engine.EventKind{engine.EventSegment},
			map[engine.EventKind]int{engine.EventSegment: 6}},
		{"segments, sync keeps volumes", true, []engine.EventKind{engine.EventSegment},
			map[engine.EventKind]int{engine.EventSegment: 6, engine.EventVolume: 2}},
		{"nothing", false, nil, map[engine.EventKind]int{}},
		{"all", false, []engine.EventKind{engine.EventUpdate, engine.EventSegment, engine.EventVolume, engine.EventScan},
			map[engine.EventKind]int{engine.EventUpdate: 5, engine.EventSegment: 6, engine.EventVolume: 2, engine.EventScan: 2}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ep, err := endpoint.NewStackDeviceTensorEndpoint(backend.Int8)
			require.NoError(t, err)
			closeEndpoint(t, ep)
			scan := raster{AscansPerBscan: 4, BscansPerVolume: 3, Volumes: 2}
			r := newRig(t, 8, scan, ep)
			e := r.engine(t)
			require.NoError(t, e.Prepare())
			require.NoError(t, e.SetEventMask(0, tc.kinds...))
			require.NoError(t, e.SetCallbackSync(0, tc.sync))
			require.ErrorContains(t, e.SetEventMask(3), "expected 0 <= id < 1")
			d := startDrain(e)
			require.NoError(t, e.Start())
			require.NoError(t, e.Wait())
			evs := d.wait(t)
			for _, k := range []engine.EventKind{engine.EventUpdate, engine.EventSegment, engine.EventVolume, engine.EventScan} {
				require.Equal(t, tc.want[k], count(evs, k, 0), "%v events", k)
			}
			// Between sessions the mask may change again (vortex's callbacks
			// are set between stop and start).
			require.NoError(t, e.SetEventMask(0))
		})
	}
}

// TestStopKeepsCallbackSyncDeliveries: a plain stop still formats the
// blocks already acquired, so an endpoint with callback sync keeps waiting
// for a slow consumer instead of dropping the block it waited with: every
// volume the engine counts gets its volume event and no block is dropped.
// An interrupt gives up the waits (blocks may be dropped) and never hangs.
func TestStopKeepsCallbackSyncDeliveries(t *testing.T) {
	tests := []struct {
		name      string
		interrupt bool
	}{
		{"stop", false},
		{"interrupt", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ep, err := endpoint.NewStackDeviceTensorEndpoint(backend.Int8)
			require.NoError(t, err)
			closeEndpoint(t, ep)
			scan := raster{AscansPerBscan: 5, BscansPerVolume: 2} // one volume per 2 blocks, looping
			r := newRig(t, 8, scan, ep)
			e := r.engine(t)
			require.NoError(t, e.Prepare())
			require.NoError(t, e.SetCallbackSync(0, true))
			// A consumer that takes 2 ms per batch holding a volume event:
			// the format stage waits at every volume boundary.
			var (
				mu   sync.Mutex
				evs  []engine.Event
				done = make(chan struct{})
			)
			go func() {
				defer close(done)
				for {
					batch := nextEvents(e, 64, 50*time.Millisecond)
					mu.Lock()
					evs = append(evs, batch...)
					mu.Unlock()
					for _, ev := range batch {
						if ev.Kind == engine.EventDone {
							return
						}
						if ev.Kind == engine.EventVolume {
							time.Sleep(2 * time.Millisecond)
						}
					}
				}
			}()
			require.NoError(t, e.Start())
			require.Eventually(t, func() bool { return e.Status().Volumes >= 4 }, 10*time.Second, time.Millisecond)
			stopped := make(chan error, 1)
			go func() {
				e.Shutdown(tc.interrupt)
				stopped <- e.Stop()
			}()
			select {
			case err := <-stopped:
				require.NoError(t, err)
			case <-time.After(10 * time.Second):
				t.Fatal("stop hung")
			}
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("no EventDone within 10 s")
			}
			st := e.Status()
			mu.Lock()
			defer mu.Unlock()
			if !tc.interrupt {
				require.Zero(t, st.BlocksDropped, "a plain stop drops no block")
				require.EqualValues(t, st.Volumes, count(evs, engine.EventVolume, 0), "one volume event per counted volume")
			}
		})
	}
}

// TestNextRecords: NextRecords (the dispatcher's path) drains a finished
// session's events into dst as records, the last one EventDone, then none.
func TestNextRecords(t *testing.T) {
	ep, err := endpoint.NewStackDeviceTensorEndpoint(backend.Uint16)
	require.NoError(t, err)
	closeEndpoint(t, ep)
	r := newRig(t, 8, raster{AscansPerBscan: 4, BscansPerVolume: 3, Volumes: 2}, ep)
	e := r.engine(t)
	require.NoError(t, e.Prepare())
	require.NoError(t, e.Start())
	require.NoError(t, e.Wait())
	buf := make([]int64, 3*engine.EventFields)
	var kinds []engine.EventKind
	for range 1000 {
		n := e.NextRecords(buf, 0, true)
		require.LessOrEqual(t, n, 3)
		if n == 0 {
			break
		}
		for i := range n {
			kinds = append(kinds, engine.EventKind(buf[i*engine.EventFields]))
		}
	}
	require.NotEmpty(t, kinds)
	require.Equal(t, engine.EventDone, kinds[len(kinds)-1])
	require.Contains(t, kinds, engine.EventSegment)
}

// nextEvents takes up to max events (NextEventsInto).
func nextEvents(e *engine.Engine, max int, timeout time.Duration) []engine.Event {
	buf := make([]engine.Event, max)
	return buf[:e.NextEventsInto(buf, timeout)]
}
