package engine

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
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
		{LayoutRingCPath, LayoutRingC()},
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

// TestEventRingHeader: the C consumer's layout (eventring.h, LayoutRingC)
// is the Go ring's, word for word, and its cache lines are as documented.
func TestEventRingHeader(t *testing.T) {
	want := map[string]int{
		"VG_RING_MAGIC": ringMagicW, "VG_RING_VERSION": ringVersionW, "VG_RING_SLOTS": ringSlotsW,
		"VG_RING_FIELDS": ringFieldsW, "VG_RING_HEAD": ringHeadW, "VG_RING_TAIL": ringTailW,
		"VG_RING_ACKED": ringAckedW, "VG_RING_PARKED": ringParkedW, "VG_RING_WAITERS": ringWaitersW,
		"VG_RING_CLOSED": ringClosedW, "VG_RING_HEADER": ringHeader, "VG_RING_MAGIC_VALUE": ringMagic,
		"VG_RING_VERSION_VALUE": ringVersion,
	}
	got := map[string]int{}
	for _, m := range regexp.MustCompile(`(?m)^#define (VG_RING_\w+) (0x[0-9a-fA-F]+|\d+)`).FindAllStringSubmatch(LayoutRingC(), -1) {
		v, err := strconv.ParseInt(m[2], 0, 64)
		require.NoError(t, err)
		got[m[1]] = int(v)
	}
	require.Equal(t, want, got)
	line := func(w int) int { return w * 8 / 64 }
	require.NotEqual(t, line(ringFieldsW), line(ringHeadW), "head has a cache line of its own")
	require.NotEqual(t, line(ringHeadW), line(ringTailW))
	require.Equal(t, line(ringTailW), line(ringAckedW), "the consumer's words share one")
	require.NotEqual(t, line(ringAckedW), line(ringParkedW))
	require.Equal(t, 0, ringHeader*8%64, "the records start on a cache line")
}
