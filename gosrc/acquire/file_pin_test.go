package acquire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/cpu"
	"github.com/vortexgo/vortexgo/gosrc/engine"
)

// registrar is the CPU device with a host registration that pins nothing
// (backend.HostRegistrar), so that FileAcquisition's pinned path runs
// without a GPU: the engine's CPU "upload" then copies from the mapping
// as a DMA would read it. It counts live registrations and can refuse.
type registrar struct {
	backend.Device
	live   atomic.Int64
	total  atomic.Int64
	refuse error
}

type registered struct {
	backend.Buffer
	r     *registrar
	ptr   uintptr
	size  int
	freed atomic.Bool
}

func (r *registrar) RegisterHost(ptr uintptr, n int, readOnly bool) (backend.Buffer, error) {
	if r.refuse != nil {
		return nil, r.refuse
	}
	if !readOnly {
		return nil, errors.New("a read-only mapping pins only read-only")
	}
	r.live.Add(1)
	r.total.Add(1)
	return &registered{r: r, ptr: ptr, size: n}, nil
}

func (b *registered) Ptr() uintptr           { return b.ptr }
func (b *registered) Size() int              { return b.size }
func (b *registered) Kind() backend.MemKind  { return backend.PinnedMem }
func (b *registered) Device() backend.Device { return b.r }
func (b *registered) Free() error {
	if !b.freed.CompareAndSwap(false, true) {
		return backend.ErrClosed
	}
	b.r.live.Add(-1)
	return nil
}

// writeSpectra writes records records of n values (value i*7+1) as a raw
// file and returns its path and data.
func writeSpectra(t *testing.T, dir string, records, n int) (string, []uint16) {
	t.Helper()
	data := make([]uint16, records*n)
	for i := range data {
		data[i] = uint16(i*7 + 1)
	}
	p := filepath.Join(dir, fmt.Sprintf("spectra-%d-%d.raw", records, n))
	f, err := os.Create(p)
	require.NoError(t, err)
	require.NoError(t, binary.Write(f, binary.LittleEndian, data))
	require.NoError(t, f.Close())
	return p, data
}

// lent reads a run Lend handed out (tests only: production code never
// reads the mapping, see filePin).
func lent(src uintptr, records, n int) []uint16 {
	return append([]uint16(nil), unsafe.Slice((*uint16)(ptrOf(src)), records*n)...)
}

// TestFilePinLendMatchesFill lends and fills the same file side by side,
// looped or not, with blocks smaller and larger than the file, through
// the seam where a looped replay wraps, from raw and .npy files.
func TestFilePinLendMatchesFill(t *testing.T) {
	dir := t.TempDir()
	const n = 8
	tests := []struct {
		records, block, lends int
		loop, npy             bool
	}{
		{records: 10, block: 3, lends: 20, loop: true},
		{records: 10, block: 10, lends: 5, loop: true},
		{records: 10, block: 25, lends: 6, loop: true}, // blocks longer than the file
		{records: 1, block: 4, lends: 5, loop: true},
		{records: 7, block: 3, lends: 9, loop: true, npy: true}, // data after a header
		{records: 10, block: 3, lends: 5},                       // ends short, then io.EOF
		{records: 10, block: 25, lends: 2},
	}
	for _, tc := range tests {
		name := fmt.Sprintf("records=%d/block=%d/loop=%v/npy=%v", tc.records, tc.block, tc.loop, tc.npy)
		t.Run(name, func(t *testing.T) {
			path, data := writeSpectra(t, dir, tc.records, n)
			if tc.npy {
				path = filepath.Join(dir, "spectra.npy")
				require.NoError(t, WriteNPY(path, data, tc.records, n))
			}
			cfg := FileConfig{Path: path, SamplesPerRecord: n, Loop: tc.loop}
			lender, filler := mustFile(t, cfg), mustFile(t, cfg)
			dev := &registrar{Device: cpu.Default()}
			require.NoError(t, lender.PinTo(dev, tc.block))
			require.True(t, lender.Pinned())
			require.NoError(t, lender.Start())
			require.NoError(t, filler.Start())
			dst := make([]uint16, tc.block*n)
			for i := range tc.lends {
				src, got, lerr := lender.Lend(tc.block)
				want, ferr := filler.Fill(dst, tc.block)
				require.Equal(t, errors.Is(ferr, io.EOF), errors.Is(lerr, io.EOF), "lend %d: %v / %v", i, lerr, ferr)
				if ferr != nil {
					require.ErrorIs(t, ferr, io.EOF)
					if want == 0 {
						continue
					}
				}
				require.Equal(t, want, got, "lend %d", i)
				require.Equal(t, dst[:want*n], lent(src, got, n), "lend %d", i)
			}
			require.NoError(t, lender.Stop())
			require.NoError(t, lender.Close())
			require.NoError(t, filler.Close())
			require.Zero(t, dev.live.Load(), "Close unpins")
		})
	}
}

