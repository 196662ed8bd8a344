package engine_test

import (
	"math"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/cpu"
	"github.com/vortexgo/vortexgo/gosrc/endpoint"
	"github.com/vortexgo/vortexgo/gosrc/engine"
	"github.com/vortexgo/vortexgo/gosrc/format"
	gio "github.com/vortexgo/vortexgo/gosrc/io"
	"github.com/vortexgo/vortexgo/gosrc/marker"
	"github.com/vortexgo/vortexgo/gosrc/scan"
)

// The Generate and Format stages end to end on the CPU backend: the
// engine's scan queue plays a scan, the planner reads the markers, the
// endpoints execute the plan with stage's executors, IOs get the waveform.

// segmented is the part of every scan config the tests set: fixed linear
// inactive paths (motion.Plan is not needed), no limit check, one pass.
func segmented(c *scan.SegmentedConfig) {
	c.InactivePolicy = scan.FixedLinear(5, 7)
	c.BypassLimitsCheck = true
	c.Loop = false
}

func rasterScan(t *testing.T, bidirectional bool, offset float64) *scan.RasterScan {
	cfg := scan.NewRasterScanConfig()
	cfg.SegmentsPerVolume, cfg.SamplesPerSegment = 3, 4
	cfg.BidirectionalSegments = bidirectional
	cfg.Offset = [2]float64{offset, 0}
	segmented(&cfg.SegmentedConfig)
	s := &scan.RasterScan{}
	require.NoError(t, s.Initialize(cfg))
	return s
}

func radialScan(t *testing.T) *scan.RadialScan {
	cfg := scan.NewRadialScanConfig()
	cfg.SamplesPerSegment = 16
	cfg.SetHalfEvenlySpaced(6)
	segmented(&cfg.SegmentedConfig)
	s := &scan.RadialScan{}
	require.NoError(t, s.Initialize(cfg))
	return s
}

func spiralScan(t *testing.T) *scan.SpiralScan {
	cfg := scan.NewSpiralScanConfig()
	cfg.RingsPerSpiral = 2
	cfg.SamplesPerSecond = 1000
	segmented(&cfg.SegmentedConfig)
	s := &scan.SpiralScan{}
	require.NoError(t, s.Initialize(cfg))
	return s
}

// reference plays newScan through its own queue in blocks of records, as
// the engine does, until the queue runs dry: the waveform (zero-order hold
// after the scan) and the markers, the engine's lead markers first.
func reference(t *testing.T, s scan.Streamer, seq int64, records int) (wave []float64, markers []marker.Marker, n int) {
	t.Helper()
	q := scan.NewScanQueue()
	require.NoError(t, q.Append(s, nil, marker.NewScanBoundary(0, seq, 0)))
	lead := marker.NewScanBoundary(0, 0, 0)
	lead.Flags = marker.NoFlags
	markers = []marker.Marker{lead, marker.NewInactiveLines(0)}
	buf := make([]float64, records*2)
	for {
		got, total, err := q.Generate(&markers, buf, 2, records, true)
		require.NoError(t, err)
		require.Equal(t, records, total)
		wave = append(wave, buf...)
		n += records
		if got < total {
			return wave, markers, n
		}
		require.Less(t, n, 1<<20, "the scan does not end")
	}
}

// shapeOf is the planner's shape from the reference markers: segments in
// the first volume and the first segment's records.
func shapeOf(markers []marker.Marker) (segments, records int) {
	for _, m := range markers {
		if m.Kind == marker.SegmentBoundary {
			if records == 0 {
				records = m.CountHint
			}
			if m.Index+1 > int64(segments) {
				segments = int(m.Index) + 1
			}
		}
	}
	return segments, records
}

