package storage

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/vortexgo/vortexgo/gosrc/backend"
)

// goldenOps is testdata/storage_ops.json, written by
// scripts/golden/storage_golden.py with the files vortex wrote for it.
type goldenOps struct {
	Shape     [4]int
	Scenarios map[string][][]any
}

func loadOps(t *testing.T) goldenOps {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "storage_ops.json"))
	require.NoError(t, err)
	var g goldenOps
	require.NoError(t, json.Unmarshal(b, &g))
	return g
}

// values is the golden script's data(): (3 i + 7 seed) % 100 + 1 in dtype.
func values(e elem, seed, n int) []byte {
	var b bytes.Buffer
	for i := range n {
		v := (i*3+7*seed)%100 + 1
		switch e.name {
		case "int8":
			b.WriteByte(byte(int8(v)))
		case "uint16":
			_ = binary.Write(&b, binary.LittleEndian, uint16(v))
		case "uint64":
			_ = binary.Write(&b, binary.LittleEndian, uint64(v))
		case "float32":
			_ = binary.Write(&b, binary.LittleEndian, float32(v))
		case "float64":
			_ = binary.Write(&b, binary.LittleEndian, float64(v))
		}
	}
	return b.Bytes()
}

// replay runs one golden scenario on s, as the golden script ran it on vortex.
func replay(t *testing.T, s *SimpleStack, shape [4]int, ops [][]any) {
	t.Helper()
	arg := func(op []any, i int) int { return int(op[i].(float64)) }
	for _, op := range ops {
		switch op[0] {
		case "write_volume":
			require.NoError(t, s.Write(values(s.elem, arg(op, 1), shape[0]*shape[1]*shape[2]*shape[3])))
		case "write_multi_bscan":
			require.NoError(t, s.WriteMultiBscan(arg(op, 1), values(s.elem, arg(op, 2), arg(op, 3)*shape[1]*shape[2]*shape[3])))
		case "write_partial_bscan":
			require.NoError(t, s.WritePartialBscan(arg(op, 1), arg(op, 2), values(s.elem, arg(op, 3), arg(op, 4)*shape[2]*shape[3])))
		case "advance_volume":
			allocate := len(op) < 2 || op[1].(bool)
			require.NoError(t, s.AdvanceVolume(allocate))
		case "seek":
			require.NoError(t, s.Seek(arg(op, 1), arg(op, 2)))
		default:
			t.Fatalf("unknown op %v", op)
		}
	}
}

var headerNames = map[string]Header{"Empty": HeaderEmpty, "NumPy": HeaderNumPy, "MATLAB": HeaderMATLAB, "NRRD": HeaderNRRD, "NifTI": HeaderNIfTI}

// TestSimpleStackMatchesVortex: every file vortex wrote for the golden
// scenarios, vortexgo writes byte for byte, except the MATLAB data element's
// type (headers.go: vortex writes the array class there, which scipy
// cannot read).
func TestSimpleStackMatchesVortex(t *testing.T) {
	g := loadOps(t)
	files, err := filepath.Glob(filepath.Join("testdata", "vortex", "*.bin"))
	require.NoError(t, err)
	require.Len(t, files, 50)
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".bin")
		t.Run(name, func(t *testing.T) {
			parts := strings.Split(name, "_")
			require.Len(t, parts, 3)
			ops, ok := g.Scenarios[parts[0]]
			require.True(t, ok)
			s, err := NewSimpleStackNamed(parts[1])
			require.NoError(t, err)
			h, ok := headerNames[parts[2]]
			require.True(t, ok)
			path := filepath.Join(t.TempDir(), "out.bin")
			require.NoError(t, s.Open(SimpleStackConfig{Path: path, Shape: [3]int(g.Shape[:3]), Channels: g.Shape[3], Header: h}))
			replay(t, s, g.Shape, ops)
			require.NoError(t, s.Close())
			got, err := os.ReadFile(path)
			require.NoError(t, err)
			want, err := os.ReadFile(file)
			require.NoError(t, err)
			if h == HeaderMATLAB {
				// 128 preamble + 8 matrix tag + 16 flags + 32 dims + 16 name.
				const dataTag = 200
				require.Equal(t, uint32(s.elem.mx), binary.LittleEndian.Uint32(want[dataTag:]), "vortex's data type field")
				binary.LittleEndian.PutUint32(want[dataTag:], s.elem.mi)
			}
			require.Equal(t, want, got)
		})
	}
}

var npyDict = regexp.MustCompile(`^\{ 'descr': '([^']+)', 'fortran_order': False, 'shape': \(([0-9, ]*)\) \} *\n$`)

