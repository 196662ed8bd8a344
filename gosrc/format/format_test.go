package format

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/vortexgo/vortexgo/gosrc/engine"
	"github.com/vortexgo/vortexgo/gosrc/format/stage"
)

func TestRasterScanPosition(t *testing.T) {
	scan := RasterScan{AscansPerBscan: 4, BscansPerVolume: 3, Bidirectional: true, Volumes: 2}
	tests := []struct {
		record int64
		want   Position
	}{
		{0, Position{0, 0, 0, false}},
		{5, Position{0, 1, 1, true}},
		{11, Position{0, 2, 3, false}},
		{12, Position{1, 0, 0, false}},
		{17, Position{1, 1, 1, true}},
	}
	for _, tc := range tests {
		require.Equal(t, tc.want, scan.Position(tc.record), "record %d", tc.record)
	}
	require.Equal(t, int64(24), scan.TotalRecords())
}

func TestValidation(t *testing.T) {
	tests := []struct {
		scan  RasterScan
		slice SampleSlice
		want  string
	}{
		{RasterScan{AscansPerBscan: 0, BscansPerVolume: 1}, SampleSlice{}, "RasterScan.AscansPerBscan: 0"},
		{RasterScan{AscansPerBscan: 1, BscansPerVolume: -1}, SampleSlice{}, "RasterScan.BscansPerVolume: -1"},
		{RasterScan{AscansPerBscan: 1, BscansPerVolume: 1, Volumes: -2}, SampleSlice{}, "RasterScan.Volumes: -2"},
		{RasterScan{AscansPerBscan: 1, BscansPerVolume: 1}, SampleSlice{Start: -1}, "SampleSlice.Start: -1"},
		{RasterScan{AscansPerBscan: 1, BscansPerVolume: 1}, SampleSlice{Start: 5, Stop: 5}, "SampleSlice.Stop: 5"},
	}
	for _, tc := range tests {
		t.Run(tc.want, func(t *testing.T) {
			_, err := NewStackFormatExecutor(tc.scan, tc.slice)
			require.ErrorContains(t, err, tc.want)
		})
	}
}

func TestSampleRange(t *testing.T) {
	tests := []struct {
		slice       SampleSlice
		samples     int
		start, stop int
	}{
		{SampleSlice{}, 100, 0, 100},
		{SampleSlice{10, 50}, 100, 10, 50},
		{SampleSlice{10, 500}, 100, 10, 100},
		{SampleSlice{200, 0}, 100, 0, 100}, // nothing left: NullSlice
	}
	for _, tc := range tests {
		f, err := NewStackFormatExecutor(RasterScan{AscansPerBscan: 1, BscansPerVolume: 1}, tc.slice)
		require.NoError(t, err)
		sl := f.SampleSlice(tc.samples)
		if !sl.Simple {
			sl = stage.SimpleSlice(0, tc.samples, 1)
		}
		require.Equal(t, [2]int{tc.start, tc.stop}, [2]int{sl.Start, sl.Stop}, "%+v", tc.slice)
	}
}

func copyA(src, n, dst int, rev bool, bscan, _ int, _ int64) engine.Action {
	return engine.Action{Kind: stage.Copy, BlockOffset: src, Count: n, BufferRecord: dst, Reverse: rev, BufferSegment: bscan}
}

func note(k stage.ActionKind, bscan, vol int, seg, sample int64) engine.Action {
	return engine.Action{Kind: k, SegmentIndexBuffer: int64(bscan), VolumeIndex: int64(vol), ScanIndex: seg, Sample: sample}
}