// expectVolume plans the reference stream block by block (records per
// block, markers split as the engine splits them) and executes each plan
// on the host with the CPU executor: what the engine must produce. (The
// radial and spiral executors interpolate between the records of one
// block, as vortex's do, so the blocking matters.)
func expectVolume(t *testing.T, exec any, plannerCfg format.FormatPlannerConfig, markers []marker.Marker, n, records, samples int, shape [4]int) []float32 {
	t.Helper()
	p, err := format.NewFormatPlanner(plannerCfg)
	require.NoError(t, err)
	vol := format.Volume[float32]{Data: make([]float32, shape[0]*shape[1]*shape[2]), Shape: shape}
	var plan, fin format.FormatPlan
	for start := 0; start < n; start += records {
		var ms []marker.Marker
		for _, m := range markers {
			if m.Sample >= int64(start) && m.Sample < int64(start+records) {
				ms = append(ms, m)
			}
		}
		require.NoError(t, p.Next(&plan, int64(start), records, ms))
		actions := plan.Actions
		if start+records >= n {
			require.NoError(t, p.Finish(&fin))
			actions = append(actions, fin.Actions...)
		}
		data := make([]float32, records*samples)
		for r := range records {
			for s := range samples {
				data[r*samples+s] = float32(rawValue(int64(start+r), s))
			}
		}
		blk := format.Block[float32]{Data: data, Records: records, Samples: samples, Channels: 1}
		for _, a := range actions {
			if a.Kind != format.Copy {
				continue
			}
			switch x := exec.(type) {
			case *format.StackFormatExecutor:
				require.NoError(t, format.ExecuteStack(x, vol, blk, a))
			case *format.RadialFormatExecutor:
				require.NoError(t, format.ExecuteRadial(x, vol, blk, a))
			case *format.SpiralFormatExecutor:
				require.NoError(t, format.ExecuteSpiral(x, vol, blk, a))
			}
		}
	}
	return vol.Data
}

type genCase struct {
	name    string
	scan    func(t *testing.T) scan.Streamer
	exec    func(t *testing.T, segments, records int) (any, []int)
	records int // records per block
}

func genCases() []genCase {
	const samples = 8
	return []genCase{
		{"raster bidirectional", func(t *testing.T) scan.Streamer { return rasterScan(t, true, 0) },
			func(t *testing.T, _, _ int) (any, []int) {
				e, err := format.NewStackFormatExecutor(format.StackFormatExecutorConfig{SampleSlice: format.SimpleSlice(2, 6, 1)})
				require.NoError(t, err)
				return e, nil
			}, 5},
		{"radial", func(t *testing.T) scan.Streamer { return radialScan(t) },
			func(t *testing.T, segments, records int) (any, []int) {
				e, err := format.NewRadialFormatExecutor(format.RadialFormatExecutorConfig{
					VolumeXYExtent:  [2]format.Range{{Min: -1, Max: 1}, {Min: -1, Max: 1}},
					SegmentRTExtent: [2]format.Range{{Min: -1, Max: 1}, {Min: 0, Max: math.Pi}},
					RadialShape:     [2]int{segments, records},
				})
				require.NoError(t, err)
				return e, []int{9, 11, samples}
			}, 7},
		{"spiral", func(t *testing.T) scan.Streamer { return spiralScan(t) },
			func(t *testing.T, _, records int) (any, []int) {
				e, err := format.NewSpiralFormatExecutor(format.SpiralFormatExecutorConfig{
					VolumeXYExtent: [2]format.Range{{Min: -1, Max: 1}, {Min: -1, Max: 1}},
					SegmentExtent:  format.Range{Min: 0, Max: 1},
					SpiralShape:    [2]int{2, records},
					SpiralVelocity: 10,
				})
				require.NoError(t, err)
				return e, []int{10, 10, samples}
			}, 64},
	}
}