// parseNPY reads a .npy 2.0 file the way numpy.load would.
func parseNPY(t *testing.T, b []byte) (descr string, shape []int, data []byte) {
	t.Helper()
	require.GreaterOrEqual(t, len(b), 12)
	require.Equal(t, "\x93NUMPY\x02\x00", string(b[:8]))
	hlen := int(binary.LittleEndian.Uint32(b[8:12]))
	require.Zero(t, (12+hlen)%64, "header must keep data 64-byte aligned")
	m := npyDict.FindStringSubmatch(string(b[12 : 12+hlen]))
	require.NotNil(t, m, "header dict %q", b[12:12+hlen])
	for _, f := range strings.Split(m[2], ",") {
		if f = strings.TrimSpace(f); f != "" {
			n, err := strconv.Atoi(f)
			require.NoError(t, err)
			shape = append(shape, n)
		}
	}
	return m[1], shape, b[12+hlen:]
}

// TestSimpleStackCrashSafety: before Close (a crash, a killed process), the
// header already counts every volume advanced past; Close pads an
// unfinished volume with zeros, as vortex does, instead of trimming it.
func TestSimpleStackCrashSafety(t *testing.T) {
	for _, dtype := range []backend.DType{backend.Int8, backend.Uint16, backend.Float32, backend.Float64} {
		t.Run(dtype.String(), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "stack.npy")
			s, err := NewSimpleStack(dtype)
			require.NoError(t, err)
			require.NoError(t, s.Open(SimpleStackConfig{Path: path, Shape: [3]int{2, 3, 4}, Header: HeaderNumPy}))
			vb := s.VolumeBytes()
			require.Equal(t, 24*dtype.Size(), vb)
			b, err := os.ReadFile(path)
			require.NoError(t, err)
			descr, shape, _ := parseNPY(t, b)
			require.Equal(t, dtype.String(), descr)
			require.Equal(t, []int{0, 2, 3, 4, 1}, shape, "a fresh file is a valid, empty array")

			one, two := bytes.Repeat([]byte{1}, vb), bytes.Repeat([]byte{2}, vb)
			require.NoError(t, s.WriteVolume(one)) // write + advance: the endpoint's path
			require.NoError(t, s.Write(two))
			require.Equal(t, 1, s.Completed(), "Write does not advance")
			require.NoError(t, s.AdvanceVolume(true))
			require.NoError(t, s.WritePartialBscan(1, 1, bytes.Repeat([]byte{3}, vb/6)))

			b, err = os.ReadFile(path)
			require.NoError(t, err)
			_, shape, data := parseNPY(t, b)
			require.Equal(t, []int{2, 2, 3, 4, 1}, shape)
			require.Equal(t, append(one, two...), data[:2*vb])

			require.NoError(t, s.Close())
			require.NoError(t, s.Close(), "Close is idempotent")
			b, err = os.ReadFile(path)
			require.NoError(t, err)
			_, shape, data = parseNPY(t, b)
			require.Equal(t, []int{3, 2, 3, 4, 1}, shape, "Close pads the unfinished volume")
			third := make([]byte, vb)
			copy(third[vb/2+vb/6:], bytes.Repeat([]byte{3}, vb/6))
			require.Equal(t, append(append(one, two...), third...), data)
		})
	}
}

// TestSimpleStackAdvanceAllocates: advancing past an unwritten volume
// reserves it on disk (zeros), unless allocate is false; Seek moves anywhere.
func TestSimpleStackAdvanceAllocates(t *testing.T) {
	path := filepath.Join(t.TempDir(), "raw.bin")
	s, err := NewSimpleStack(backend.Uint16)
	require.NoError(t, err)
	require.NoError(t, s.Open(SimpleStackConfig{Path: path, Shape: [3]int{1, 1, 2}}))
	require.NoError(t, s.AdvanceVolume(true))
	require.NoError(t, s.AdvanceVolume(false))
	require.Equal(t, 1, s.Completed())
	require.NoError(t, s.Write([]byte{5, 0, 6, 0}))
	require.NoError(t, s.Seek(0, 0))
	require.NoError(t, s.WritePartialBscan(0, 0, []byte{7, 0, 8, 0}))
	require.NoError(t, s.Close())
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	// Volume 0 reserved then rewritten, volume 1 skipped unallocated (zeros
	// from the later write past it), volume 2 written.
	require.Equal(t, []byte{7, 0, 8, 0, 0, 0, 0, 0, 5, 0, 6, 0}, b)
}

