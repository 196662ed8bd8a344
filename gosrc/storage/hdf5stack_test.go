package storage

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/storage/hdf5"
)

// h5pyLibrary finds the HDF5 library bundled in the repository's venv's
// h5py wheel (the Python layer passes it the same way); tests skip
// without any HDF5 library.
func h5pyLibrary(t *testing.T) []string {
	t.Helper()
	libs, _ := filepath.Glob("../../.venv/lib/python3*/site-packages/h5py.libs/libhdf5-*.so*")
	if _, err := hdf5.Load(libs...); err != nil {
		t.Skipf("no HDF5 library: %v", err)
	}
	return libs
}

func TestHDF5StackWrites(t *testing.T) {
	lib := h5pyLibrary(t)
	for _, dt := range []string{"int8", "uint16", "uint64", "float32", "float64"} {
		for _, header := range []int{HDF5HeaderEmpty, HDF5HeaderMATLAB} {
			h, err := NewHDF5StackNamed(dt)
			require.NoError(t, err)
			path := filepath.Join(t.TempDir(), "x.h5")
			require.NoError(t, h.Open(HDF5StackConfig{Path: path, Shape: [3]int{2, 3, 4}, Channels: 2, Header: header,
				CompressionLevel: 4, Library: lib}))
			e, _ := elemNamed(dt)
			vol := values(e, 1, 2*3*4*2)
			require.Equal(t, len(vol), h.VolumeBytes())
			require.NoError(t, h.WriteVolume(vol))
			require.NoError(t, h.WritePartialBscan(1, 1, values(e, 2, 4*2)))
			require.NoError(t, h.AdvanceVolume(true))
			require.Equal(t, HDF5State{StatusOpen, 3, 2}, h.State(), "volume 1 written, volume 2 allocated")
			require.NoError(t, h.Close())
			b, err := os.ReadFile(path)
			require.NoError(t, err)
			if header == HDF5HeaderMATLAB {
				require.Equal(t, matlabPreamble(), b[:128])
				require.Equal(t, "\x89HDF", string(b[512:516]))
			} else {
				require.Equal(t, "\x89HDF", string(b[:4]))
			}
		}
	}
}

func TestHDF5StackBadInput(t *testing.T) {
	lib := h5pyLibrary(t)
	h, err := NewHDF5StackNamed("uint16")
	require.NoError(t, err)
	require.ErrorIs(t, h.WriteVolume(nil), backend.ErrClosed)
	bad := filepath.Join(t.TempDir(), "missing", "x.h5")
	err = h.Open(HDF5StackConfig{Path: bad, Shape: [3]int{1, 1, 1}, Library: lib})
	var pe *os.PathError
	require.True(t, errors.As(err, &pe), "%v", err)
	require.ErrorContains(t, err, "path=")
	require.False(t, h.IsOpen())
	require.ErrorIs(t, h.Open(HDF5StackConfig{Path: bad, Shape: [3]int{1, 1, 1}, CompressionLevel: 10}), backend.ErrInvalid)
	require.ErrorIs(t, h.Open(HDF5StackConfig{Path: bad, Shape: [3]int{1, 1, 1}, Header: 2}), backend.ErrInvalid)
	require.ErrorIs(t, h.Open(HDF5StackConfig{Path: bad, Shape: [3]int{1, 0, 1}}), backend.ErrInvalid)
	require.NoError(t, h.Open(HDF5StackConfig{Path: filepath.Join(t.TempDir(), "x.h5"), Shape: [3]int{2, 3, 4}, Library: lib}))
	require.ErrorIs(t, h.WriteMultiBscan(0, make([]byte, 23)), backend.ErrInvalid)
	require.ErrorIs(t, h.WriteMultiBscan(1, make([]byte, 48)), backend.ErrInvalid)
	require.ErrorIs(t, h.WritePartialBscan(0, 3, make([]byte, 8)), backend.ErrInvalid)
	require.ErrorIs(t, h.WriteVolume(make([]byte, 8)), backend.ErrInvalid)
	require.NoError(t, h.Close())
	_, err = NewHDF5StackNamed("int32")
	require.ErrorIs(t, err, backend.ErrInvalid)
}
