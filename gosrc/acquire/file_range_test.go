package acquire

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/cpu"
)

// readAll fills blocks of block records from a started source until
// io.EOF and returns every value delivered.
func readAll(t *testing.T, a *FileAcquisition, block, n int) []uint16 {
	t.Helper()
	var got []uint16
	dst := make([]uint16, block*n)
	for {
		k, err := a.Fill(dst, block)
		got = append(got, dst[:k*n]...)
		if errors.Is(err, io.EOF) {
			return got
		}
		require.NoError(t, err)
		if k < block {
			k2, err := a.Fill(dst, block)
			require.Zero(t, k2)
			require.ErrorIs(t, err, io.EOF)
			return got
		}
	}
}

// TestFileRangeReplaysItsRecordsOnly: FileConfig.Offset and Length replay
// exactly the records of their byte range, filled or lent from a pinned
// mapping (whose start need not be a page boundary), from raw and .npy
// files, and from files whose remainder is truncated mid-record.
func TestFileRangeReplaysItsRecordsOnly(t *testing.T) {
	dir := t.TempDir()
	const n, records = 8, 3000 // 48000 bytes: ranges late in the file start past several pages
	raw, data := writeSpectra(t, dir, records, n)
	npy := filepath.Join(dir, "spectra.npy")
	require.NoError(t, WriteNPY(npy, data, records, n))
	npyOffset := func() int64 {
		st, err := os.Stat(npy)
		require.NoError(t, err)
		return st.Size() - int64(len(data))*2
	}()
	cut := filepath.Join(dir, "cut.raw") // the raw file less 5 bytes: its last record is partial
	b, err := os.ReadFile(raw)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(cut, b[:len(b)-5], 0o644))
	rec := int64(n * 2)
	tests := []struct {
		path         string
		header       int64
		first, count int64 // records
		block        int
		pin, zeroLen bool
	}{
		{path: raw, first: 0, count: 10, block: 4},
		{path: raw, first: 1000, count: 999, block: 64},
		{path: raw, first: 2999, count: 1, block: 3},
		{path: raw, first: 257, count: 300, block: 7, pin: true},
		{path: raw, first: 2500, count: 500, block: 100, zeroLen: true}, // Length 0: to the end
		{path: npy, header: -1, first: 0, count: 5, block: 2},
		{path: npy, header: -1, first: 1234, count: 100, block: 33, pin: true},
		{path: cut, first: 0, count: 2999, block: 500}, // all but the partial record
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%s/%d+%d/pin=%v", filepath.Base(tc.path), tc.first, tc.count, tc.pin), func(t *testing.T) {
			header := tc.header
			if header < 0 {
				header = npyOffset
			}
			cfg := FileConfig{Path: tc.path, SamplesPerRecord: n, Offset: header + tc.first*rec, Length: tc.count * rec}
			if tc.zeroLen {
				cfg.Length = 0
			}
			a := mustFile(t, cfg)
			require.Equal(t, tc.count, a.Records())
			want := data[tc.first*n : (tc.first+tc.count)*n]
			if tc.pin {
				dev := &registrar{Device: cpu.Default()}
				require.NoError(t, a.PinTo(dev, tc.block))
				require.True(t, a.Pinned())
				require.NoError(t, a.Start())
				var got []uint16
				for {
					src, k, err := a.Lend(tc.block)
					if errors.Is(err, io.EOF) {
						break
					}
					require.NoError(t, err)
					got = append(got, lent(src, k, n)...)
				}
				require.Equal(t, want, got)
				require.NoError(t, a.Stop())
				require.NoError(t, a.Close())
				require.Zero(t, dev.live.Load())
				return
			}
			require.NoError(t, a.Start())
			require.Equal(t, want, readAll(t, a, tc.block, n))
			require.NoError(t, a.Stop())
			require.NoError(t, a.Close())
		})
	}
}

// TestFileRangeRefusals: a range past the end names the file, the range
// and where the file ends; partial records, a range inside a .npy header
// and negative values are refused as bad configurations.
func TestFileRangeRefusals(t *testing.T) {
	dir := t.TempDir()
	const n = 8
	raw, data := writeSpectra(t, dir, 100, n)
	npy := filepath.Join(dir, "spectra.npy")
	require.NoError(t, WriteNPY(npy, data, 100, n))
	tests := []struct {
		path           string
		offset, length int64
		want           string
	}{
		{raw, 1600, 16, fmt.Sprintf("%s: bytes [1600, 1616): the file ends at byte 1600", raw)},
		{raw, 1584, 32, "bytes [1584, 1616): the file ends at byte 1600"},
		{raw, 16, 24, "bytes [16, 40): 24 bytes end in a partial record"},
		{npy, 8, 16, "expected >= 128 (the .npy data start after the header)"},
	}
	for _, tc := range tests {
		t.Run(tc.want, func(t *testing.T) {
			a, err := NewFileAcquisition(FileConfig{Path: tc.path, SamplesPerRecord: n, Offset: tc.offset, Length: tc.length})
			require.NoError(t, err)
			err = a.Prepare()
			require.ErrorIs(t, err, backend.ErrInvalid)
			require.ErrorContains(t, err, tc.want)
		})
	}
	_, err := NewFileAcquisition(FileConfig{Path: raw, SamplesPerRecord: n, Offset: -1})
	require.ErrorIs(t, err, backend.ErrInvalid)
	require.ErrorContains(t, err, "FileConfig.Offset=-1")
}
