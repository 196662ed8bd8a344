package pyapi

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vortexgo/vortexgo/gosrc/internal/testmem"
	"github.com/vortexgo/vortexgo/gosrc/marker"
	"github.com/vortexgo/vortexgo/gosrc/scan"
)

const smallRasterRecord = `{"SegmentExtent": {"Min": -0.4, "Max": 0.4}, "SamplesPerSegment": 12, "SegmentsPerVolume": 4,
	"InactivePolicy": {"Kind": 2, "InterSegmentSamples": 5, "InterVolumeSamples": 7}}`

func smallRaster(t *testing.T, record string) *Scan {
	t.Helper()
	s := NewRasterScan()
	require.NoError(t, s.Initialize(record))
	return s
}

// fetch is Python's _fetch: an array result asked for its length, then
// written into a buffer of that length.
func fetch[T any](t *testing.T, f func(dst, n int) (int, error)) []T {
	t.Helper()
	k, err := f(0, 0)
	require.NoError(t, err)
	if k == 0 {
		return nil
	}
	buf, addr := testmem.Slice[T](t, k)
	got, err := f(int(addr), k)
	require.NoError(t, err)
	require.Equal(t, k, got)
	return buf
}

func noErr(f func(dst, n int) int) func(dst, n int) (int, error) {
	return func(dst, n int) (int, error) { return f(dst, n), nil }
}

// wireSegments decodes a segments result.
func wireSegments(t *testing.T) func(out string, err error) []wireSegment {
	return func(out string, err error) []wireSegment {
		t.Helper()
		require.NoError(t, err)
		var ws []wireSegment
		require.NoError(t, json.Unmarshal([]byte(out), &ws))
		return ws
	}
}