func TestPlan(t *testing.T) {
	scan := RasterScan{AscansPerBscan: 4, BscansPerVolume: 2, Bidirectional: true, Volumes: 2}
	tests := []struct {
		name    string
		start   int64
		records int
		want    []engine.Action
	}{
		{"inside one bscan", 0, 3, []engine.Action{copyA(0, 3, 0, false, 0, 0, 0)}},
		{"completes bscan 0, starts reversed bscan 1", 3, 3, []engine.Action{
			copyA(0, 1, 3, false, 0, 0, 0),
			note(stage.FinishSegment, 0, 0, 0, 4),
			copyA(1, 2, 2, true, 1, 0, 1), // records 0,1 of line 1 go to ascans 3,2
		}},
		{"completes a volume", 6, 2, []engine.Action{
			copyA(0, 2, 0, true, 1, 0, 1), // records 2,3 of line 1 go to ascans 1,0
			note(stage.FinishSegment, 1, 0, 1, 8),
			note(stage.FinishVolume, 1, 0, 1, 8),
		}},
		{"spans two bscans and ends the scan, extra records ignored", 8, 12, []engine.Action{
			copyA(0, 4, 0, false, 0, 1, 2),
			note(stage.FinishSegment, 0, 1, 2, 12),
			copyA(4, 4, 0, true, 1, 1, 3),
			note(stage.FinishSegment, 1, 1, 3, 16),
			note(stage.FinishVolume, 1, 1, 3, 16),
			note(stage.FinishScan, 1, 1, 3, 16),
		}},
		{"past the end", 16, 4, nil},
	}
	f, err := NewStackFormatExecutor(scan, SampleSlice{})
	require.NoError(t, err)
	plan := &engine.FormatPlan{Actions: make([]engine.Action, 0, 16)}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			require.NoError(t, f.Next(plan, tc.start, tc.records, nil))
			if tc.want == nil {
				require.Empty(t, plan.Actions)
				return
			}
			require.Equal(t, tc.want, plan.Actions)
		})
	}
	require.Equal(t, float64(0), testing.AllocsPerRun(100, func() {
		_ = f.Next(plan, 5, 12, nil)
	}), "planning into a plan with capacity must not allocate")
}

func TestNew(t *testing.T) {
	tests := []struct {
		kind, record string
		want         string // error text, "" for none
	}{
		{"FormatPlanner", `{"Shape": [3, 4]}`, ""},
		{"FormatPlanner", `{"Shape": [0, 4]}`, "segments_per_volume"},
		{"FormatPlanner", `{"Bogus": 1}`, "Bogus"},
		{"StackFormatExecutor", `{"SampleSlice": {"Simple": true, "Start": 2, "Stop": 6, "Step": 1}}`, ""},
		{"StackFormatExecutor", `{"SampleSlice": {"Simple": true, "Start": 2, "Stop": 6, "Step": 0}}`, "step"},
		{"RadialFormatExecutor", `{"SegmentRTExtent": [{"Min": -1, "Max": 1}, {"Min": 0, "Max": 3.14}], "RadialShape": [4, 8]}`, ""},
		{"SpiralFormatExecutor", `{"SegmentExtent": {"Min": 0, "Max": 1}, "SpiralShape": [2, 10], "SpiralVelocity": 1}`, ""},
		{"PositionFormatExecutor", ``, ""},
		{"IndexStackFormatExecutor", `{"AscansPerBscan": 4, "BscansPerVolume": 3, "Volumes": 1, "Start": 2}`, ""},
		{"IndexStackFormatExecutor", `{"AscansPerBscan": 0, "BscansPerVolume": 3}`, "AscansPerBscan"},
		{"Nope", ``, "expected FormatPlanner"},
	}
	for _, tc := range tests {
		t.Run(tc.kind+tc.want, func(t *testing.T) {
			obj, err := New(tc.kind, tc.record)
			if tc.want != "" {
				require.ErrorContains(t, err, tc.want)
				return
			}
			require.NoError(t, err)
			if tc.kind == "FormatPlanner" {
				p, ok := obj.(engine.Formatter)
				require.True(t, ok)
				require.Equal(t, [2]int{3, 4}, [2]int{p.SegmentsPerVolume(), p.RecordsPerSegment()})
			}
		})
	}
}
