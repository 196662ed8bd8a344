package scan

import (
	"encoding/json"
	"math"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/marker"
)

type goldenQueueStep struct {
	Op       string  `json:"op"`
	Tag      string  `json:"tag"`
	Config   *fields `json:"config"`
	Sequence int64   `json:"sequence"`
	Flags    *uint64 `json:"flags"`
	Count    int     `json:"count"`
}

type goldenQueue struct {
	Name          string                       `json:"name"`
	Steps         map[string][]goldenQueueStep `json:"steps"`
	Blocks        []int                        `json:"blocks"`
	ZeroOrderHold bool                         `json:"zero_order_hold"`
	Returns       [][2]int                     `json:"returns"`
	Stream        [][]float64                  `json:"stream"`
	StreamMarkers []goldenMarker               `json:"stream_markers"`
	Events        [][3]json.RawMessage         `json:"events"`
}

type queueEventRecord struct {
	tag    string
	sample int64
	event  string
}

// TestGoldenQueues drives our ScanQueue as the golden script drove
// vortex's (appends, interrupts, clears and an empty callback between
// blocks) and compares samples, markers, return values and events.
func TestGoldenQueues(t *testing.T) {
	b, err := readGoldenRaw()
	require.NoError(t, err)
	var g struct {
		Queues []goldenQueue `json:"queues"`
	}
	require.NoError(t, json.Unmarshal(b, &g))
	require.NotEmpty(t, g.Queues)
	for _, c := range g.Queues {
		t.Run(c.Name, func(t *testing.T) {
			q := NewScanQueue()
			var events []queueEventRecord
			cb := func(tag string) QueueCallback {
				return func(sample int64, e QueueEvent) { events = append(events, queueEventRecord{tag, sample, e.String()}) }
			}
			scanOf := func(f *fields) Streamer {
				gs := newGoldenScan(t, "RasterScan", f, nil)
				require.NoError(t, gs.init())
				return gs.seg
			}
			var out []float64
			var markers []marker.Marker
			for k, n := range c.Blocks {
				for _, st := range c.Steps[strconv.Itoa(k)] {
					switch st.Op {
					case "append", "interrupt":
						m := marker.NewScanBoundary(0, st.Sequence, 0)
						if st.Flags != nil {
							m.Flags = marker.Flags(*st.Flags)
						}
						if st.Op == "append" {
							require.NoError(t, q.Append(scanOf(st.Config), cb(st.Tag), m))
						} else {
							require.NoError(t, q.Interrupt(scanOf(st.Config), cb(st.Tag), m))
						}
					case "clear":
						q.Clear()
					case "empty":
						left, cfg, tag := st.Count, st.Config, st.Tag
						q.SetEmptyCallback(func(o *OnlineScanQueue) {
							if left > 0 {
								left--
								require.NoError(t, o.Append(scanOf(cfg), cb(tag), ScanBoundary()))
							}
						})
					default:
						t.Fatalf("unknown step %q", st.Op)
					}
				}
				buf := make([]float64, 2*n)
				got, total, err := q.Generate(&markers, buf, 2, n, c.ZeroOrderHold)
				require.NoError(t, err)
				assert.Equal(t, c.Returns[k], [2]int{got, total}, "block %d", k)
				out = append(out, buf[:total*2]...)
			}
			requireRowsClose(t, c.Stream, out, 2, "generate()")
			assert.Equal(t, markersOf(t, c.StreamMarkers), markers)
			var want []queueEventRecord
			for _, e := range c.Events {
				var r queueEventRecord
				require.NoError(t, json.Unmarshal(e[0], &r.tag))
				require.NoError(t, json.Unmarshal(e[1], &r.sample))
				require.NoError(t, json.Unmarshal(e[2], &r.event))
				want = append(want, r)
			}
			assert.Equal(t, want, events)
		})
	}
}

