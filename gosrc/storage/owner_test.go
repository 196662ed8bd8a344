package storage

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/engine"
)

// TestNewerStorageTakesTheFileOver: a second storage opening a file the
// first still holds (a notebook cell run twice) owns it; the first's
// writes fail with ErrSuperseded and its Close leaves the file alone.
func TestNewerStorageTakesTheFileOver(t *testing.T) {
	for _, h := range []Header{HeaderEmpty, HeaderNumPy, HeaderMATLAB, HeaderNRRD, HeaderNIfTI} {
		t.Run(h.String(), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "v")
			cfg := SimpleStackConfig{Path: path, Shape: [3]int{2, 3, 5}, Header: h}
			old, err := NewSimpleStackNamed("uint16")
			require.NoError(t, err)
			require.NoError(t, old.Open(cfg))
			for range 3 {
				require.NoError(t, old.WriteVolume(make([]byte, 60)))
			}
			newer, err := NewSimpleStackNamed("uint16")
			require.NoError(t, err)
			require.NoError(t, newer.Open(cfg))
			require.NoError(t, newer.WriteVolume(make([]byte, 60)))
			require.NoError(t, newer.Close())
			want, err := os.ReadFile(path)
			require.NoError(t, err)

			require.ErrorIs(t, old.WriteVolume(make([]byte, 60)), ErrSuperseded)
			require.ErrorIs(t, old.AdvanceVolume(true), backend.ErrClosed)
			require.False(t, old.IsOpen())
			require.Equal(t, StackState{StatusSuperseded, 3}, old.State())
			require.NoError(t, old.Close())
			got, err := os.ReadFile(path)
			require.NoError(t, err)
			require.Equal(t, want, got, "the older stack's close touched the newer file")
		})
	}
}

// TestOpenRefusesAFileAnEngineWrites: taking over needs the older storage
// idle; while an engine holds it the open is ErrInUse and nothing changes.
func TestOpenRefusesAFileAnEngineWrites(t *testing.T) {
	path := filepath.Join(t.TempDir(), "v.npy")
	cfg := SimpleStackConfig{Path: path, Shape: [3]int{1, 1, 8}, Header: HeaderNumPy}
	old, err := NewSimpleStackNamed("int8")
	require.NoError(t, err)
	require.NoError(t, old.Open(cfg))
	require.NoError(t, old.WriteVolume(make([]byte, 8)))
	cl := old.Claims()[0]
	require.NoError(t, cl.Take())
	newer, err := NewSimpleStackNamed("int8")
	require.NoError(t, err)
	require.ErrorIs(t, newer.Open(cfg), backend.ErrInUse)
	require.True(t, old.IsOpen())
	cl.Drop()
	require.NoError(t, old.Close())
	require.Equal(t, 1, old.Completed())
}

// TestSpecialFilesRefused: FIFOs and sockets are refused at once (a FIFO
// open would block), character devices are sinks.
func TestSpecialFilesRefused(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	require.NoError(t, syscall.Mkfifo(fifo, 0o644))
	stream, err := NewSimpleStreamNamed("int8")
	require.NoError(t, err)
	tests := []struct {
		name string
		open func(path string) error
	}{
		{"SimpleStack", func(p string) error {
			s, _ := NewSimpleStackNamed("int8")
			return s.Open(SimpleStackConfig{Path: p, Shape: [3]int{1, 1, 1}})
		}},
		{"SimpleStream", func(p string) error { return stream.Open(SimpleStreamConfig{Path: p}) }},
		{"MarkerLog", func(p string) error { return NewMarkerLog().Open(MarkerLogConfig{Path: p}) }},
		{"BroctStorage", func(p string) error {
			return NewBroctStorage().Open(BroctStorageConfig{Path: p, Shape: [3]int{1, 1, 1}, Dimensions: [3]float64{1, 1, 1}})
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.open(fifo)
			require.ErrorIs(t, err, backend.ErrInvalid)
			require.Contains(t, err.Error(), "FIFO")
			require.Contains(t, err.Error(), "path=")
			require.NoError(t, tt.open(os.DevNull), "/dev/null is a sink")
		})
	}
	require.NoError(t, stream.Close())
}

