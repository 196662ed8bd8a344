package acquire

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vortexgo/vortexgo/gosrc/backend"
)

// TestFileAcquisitionReadsWhatStoragesWrite: the .npy headers vortexgo's
// and vortex's stacks write ('uint16', a trailing channel axis of 1) and
// NumPy's own spellings of uint16 all replay.
func TestFileAcquisitionReadsWhatStoragesWrite(t *testing.T) {
	tests := []struct {
		name, descr, shape string
		samples            int
	}{
		{"SimpleStackUInt16", "uint16", "(1, 2, 2, 4, 1)", 4},
		{"SimpleStackUInt16, samples from the shape", "uint16", "(1, 2, 2, 4, 1)", 0},
		{"numpy", "<u2", "(4, 4)", 4},
		{"short", "u2", "(4, 4)", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dict := "{'descr': '" + tt.descr + "', 'fortran_order': False, 'shape': " + tt.shape + ", }"
			for (10+len(dict)+1)%64 != 0 {
				dict += " "
			}
			dict += "\n"
			b := append([]byte(npyMagic+"\x01\x00"), byte(len(dict)), byte(len(dict)>>8))
			b = append(b, dict...)
			b = append(b, make([]byte, 16*2)...)
			path := filepath.Join(t.TempDir(), "s.npy")
			require.NoError(t, os.WriteFile(path, b, 0o644))
			a, err := NewFileAcquisition(FileConfig{Path: path, SamplesPerRecord: tt.samples})
			require.NoError(t, err)
			require.NoError(t, a.Prepare())
			require.Equal(t, 4, a.SamplesPerRecord())
			require.Equal(t, int64(4), a.Records())
			require.NoError(t, a.Close())
		})
	}
}

// TestFileAcquisitionRefusesSpecialFiles: a FIFO without a writer (whose
// open used to block forever), a directory and a device are refused at
// once, naming FileConfig.Path and what the path is.
func TestFileAcquisitionRefusesSpecialFiles(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	require.NoError(t, syscall.Mkfifo(fifo, 0o644))
	for path, kind := range map[string]string{fifo: "FIFO", dir: "directory", os.DevNull: "device"} {
		a, err := NewFileAcquisition(FileConfig{Path: path, SamplesPerRecord: 8})
		require.NoError(t, err)
		err = a.Prepare()
		require.ErrorIs(t, err, backend.ErrInvalid, path)
		require.Contains(t, err.Error(), "FileConfig.Path")
		require.Contains(t, err.Error(), kind)
	}
}

// TestFileStartPreparesFirst: vortex's start opens the file itself, so a
// Start with no Prepare before it prepares (the data from the first
// record), refuses what Prepare refuses, and is refused once closed.
func TestFileStartPreparesFirst(t *testing.T) {
	dir := t.TempDir()
	data := make([]uint16, 6*4)
	for i := range data {
		data[i] = uint16(i * 7)
	}
	buf := make([]byte, 2*len(data))
	for i, v := range data {
		buf[2*i], buf[2*i+1] = byte(v), byte(v>>8)
	}
	good := filepath.Join(dir, "good.raw")
	require.NoError(t, os.WriteFile(good, buf, 0o644))
	a, err := NewFileAcquisition(FileConfig{Path: good, SamplesPerRecord: 4})
	require.NoError(t, err)
	require.NoError(t, a.Start())
	require.EqualValues(t, 6, a.Records())
	dst := make([]uint16, 2*4)
	n, err := a.Next(dst, 2)
	require.NoError(t, err)
	require.Equal(t, 2, n)
	require.Equal(t, data[:8], dst)
	require.NoError(t, a.Stop())
	require.NoError(t, a.Close())

	partial := filepath.Join(dir, "partial.raw")
	require.NoError(t, os.WriteFile(partial, buf[:10], 0o644))
	b, err := NewFileAcquisition(FileConfig{Path: partial, SamplesPerRecord: 4})
	require.NoError(t, err)
	require.ErrorContains(t, b.Start(), "end in a partial record", "Start reports Prepare's refusal")
	require.NoError(t, b.Close())
	require.ErrorIs(t, b.Start(), backend.ErrClosed)
}
