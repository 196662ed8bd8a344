package format

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/marker"
)

// The golden files come from scripts/golden/format_golden.py run against
// vortex 0.5.1: format_cpu.json (config defaults and the per-block markers
// of each engine scenario, from vortex's ScanQueue), format_engine.json
// (vortex's engine formatting those blocks on a GPU machine: endpoint
// callbacks and the volume at each volume callback) and
// format_executors.json (vortex's radial, spiral and position executors).

type goldenMarker struct {
	Kind            string `json:"kind"`
	Sample          int64  `json:"sample"`
	Sequence        int64  `json:"sequence"`
	IndexInScan     int64  `json:"index_in_scan"`
	IndexInVolume   int64  `json:"index_in_volume"`
	Reversed        bool   `json:"reversed"`
	VolumeCountHint int    `json:"volume_count_hint"`
	SegmentHint     int    `json:"segment_count_hint"`
	RecordHint      int    `json:"record_count_hint"`
	ID              uint64 `json:"id"`
	Flags           uint64 `json:"flags"`
}

func (g goldenMarker) marker(t *testing.T) marker.Marker {
	m := marker.Marker{Sample: g.Sample, Sequence: g.Sequence, Reversed: g.Reversed, ID: g.ID, Flags: marker.Flags(g.Flags)}
	switch g.Kind {
	case "ScanBoundary":
		m.Kind, m.CountHint = marker.ScanBoundary, g.VolumeCountHint
	case "VolumeBoundary":
		m.Kind, m.Index, m.CountHint = marker.VolumeBoundary, g.IndexInScan, g.SegmentHint
	case "SegmentBoundary":
		m.Kind, m.Index, m.CountHint = marker.SegmentBoundary, g.IndexInVolume, g.RecordHint
	case "ActiveLines":
		m.Kind = marker.ActiveLines
	case "InactiveLines":
		m.Kind = marker.InactiveLines
	case "Event":
		m.Kind = marker.Event
	default:
		t.Fatalf("golden marker kind %q", g.Kind)
	}
	return m
}

type goldenScenario struct {
	Name      string         `json:"name"`
	Bscans    int            `json:"bscans"`
	Ascans    int            `json:"ascans"`
	Samples   int            `json:"samples"`
	Planner   map[string]any `json:"planner"`
	Slice     []int          `json:"slice"`
	Transform []float64      `json:"transform"`
	Blocks    []struct {
		Sample  int64          `json:"sample"`
		Length  int            `json:"length"`
		Markers []goldenMarker `json:"markers"`
	} `json:"blocks_markers"`
}

type goldenCPU struct {
	PlannerDefaults struct {
		Mask          uint64 `json:"mask"`
		FlipReversed  bool   `json:"flip_reversed"`
		StripInactive bool   `json:"strip_inactive"`
		AdaptShape    bool   `json:"adapt_shape"`
	} `json:"planner_defaults"`
	SliceCount []struct {
		Start, Stop, Step, Count int
	} `json:"slice_count"`
	PositionSet []struct {
		Pitch     [2]float64    `json:"pitch"`
		Offset    [2]float64    `json:"offset"`
		Angle     float64       `json:"angle"`
		Transform [2][3]float64 `json:"transform"`
	} `json:"position_set"`
	Scenarios []goldenScenario `json:"scenarios"`
}

type goldenEngine struct {
	Scenarios []struct {
		Name      string            `json:"name"`
		Callbacks []json.RawMessage `json:"callbacks"`
		Final     [][][]int         `json:"final"`
	} `json:"scenarios"`
}

func loadGolden(t *testing.T, name string, v any) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, v))
}

