package pyapi

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vortexgo/vortexgo/gosrc/engine"
)

// TestSimpleStackBinding: the wrapper opens, writes, advances and reports
// its STACK_STATE; a user's write is refused while an engine holds the
// stack (InUseError naming the Python method) and allowed once it lets go.
func TestSimpleStackBinding(t *testing.T) {
	s, err := NewSimpleStack("uint16")
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "v.npy")
	require.NoError(t, s.Open(path, 2, 1, 2, 1, 1, false))
	data := []uint16{1, 2, 3, 4}
	require.NoError(t, s.WriteVolume(addr(data), 8))
	require.NoError(t, s.AdvanceVolume(true))

	out := make([]stackStateRecord, 1)
	size, err := s.State(addr(out), 0)
	require.NoError(t, err)
	require.Equal(t, 16, size, "too small: the size, nothing written")
	_, err = s.State(addr(out), 16)
	require.NoError(t, err)
	require.Equal(t, stackStateRecord{Status: 1, Volumes: 1}, out[0])

	cl := s.s.Claims()[0]
	require.NoError(t, cl.Take())
	err = s.WriteMultiBscan(0, addr(data), 4)
	require.ErrorContains(t, err, "InUseError: SimpleStack.write_multi_bscan: an engine writes")
	require.ErrorContains(t, s.Seek(0, 0), "SimpleStack.seek")
	cl.Drop()
	require.NoError(t, s.Seek(0, 0))
	require.ErrorContains(t, s.WritePartialBscan(0, 0, addr(data), 3), "ValueError: storage.WritePartialBscan")
	require.NoError(t, s.Close())
	_, err = s.State(addr(out), 16)
	require.NoError(t, err)
	require.Equal(t, stackStateRecord{Status: 0, Volumes: 1}, out[0])

	_, err = NewSimpleStack("complex64")
	require.ErrorContains(t, err, "ValueError: storage.NewSimpleStack: dtype=")
}

// TestStorageWrappersAreObjects: every storage wrapper carries its core
// storage in its Object, which the engine's endpoints take it from.
func TestStorageWrappersAreObjects(t *testing.T) {
	stack, err := NewSimpleStack("int8")
	require.NoError(t, err)
	h5, err := NewHDF5Stack("float32")
	require.NoError(t, err)
	stream, err := NewSimpleStream("uint64")
	require.NoError(t, err)
	for _, o := range []*Object{&stack.Object, &h5.Object, &NewBroctStorage().Object, &stream.Object,
		&NewStreamDump().Object, &NewMarkerLog().Object} {
		_, ok := o.obj.(engine.Claimer)
		require.True(t, ok, "%T", o.obj)
		require.NoError(t, o.Close())
	}
}

// TestMarkerLogBinding: marker records are written as vortex's text lines;
// a record of no marker kind is a ValueError, as are stray values.
func TestMarkerLogBinding(t *testing.T) {
	l := NewMarkerLog()
	path := filepath.Join(t.TempDir(), "m.txt")
	require.NoError(t, l.Open(path, false, false))
	rows := []int64{6, 100, 0, 0, 0, 7, 0, 0} // Event id 7 at sample 100
	require.NoError(t, l.Write(addr(rows), len(rows)))
	require.ErrorContains(t, l.Write(addr(rows), 7), "ValueError: storage.MarkerLog: 7 record values")
	bad := []int64{9, 0, 0, 0, 0, 0, 0, 0}
	require.ErrorContains(t, l.Write(addr(bad), len(bad)), "kind=9, expected 1..6")
	out := make([]streamStateRecord, 1)
	_, err := l.State(addr(out), 16)
	require.NoError(t, err)
	require.Equal(t, int64(1), out[0].Status)
	require.NoError(t, l.Close())
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, int64(len(b)), out[0].Bytes)
	require.True(t, strings.HasSuffix(string(b), " E 7 0 - 0 0\n"), "%q", b)
}

// TestStreamDumpBinding: every Divisor-th row of a block is appended.
func TestStreamDumpBinding(t *testing.T) {
	d := NewStreamDump()
	path := filepath.Join(t.TempDir(), "d.bin")
	require.NoError(t, d.Open(path, 0, 2, false))
	block := []byte{1, 1, 2, 2, 3, 3}
	require.NoError(t, d.Write(2, addr(block), len(block)))
	require.ErrorContains(t, d.Write(4, addr(block), len(block)), "ValueError")
	require.NoError(t, d.Close())
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, []byte{1, 1, 3, 3}, b)
}

func TestLibraryPaths(t *testing.T) {
	require.Empty(t, libraryPaths(""))
	require.Equal(t, []string{"/a/libhdf5.so", "/b c/libhdf5.so"}, libraryPaths("/a/libhdf5.so\n/b c/libhdf5.so\n"))
}