// TestGenerateFormatsAsTheMarkersSay runs raster (bidirectional), radial
// and spiral scans through the engine's scan queue into tensor endpoints
// with their executors and compares the volume with the same plan executed
// on the whole stream at once; events carry vortex's arguments.
func TestGenerateFormatsAsTheMarkersSay(t *testing.T) {
	const samples = 8
	for _, tc := range genCases() {
		t.Run(tc.name, func(t *testing.T) {
			_, markers, n := reference(t, tc.scan(t), 7, tc.records)
			segments, records := shapeOf(markers)
			require.Positive(t, segments)
			plannerCfg := format.DefaultFormatPlannerConfig(segments, records)
			exec, shape := tc.exec(t, segments, records)

			planner, err := format.NewFormatPlanner(plannerCfg)
			require.NoError(t, err)
			ep, err := endpoint.NewStackHostTensorEndpoint(backend.Float32)
			require.NoError(t, err)
			require.NoError(t, ep.SetExecutor(exec, shape))
			closeEndpoint(t, ep)
			acq, proc := newFakeAcq(samples), newFakeProc(samples)
			cfg := engine.Config{RecordsPerBlock: tc.records, BlocksToAllocate: 4, PreloadCount: 2}
			cfg.AddAcquisition(acq, proc)
			cfg.AddProcessor(proc, planner)
			cfg.AddFormatter(planner, ep)
			e, err := engine.New(cfg, cpu.Default())
			require.NoError(t, err)
			t.Cleanup(func() { require.NoError(t, e.Close()) })
			require.NoError(t, e.ScanQueue().Append(tc.scan(t), nil, marker.NewScanBoundary(0, 7, 0)))
			require.NoError(t, e.Prepare())
			d := startDrain(e)
			require.NoError(t, e.Start())
			require.NoError(t, e.Wait())
			evs := d.wait(t)

			st := e.Status()
			require.Equal(t, int64(n/tc.records), st.BlocksAcquired, "the run ends with the block where the queue ran dry")
			require.Equal(t, int64(1), st.Volumes)
			vshape := shape
			if vshape == nil {
				vshape = []int{segments, records, 4}
			}
			require.Equal(t, vshape, ep.Tensor().Shape())
			want := expectVolume(t, exec, plannerCfg, markers, n, tc.records, samples, [4]int{vshape[0], vshape[1], vshape[2], 1})
			got := hostSlice[float32](ep.Tensor().Ptr(), len(want))
			require.Equal(t, want, append([]float32(nil), got...))

			// vortex's arguments: scan_index is the scan's sequence
			// number, volume_index its index in the scan, the segment's
			// index in the volume buffer.
			require.Equal(t, segments, count(evs, engine.EventSegment, 0))
			require.Equal(t, 1, count(evs, engine.EventVolume, 0))
			require.Equal(t, 1, count(evs, engine.EventScan, 0))
			seg := int64(0)
			for _, ev := range evs {
				switch ev.Kind {
				case engine.EventSegment:
					assert.Equal(t, int64(7), ev.ScanIdx)
					assert.Equal(t, int64(0), ev.VolumeIdx)
					assert.Equal(t, seg, ev.BscanIdx)
					seg++
				case engine.EventVolume, engine.EventScan:
					assert.Equal(t, int64(7), ev.ScanIdx)
				}
			}
		})
	}
}

// TestGenerateRasterPlacesSegmentsByMarkers checks the bidirectional raster
// without the planner as reference: each SegmentBoundary's records land in
// the segment its index names, reversed ones back to front.
func TestGenerateRasterPlacesSegmentsByMarkers(t *testing.T) {
	const samples, records = 8, 5
	_, markers, _ := reference(t, rasterScan(t, true, 0), 0, records)
	planner, err := format.NewFormatPlanner(format.DefaultFormatPlannerConfig(3, 4))
	require.NoError(t, err)
	ep, err := endpoint.NewStackHostTensorEndpoint(backend.Float32)
	require.NoError(t, err)
	closeEndpoint(t, ep)
	acq, proc := newFakeAcq(samples), newFakeProc(samples)
	cfg := engine.Config{RecordsPerBlock: records, BlocksToAllocate: 3}
	cfg.AddAcquisition(acq, proc)
	cfg.AddProcessor(proc, planner)
	cfg.AddFormatter(planner, ep)
	e, err := engine.New(cfg, cpu.Default())
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, e.Close()) })
	require.NoError(t, e.ScanQueue().Append(rasterScan(t, true, 0), nil, scan.ScanBoundary()))
	require.NoError(t, e.Prepare())
	require.NoError(t, e.Start())
	require.NoError(t, e.Wait())
	got := hostSlice[float32](ep.Tensor().Ptr(), 3*4*samples)
	reversed := 0
	for _, m := range markers {
		if m.Kind != marker.SegmentBoundary {
			continue
		}
		if m.Reversed {
			reversed++
		}
		for i := range 4 {
			pos := i
			if m.Reversed {
				pos = 3 - i
			}
			for s := range samples {
				require.Equal(t, float32(rawValue(m.Sample+int64(i), s)), got[(int(m.Index)*4+pos)*samples+s],
					"segment %d record %d sample %d", m.Index, i, s)
			}
		}
	}
	require.Equal(t, 1, reversed, "a bidirectional raster of 3 segments reverses the middle one")
}

