package hdf5

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestLoadMissing: with no library anywhere, Load says what to install
// and keeps each candidate's dlopen message.
func TestLoadMissing(t *testing.T) {
	t.Setenv("VORTEXGO_HDF5_LIBRARY", "/nonexistent/libhdf5.so")
	_, err := Load("/also/missing/libhdf5-x.so")
	if err == nil {
		t.Skipf("a system HDF5 library is installed (%s)", Library())
	}
	require.ErrorIs(t, err, ErrNoLibrary)
	require.ErrorContains(t, err, "pip install h5py")
	require.ErrorContains(t, err, "/also/missing/libhdf5-x.so")
	require.Empty(t, Library())
	_, err = Create(StackConfig{Path: t.TempDir() + "/x.h5", DType: "int8", Shape: [4]int{1, 1, 1, 1}})
	require.ErrorIs(t, err, ErrNoLibrary)
}
