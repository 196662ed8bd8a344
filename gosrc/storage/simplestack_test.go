package storage

import (
	"bytes"
	"encoding/binary"
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

// npy is what parseNPY reads back: enough of the format to check a file
// the way numpy.load would.
type npy struct {
	descr string
	shape []int
	data  []byte
}

var npyDict = regexp.MustCompile(`^\{'descr': '([^']+)', 'fortran_order': False, 'shape': \(([0-9, ]*)\), \} *\n$`)

func parseNPY(t *testing.T, b []byte) npy {
	t.Helper()
	require.GreaterOrEqual(t, len(b), 10)
	require.Equal(t, "\x93NUMPY", string(b[:6]))
	require.Equal(t, []byte{1, 0}, b[6:8])
	hlen := int(binary.LittleEndian.Uint16(b[8:10]))
	require.Zero(t, (10+hlen)%64, "header must keep data 64-byte aligned")
	m := npyDict.FindStringSubmatch(string(b[10 : 10+hlen]))
	require.NotNil(t, m, "header dict %q", b[10:10+hlen])
	var shape []int
	for _, f := range strings.Split(m[2], ",") {
		if f = strings.TrimSpace(f); f != "" {
			n, err := strconv.Atoi(f)
			require.NoError(t, err)
			shape = append(shape, n)
		}
	}
	return npy{descr: m[1], shape: shape, data: b[10+hlen:]}
}

func volumeBytes(n int, fill byte) []byte { return bytes.Repeat([]byte{fill}, n) }

func TestSimpleStackNumPy(t *testing.T) {
	tests := []struct {
		dtype backend.DType
		descr string
	}{
		{backend.Int8, "|i1"}, {backend.Uint16, "<u2"}, {backend.Float32, "<f4"},
	}
	for _, tc := range tests {
		t.Run(tc.dtype.String(), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "stack.npy")
			s, err := NewSimpleStack(tc.dtype)
			require.NoError(t, err)
			shape := [3]int{2, 3, 4}
			require.NoError(t, s.Open(SimpleStackConfig{Path: path, Shape: shape, Header: HeaderNumPy}))
			vb := s.VolumeBytes()
			require.Equal(t, 24*tc.dtype.Size(), vb)

			// A fresh file is already a valid, empty array.
			b, err := os.ReadFile(path)
			require.NoError(t, err)
			got := parseNPY(t, b)
			require.Equal(t, tc.descr, got.descr)
			require.Equal(t, []int{0, 2, 3, 4}, got.shape)

			require.NoError(t, s.WriteVolume(volumeBytes(vb, 1)))
			require.NoError(t, s.WriteVolume(volumeBytes(vb, 2)))
			// Half a volume: as if the engine stopped mid-volume.
			require.NoError(t, s.WritePartialBscan(0, 0, volumeBytes(vb/2, 3)))

			// Before Close (a crash now) the file still loads with the two
			// completed volumes; trailing partial data is ignored by numpy.
			b, err = os.ReadFile(path)
			require.NoError(t, err)
			got = parseNPY(t, b)
			require.Equal(t, []int{2, 2, 3, 4}, got.shape)
			require.GreaterOrEqual(t, len(got.data), 2*vb)
			require.Equal(t, append(volumeBytes(vb, 1), volumeBytes(vb, 2)...), got.data[:2*vb])

			require.NoError(t, s.Close())
			require.NoError(t, s.Close(), "Close is idempotent")
			b, err = os.ReadFile(path)
			require.NoError(t, err)
			got = parseNPY(t, b)
			require.Equal(t, []int{2, 2, 3, 4}, got.shape)
			require.Len(t, got.data, 2*vb, "Close trims the incomplete volume")
		})
	}
}

func TestSimpleStackPartialWritesAndSeek(t *testing.T) {
	path := filepath.Join(t.TempDir(), "raw.bin")
	s, err := NewSimpleStack(backend.Uint16)
	require.NoError(t, err)
	shape := [3]int{2, 2, 2} // a B-scan is 2 A-scans of 2 samples = 8 bytes
	require.NoError(t, s.Open(SimpleStackConfig{Path: path, Shape: shape, Header: HeaderEmpty}))
	ascan := func(v byte) []byte { return []byte{v, 0, v, 0} }
	require.NoError(t, s.WritePartialBscan(1, 1, ascan(4)))
	require.NoError(t, s.WritePartialBscan(0, 0, append(ascan(1), ascan(2)...)))
	require.NoError(t, s.WritePartialBscan(1, 0, ascan(3)))
	require.NoError(t, s.AdvanceVolume())
	require.Equal(t, 1, s.Completed())
	require.NoError(t, s.Seek(0, 1))
	require.NoError(t, s.WritePartialBscan(1, 1, ascan(9)))
	require.Equal(t, 1, s.Completed(), "rewriting an earlier volume keeps the count")
	require.NoError(t, s.Close())
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, []byte{1, 0, 1, 0, 2, 0, 2, 0, 3, 0, 3, 0, 9, 0, 9, 0}, b)
}

