package scan

import (
	"encoding/json"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/internal/testmem"
)

func doJSON(t *testing.T, b Bound, op, args string, with any, buf []float64) map[string]any {
	t.Helper()
	dst := 0
	if len(buf) > 0 {
		dst = int(uintptr(unsafe.Pointer(&buf[0])))
	}
	out, err := b.Do(op, []byte(args), with, dst, len(buf))
	require.NoError(t, err, op)
	res := map[string]any{}
	if len(out) > 0 {
		require.NoError(t, json.Unmarshal(out, &res))
	}
	return res
}

const smallRasterRecord = `{"SegmentExtent": {"Min": -0.4, "Max": 0.4}, "SamplesPerSegment": 12, "SegmentsPerVolume": 4,
	"InactivePolicy": {"Kind": 2, "InterSegmentSamples": 5, "InterVolumeSamples": 7}}`

func TestNewRefusesBadInput(t *testing.T) {
	tests := []struct {
		name, kind, record string
		want               error
	}{
		{"unknown kind", "Lissajous", "", backend.ErrInvalid},
		{"unknown field", "RasterScanConfig", `{"Ascans": 3}`, backend.ErrInvalid},
		{"wrong type", "RasterScan", `{"SamplesPerSegment": "12"}`, backend.ErrInvalid},
		{"invalid config", "RasterScan", `{"SamplesPerSegment": 1}`, backend.ErrInvalid},
		{"huge config", "RasterScan", `{"SamplesPerSegment": 1000000000, "SegmentsPerVolume": 1000000000, "BypassLimitsCheck": true}`, backend.ErrInvalid}, // bounded before allocating,
		{"bad warp", "Warp", `{"Kind": 9}`, backend.ErrInvalid},
		{"queue state mismatch", "ScanQueue", `{"Sample": 3, "Position": [0, 0], "Velocity": [0]}`, backend.ErrInvalid},
		{"freeform bad segment", "FreeformScanConfig", `{"Pattern": [{"Position": [1, 2, 3], "Channels": 2}]}`, backend.ErrInvalid},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(tc.kind, tc.record)
			require.ErrorIs(t, err, tc.want)
		})
	}
}

func TestScanOpsRoundTrip(t *testing.T) {
	s, err := New("RasterScan", smallRasterRecord)
	require.NoError(t, err)
	res := doJSON(t, s, "scan_buffer", "", nil, nil)
	n := int(res["Len"].(float64))
	require.Greater(t, n, 4*12*2)
	buf, _ := testmem.Slice[float64](t, n)
	doJSON(t, s, "scan_buffer", "", nil, buf)
	direct, err := s.(*scanObject[RasterScanConfig]).s.ScanBuffer()
	require.NoError(t, err)
	require.Equal(t, direct, buf)

	next, _ := testmem.Slice[float64](t, 2*10)
	res = doJSON(t, s, "next", `{"Count": 10}`, nil, next)
	require.EqualValues(t, 10, res["Count"])
	_, err = s.Do("next", []byte(`{"Count": 11}`), nil, int(uintptr(unsafe.Pointer(&next[0]))), len(next))
	require.ErrorIs(t, err, backend.ErrInvalid, "a count past the caller's buffer is refused")

	rows := doJSON(t, s, "scan_markers", "", nil, nil)["Markers"].([]any)
	require.NotEmpty(t, rows)
	require.Len(t, rows[0], 8)
	segs := doJSON(t, s, "scan_segments", "", nil, nil)["Segments"].([]any)
	require.Len(t, segs, 4)

	cfg, err := s.Do("config", nil, nil, 0, 0)
	require.NoError(t, err)
	c, err := New("RasterScanConfig", string(cfg))
	require.NoError(t, err, "a config record round-trips")
	doJSON(t, c, "validate", "", nil, nil)
	_, err = s.Do("fly", nil, nil, 0, 0)
	require.ErrorIs(t, err, backend.ErrInvalid)
}

func TestUninitializedScanRefuses(t *testing.T) {
	s, err := New("SpiralScan", "")
	require.NoError(t, err)
	for _, op := range []string{"scan_buffer", "scan_markers", "prepare", "restart"} {
		_, err := s.Do(op, nil, nil, 0, 0)
		require.ErrorIs(t, err, backend.ErrInvalid, op)
	}
	buf, _ := testmem.Slice[float64](t, 4)
	_, err = s.Do("next", []byte(`{"Count": 2}`), nil, int(uintptr(unsafe.Pointer(&buf[0]))), 4)
	require.ErrorIs(t, err, backend.ErrInvalid)
}

func TestQueueCollectsCallbackEvents(t *testing.T) {
	q, err := New("ScanQueue", "")
	require.NoError(t, err)
	s, err := New("RasterScan", smallRasterRecord[:len(smallRasterRecord)-1]+`, "Loop": false}`)
	require.NoError(t, err)
	_, err = q.Do("append", []byte(`{"Callback": 7}`), q, 0, 0)
	require.ErrorIs(t, err, backend.ErrInvalid, "a queue cannot play a queue")
	doJSON(t, q, "append", `{"Callback": 7}`, s, nil)
	buf, _ := testmem.Slice[float64](t, 2*200)
	res := doJSON(t, q, "generate", `{"Channels": 2, "ZeroOrderHold": true}`, nil, buf)
	require.EqualValues(t, 200, res["Released"])
	events := res["Events"].([]any)
	require.Len(t, events, 2, "start and finish")
	require.Equal(t, []any{7.0, 0.0, float64(QueueStart)}, events[0])
	require.Equal(t, float64(QueueFinish), events[1].([]any)[2])
	require.Nil(t, doJSON(t, q, "events", "", nil, nil)["Events"], "events are handed over once")
}

func TestWarpAndPatternOps(t *testing.T) {
	w, err := New("Warp", `{"Kind": 1, "Factor": 2}`)
	require.NoError(t, err)
	out, _ := testmem.Slice[float64](t, 2)
	doJSON(t, w, "forward", `{"Values": [1, 3]}`, nil, out)
	require.Equal(t, []float64{2, 6}, out)
	p, err := New("SequentialPattern", `{"BidirectionalSegments": true}`)
	require.NoError(t, err)
	segs := doJSON(t, p, "to_pattern", `{"Waypoints": [[0, 0, 1, 1], [0, 0, 1, 1]], "Channels": 2}`, nil, nil)["Segments"].([]any)
	require.Len(t, segs, 2)
	require.Equal(t, []any{1.0, 1.0, 0.0, 0.0}, segs[1].(map[string]any)["Position"], "the second segment runs backwards")
}
