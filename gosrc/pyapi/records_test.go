package pyapi

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestGeneratedLayoutsAreFresh fails when the file go generate writes from
// records.go is stale: run `go generate ./gosrc/pyapi`.
func TestGeneratedLayoutsAreFresh(t *testing.T) {
	got, err := os.ReadFile(filepath.Join("..", "..", LayoutsPath))
	require.NoError(t, err)
	require.Equal(t, LayoutsPython(), string(got), "%s is stale: run `go generate ./gosrc/pyapi`", LayoutsPath)
}

// TestRecordsAreFlat: a record is a struct of int64 and float64 fields
// only, so its Go bytes are its Python struct layout (no padding, no
// pointers), and its name is unique.
func TestRecordsAreFlat(t *testing.T) {
	seen := map[string]bool{}
	for _, r := range records {
		require.False(t, seen[r.name], "record %s declared twice", r.name)
		seen[r.name] = true
		typ := reflect.TypeOf(r.zero)
		require.Equal(t, reflect.Struct, typ.Kind(), r.name)
		for i := 0; i < typ.NumField(); i++ {
			f := typ.Field(i)
			assert.NotEmpty(t, structCode(f.Type.Kind()), "%s.%s is %s: a record holds int64 and float64 only", r.name, f.Name, f.Type)
			assert.Equal(t, uintptr(8*i), f.Offset, "%s.%s", r.name, f.Name)
		}
	}
}

func TestPutRecord(t *testing.T) {
	rec := poolStatsRecord{Allocated: 4, Free: 1, Pending: 2, InUse: 1}
	buf := make([]int64, 4)
	at := addr(buf)
	for _, tc := range []struct {
		name  string
		n     int
		wrote bool
	}{
		{"too small writes nothing", 31, false},
		{"exact", 32, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clear(buf)
			size, err := putRecord(at, tc.n, &rec)
			require.NoError(t, err)
			assert.Equal(t, 32, size)
			if tc.wrote {
				assert.Equal(t, []int64{4, 1, 2, 1}, buf)
			} else {
				assert.Equal(t, []int64{0, 0, 0, 0}, buf)
			}
		})
	}
}

func TestSnake(t *testing.T) {
	for in, want := range map[string]string{"InUse": "in_use", "AvgMs": "avg_ms", "GPUUtilization": "gpu_utilization",
		"Free": "free", "DownloadedRound": "downloaded_round", "P99": "p99"} {
		assert.Equal(t, want, snake(in), in)
	}
}