// orderIO logs its start into a shared list, for the start order.
type orderIO struct {
	*gio.SimIO
	name string
	mu   *sync.Mutex
	log  *[]string
}

func (o *orderIO) Start() error {
	o.mu.Lock()
	*o.log = append(*o.log, o.name)
	o.mu.Unlock()
	return o.SimIO.Start()
}

// TestIOReceivesTheGeneratedSamples: each IO records exactly the scan
// queue's waveform shifted by its lead (vortex's lead_samples), IOs without
// preload get the preload blocks after their start, masters start last,
// and the measured feedback reaches the block's actual positions.
func TestIOReceivesTheGeneratedSamples(t *testing.T) {
	const samples, records = 4, 6
	wave, _, n := reference(t, rasterScan(t, false, 0.5), 0, records)
	tests := []struct {
		name string
		lead int
		cfg  engine.IOConfig
	}{
		{"lead 0 master", 0, engine.IOConfig{LeadSamples: 0, Preload: true, Master: true}},
		{"lead 3 no preload", 3, engine.IOConfig{LeadSamples: 3, Preload: false}},
		{"lead 9 preload", 9, engine.IOConfig{LeadSamples: 9, Preload: true}},
	}
	const maxLead = 9
	var mu sync.Mutex
	var starts []string
	planner, err := format.NewFormatPlanner(format.DefaultFormatPlannerConfig(3, 4))
	require.NoError(t, err)
	acq, proc := newFakeAcq(samples), newFakeProc(samples)
	cfg := engine.Config{RecordsPerBlock: records, BlocksToAllocate: 4, PreloadCount: 2}
	cfg.AddAcquisition(acq, proc)
	cfg.AddProcessor(proc, planner)
	cfg.AddFormatter(planner)
	ios := make([]*gio.SimIO, len(tests))
	for i, tc := range tests {
		ios[i], err = gio.NewSimIO(gio.SimConfig{RecordSamples: 1 << 12})
		require.NoError(t, err)
		cfg.AddIO(&orderIO{SimIO: ios[i], name: tc.name, mu: &mu, log: &starts}, tc.cfg)
	}
	e, err := engine.New(cfg, cpu.Default())
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, e.Close()) })
	require.NoError(t, e.ScanQueue().Append(rasterScan(t, false, 0.5), nil, scan.ScanBoundary()))
	require.NoError(t, e.Prepare())
	require.NoError(t, e.Start())
	require.NoError(t, e.Wait())

	require.Equal(t, []string{"lead 3 no preload", "lead 9 preload", "lead 0 master"}, starts)
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			io := ios[i]
			require.True(t, io.Started())
			require.True(t, io.Stopped())
			require.Equal(t, int64(n), io.Samples())
			got := make([]float64, 2*n)
			first, rows := io.Recorded(got)
			require.Equal(t, int64(0), first)
			require.Equal(t, n, rows)
			// row k of lead L is generated sample k - (maxLead - L); the
			// hold before the first is the queue's start position (0).
			for k := range n {
				j := k - (maxLead - tc.lead)
				for c := range 2 {
					want := 0.0
					if j >= 0 {
						want = wave[j*2+c]
					}
					require.Equal(t, want, got[k*2+c], "sample %d channel %d", k, c)
				}
			}
		})
	}
}