func TestScanBindingRefusesBadInput(t *testing.T) {
	tests := []struct {
		name string
		run  func() error
		want string
	}{
		{"unknown field", func() error { _, err := NewRasterScanConfig(`{"Ascans": 3}`); return err }, "ValueError: RasterScanConfig: "},
		{"wrong type", func() error { return NewRasterScan().Initialize(`{"SamplesPerSegment": "12"}`) }, "ValueError: RasterScanConfig: "},
		{"invalid config", func() error { return NewRasterScan().Initialize(`{"SamplesPerSegment": 1}`) }, "ValueError: RasterScanConfig.ascans_per_bscan"},
		{"huge config", func() error { // bounded before allocating
			return NewRasterScan().Initialize(`{"SamplesPerSegment": 1000000000, "SegmentsPerVolume": 1000000000, "BypassLimitsCheck": true}`)
		}, "ValueError: "},
		{"bad warp", func() error { _, err := NewScanWarp(9, 0, 0, 0); return err }, "ValueError: warp: unknown warp kind 9"},
		{"bad warp factor", func() error { _, err := NewScanWarp(int(scan.WarpAngular), 0, 0, 0); return err }, "ValueError: warp.factor: 0"},
		{"queue state mismatch", func() error {
			pos, p := testmem.Slice[float64](t, 2)
			_, v := testmem.Slice[float64](t, 1)
			_, err := NewScanQueueAt(3, int(p), len(pos), int(v), 1)
			return err
		}, "ValueError: ScanQueue: position of 2 values and velocity of 1, expected one per channel each"},
		{"freeform bad segment", func() error {
			_, err := NewFreeformScanConfig(`{"Pattern": [{"Position": [1, 2, 3], "Channels": 2}]}`)
			return err
		}, "ValueError: FreeformScanConfig.pattern[0]: 3 positions of 2 channels"},
		{"freeform bad marker", func() error {
			_, err := NewFreeformScanConfig(`{"Pattern": [{"Position": [1, 2, 3, 4], "Channels": 2, "Markers": [[9, 0, 0, 0, 0, 0, 0, 0]]}]}`)
			return err
		}, "ValueError: FreeformScanConfig.pattern[0].markers[0]: marker row"},
		{"setter the kind lacks", func() error {
			c, err := NewRasterScanConfig("")
			require.NoError(t, err)
			return c.SetIsotropic(1000)
		}, `ValueError: RasterScanConfig: operation "set_isotropic", expected one of its documented operations`},
		{"pattern channels", func() error {
			p, err := NewSequentialPattern("")
			require.NoError(t, err)
			_, err = p.ToPattern(0, 0, 0, 0, 65)
			return err
		}, "ValueError: to_pattern: 65 channels, expected in [1, 64]"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.run()
			require.Error(t, err)
			require.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestScanMethodsRoundTrip(t *testing.T) {
	s := smallRaster(t, smallRasterRecord)
	buf := fetch[float64](t, s.ScanBuffer)
	require.Greater(t, len(buf), 4*12*2)
	direct, err := s.s.ScanBuffer()
	require.NoError(t, err)
	require.Equal(t, direct, buf)
	require.Equal(t, 2, s.Channels())

	next, addr := testmem.Slice[float64](t, 2*10)
	got, err := s.Next(int(addr), len(next), 10)
	require.NoError(t, err)
	require.Equal(t, 10, got)
	rows := fetch[int64](t, noErr(s.Markers))
	require.NotEmpty(t, rows)
	require.Zero(t, len(rows)%8)
	require.True(t, rows[0] >= int64(marker.ScanBoundary) && rows[0] <= int64(marker.Event), "a marker kind")
	_, err = s.Next(int(addr), len(next), 11)
	require.ErrorContains(t, err, "ValueError: ", "a count past the caller's buffer is refused")

	rows = fetch[int64](t, s.ScanMarkers)
	require.NotEmpty(t, rows)
	require.Len(t, wireSegments(t)(s.ScanSegments()), 4)

	cfg, err := s.Config()
	require.NoError(t, err)
	c, err := NewRasterScanConfig(cfg)
	require.NoError(t, err, "a config record round-trips")
	require.NoError(t, c.Validate())
	require.Len(t, wireSegments(t)(c.ToSegments()), 4)
	wps := fetch[float64](t, c.ToWaypoints)
	require.Len(t, wps, 4*12*2)
}

func TestUninitializedScanRefuses(t *testing.T) {
	s := NewSpiralScan()
	for name, f := range map[string]func() error{
		"scan_buffer":  func() error { _, err := s.ScanBuffer(0, 0); return err },
		"scan_markers": func() error { _, err := s.ScanMarkers(0, 0); return err },
		"prepare":      s.Prepare,
		"restart":      s.Restart,
		"next": func() error {
			buf, addr := testmem.Slice[float64](t, 4)
			_, err := s.Next(int(addr), len(buf), 2)
			return err
		},
	} {
		require.ErrorContains(t, f(), "ValueError: scan: call initialize(config) first", name)
	}
}

func TestScanConfigSetters(t *testing.T) {
	c, err := NewRadialScanConfig("")
	require.NoError(t, err)
	require.NoError(t, c.SetEvenlySpaced(6))
	out, err := c.JSON()
	require.NoError(t, err)
	var r struct{ SegmentsPerVolume int }
	require.NoError(t, json.Unmarshal([]byte(out), &r))
	require.Equal(t, 6, r.SegmentsPerVolume)
	sp, err := NewSpiralScanConfig("")
	require.NoError(t, err)
	require.NoError(t, sp.SetIsotropic(100_000))
	require.ErrorContains(t, sp.SetAiming(), `SpiralScanConfig: operation "set_aiming"`)
}

func TestQueueCollectsCallbackEvents(t *testing.T) {
	q := NewScanQueue()
	s := smallRaster(t, smallRasterRecord[:len(smallRasterRecord)-1]+`, "Loop": false}`)
	require.ErrorContains(t, q.Append(nil, 7, 0, 0), "ValueError: ScanQueue.append: scan None")
	bad := []int64{int64(marker.VolumeBoundary), 0, 0, 0, 0, 0, 0, 0}
	row, addr := testmem.Slice[int64](t, 8)
	copy(row, bad)
	require.ErrorContains(t, q.Append(s, 7, int(addr), 8), "expected a ScanBoundary")
	require.NoError(t, q.Append(s, 7, 0, 0))

	buf, baddr := testmem.Slice[float64](t, 2*200)
	released, err := q.Generate(int(baddr), len(buf), 2, true)
	require.NoError(t, err)
	require.Equal(t, 200, released)
	require.Positive(t, q.ScanSamples())
	require.NotEmpty(t, fetch[int64](t, noErr(q.Markers)))

	events, eaddr := testmem.Slice[int64](t, 3*4)
	k := q.Events(int(eaddr), len(events), true)
	require.Equal(t, 6, k, "start and finish")
	require.Equal(t, []int64{7, 0, int64(scan.QueueStart)}, events[:3])
	require.EqualValues(t, scan.QueueFinish, events[5])
	require.Zero(t, q.Events(int(eaddr), len(events), true), "events are handed over once")

	require.Positive(t, q.Sample())
	pos := fetch[float64](t, noErr(q.Position))
	require.Len(t, pos, 2)
	q.Reset()
	require.Equal(t, -1, q.Position(0, 0), "unknown after reset")
	_, ok := q.obj.(interface{ Queue() *scan.ScanQueue })
	require.True(t, ok, "the engine's wiring takes the queue")
}

func TestQueueEventsInBatches(t *testing.T) {
	q := NewScanQueue()
	for i := range 5 {
		q.callback(i+1)(int64(i), scan.QueueStart)
	}
	events, addr := testmem.Slice[int64](t, 3*2)
	var tokens []int64
	for {
		k := q.Events(int(addr), len(events), true)
		for j := 0; j < k; j += 3 {
			tokens = append(tokens, events[j])
		}
		if k < len(events) {
			break
		}
	}
	require.Equal(t, []int64{1, 2, 3, 4, 5}, tokens, "in order, across batches")
}

func TestQueueCallerTakesThroughItsOwnEvents(t *testing.T) {
	S, F, I, A := scan.QueueStart, scan.QueueFinish, scan.QueueInterrupt, scan.QueueAbort
	cases := []struct {
		name     string
		recorded []scan.QueueEvent
		caller   int // events a caller's take moves
	}{
		{"nothing recorded", nil, 0},
		{"only the engine's", []scan.QueueEvent{S, F, S}, 0},
		{"an interrupt then the engine's start", []scan.QueueEvent{S, I, A, S}, 3},
		{"a clear after a finish", []scan.QueueEvent{S, F, A}, 3},
		{"two clears, a start between", []scan.QueueEvent{A, S, A, S, F}, 3},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			q := NewScanQueue()
			for i, e := range tc.recorded {
				q.callback(i+1)(int64(i), e)
			}
			events, addr := testmem.Slice[int64](t, 3*8)
			k := q.Events(int(addr), len(events), false)
			require.Equal(t, 3*tc.caller, k)
			for j := range tc.caller {
				require.EqualValues(t, j+1, events[3*j], "in order")
			}
			rest := q.Events(int(addr), len(events), true)
			require.Equal(t, 3*(len(tc.recorded)-tc.caller), rest, "the engine's dispatcher takes the rest")
			if rest > 0 {
				require.EqualValues(t, tc.caller+1, events[0])
			}
		})
	}
}

func TestWarpAndPatternMethods(t *testing.T) {
	w, err := NewScanWarp(int(scan.WarpAngular), 2, 0, 0)
	require.NoError(t, err)
	out, addr := testmem.Slice[float64](t, 2)
	copy(out, []float64{1, 3})
	require.NoError(t, w.Forward(int(addr), 2))
	require.Equal(t, []float64{2, 6}, out)
	require.NoError(t, w.Inverse(int(addr), 2))
	require.Equal(t, []float64{1, 3}, out)

	p, err := NewSequentialPattern(`{"BidirectionalSegments": true}`)
	require.NoError(t, err)
	vals, vaddr := testmem.Slice[float64](t, 8)
	copy(vals, []float64{0, 0, 1, 1, 0, 0, 1, 1})
	lens, laddr := testmem.Slice[int64](t, 2)
	copy(lens, []int64{4, 4})
	segs := wireSegments(t)(p.ToPattern(int(vaddr), 8, int(laddr), 2, 2))
	require.Len(t, segs, 2)
	require.Equal(t, []float64{1, 1, 0, 0}, segs[1].Position, "the second segment runs backwards")
	_, err = p.ToPattern(int(vaddr), 8, int(laddr), 1, 2)
	require.ErrorContains(t, err, "ValueError: to_pattern: 4 values past")
}