// TestFilePinRandomRuns: random file lengths and block sizes; every run a
// looped replay lends is the file's records at that position, mod its
// length.
func TestFilePinRandomRuns(t *testing.T) {
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(1, 2))
	const n = 4
	for trial := range 40 {
		records := 1 + rng.IntN(30)
		maxRecords := 1 + rng.IntN(40)
		path, data := writeSpectra(t, dir, records, n)
		a := mustFile(t, FileConfig{Path: path, SamplesPerRecord: n, Loop: true})
		dev := &registrar{Device: cpu.Default()}
		require.NoError(t, a.PinTo(dev, maxRecords))
		require.NoError(t, a.Start())
		pos := 0
		for range 20 {
			want := 1 + rng.IntN(maxRecords)
			src, got, err := a.Lend(want)
			require.NoError(t, err)
			require.Equal(t, want, got)
			exp := make([]uint16, 0, got*n)
			for k := range got {
				r := (pos + k) % records
				exp = append(exp, data[r*n:(r+1)*n]...)
			}
			require.Equal(t, exp, lent(src, got, n), "trial %d: records=%d max=%d pos=%d run=%d", trial, records, maxRecords, pos, got)
			pos = (pos + got) % records
		}
		require.NoError(t, a.Close())
	}
}

func mustFile(t *testing.T, cfg FileConfig) *FileAcquisition {
	t.Helper()
	a, err := NewFileAcquisition(cfg)
	require.NoError(t, err)
	require.NoError(t, a.Prepare())
	t.Cleanup(func() { _ = a.Close() })
	return a
}

// TestFilePinDeclines: where pinning would not help or cannot be done, an
// auto PinTo declines with engine.ErrNoLend (the engine reads blocks);
// under PinAlways it is an error that says why.
func TestFilePinDeclines(t *testing.T) {
	dir := t.TempDir()
	const n = 8
	path, data := writeSpectra(t, dir, 10, n)
	big := filepath.Join(dir, "big.npy")
	writeBigEndianNPY(t, big, data, 10, n)
	reg := &registrar{Device: cpu.Default()}
	refusing := &registrar{Device: cpu.Default(), refuse: errors.New("CUDA_ERROR_NOT_PERMITTED")}
	tests := []struct {
		name  string
		cfg   FileConfig
		dev   backend.Device
		want  string // in the error of an auto PinTo, which wraps ErrNoLend
		limit int64  // pinLimit, when set
	}{
		{"cpu device", FileConfig{Path: path, SamplesPerRecord: n}, cpu.Default(), "the cpu device cannot pin", 0},
		{"never", FileConfig{Path: path, SamplesPerRecord: n, Pin: PinNever}, reg, "Pin=never", 0},
		{"big-endian", FileConfig{Path: big}, reg, "big-endian", 0},
		{"too large", FileConfig{Path: path, SamplesPerRecord: n}, reg, "160 bytes of data, more than the 100 bytes (a quarter of the host's memory)", 100},
		{"device refuses", FileConfig{Path: path, SamplesPerRecord: n}, refusing, "CUDA_ERROR_NOT_PERMITTED", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.limit > 0 {
				old := pinLimit
				t.Cleanup(func() { pinLimit = old })
				pinLimit = func() int64 { return tc.limit }
			}
			a := mustFile(t, tc.cfg)
			err := a.PinTo(tc.dev, 4)
			require.ErrorIs(t, err, engine.ErrNoLend)
			require.ErrorContains(t, err, tc.want)
			require.False(t, a.Pinned())
			if tc.cfg.Pin == PinNever {
				return
			}
			tc.cfg.Pin = PinAlways
			b := mustFile(t, tc.cfg)
			err = b.PinTo(tc.dev, 4)
			if tc.name == "too large" { // always pins whatever the size
				require.NoError(t, err)
				require.True(t, b.Pinned())
				return
			}
			require.Error(t, err)
			require.NotErrorIs(t, err, engine.ErrNoLend, "PinAlways fails Prepare instead of reading")
			require.ErrorContains(t, err, "Pin=always")
			if tc.name != "device refuses" { // a configuration the device or file cannot honour
				require.ErrorIs(t, err, backend.ErrInvalid)
			}
		})
	}
	require.Zero(t, refusing.live.Load())
	_, err := NewFileAcquisition(FileConfig{Path: path, Pin: PinMode(7)})
	require.ErrorContains(t, err, "FileConfig.Pin=7, expected PinAuto, PinNever or PinAlways")
	require.ErrorIs(t, err, backend.ErrInvalid)
}