func TestGoldenDefaults(t *testing.T) {
	var g goldenCPU
	loadGolden(t, "format_cpu.json", &g)
	d := DefaultFormatPlannerConfig(1, 1)
	require.Equal(t, g.PlannerDefaults.Mask, uint64(d.Mask))
	require.Equal(t, g.PlannerDefaults.FlipReversed, d.FlipReversed)
	require.Equal(t, g.PlannerDefaults.StripInactive, d.StripInactive)
	require.Equal(t, g.PlannerDefaults.AdaptShape, d.AdaptShape)
	for _, c := range g.SliceCount {
		require.Equal(t, c.Count, SimpleSlice(c.Start, c.Stop, c.Step).Count(), "SimpleSlice(%d, %d, %d)", c.Start, c.Stop, c.Step)
	}
	for _, c := range g.PositionSet {
		var cfg PositionFormatExecutorConfig
		cfg.Set(c.Pitch, c.Offset, c.Angle)
		for i := range 2 {
			require.InDeltaSlice(t, c.Transform[i][:], cfg.Transform[i][:], 1e-12, "set(%v, %v, %v)", c.Pitch, c.Offset, c.Angle)
		}
	}
}

// engineLog is a callback as the golden file stores it: the endpoint
// callbacks vortex's engine made, with the volume at each volume callback.
func engineLog(actions []Action, vol Volume[uint16], shape [3]int) []string {
	var out []string
	for _, a := range actions {
		switch a.Kind {
		case FinishSegment:
			out = append(out, fmt.Sprintf(`["segment",%d,%d,%d,%d]`, a.Sample, a.ScanIndex, a.VolumeIndex, a.SegmentIndexBuffer))
		case FinishVolume:
			out = append(out, fmt.Sprintf(`["volume",%d,%d,%d,%s]`, a.Sample, a.ScanIndex, a.VolumeIndex, volumeJSON(vol, shape)))
		case FinishScan:
			out = append(out, fmt.Sprintf(`["scan",%d,%d]`, a.Sample, a.ScanIndex))
		}
	}
	return out
}