func TestSimpleStackErrors(t *testing.T) {
	dir := t.TempDir()
	_, err := NewSimpleStack(backend.Complex64)
	require.ErrorContains(t, err, `dtype="complex64", expected int8, uint16, uint32, uint64, float32 or float64`)
	require.ErrorIs(t, err, backend.ErrInvalid)
	_, err = NewSimpleStackNamed("int16")
	require.ErrorIs(t, err, backend.ErrInvalid)

	tests := []struct {
		name string
		cfg  SimpleStackConfig
		want string
		is   error
	}{
		{"empty path", SimpleStackConfig{Shape: [3]int{1, 1, 1}}, "SimpleStackConfig.Path", backend.ErrInvalid},
		{"bad shape", SimpleStackConfig{Path: filepath.Join(dir, "a"), Shape: [3]int{1, 0, 1}}, "SimpleStackConfig.Shape[1]: 0", backend.ErrInvalid},
		{"bad channels", SimpleStackConfig{Path: filepath.Join(dir, "a"), Shape: [3]int{1, 1, 1}, Channels: -2}, "SimpleStackConfig.Channels: -2", backend.ErrInvalid},
		{"bad header", SimpleStackConfig{Path: filepath.Join(dir, "a"), Shape: [3]int{1, 1, 1}, Header: 7}, "SimpleStackConfig.Header: 7", backend.ErrInvalid},
		{"overflowing shape", SimpleStackConfig{Path: filepath.Join(dir, "a"), Shape: [3]int{1 << 32, 1 << 32, 1}}, "SimpleStackConfig.Shape", backend.ErrTooLarge},
		{"huge shape", SimpleStackConfig{Path: filepath.Join(dir, "a"), Shape: [3]int{1 << 14, 1 << 14, 1 << 14}}, "SimpleStackConfig.Shape", backend.ErrTooLarge},
		{"MATLAB over 4 GiB", SimpleStackConfig{Path: filepath.Join(dir, "a"), Shape: [3]int{1 << 12, 1 << 12, 1 << 9}, Header: HeaderMATLAB}, "4 GiB", backend.ErrTooLarge},
		{"unwritable path", SimpleStackConfig{Path: filepath.Join(dir, "missing", "dir", "x.npy"), Shape: [3]int{1, 1, 1}}, "path=", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := NewSimpleStack(backend.Int8)
			require.NoError(t, err)
			err = s.Open(tc.cfg)
			require.ErrorContains(t, err, tc.want)
			if tc.is != nil {
				require.ErrorIs(t, err, tc.is)
			}
			require.False(t, s.IsOpen())
		})
	}

	s, err := NewSimpleStack(backend.Int8)
	require.NoError(t, err)
	require.ErrorIs(t, s.WriteVolume(nil), ErrNotOpen)
	require.NoError(t, s.Open(SimpleStackConfig{Path: filepath.Join(dir, "b"), Shape: [3]int{1, 2, 2}}))
	// Bad arguments are ErrInvalid (Python ValueError), each naming the argument.
	bad := []struct {
		name string
		err  error
		want string
	}{
		{"short volume", s.WriteVolume(make([]byte, 3)), "len(data)=3, expected 4"},
		{"partial B-scans", s.Write(make([]byte, 3)), "data of 3 bytes, expected whole B-scans of 4 bytes"},
		{"too many B-scans", s.Write(make([]byte, 8)), "index=0 with 2 B-scans"},
		{"bscan beyond", s.WritePartialBscan(1, 0, make([]byte, 2)), "bscan_index=1, expected 0 <= bscan_index < 1"},
		{"bscan 2^40", s.WritePartialBscan(1<<40, 0, make([]byte, 2)), "bscan_index=1099511627776"},
		{"negative ascan", s.WritePartialBscan(0, -1, make([]byte, 2)), "ascan_index=-1"},
		{"too many ascans", s.WritePartialBscan(0, 1, make([]byte, 4)), "ascan_index=1 with 2 A-scans"},
		{"partial A-scan", s.WritePartialBscan(0, 0, make([]byte, 1)), "expected whole A-scans of 2 bytes"},
		{"seek bscan beyond", s.Seek(0, 5), "bscan_index=5, expected 0 <= bscan_index < 1"},
		{"seek negative volume", s.Seek(-1, 0), "volume_index=-1"},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			require.ErrorContains(t, tc.err, tc.want)
			require.ErrorIs(t, tc.err, backend.ErrInvalid)
		})
	}
	for _, v := range []int{1 << 62, math.MaxInt} {
		err := s.Seek(v, 0)
		require.ErrorIs(t, err, backend.ErrInvalid, "volume %d: no file offset addresses it", v)
	}
	require.NoError(t, s.WriteVolume(make([]byte, 4)), "a refused seek leaves the position")
	require.Equal(t, 1, s.Completed())
	// Opening an open stack closes it first, as in vortex.
	require.NoError(t, s.Open(SimpleStackConfig{Path: filepath.Join(dir, "c"), Shape: [3]int{1, 1, 1}}))
	b, err := os.ReadFile(filepath.Join(dir, "b"))
	require.NoError(t, err)
	require.Len(t, b, 4, "the first file was closed with its volume")
	require.NoError(t, s.Close())
	// Closed (like never opened): every write is ErrClosed (Python ClosedError).
	for name, err := range map[string]error{
		"WriteVolume":       s.WriteVolume(make([]byte, 4)),
		"Write":             s.Write(make([]byte, 4)),
		"WritePartialBscan": s.WritePartialBscan(0, 0, make([]byte, 2)),
		"AdvanceVolume":     s.AdvanceVolume(true),
		"Seek":              s.Seek(0, 0),
	} {
		require.ErrorIs(t, err, ErrNotOpen, name)
		require.ErrorIs(t, err, backend.ErrClosed, name)
	}
}

