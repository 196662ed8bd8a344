package pyapi

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/memory"
)

func TestDecodeRecord(t *testing.T) {
	type cfg struct {
		Size  int
		Level float32
	}
	tests := []struct {
		name, record string
		want         cfg
		errText      string
	}{
		{"fields", `{"Size": 3, "Level": 1.5}`, cfg{3, 1.5}, ""},
		{"missing keys keep zero", `{}`, cfg{}, ""},
		{"unknown key", `{"Sise": 3}`, cfg{}, `Sise`},
		{"wrong type", `{"Size": "3"}`, cfg{}, "Size"},
		{"not JSON", `Size=3`, cfg{}, "cfg: "},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got cfg
			err := decodeRecord("cfg", tc.record, &got)
			if tc.errText != "" {
				require.ErrorIs(t, err, backend.ErrInvalid)
				require.ErrorContains(t, err, tc.errText)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

func TestUsageJSONRecord(t *testing.T) {
	u := memory.Usage{Device: memory.KindUsage{Current: 3, Peak: 4, Limit: 5, Active: 1,
		ByPurpose: map[string]memory.PurposeUsage{"array": {Bytes: 3, Count: 1}}}}
	var rec map[string]map[string]any
	require.NoError(t, json.Unmarshal([]byte(encodeJSON(u)), &rec))
	require.Equal(t, map[string]any{"current": 3.0, "peak": 4.0, "limit": 5.0, "active": 1.0,
		"by_purpose": map[string]any{"array": map[string]any{"bytes": 3.0, "count": 1.0}}}, rec["device"])
	require.Contains(t, rec, "pinned")
}

func TestTensorInfoJSON(t *testing.T) {
	require.JSONEq(t, `{"shape":[2,3],"dtype":"int16","nbytes":12,"closed":false}`,
		tensorInfoJSON(memory.TensorInfo{Shape: []int{2, 3}, DType: "int16", Nbytes: 12}))
	require.JSONEq(t, `{"shape":[],"dtype":"float64","nbytes":8,"closed":true}`,
		tensorInfoJSON(memory.TensorInfo{DType: "float64", Nbytes: 8, Closed: true}), "0-d: [] not null")
}

func TestDeviceRecords(t *testing.T) {
	dev, err := GetDevice("cpu")
	require.NoError(t, err)
	rec, err := dev.Info()
	require.NoError(t, err)
	require.Contains(t, rec, `"priority_range":[0,0]`)
	var st map[string]any
	require.NoError(t, json.Unmarshal([]byte(CUDAStatus()), &st))
	require.Contains(t, st, "available")
}