// TestMATLABHeaderSpansTheVolumeBeingWritten: an open file's miMATRIX
// element reaches past every byte written, and a closed one's counts the
// data padded to 8 bytes, exactly.
func TestMATLABHeaderSpansTheVolumeBeingWritten(t *testing.T) {
	path := filepath.Join(t.TempDir(), "v.mat")
	s, err := NewSimpleStackNamed("uint16")
	require.NoError(t, err)
	require.NoError(t, s.Open(SimpleStackConfig{Path: path, Shape: [3]int{3, 3, 3}, Header: HeaderMATLAB}))
	const matrixSize = 132 // the miMATRIX tag's byte count, after the 128-byte preamble
	elemEnd := func() int64 {
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		return matrixSize + 4 + int64(binary.LittleEndian.Uint32(b[matrixSize:]))
	}
	require.NoError(t, s.WriteVolume(make([]byte, 54)))
	require.NoError(t, s.WritePartialBscan(0, 0, make([]byte, 6))) // volume 2 started
	st, err := os.Stat(path)
	require.NoError(t, err)
	require.GreaterOrEqual(t, elemEnd(), st.Size(), "bytes after the element")
	require.Zero(t, elemEnd()%8)
	require.NoError(t, s.Close())
	st, err = os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, st.Size(), elemEnd(), "closed: the element ends the file")
	require.Zero(t, st.Size()%8)
}

// TestNRRDFileIsWholeVolumes: the header always counts exactly the
// file's volumes, the one being written included.
func TestNRRDFileIsWholeVolumes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "v.nrrd")
	s, err := NewSimpleStackNamed("uint16")
	require.NoError(t, err)
	require.NoError(t, s.Open(SimpleStackConfig{Path: path, Shape: [3]int{3, 3, 3}, Header: HeaderNRRD}))
	steps := []struct {
		name    string
		do      func() error
		volumes int
	}{
		{"opened", func() error { return nil }, 0},
		{"first B-scan", func() error { return s.WriteMultiBscan(0, make([]byte, 18)) }, 1},
		{"advanced", func() error { return s.AdvanceVolume(false) }, 1},
		{"partial A-scan of the next", func() error { return s.WritePartialBscan(2, 1, make([]byte, 6)) }, 2},
		{"seek ahead and write", func() error {
			if err := s.Seek(4, 0); err != nil {
				return err
			}
			return s.WriteMultiBscan(0, make([]byte, 18))
		}, 5},
	}
	for _, st := range steps {
		require.NoError(t, st.do(), st.name)
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		require.Equal(t, nrrdHeader(s.elem, s.shape5(st.volumes)), b[:256], st.name)
		require.Equal(t, 256+st.volumes*54, len(b), st.name)
	}
	require.NoError(t, s.Close())
}

// TestUserCallsRefusedWhileAnEngineWrites: a user's write, seek and
// advance_volume are refused with ErrInUse naming the method while an
// engine holds the storage, and allowed again once it lets go.
func TestUserCallsRefusedWhileAnEngineWrites(t *testing.T) {
	s, err := NewSimpleStackNamed("int8")
	require.NoError(t, err)
	require.NoError(t, s.Open(SimpleStackConfig{Path: filepath.Join(t.TempDir(), "v"), Shape: [3]int{1, 1, 8}}))
	st := NewStreamDump()
	require.NoError(t, st.Open(StreamDumpConfig{Path: filepath.Join(t.TempDir(), "d"), Divisor: 1}))
	tests := []struct {
		what   string
		claims engine.Claimer
		check  func(string) error
	}{
		{"SimpleStack", s, s.CheckUserCall},
		{"StreamDump", st, st.CheckUserCall},
	}
	for _, tt := range tests {
		cl := tt.claims.Claims()[0]
		require.NoError(t, cl.Take())
		for _, method := range []string{"seek", "advance_volume", "write_volume"} {
			err := tt.check(method)
			require.ErrorIs(t, err, backend.ErrInUse, method)
			require.Contains(t, err.Error(), tt.what+"."+method)
			require.Contains(t, err.Error(), "stop the engine")
		}
		cl.Drop()
		require.NoError(t, tt.check("write"))
	}
	require.NoError(t, s.Close())
	require.NoError(t, st.Close())
}