func TestSimpleStackErrors(t *testing.T) {
	dir := t.TempDir()
	_, err := NewSimpleStack(backend.Float64)
	require.ErrorContains(t, err, "dtype=float64, expected int8, uint16 or float32")

	tests := []struct {
		name string
		cfg  SimpleStackConfig
		want string
		is   error
	}{
		{"empty path", SimpleStackConfig{Shape: [3]int{1, 1, 1}}, "SimpleStackConfig.Path", backend.ErrInvalid},
		{"bad shape", SimpleStackConfig{Path: filepath.Join(dir, "a"), Shape: [3]int{1, 0, 1}}, "SimpleStackConfig.Shape[1]: 0", backend.ErrInvalid},
		{"bad header", SimpleStackConfig{Path: filepath.Join(dir, "a"), Shape: [3]int{1, 1, 1}, Header: 7}, "SimpleStackConfig.Header: 7", backend.ErrInvalid},
		{"overflowing shape", SimpleStackConfig{Path: filepath.Join(dir, "a"), Shape: [3]int{1 << 32, 1 << 32, 1}}, "SimpleStackConfig.Shape", backend.ErrTooLarge},
		{"huge shape", SimpleStackConfig{Path: filepath.Join(dir, "a"), Shape: [3]int{1 << 14, 1 << 14, 1 << 14}}, "SimpleStackConfig.Shape", backend.ErrTooLarge},
		{"unwritable path", SimpleStackConfig{Path: filepath.Join(dir, "missing", "dir", "x.npy"), Shape: [3]int{1, 1, 1}}, "cannot be written", nil},
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
		{"bscan beyond", s.WritePartialBscan(1, 0, nil), "bscan=1, expected 0 <= bscan < 1"},
		{"bscan 2^40", s.WritePartialBscan(1<<40, 0, make([]byte, 2)), "bscan=1099511627776"},
		{"negative ascan", s.WritePartialBscan(0, -1, make([]byte, 2)), "ascan=-1"},
		{"too many ascans", s.WritePartialBscan(0, 1, make([]byte, 4)), "len(data)=4"},
		{"seek bscan beyond", s.Seek(0, 5), "bscan=5, expected 0 <= bscan < 1"},
		{"seek negative volume", s.Seek(-1, 0), "volume=-1"},
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
	require.ErrorContains(t, s.Open(SimpleStackConfig{Path: filepath.Join(dir, "c"), Shape: [3]int{1, 1, 1}}), "already open")
	require.NoError(t, s.Close())
	// Closed (like never opened): every write is ErrClosed (Python ClosedError).
	for name, err := range map[string]error{
		"WriteVolume":       s.WriteVolume(make([]byte, 4)),
		"WritePartialBscan": s.WritePartialBscan(0, 0, make([]byte, 2)),
		"AdvanceVolume":     s.AdvanceVolume(),
		"Seek":              s.Seek(0, 0),
	} {
		require.ErrorIs(t, err, ErrNotOpen, name)
		require.ErrorIs(t, err, backend.ErrClosed, name)
	}
}

// TestSimpleStackRecord: the bindings' record is open (0/1) and the
// volumes completed.
func TestSimpleStackRecord(t *testing.T) {
	s, err := NewSimpleStack(backend.Uint16)
	require.NoError(t, err)
	require.Equal(t, []float64{0, 0}, s.Record())
	require.NoError(t, s.Open(SimpleStackConfig{Path: filepath.Join(t.TempDir(), "v.bin"), Shape: [3]int{1, 1, 2}}))
	require.NoError(t, s.WriteVolume([]byte{1, 0, 2, 0}))
	require.Equal(t, []float64{1, 1}, s.Record())
	require.NoError(t, s.Close())
	require.Equal(t, []float64{0, 1}, s.Record())
}
