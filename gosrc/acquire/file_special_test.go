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

	// A file cut short: Start prepares it or refuses what Prepare refuses; closed, it never
	// reopens its file.
	cases := []struct {
		name     string
		bytes    int
		startErr string // Start's refusal; "" where Start succeeds
		nextErr  string // the first block's failure after a Start that succeeded
	}{
		{name: "partial", bytes: 10, nextErr: "ends in a partial record"},
		{name: "odd", bytes: 9, startErr: "expected uint16 values (an even number of bytes)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, tc.name+".raw")
			require.NoError(t, os.WriteFile(path, buf[:tc.bytes], 0o644))
			a, err := NewFileAcquisition(FileConfig{Path: path, SamplesPerRecord: 4})
			require.NoError(t, err)
			if tc.startErr != "" {
				require.ErrorContains(t, a.Start(), tc.startErr, "Start reports Prepare's refusal")
			} else {
				require.NoError(t, a.Start(), "a file ending mid-record replays as vortex's: a stream of values")
				_, err = a.Next(make([]uint16, 2*4), 2)
				require.ErrorContains(t, err, tc.nextErr, "the block that reaches it fails")
				require.NoError(t, a.Stop())
			}
			require.NoError(t, a.Close())
			require.ErrorIs(t, a.Start(), backend.ErrClosed, "a closed source never reopens its file")
		})
	}
}

// TestFileEndingMidRecordIsAStreamOfValues: vortex reads a file as a stream of
// uint16 values (its offline test_file_acquire): a looped replay wraps mid-record,
// delivering the file's values repeated; one that does not loop delivers the
// whole blocks before the partial record and fails at the block that reaches it.
func TestFileEndingMidRecordIsAStreamOfValues(t *testing.T) {
	dir := t.TempDir()
	const values, samples, chans, records = 23, 2, 2, 2 // 5 whole records of 4 values, 3 values past them
	data := make([]uint16, values)
	for i := range data {
		data[i] = uint16(1000 + 7*i)
	}
	path := filepath.Join(dir, "stream.raw")
	require.NoError(t, os.WriteFile(path, u16bytes(data), 0o644))
	cases := []struct {
		name   string
		loop   bool
		blocks int // blocks of `records` records delivered before the end
	}{
		{"loop", true, 9}, // 9 blocks x 8 values = 72: the file three times and a bit
		{"once", false, 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a, err := NewFileAcquisition(FileConfig{Path: path, SamplesPerRecord: samples, ChannelsPerSample: chans, Loop: tc.loop})
			require.NoError(t, err)
			defer a.Close()
			for session := range 2 { // Stop then Start replays from the first value
				require.NoError(t, a.Start())
				var got []uint16
				for range tc.blocks {
					dst := make([]uint16, records*samples*chans)
					n, err := a.Next(dst, records)
					require.NoError(t, err, "session %d", session)
					require.Equal(t, records, n)
					got = append(got, dst...)
				}
				for i, v := range got {
					require.Equal(t, data[i%values], v, "session %d value %d", session, i)
				}
				if !tc.loop {
					_, err := a.Next(make([]uint16, records*samples*chans), records)
					require.ErrorContains(t, err, "ends in a partial record (6 bytes past record 5)")
				}
				require.NoError(t, a.Stop())
			}
		})
	}
}
