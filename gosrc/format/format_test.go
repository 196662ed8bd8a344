package format

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/vortexgo/vortexgo/gosrc/engine"
)

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
		{"IndexStackFormatExecutor", `{"AscansPerBscan": 4, "BscansPerVolume": 3}`, "expected FormatPlanner"}, // the index-only formatter is gone
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
