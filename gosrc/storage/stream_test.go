package storage

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/marker"
)

// moreOps is testdata/storage_more.json, written by
// scripts/golden/storage_more_golden.py with the files vortex wrote for it.
type moreOps struct {
	Broct struct {
		Shape      [3]int
		Dimensions [3]float64
		ScanType   int `json:"scan_type"`
		Notes      string
		Scenarios  map[string][][]any
	}
	Markers      [][8]int64
	StreamDtypes []string `json:"stream_dtypes"`
}

func loadMore(t *testing.T) moreOps {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "storage_more.json"))
	require.NoError(t, err)
	var g moreOps
	require.NoError(t, json.Unmarshal(b, &g))
	return g
}

func golden(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "vortex_more", name))
	require.NoError(t, err)
	return b
}

// int8Values is the golden script's data(): (3 i + 7 seed) % 100 + 1.
func int8Values(seed, n int) []byte {
	return values(elem{name: "int8"}, seed, n)
}

func TestBroctMatchesVortex(t *testing.T) {
	g := loadMore(t)
	b, a, s := g.Broct.Shape[0], g.Broct.Shape[1], g.Broct.Shape[2]
	for name, ops := range g.Broct.Scenarios {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "out.broct")
			st := NewBroctStorage()
			require.NoError(t, st.Open(BroctStorageConfig{Path: path, Shape: g.Broct.Shape, Dimensions: g.Broct.Dimensions,
				ScanType: BroctScan(g.Broct.ScanType), Notes: g.Broct.Notes}))
			arg := func(op []any, i int) int { return int(op[i].(float64)) }
			for _, op := range ops {
				switch op[0] {
				case "write_volume":
					require.NoError(t, st.WriteBroctVolume(int8Values(arg(op, 1), b*a*s)))
				case "write_bscan":
					require.NoError(t, st.WriteMultiBscan(arg(op, 1), int8Values(arg(op, 2), a*s)))
				case "write_multi_bscan":
					require.NoError(t, st.WriteMultiBscan(arg(op, 1), int8Values(arg(op, 2), arg(op, 3)*a*s)))
				case "advance_volume":
					require.NoError(t, st.AdvanceVolume(len(op) < 2 || op[1].(bool)))
				case "seek":
					require.NoError(t, st.Seek(arg(op, 1), arg(op, 2)))
				default:
					t.Fatalf("unknown op %v", op)
				}
			}
			require.NoError(t, st.Close())
			got, err := os.ReadFile(path)
			require.NoError(t, err)
			require.Equal(t, golden(t, "broct_"+name+".broct"), got)
		})
	}
}

// TestBroctEndpointVolume: the endpoint's volume (stack order) is stored
// transposed, as vortex's broct executor formats it.
func TestBroctEndpointVolume(t *testing.T) {
	dir := t.TempDir()
	cfg := BroctStorageConfig{Path: filepath.Join(dir, "a.broct"), Shape: [3]int{2, 3, 4}, Dimensions: [3]float64{1, 1, 1}}
	stack := make([]byte, 24)
	broct := make([]byte, 24)
	for k := range 2 {
		for i := range 3 {
			for j := range 4 {
				v := byte(k*100 + i*10 + j)
				stack[k*12+i*4+j] = v
				broct[k*12+j*3+i] = v
			}
		}
	}
	a := NewBroctStorage()
	require.NoError(t, a.Open(cfg))
	require.Equal(t, 24, a.VolumeBytes())
	require.NoError(t, a.WriteVolume(stack))
	require.NoError(t, a.WriteVolume(stack))
	require.NoError(t, a.Close())
	cfg.Path = filepath.Join(dir, "b.broct")
	b := NewBroctStorage()
	require.NoError(t, b.Open(cfg))
	require.NoError(t, b.WriteBroctVolume(broct))
	require.NoError(t, b.WriteBroctVolume(broct))
	require.NoError(t, b.Close())
	ga, err := os.ReadFile(filepath.Join(dir, "a.broct"))
	require.NoError(t, err)
	gb, err := os.ReadFile(cfg.Path)
	require.NoError(t, err)
	require.Equal(t, gb, ga)
}

func TestMarkerLogMatchesVortex(t *testing.T) {
	g := loadMore(t)
	var rec []int64
	for _, r := range g.Markers {
		rec = append(rec, r[:]...)
	}
	ms := markerRows(rec)
	for _, tc := range []struct {
		binary bool
		file   string
	}{{false, "markers_text.txt"}, {true, "markers_binary.bin"}} {
		t.Run(tc.file, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), tc.file)
			l := NewMarkerLog()
			require.NoError(t, l.Open(MarkerLogConfig{Path: path, Binary: tc.binary}))
			require.NoError(t, l.Write(ms[:3]))
			require.NoError(t, l.Write(nil))
			require.NoError(t, l.Write(ms[3:]))
			require.NoError(t, l.Close())
			got, err := os.ReadFile(path)
			require.NoError(t, err)
			require.Equal(t, golden(t, tc.file), got)
		})
	}
}

func TestEmptyStreamsMatchVortex(t *testing.T) {
	g := loadMore(t)
	for _, dt := range g.StreamDtypes {
		s, err := NewSimpleStreamNamed(dt)
		require.NoError(t, err)
		path := filepath.Join(t.TempDir(), "s.bin")
		require.NoError(t, s.Open(SimpleStreamConfig{Path: path}))
		require.True(t, s.IsOpen())
		require.NoError(t, s.Close())
		got, err := os.ReadFile(path)
		require.NoError(t, err)
		require.Equal(t, golden(t, "stream_"+dt+".bin"), got)
	}
}