// TestQueueInterruptWhileRunningIsContinuous interrupts a looping scan
// while the engine runs: the output moves to the new scan through a planned
// path, never jumping, and the change's Event marker reaches the
// endpoint's event callback with its id.
func TestQueueInterruptWhileRunningIsContinuous(t *testing.T) {
	const samples, records = 4, 10
	planner, err := format.NewFormatPlanner(format.DefaultFormatPlannerConfig(3, 4))
	require.NoError(t, err)
	acq, proc := newFakeAcq(samples), newFakeProc(samples)
	acq.delay = time.Millisecond
	ep := endpoint.NewNullEndpoint()
	closeEndpoint(t, ep)
	cfg := engine.Config{RecordsPerBlock: records, BlocksToAllocate: 4, BlocksToAcquire: 60}
	cfg.AddAcquisition(acq, proc)
	cfg.AddProcessor(proc, planner)
	cfg.AddFormatter(planner, ep)
	io, err := gio.NewSimIO(gio.SimConfig{RecordSamples: 1 << 12})
	require.NoError(t, err)
	cfg.AddIO(io, engine.IOConfig{Preload: true})
	e, err := engine.New(cfg, cpu.Default())
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, e.Close()) })
	a := rasterScan(t, true, 0)
	ac := a.Config()
	ac.Loop = true
	require.NoError(t, a.Initialize(ac))
	require.NoError(t, e.ScanQueue().Append(a, nil, scan.ScanBoundary()))
	require.NoError(t, e.Prepare())
	d := startDrain(e)
	require.NoError(t, e.Start())
	require.Eventually(t, func() bool { return e.Status().BlocksAcquired >= 10 }, 5*time.Second, time.Millisecond)
	// A change first (its Event marker), then an interrupt to a scan 3
	// units away.
	ac.SegmentsPerVolume = 2
	require.NoError(t, a.Change(ac, false, 42))
	require.Eventually(t, func() bool { return e.Status().BlocksAcquired >= 20 }, 5*time.Second, time.Millisecond)
	b := rasterScan(t, true, 3)
	bc := b.Config()
	bc.Loop = true
	require.NoError(t, b.Initialize(bc))
	require.NoError(t, e.ScanQueue().Interrupt(b, nil, scan.ScanBoundary()))
	require.NoError(t, e.Wait())
	evs := d.wait(t)

	got := make([]float64, 2*600)
	_, rows := io.Recorded(got)
	require.Equal(t, 600, rows)
	maxStep := 0.0
	for k := 1; k < rows; k++ {
		for c := range 2 {
			maxStep = max(maxStep, math.Abs(got[k*2+c]-got[(k-1)*2+c]))
		}
	}
	// The raster's own steps are 4/3 (along a line of 4 samples over 4
	// units); the planned paths are shorter; a jump to the new scan would
	// be 3 or more.
	assert.LessOrEqual(t, maxStep, 4.0/3+1e-9, "largest step between samples")
	assert.InDelta(t, 3.0, (got[2*599]+got[2*598])/2, 1.5, "the output ends on the new scan (x around 3)")
	found := false
	for _, ev := range evs {
		if ev.Kind == engine.EventMarker {
			found = found || ev.ScanIdx == 42
		}
	}
	assert.True(t, found, "the change's Event(id=42) reaches the endpoint")
}

// TestGenerateConfigErrors: bad Generate settings name the field.
func TestGenerateConfigErrors(t *testing.T) {
	lead := marker.NewScanBoundary(5, 0, 0)
	tests := []struct {
		name string
		edit func(c *engine.Config)
		want string
	}{
		{"output channels", func(c *engine.Config) { c.GalvoOutputChannels = -1 }, "galvo_output_channels=-1"},
		{"input channels", func(c *engine.Config) { c.GalvoInputChannels = 1000 }, "galvo_input_channels=1000"},
		{"post scan", func(c *engine.Config) { c.PostScanRecords = -1 }, "post_scan_records=-1"},
		{"lead marker", func(c *engine.Config) { c.LeadMarker = &lead }, "lead_marker.sample=5"},
		{"nil io", func(c *engine.Config) { c.AddIO(nil, engine.IOConfig{}) }, "AddIO: io=nil"},
		{"negative lead", func(c *engine.Config) { c.AddIO(gio.NewNullIO(), engine.IOConfig{LeadSamples: -1}) }, "lead_samples"},
		{"io twice", func(c *engine.Config) {
			io := gio.NewNullIO()
			c.AddIO(io, engine.IOConfig{})
			c.AddIO(io, engine.IOConfig{})
		}, "added twice"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			acq, proc := newFakeAcq(4), newFakeProc(4)
			cfg := engine.Config{RecordsPerBlock: 4, BlocksToAllocate: 2}
			cfg.AddAcquisition(acq, proc)
			tc.edit(&cfg)
			require.ErrorContains(t, cfg.Validate(), tc.want)
		})
	}
}