// TestSimpleStackFailedWriteKeepsVolumes: a write that fails (here: the
// file size limit of a full disk, simulated by closing the descriptor
// under the stack) returns an error and leaves the volumes already on
// disk as they were.
func TestSimpleStackFailedWriteKeepsVolumes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "v.npy")
	s, err := NewSimpleStack(backend.Int8)
	require.NoError(t, err)
	require.NoError(t, s.Open(SimpleStackConfig{Path: path, Shape: [3]int{1, 1, 4}, Header: HeaderNumPy}))
	require.NoError(t, s.WriteVolume([]byte{1, 2, 3, 4}))
	s.mu.Lock()
	require.NoError(t, s.f.Close()) // every later write fails with os.ErrClosed
	s.mu.Unlock()
	err = s.WriteVolume([]byte{5, 6, 7, 8})
	require.Error(t, err)
	require.ErrorContains(t, err, path)
	require.Error(t, s.Close(), "finishing the file fails loudly")
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	_, shape, data := parseNPY(t, b)
	require.Equal(t, []int{1, 1, 1, 4, 1}, shape)
	require.Equal(t, []byte{1, 2, 3, 4}, data)
}

// TestSimpleStackState: the state is open or not and the volumes the
// header counts.
func TestSimpleStackState(t *testing.T) {
	s, err := NewSimpleStack(backend.Uint16)
	require.NoError(t, err)
	require.Equal(t, StackState{}, s.State())
	require.NoError(t, s.Open(SimpleStackConfig{Path: filepath.Join(t.TempDir(), "v.bin"), Shape: [3]int{1, 1, 2}}))
	require.NoError(t, s.WriteVolume([]byte{1, 0, 2, 0}))
	require.Equal(t, StackState{StatusOpen, 1}, s.State())
	require.NoError(t, s.Close())
	require.Equal(t, StackState{StatusClosed, 1}, s.State())
}

// TestHeaderStrings: Header names are vortex's Python enum names.
func TestHeaderStrings(t *testing.T) {
	for h, want := range map[Header]string{HeaderEmpty: "Empty", HeaderNumPy: "NumPy", HeaderMATLAB: "MATLAB", HeaderNRRD: "NRRD", HeaderNIfTI: "NifTI", 9: "Header(9)"} {
		require.Equal(t, want, h.String(), fmt.Sprint(int(h)))
	}
}

// TestSimpleStackAdvancePastAPartialVolume: advancing without allocating
// past a partly written volume completes it on disk at once (vortex's
// Close would pad it the same), so the header counts it; an untouched
// volume is skipped as in vortex.
func TestSimpleStackAdvancePastAPartialVolume(t *testing.T) {
	path := filepath.Join(t.TempDir(), "raw.bin")
	s, err := NewSimpleStack(backend.Uint16)
	require.NoError(t, err)
	require.NoError(t, s.Open(SimpleStackConfig{Path: path, Shape: [3]int{2, 1, 2}}))
	require.NoError(t, s.WritePartialBscan(0, 0, []byte{1, 0, 2, 0}))
	require.NoError(t, s.AdvanceVolume(false))
	require.Equal(t, 1, s.Completed(), "the partial volume is on disk and counted")
	fi, err := os.Stat(path)
	require.NoError(t, err)
	require.EqualValues(t, 8, fi.Size())
	require.NoError(t, s.AdvanceVolume(false))
	require.Equal(t, 1, s.Completed(), "an untouched volume is not allocated")
	require.NoError(t, s.Close())
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, []byte{1, 0, 2, 0, 0, 0, 0, 0}, b)
}