func TestSimpleStreamWrites(t *testing.T) {
	s, err := NewSimpleStreamNamed("uint16")
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "s.bin")
	require.ErrorIs(t, s.Write([]byte{1, 2}), backend.ErrClosed)
	require.NoError(t, s.Open(SimpleStreamConfig{Path: path}))
	require.NoError(t, s.Write([]byte{1, 2, 3, 4}))
	require.ErrorIs(t, s.Write([]byte{5, 6, 7}), backend.ErrInvalid, "half an element")
	require.NoError(t, s.Write([]byte{5, 6}))
	require.Equal(t, StreamState{StatusOpen, 6}, s.State())
	require.NoError(t, s.Close())
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, []byte{1, 2, 3, 4, 5, 6}, got)
	require.ErrorIs(t, s.Open(SimpleStreamConfig{Path: path, Header: 1}), backend.ErrInvalid)
}

func TestStreamDumpDivisor(t *testing.T) {
	for _, tc := range []struct {
		divisor int
		want    []byte
	}{
		{1, []byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9}},
		{2, []byte{0, 1, 4, 5, 8, 9, 0, 1, 4, 5, 8, 9}},
		{3, []byte{0, 1, 6, 7, 0, 1, 6, 7}},
		{9, []byte{0, 1, 0, 1}},
	} {
		d := NewStreamDump()
		path := filepath.Join(t.TempDir(), "d.bin")
		require.NoError(t, d.Open(StreamDumpConfig{Path: path, Stream: 1, Divisor: tc.divisor}))
		block := []byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9} // 5 rows of 2 bytes
		require.NoError(t, d.Dump(block, 2))
		require.NoError(t, d.Dump(block, 2), "each block restarts at its first row, as vortex")
		require.ErrorIs(t, d.Dump(block[:3], 2), backend.ErrInvalid)
		require.NoError(t, d.Close())
		got, err := os.ReadFile(path)
		require.NoError(t, err)
		require.Equal(t, tc.want, got, "divisor %d", tc.divisor)
	}
}

func TestAppendStoragesBadInput(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "missing", "x.bin")
	var pathErr *os.PathError
	s, err := NewSimpleStreamNamed("int8")
	require.NoError(t, err)
	for _, tc := range []struct {
		name string
		err  error
		is   error
	}{
		{"stream path", s.Open(SimpleStreamConfig{Path: bad}), nil},
		{"stream empty path", s.Open(SimpleStreamConfig{}), backend.ErrInvalid},
		{"dump path", NewStreamDump().Open(StreamDumpConfig{Path: bad, Divisor: 1}), nil},
		{"dump divisor", NewStreamDump().Open(StreamDumpConfig{Path: bad}), backend.ErrInvalid},
		{"dump stream", NewStreamDump().Open(StreamDumpConfig{Path: bad, Divisor: 1, Stream: 6}), backend.ErrInvalid},
		{"log path", NewMarkerLog().Open(MarkerLogConfig{Path: bad}), nil},
		{"broct path", NewBroctStorage().Open(BroctStorageConfig{Path: bad, Shape: [3]int{1, 1, 1}}), nil},
		{"broct shape", NewBroctStorage().Open(BroctStorageConfig{Path: bad, Shape: [3]int{1, 0, 1}}), backend.ErrInvalid},
		{"broct scan", NewBroctStorage().Open(BroctStorageConfig{Path: bad, Shape: [3]int{1, 1, 1}, ScanType: 11}), backend.ErrInvalid},
	} {
		if tc.is == nil {
			require.True(t, errors.As(tc.err, &pathErr), "%s: %v", tc.name, tc.err)
			require.ErrorContains(t, tc.err, "path=", tc.name)
		} else {
			require.ErrorIs(t, tc.err, tc.is, tc.name)
		}
	}
	_, err = NewSimpleStreamNamed("complex64")
	require.ErrorContains(t, err, "dtype=")
}

func TestBroctBadWrites(t *testing.T) {
	st := NewBroctStorage()
	require.ErrorIs(t, st.WriteMultiBscan(0, []byte{1}), backend.ErrClosed)
	require.NoError(t, st.Open(BroctStorageConfig{Path: filepath.Join(t.TempDir(), "x"), Shape: [3]int{2, 3, 4}}))
	require.ErrorIs(t, st.WriteMultiBscan(0, make([]byte, 11)), backend.ErrInvalid)
	require.ErrorIs(t, st.WriteMultiBscan(2, make([]byte, 12)), backend.ErrInvalid)
	require.ErrorIs(t, st.WriteMultiBscan(1, make([]byte, 24)), backend.ErrInvalid)
	require.ErrorIs(t, st.WriteBroctVolume(make([]byte, 12)), backend.ErrInvalid)
	require.ErrorIs(t, st.Seek(-1, 0), backend.ErrInvalid)
	require.NoError(t, st.Close())
	require.NoError(t, st.Close())
}

// markerRows are the golden file's marker rows (python/vortexgo/marker.py's
// layout, 8 int64s a marker) as markers.
func markerRows(rec []int64) []marker.Marker {
	var out []marker.Marker
	for i := 0; i+8 <= len(rec); i += 8 {
		r := rec[i : i+8]
		out = append(out, marker.Marker{Kind: marker.Kind(r[0]), Sample: r[1], Sequence: r[2], Index: r[3],
			CountHint: int(r[4]), ID: uint64(r[5]), Flags: marker.Flags(uint64(r[6])), Reversed: r[7] != 0})
	}
	return out
}