// TestEmptyQueueEndsAfterPostScanRecords: with nothing queued the engine
// holds the position and stops once post_scan_records are acquired.
func TestEmptyQueueEndsAfterPostScanRecords(t *testing.T) {
	for _, post := range []int{0, 4, 12} {
		acq, proc := newFakeAcq(4), newFakeProc(4)
		planner, err := format.NewFormatPlanner(format.DefaultFormatPlannerConfig(3, 4))
		require.NoError(t, err)
		cfg := engine.Config{RecordsPerBlock: 5, BlocksToAllocate: 2, PostScanRecords: post}
		cfg.AddAcquisition(acq, proc)
		cfg.AddProcessor(proc, planner)
		cfg.AddFormatter(planner)
		e, err := engine.New(cfg, cpu.Default())
		require.NoError(t, err)
		require.NoError(t, e.Prepare())
		require.NoError(t, e.Start())
		require.NoError(t, e.Wait())
		// vortex: the block where the overscan reaches post_scan_records
		// is the last.
		assert.Equal(t, int64(max(1, (post+4)/5)), e.Status().BlocksAcquired, "post_scan_records=%d", post)
		require.NoError(t, e.Close())
	}
}

// TestGenerateEdges: small pools with IOs preloading the whole pool do not
// deadlock; a scan whose channels differ from galvo_output_channels ends
// the run with an error naming both; a stop while IOs run is clean.
func TestGenerateEdges(t *testing.T) {
	tests := []struct {
		name     string
		blocks   int
		preload  int
		channels int  // GalvoOutputChannels
		stop     bool // loop the scan and stop the run
		want     string
	}{
		{"one block, preload 1", 1, 1, 0, false, ""},
		{"two blocks, preload 2", 2, 2, 0, false, ""},
		{"channel mismatch", 3, 1, 3, false, "channels"},
		{"stop while running", 3, 2, 0, true, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			acq, proc := newFakeAcq(4), newFakeProc(4)
			planner, err := format.NewFormatPlanner(format.DefaultFormatPlannerConfig(3, 4))
			require.NoError(t, err)
			cfg := engine.Config{RecordsPerBlock: 5, BlocksToAllocate: tc.blocks, PreloadCount: tc.preload, GalvoOutputChannels: tc.channels}
			cfg.AddAcquisition(acq, proc)
			cfg.AddProcessor(proc, planner)
			cfg.AddFormatter(planner)
			io, err := gio.NewSimIO(gio.SimConfig{})
			require.NoError(t, err)
			cfg.AddIO(io, engine.IOConfig{LeadSamples: 2, Preload: true})
			e, err := engine.New(cfg, cpu.Default())
			require.NoError(t, err)
			t.Cleanup(func() { require.NoError(t, e.Close()) })
			s := rasterScan(t, true, 0)
			if tc.stop {
				c := s.Config()
				c.Loop = true
				require.NoError(t, s.Initialize(c))
			}
			require.NoError(t, e.ScanQueue().Append(s, nil, scan.ScanBoundary()))
			require.NoError(t, e.Prepare())
			require.NoError(t, e.Start())
			if tc.stop {
				require.Eventually(t, func() bool { return e.Status().BlocksAcquired >= 5 }, 5*time.Second, time.Millisecond)
				require.NoError(t, e.Stop())
			}
			done := make(chan error, 1)
			go func() { done <- e.Wait() }()
			select {
			case err = <-done:
			case <-time.After(10 * time.Second):
				e.RequestStop()
				t.Fatal("the run did not end (deadlock)")
			}
			if tc.want != "" {
				require.ErrorContains(t, err, tc.want)
				return
			}
			require.NoError(t, err)
			require.True(t, io.Started())
			require.True(t, io.Stopped())
			// The IO may hold blocks generated ahead of a stopped
			// acquisition: up to the preload depth, plus the block whose
			// acquisition the stop interrupted (handed to the IO, never
			// counted as acquired).
			acquired := e.Status().BlocksAcquired * 5
			depth := int64(min(tc.preload, tc.blocks-1)+1) * 5
			require.GreaterOrEqual(t, io.Samples(), acquired)
			if tc.stop {
				require.LessOrEqual(t, io.Samples(), acquired+depth)
			} else {
				require.Equal(t, acquired, io.Samples())
			}
		})
	}
}
