//go:build linux

package storage

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/vortexgo/vortexgo/gosrc/storage/hdf5"
	"golang.org/x/sys/unix"
)

// withFileSizeLimit sets RLIMIT_FSIZE's soft limit for the process until
// the test ends (Go ignores SIGXFSZ: writes beyond it fail with EFBIG).
// The storage package's tests that write files run one at a time.
func withFileSizeLimit(t *testing.T, limit uint64) {
	t.Helper()
	var old unix.Rlimit
	require.NoError(t, unix.Getrlimit(unix.RLIMIT_FSIZE, &old))
	require.NoError(t, unix.Setrlimit(unix.RLIMIT_FSIZE, &unix.Rlimit{Cur: limit, Max: old.Max}))
	t.Cleanup(func() { _ = unix.Setrlimit(unix.RLIMIT_FSIZE, &old) })
}

func noFileSizeLimit(t *testing.T) {
	t.Helper()
	var l unix.Rlimit
	require.NoError(t, unix.Getrlimit(unix.RLIMIT_FSIZE, &l))
	l.Cur = l.Max
	require.NoError(t, unix.Setrlimit(unix.RLIMIT_FSIZE, &l))
}

// superblockFits reads the end-of-file address of a plain HDF5 file's
// superblock (version 0, or 2 and 3 as HDF5 2.0 writes; 8-byte addresses):
// h5py refuses a file shorter than it ("truncated file"), the way a full
// disk used to leave HDF5 stacks.
func superblockFits(t *testing.T, path string) (eoa, size int64) {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(b), 56)
	require.Equal(t, "\x89HDF\r\n\x1a\n", string(b[:8]))
	at := map[byte]int{0: 40, 2: 28, 3: 28}[b[8]]
	require.NotZero(t, at, "superblock version %d", b[8])
	return int64(binary.LittleEndian.Uint64(b[at : at+8])), int64(len(b))
}

// TestHDF5StackDiskFull: a file size limit (RLIMIT_FSIZE) reached while
// volumes are written. The reservation refuses the volume before HDF5
// touches the file (EFBIG), leaving the stack usable once there is room;
// a limit lowered inside a volume, after its reservation, fails in HDF5
// and freezes the file. Either way Close returns, and the file's
// superblock fits the file.
func TestHDF5StackDiskFull(t *testing.T) {
	lib := h5pyLibrary(t)
	shape := [3]int{4, 8, 16} // 32 chunks of 32 bytes a volume
	cases := []struct {
		name string
		// limit is the file size limit once volumes before are written.
		limit func(size int64) uint64
		// midVolume lowers the limit after B-scan 0 of the volume.
		midVolume bool
		refused   bool // by the reservation (else by HDF5: frozen)
	}{
		{name: "at the file's size", limit: func(size int64) uint64 { return uint64(size) }, refused: true},
		{name: "one volume's data short", limit: func(size int64) uint64 { return uint64(size) + 1024 }, refused: true},
		{name: "in a volume, after its reservation", limit: func(size int64) uint64 { return uint64(size) }, midVolume: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h, err := NewHDF5StackNamed("uint16")
			require.NoError(t, err)
			path := filepath.Join(t.TempDir(), "x.h5")
			require.NoError(t, h.Open(HDF5StackConfig{Path: path, Shape: shape, Library: lib}))
			vol := make([]byte, h.VolumeBytes())
			for i := range vol {
				vol[i] = byte(i)
			}
			for range 3 {
				require.NoError(t, h.WriteVolume(vol))
			}
			bscan := vol[:len(vol)/shape[0]]
			if tc.midVolume {
				require.NoError(t, h.WriteMultiBscan(0, bscan))
			}
			st, err := os.Stat(path)
			require.NoError(t, err)
			withFileSizeLimit(t, tc.limit(st.Size()))
			err = h.WriteVolume(vol) // the rest of the volume's chunks land at its flush
			require.Error(t, err)
			if tc.refused {
				require.ErrorIs(t, err, syscall.EFBIG, "%v", err)
				require.ErrorContains(t, err, "reserve")
				require.Equal(t, HDF5State{StatusOpen, 3, 3}, h.State(), "3 volumes advanced past, the 4th not allocated")
				require.False(t, h.frozen)
				noFileSizeLimit(t)
				require.NoError(t, h.WriteVolume(vol), "a refused volume can be written once there is room")
			} else {
				require.ErrorIs(t, err, hdf5.ErrCall, "%v", err)
				require.True(t, h.frozen, "%v", err)
				require.Equal(t, HDF5State{StatusOpen, 4, 3}, h.State(), "3 volumes advanced past, the 4th allocated")
				err = h.WriteVolume(vol)
				require.ErrorIs(t, err, hdf5.ErrCall, "a broken stack refuses writes")
				require.ErrorContains(t, err, "after a failed write")
				noFileSizeLimit(t)
			}
			before, err := os.ReadFile(path)
			require.NoError(t, err)
			require.NoError(t, h.Close())
			eoa, size := superblockFits(t, path)
			require.LessOrEqual(t, eoa, size)
			if !tc.refused {
				after, err := os.ReadFile(path)
				require.NoError(t, err)
				require.Equal(t, before, after, "a frozen file is not written at close")
			}
		})
	}
}