func volumeJSON(vol Volume[uint16], shape [3]int) string {
	v := make([][][]int, shape[0])
	for s := range v {
		v[s] = make([][]int, shape[1])
		for r := range v[s] {
			v[s][r] = make([]int, shape[2])
			for k := range v[s][r] {
				v[s][r][k] = int(vol.Data[(s*shape[1]+r)*shape[2]+k])
			}
		}
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func canonJSON(t *testing.T, raw []byte) string {
	var v any
	require.NoError(t, json.Unmarshal(raw, &v))
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}

// TestGoldenEngine replays each scenario's blocks through our planner and
// stack executor, with the records vortex's FileAcquisition supplied
// (record r holds r+1 in every sample), and requires the callbacks and
// volumes vortex's engine produced.
func TestGoldenEngine(t *testing.T) { replayGoldenEngine(t, nil) }

// TestGoldenEngineLaunch replays the scenarios through the executor's
// Launch on the CPU backend as well (the kernels' Go twins), requiring the
// same volume at every volume callback.
func TestGoldenEngineLaunch(t *testing.T) {
	replayGoldenEngine(t, func(t *testing.T) rig { return newCPURig(t) })
}

// replayGoldenEngine checks our planner and stack executor against vortex's
// engine; with newRig, every copy is also launched on that rig's backend
// and its volume compared at each FinishVolume and at the end.
func replayGoldenEngine(t *testing.T, newRig func(*testing.T) rig) {
	var gc goldenCPU
	var ge goldenEngine
	loadGolden(t, "format_cpu.json", &gc)
	loadGolden(t, "format_engine.json", &ge)
	require.Len(t, ge.Scenarios, len(gc.Scenarios))
	for i, sc := range gc.Scenarios {
		want := ge.Scenarios[i]
		require.Equal(t, sc.Name, want.Name)
		t.Run(sc.Name, func(t *testing.T) {
			rps := sc.Ascans
			if v, ok := sc.Planner["records_per_segment"]; ok {
				rps = int(v.(float64))
			}
			cfg := DefaultFormatPlannerConfig(sc.Bscans, rps)
			if v, ok := sc.Planner["flip_reversed"]; ok {
				cfg.FlipReversed = v.(bool)
			}
			if v, ok := sc.Planner["strip_inactive"]; ok {
				cfg.StripInactive = v.(bool)
			}
			p, err := NewFormatPlanner(cfg)
			require.NoError(t, err)
			ecfg := StackFormatExecutorConfig{}
			depth := sc.Samples
			if sc.Slice != nil {
				ecfg.SampleSlice = SimpleSlice(sc.Slice[0], sc.Slice[1], sc.Slice[2])
				depth = ecfg.SampleSlice.Count()
			}
			if sc.Transform != nil {
				ecfg.SampleTransform = LinearTransform(sc.Transform[0], sc.Transform[1])
			}
			ex, err := NewStackFormatExecutor(ecfg)
			require.NoError(t, err)
			shape := [3]int{sc.Bscans, rps, depth}
			vol := Volume[uint16]{Data: make([]uint16, sc.Bscans*rps*depth), Shape: [4]int{sc.Bscans, rps, depth, 1}}

			var r rig
			var dv DeviceVolume
			if newRig != nil {
				r = newRig(t)
				dv = DeviceVolume{Ptr: r.upload(t, bytesOf(vol.Data)), DType: backend.Uint16, Shape: vol.Shape}
			}
			checkDevice := func(what string) {
				if r != nil {
					require.Equal(t, bytesOf(vol.Data), r.download(t, dv.Ptr, len(bytesOf(vol.Data))), what)
				}
			}

			var got []string
			var plan FormatPlan
			for bi, b := range sc.Blocks {
				ms := make([]marker.Marker, len(b.Markers))
				for j, m := range b.Markers {
					ms[j] = m.marker(t)
				}
				require.NoError(t, p.Next(&plan, b.Sample, b.Length, ms), "block %d", bi)
				blk := Block[uint16]{Data: make([]uint16, b.Length*sc.Samples), Records: b.Length, Samples: sc.Samples, Channels: 1}
				for r := range b.Length {
					for k := range sc.Samples {
						blk.Data[r*sc.Samples+k] = uint16(b.Sample + int64(r) + 1)
					}
				}
				var db DeviceBlock
				if r != nil {
					db = DeviceBlock{Ptr: r.upload(t, bytesOf(blk.Data)), DType: backend.Uint16, Records: b.Length, Samples: sc.Samples, Channels: 1}
				}
				// Actions run in plan order, as vortex's endpoint does, so a
				// volume callback sees the copies before it and none after.
				run := func(actions []Action) {
					for _, a := range actions {
						switch a.Kind {
						case Copy:
							require.NoError(t, ExecuteStack(ex, vol, blk, a), "block %d %s", bi, a)
							if r != nil {
								require.NoError(t, ex.Launch(r.stream(), dv, db, a), "block %d %s", bi, a)
							}
						case FinishVolume:
							checkDevice(fmt.Sprintf("block %d %s", bi, a))
						}
						got = append(got, engineLog([]Action{a}, vol, shape)...)
					}
				}
				run(plan.Actions)
				if bi == len(sc.Blocks)-1 {
					// vortex's engine calls finish() on the last block's plan.
					require.NoError(t, p.Finish(&plan))
					run(plan.Actions)
				}
			}
			wantLog := make([]string, len(want.Callbacks))
			for j, c := range want.Callbacks {
				wantLog[j] = canonJSON(t, c)
			}
			for j := range got {
				got[j] = canonJSON(t, []byte(got[j]))
			}
			if sc.Name == "raster_short_segments" {
				// Reversed segments longer than records_per_segment: vortex's
				// planner underflows (see load), the copy throws and its
				// endpoint drops the rest of that block's plan (segment 1's
				// notification and records are lost); ours truncates the
				// segment as vortex's code means to.
				t.Skip("vortex writes past the segment here; covered by TestPlannerReversedOverflow")
			}
			checkDevice("final volume")
			require.Equal(t, wantLog, got)
			require.Equal(t, canonJSON(t, mustJSON(t, want.Final)), volumeJSON(vol, shape))
		})
	}
}

func mustJSON(t *testing.T, v any) []byte {
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}
