package engine

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestGeneratedLayoutIsFresh fails when the files go generate writes from
// layout.go are stale: run `go generate ./gosrc/engine`.
func TestGeneratedLayoutIsFresh(t *testing.T) {
	for _, tc := range []struct {
		path, want string
	}{
		{LayoutPythonPath, LayoutPython()},
		{LayoutCPath, LayoutC()},
	} {
		t.Run(tc.path, func(t *testing.T) {
			got, err := os.ReadFile(filepath.Join("..", "..", tc.path))
			require.NoError(t, err)
			require.Equal(t, tc.want, string(got), "%s is stale: run `go generate ./gosrc/engine`", tc.path)
		})
	}
}

// TestLayoutNamesEveryKindAndField checks the generated text against the
// Go declarations it comes from: each kind and field once, at its value.
func TestLayoutNamesEveryKindAndField(t *testing.T) {
	py, c := LayoutPython(), LayoutC()
	require.Len(t, fieldNames, FieldTimes+1, "one name per field")
	require.Contains(t, py, "FIELDS = 14\n")
	require.Contains(t, c, "#define VG_EV_FIELDS 14\n")
	for _, tc := range []struct {
		py, c string
	}{
		{"SEGMENT = 1\n", "#define VG_EV_SEGMENT 1\n"},
		{"EVENT = 5\n", "#define VG_EV_EVENT 5\n"}, // EventMarker: vortex's event_callback
		{"JOB = 9\n", "#define VG_EV_JOB 9\n"},
		{"F_SAMPLE = 2\n", "#define VG_EV_F_SAMPLE 2\n"},
		{"F_TIMES = 7\n", "#define VG_EV_F_TIMES 7\n"},
	} {
		require.Contains(t, py, tc.py)
		require.Contains(t, c, tc.c)
	}
	require.Equal(t, int(eventKinds), strings.Count(c, "#define VG_EV_")-1-len(fieldNames))
}