// TestFilePinNoticesAChangedFile: the pinned pages keep the file as it was
// pinned, so a file truncated or rewritten under the pin is an error at
// the next Lend (Fill would read the new bytes or fail), never stale data.
func TestFilePinNoticesAChangedFile(t *testing.T) {
	dir := t.TempDir()
	const n = 8
	for _, change := range []string{"truncated", "rewritten"} {
		t.Run(change, func(t *testing.T) {
			path, data := writeSpectra(t, dir, 10, n)
			a := mustFile(t, FileConfig{Path: path, SamplesPerRecord: n, Loop: true})
			require.NoError(t, a.PinTo(&registrar{Device: cpu.Default()}, 4))
			require.NoError(t, a.Start())
			_, _, err := a.Lend(4)
			require.NoError(t, err)
			if change == "truncated" {
				require.NoError(t, os.Truncate(path, 40))
			} else {
				later := time.Now().Add(time.Second)
				f, err := os.OpenFile(path, os.O_WRONLY, 0)
				require.NoError(t, err)
				require.NoError(t, binary.Write(f, binary.LittleEndian, data[:n]))
				require.NoError(t, f.Close())
				require.NoError(t, os.Chtimes(path, later, later)) // a coarse clock may not tick
			}
			_, _, err = a.Lend(4)
			if change == "truncated" {
				require.ErrorIs(t, err, io.ErrUnexpectedEOF)
			} else {
				require.ErrorContains(t, err, "changed since the engine pinned it")
			}
			require.NoError(t, a.Stop())
		})
	}
}

// TestFilePinLifecycle: the pin is kept by a PinTo it still serves,
// replaced by one it does not (unless another engine uses it), released by
// Close, which waits for the engine like the rest of the source.
func TestFilePinLifecycle(t *testing.T) {
	dir := t.TempDir()
	const n = 8
	path, _ := writeSpectra(t, dir, 10, n)
	a := mustFile(t, FileConfig{Path: path, SamplesPerRecord: n, Loop: true})
	dev := &registrar{Device: cpu.Default()}
	_, _, err := a.Lend(4)
	require.ErrorContains(t, err, "before PinTo")
	require.ErrorContains(t, a.PinTo(dev, 0), "maxRecords > 0")
	require.NoError(t, a.PinTo(dev, 8))
	require.NoError(t, a.PinTo(dev, 4), "a pin for longer runs serves shorter ones")
	require.EqualValues(t, 1, dev.total.Load())
	require.NoError(t, a.Start())
	_, _, err = a.Lend(9)
	require.ErrorContains(t, err, "records=9, expected 1..8")
	claim := a.Claims()[0]
	require.NoError(t, claim.Take())
	require.NoError(t, claim.Take()) // a second engine
	require.ErrorIs(t, a.PinTo(dev, 16), backend.ErrInUse, "another engine uploads from the pin")
	claim.Drop()
	require.NoError(t, a.PinTo(dev, 16), "the one engine asking may replace it")
	require.EqualValues(t, 2, dev.total.Load())
	require.EqualValues(t, 1, dev.live.Load(), "the old pin was released")
	require.ErrorIs(t, a.Close(), backend.ErrInUse)
	src, got, err := a.Lend(16)
	require.NoError(t, err)
	require.Equal(t, 16, got)
	require.NotZero(t, src)
	claim.Drop()
	require.NoError(t, a.Stop())
	require.NoError(t, a.Close())
	require.Zero(t, dev.live.Load())
	require.False(t, a.Pinned())
}