func TestQueueMisuse(t *testing.T) {
	q := NewScanQueue()
	var s RasterScan
	err := q.Append(nil, nil, ScanBoundary())
	assert.ErrorIs(t, err, backend.ErrInvalid)
	assert.ErrorContains(t, err, "scan is None")
	assert.ErrorIs(t, q.Append(&s, nil, ScanBoundary()), ErrNotInitialized)
	require.NoError(t, s.Initialize(smallRaster()))
	assert.ErrorContains(t, q.Interrupt(&s, nil, marker.NewEvent(0, 1)), "marker is a Event, expected a ScanBoundary")
	var ms []marker.Marker
	_, _, err = q.Generate(&ms, make([]float64, 6), 2, 5, true)
	assert.ErrorContains(t, err, "scan_queue.generate: buffer of 6 values for 5 samples of 2 channels")
	_, _, err = q.Generate(&ms, make([]float64, 6), 3, 2, true)
	require.NoError(t, err, "an empty queue holds any channel count")
	require.NoError(t, q.Append(&s, nil, ScanBoundary()))
	_, _, err = q.Generate(&ms, make([]float64, 6), 3, 2, true)
	assert.ErrorContains(t, err, "the next scan has 2 channels, the buffer 3")
	require.NoError(t, q.Append(&s, nil, ScanBoundary()))
	_, _, err = q.Generate(&ms, make([]float64, 20), 2, 10, true)
	require.NoError(t, err)
	assert.ErrorIs(t, q.Rebase(5), backend.ErrInUse, "no rebase under an active scan")
	q.Reset()
	require.NoError(t, q.Rebase(5))
	sample, pos, vel := q.State()
	assert.Equal(t, int64(5), sample)
	assert.Empty(t, pos)
	assert.Empty(t, vel)
	require.NoError(t, q.ResetAt(9, []float64{0.1, 0.2}, []float64{0, 0}))
	sample, pos, _ = q.State()
	assert.Equal(t, int64(9), sample)
	assert.Equal(t, []float64{0.1, 0.2}, pos)
	assert.Equal(t, "Interrupt", QueueInterrupt.String())
}

// TestQueueInterruptContinuous interrupts a looping raster at every sample
// of its first pass and a half: the stream never jumps and the new scan
// plays to its end, then the queue holds its last position.
func TestQueueInterruptContinuous(t *testing.T) {
	b := smallRaster()
	b.Loop, b.Angle, b.SegmentsPerVolume = false, 0.5, 2
	for at := 0; at < 110; at++ {
		var loop, next RasterScan
		require.NoError(t, loop.Initialize(smallRaster()))
		require.NoError(t, next.Initialize(b))
		q := NewScanQueue()
		require.NoError(t, q.Append(&loop, nil, ScanBoundary()))
		var ms []marker.Marker
		first := make([]float64, 2*at)
		_, _, err := q.Generate(&ms, first, 2, at, true)
		require.NoError(t, err)
		require.NoError(t, q.Interrupt(&next, nil, marker.NewScanBoundary(0, 1, 0)))
		rest := make([]float64, 2*120)
		got, total, err := q.Generate(&ms, rest, 2, 120, true)
		require.NoError(t, err)
		require.Equal(t, 120, total)
		require.Less(t, got, 120, "the interrupting scan ends")
		out := append(first, rest...)
		bound := math.Max(maxStep(t, &loop.SegmentedScan, 0), maxStep(t, &loop.SegmentedScan, 1)) + 0.15
		for i := 1; i < len(out)/2; i++ {
			for d := range 2 {
				require.LessOrEqual(t, math.Abs(out[i*2+d]-out[(i-1)*2+d]), bound, "interrupt at %d: jump at sample %d", at, i)
			}
		}
		boundaries := 0
		for _, m := range ms {
			if m.Kind == marker.ScanBoundary {
				boundaries++
			}
		}
		require.Equal(t, map[bool]int{true: 1, false: 2}[at == 0], boundaries, "interrupt at %d: one ScanBoundary per scan started", at)
	}
}
