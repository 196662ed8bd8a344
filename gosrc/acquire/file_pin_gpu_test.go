//go:build gpu

package acquire

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/vortexgo/vortexgo/gosrc/cuda"
)

// TestFilePinUploadsOnGPU pins a file in place with the real driver (a
// read-only registration of its mapping) and uploads every run Lend hands
// out, through the seam where the looped replay wraps: the device holds
// the file's records at each position.
func TestFilePinUploadsOnGPU(t *testing.T) {
	dev, err := cuda.GetDevice(0)
	require.NoError(t, err)
	const n, records, block = 256, 1000, 96 // 1000 is no multiple of 96: runs wrap mid-block
	path, data := writeSpectra(t, t.TempDir(), records, n)
	for _, loop := range []bool{true, false} {
		a := mustFile(t, FileConfig{Path: path, SamplesPerRecord: n, Loop: loop})
		require.NoError(t, a.PinTo(dev, block))
		require.True(t, a.Pinned(), "a little-endian file on a GPU is pinned in place")
		s, err := dev.NewStream(0)
		require.NoError(t, err)
		d, err := dev.Alloc(block * n * 2)
		require.NoError(t, err)
		h, err := dev.AllocPinned(block * n * 2)
		require.NoError(t, err)
		host := unsafe.Slice((*uint16)(ptrOf(h.Ptr())), block*n)
		require.NoError(t, a.Start())
		pos, lends := 0, 0
		for ; lends < 30; lends++ {
			src, got, err := a.Lend(block)
			if !loop && err != nil {
				break
			}
			require.NoError(t, err)
			require.NoError(t, s.Copy(d.Ptr(), src, got*n*2))
			require.NoError(t, s.Copy(h.Ptr(), d.Ptr(), got*n*2))
			require.NoError(t, s.Synchronize())
			for k := range got {
				r := (pos + k) % records
				require.Equal(t, data[r*n:(r+1)*n], host[k*n:(k+1)*n], "loop=%v lend %d record %d", loop, lends, r)
			}
			pos += got
		}
		if loop {
			require.Greater(t, pos, 2*records, "the replay wrapped twice")
		} else {
			require.Equal(t, records, pos, "the whole file, then the end")
		}
		require.NoError(t, a.Stop())
		require.NoError(t, s.Close())
		require.NoError(t, d.Free())
		require.NoError(t, h.Free())
		require.NoError(t, a.Close())
		require.False(t, a.Pinned())
	}
}
