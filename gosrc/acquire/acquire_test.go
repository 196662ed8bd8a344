package acquire

import (
	"encoding/binary"
	"io"
	"math"
	"math/cmplx"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/cpu"
	"github.com/vortexgo/vortexgo/gosrc/engine"
)

func TestFastCos(t *testing.T) {
	worst := 0.0
	for x := -30000.0; x < 30000; x += 0.377 {
		worst = max(worst, math.Abs(fastCos(x)-math.Cos(x)))
	}
	require.Less(t, worst, 5e-7)
}

func smallSim(t *testing.T, mod func(*SimulatedConfig)) *SimulatedAcquisition {
	t.Helper()
	cfg := DefaultSimulatedConfig()
	cfg.SamplesPerRecord, cfg.AscansPerBscan, cfg.BscansPerVolume, cfg.Volumes = 256, 16, 4, 2
	if mod != nil {
		mod(&cfg)
	}
	a, err := NewSimulatedAcquisition(cfg)
	require.NoError(t, err)
	require.NoError(t, a.Prepare())
	return a
}

func TestSimulatedConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		mod  func(*SimulatedConfig)
		want string
	}{
		{"samples", func(c *SimulatedConfig) { c.SamplesPerRecord = 8 }, "SamplesPerRecord=8, expected >= 16"},
		{"ascans", func(c *SimulatedConfig) { c.AscansPerBscan = 0 }, "AscansPerBscan=0, expected >= 1"},
		{"bscans", func(c *SimulatedConfig) { c.BscansPerVolume = -1 }, "BscansPerVolume=-1, expected >= 1"},
		{"volumes", func(c *SimulatedConfig) { c.Volumes = 0 }, "Volumes=0, expected >= 1"},
		{"total", func(c *SimulatedConfig) { c.TotalVolumes = -2 }, "TotalVolumes=-2, expected >= 0"},
		{"noise", func(c *SimulatedConfig) { c.NoiseLevel = math.NaN() }, "NoiseLevel=NaN, expected >= 0"},
		{"reference", func(c *SimulatedConfig) { c.ReferenceLevel = 70000 }, "ReferenceLevel=70000, expected in (0, 50000]"},
		{"span", func(c *SimulatedConfig) { c.WavelengthSpan = 1e-6 }, "WavelengthSpan=1e-06, expected in (0, CenterWavelength=8.4e-07)"},
		{"bandwidth", func(c *SimulatedConfig) { c.SourceBandwidth = 0 }, "SourceBandwidth=0, expected > 0"},
		{"dispersion", func(c *SimulatedConfig) { c.Dispersion = math.Inf(1) }, "Dispersion=+Inf, expected a finite"},
		{"rate", func(c *SimulatedConfig) { c.Rate = -1 }, "Rate=-1, expected >= 0"},
		{"huge samples", func(c *SimulatedConfig) { c.SamplesPerRecord = 1 << 40 }, "samples_per_record=1099511627776"},
		{"huge volume", func(c *SimulatedConfig) { c.AscansPerBscan, c.BscansPerVolume = 1<<31, 1<<31 }, "ascans_per_bscan=2147483648"},
		{"huge ring", func(c *SimulatedConfig) { c.Volumes = 1 << 40 }, "volumes=1099511627776"},
		{"overflowing ring", func(c *SimulatedConfig) { c.Volumes = math.MaxInt }, "a ring of volumes"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultSimulatedConfig()
			tc.mod(&cfg)
			_, err := NewSimulatedAcquisition(cfg)
			require.ErrorContains(t, err, tc.want)
			if strings.HasPrefix(tc.name, "huge") || strings.HasPrefix(tc.name, "overflowing") {
				require.ErrorIs(t, err, backend.ErrTooLarge, "a MemoryError, before anything is allocated")
			} else {
				require.ErrorIs(t, err, backend.ErrInvalid)
			}
		})
	}
	cfg := DefaultSimulatedConfig()
	require.NoError(t, cfg.Validate())
}

func TestSimulatedDeterministicAndInRange(t *testing.T) {
	a := smallSim(t, nil)
	b := smallSim(t, nil)
	require.Equal(t, a.ring, b.ring, "same seed, same ring")
	c := smallSim(t, func(c *SimulatedConfig) { c.Seed = 7 })
	require.NotEqual(t, a.ring, c.ring)

	lo, hi := uint16(math.MaxUint16), uint16(0)
	for _, v := range a.ring {
		lo, hi = min(lo, v), max(hi, v)
	}
	require.Greater(t, lo, uint16(0), "no clipping at 0")
	require.Less(t, hi, uint16(math.MaxUint16), "no clipping at full scale")
	require.Greater(t, hi, uint16(15000), "the reference arm fills a good part of the range")
}

func TestSimulatedFillReplaysRingAndStops(t *testing.T) {
	a := smallSim(t, func(c *SimulatedConfig) { c.TotalVolumes = 3 })
	n := a.SamplesPerRecord()
	per := a.RecordsPerVolume()
	dst := make([]uint16, 40*n)

	_, err := a.Fill(dst, 1)
	require.ErrorIs(t, err, ErrNotStarted)
	require.NoError(t, a.Start())

	var got []uint16
	for {
		k, err := a.Fill(dst, 40)
		if err == io.EOF {
			require.Zero(t, k)
			break
		}
		require.NoError(t, err)
		got = append(got, dst[:k*n]...)
	}
	require.Len(t, got, 3*per*n, "TotalVolumes=3 volumes, then io.EOF")
	ring := len(a.ring)
	require.Equal(t, a.ring, got[:ring])
	require.Equal(t, a.ring[:per*n], got[ring:], "the third volume replays the first")

	_, err = a.Fill(dst[:n-1], 1)
	require.ErrorContains(t, err, "len(dst)=255, expected >= records*SamplesPerRecord = 1*256 = 256")
	_, err = a.Fill(dst, -1)
	require.ErrorContains(t, err, "records=-1, expected records >= 0")
}

func TestSimulatedRateAndStop(t *testing.T) {
	a := smallSim(t, func(c *SimulatedConfig) { c.Rate = 20000 })
	dst := make([]uint16, 200*a.SamplesPerRecord())
	require.NoError(t, a.Start())
	start := time.Now()
	for range 5 {
		k, err := a.Fill(dst, 200)
		require.NoError(t, err)
		require.Equal(t, 200, k)
	}
	// 1000 A-scans at 20 kHz take 50 ms; the bucket starts empty.
	require.GreaterOrEqual(t, time.Since(start), 45*time.Millisecond)

	// Stop wakes a Fill that waits on the rate limiter.
	b := smallSim(t, func(c *SimulatedConfig) { c.Rate = 1 })
	require.NoError(t, b.Start())
	done := make(chan error, 1)
	go func() { _, err := b.Fill(dst, 100); done <- err }()
	time.Sleep(20 * time.Millisecond)
	require.NoError(t, b.Stop())
	select {
	case err := <-done:
		require.ErrorIs(t, err, io.EOF)
	case <-time.After(5 * time.Second):
		t.Fatal("Stop did not wake Fill")
	}
	_, err := b.Fill(dst, 1)
	require.ErrorIs(t, err, io.EOF, "a stopped source is exhausted")
}

func TestResamplingPositions(t *testing.T) {
	a := smallSim(t, nil)
	p := a.ResamplingPositions()
	n := a.SamplesPerRecord()
	require.Len(t, p, n)
	require.InDelta(t, 0, p[0], 1e-4)
	require.InDelta(t, float32(n-1), p[n-1], 1e-3)
	for j := 1; j < n; j++ {
		require.Greater(t, p[j], p[j-1])
	}
	// Evenly spaced in lambda means the even-k samples crowd towards the
	// start: the nonlinearity is real, not a no-op.
	require.Greater(t, math.Abs(float64(p[n/2])-float64(n-1)/2), 3.0)
}

// TestFringePeaksAtReflectorDepth checks the forward model with a direct
// DFT: a noiseless A-scan, background removed with the model's own DC,
// resampled, dispersion-compensated and transformed, peaks at its
// reflectors' depths.
func TestFringePeaksAtReflectorDepth(t *testing.T) {
	a := smallSim(t, func(c *SimulatedConfig) { c.NoiseLevel = 0 })
	n := a.SamplesPerRecord()
	refl, err := a.Reflectors(0, 1, 3)
	require.NoError(t, err)
	rec := a.ring[(1*16+3)*n : (1*16+4)*n]
	dc := 1.0
	for _, r := range refl {
		dc += r.Reflectivity
	}
	fr := make([]float64, n)
	for i := range n {
		fr[i] = float64(rec[i]) - a.cfg.DarkLevel - a.cfg.ReferenceLevel*a.spec.envelope[i]*dc
	}
	pos := a.ResamplingPositions()
	comp := a.DispersionCompensation()
	spec := make([]complex128, n)
	for j, p := range pos {
		i0 := min(int(p), n-2)
		f := float64(p) - float64(i0)
		spec[j] = complex(fr[i0]+f*(fr[i0+1]-fr[i0]), 0) * complex128(comp[j])
	}
	mag := make([]float64, n/2)
	for d := range mag {
		var s complex128
		for j, v := range spec {
			s += v * cmplx.Exp(complex(0, 2*math.Pi*float64(j*d)/float64(n)))
		}
		mag[d] = cmplx.Abs(s) / float64(n)
	}
	for _, r := range refl {
		if r.Reflectivity < 1e-3 {
			continue
		}
		d := int(math.Round(r.Depth))
		local := max(mag[d-1], mag[d], mag[d+1])
		// Peak ~ Iref*sqrt(R)*mean(S) with mean(S) ~ 0.53, less up to 36%
		// scalloping for a fractional depth; the background far from all
		// reflectors is orders of magnitude lower.
		require.Greater(t, local, 0.25*a.cfg.ReferenceLevel*math.Sqrt(r.Reflectivity), "reflector at %.1f", r.Depth)
	}
	require.Less(t, mag[5], 5.0, "nothing near DC once the background is removed")

	_, err = a.Reflectors(2, 0, 0)
	require.ErrorContains(t, err, "volume=2, expected in [0, 2)")
}

func TestNullAcquisition(t *testing.T) {
	_, err := NewNullAcquisition(NullConfig{SamplesPerRecord: 0})
	require.ErrorContains(t, err, "SamplesPerRecord=0, expected >= 1")
	require.ErrorIs(t, err, backend.ErrInvalid)
	a, err := NewNullAcquisition(NullConfig{SamplesPerRecord: 4, Records: 5})
	require.NoError(t, err)
	require.NoError(t, a.Prepare())
	require.NoError(t, a.Start())
	dst := []uint16{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	k, err := a.Fill(dst, 4)
	require.NoError(t, err)
	require.Equal(t, 4, k)
	require.Equal(t, make([]uint16, 16), dst)
	k, err = a.Fill(dst, 4)
	require.NoError(t, err)
	require.Equal(t, 1, k, "a short count at the end")
	_, err = a.Fill(dst, 4)
	require.ErrorIs(t, err, io.EOF)
}

func TestFileAcquisition(t *testing.T) {
	dir := t.TempDir()
	const n, records = 8, 5
	data := make([]uint16, n*records)
	for i := range data {
		data[i] = uint16(i*37 + 1)
	}
	raw := filepath.Join(dir, "spectra.raw")
	f, err := os.Create(raw)
	require.NoError(t, err)
	require.NoError(t, binary.Write(f, binary.LittleEndian, data))
	require.NoError(t, f.Close())
	npy := filepath.Join(dir, "spectra.npy")
	require.NoError(t, WriteNPY(npy, data, 1, records, n))
	big := filepath.Join(dir, "big.npy")
	writeBigEndianNPY(t, big, data, records, n)

	tests := []struct {
		name string
		cfg  FileConfig
	}{
		{"raw", FileConfig{Path: raw, SamplesPerRecord: n}},
		{"npy", FileConfig{Path: npy}},
		{"npy-with-samples", FileConfig{Path: npy, SamplesPerRecord: n}},
		{"npy-big-endian", FileConfig{Path: big}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a, err := NewFileAcquisition(tc.cfg)
			require.NoError(t, err)
			require.NoError(t, a.Prepare())
			require.Equal(t, n, a.SamplesPerRecord())
			require.EqualValues(t, records, a.Records())
			require.NoError(t, a.Start())
			dst := make([]uint16, 3*n)
			var got []uint16
			for {
				k, err := a.Fill(dst, 3)
				if err == io.EOF {
					break
				}
				require.NoError(t, err)
				got = append(got, dst[:k*n]...)
			}
			require.Equal(t, data, got)
			require.NoError(t, a.Stop())
		})
	}

	t.Run("loop-and-restart", func(t *testing.T) {
		a, err := NewFileAcquisition(FileConfig{Path: npy, Loop: true})
		require.NoError(t, err)
		require.NoError(t, a.Prepare())
		require.NoError(t, a.Start())
		dst := make([]uint16, 4*n)
		k, err := a.Fill(dst, 4)
		require.NoError(t, err)
		require.Equal(t, 4, k)
		k, err = a.Fill(dst, 4)
		require.NoError(t, err)
		require.Equal(t, 4, k)
		want := append(append([]uint16(nil), data[4*n:]...), data[:3*n]...)
		require.Equal(t, want, dst, "carries on at record 4 and wraps")
		require.NoError(t, a.Stop())
		require.NoError(t, a.Start())
		k, err = a.Fill(dst, 4)
		require.NoError(t, err)
		require.Equal(t, 4, k)
		require.Equal(t, data[:4*n], dst, "vortex's Stop closes the file: Start replays from the first record")
		require.NoError(t, a.Stop())
	})

	errs := []struct {
		name string
		cfg  FileConfig
		want string
	}{
		{"no-path", FileConfig{}, `Path="", expected a file name`},
		{"missing", FileConfig{Path: filepath.Join(dir, "nope"), SamplesPerRecord: 4}, "no such file"},
		{"raw-needs-samples", FileConfig{Path: raw}, "SamplesPerRecord=0, expected >= 1 for the raw file"},
		{"npy-mismatch", FileConfig{Path: npy, SamplesPerRecord: 4}, "SamplesPerRecord=4 x ChannelsPerSample=1, expected the shape [1 5 8] to end in 4 values"},
	}
	for _, tc := range errs {
		t.Run(tc.name, func(t *testing.T) {
			a, err := NewFileAcquisition(tc.cfg)
			if err == nil {
				err = a.Prepare()
			}
			require.ErrorContains(t, err, tc.want)
			require.ErrorIs(t, err, backend.ErrInvalid, "a bad configuration is a ValueError")
		})
	}

	t.Run("npy-wrong-dtype", func(t *testing.T) {
		p := filepath.Join(dir, "f4.npy")
		hdr := "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }"
		b := append([]byte(npyMagic), 1, 0, byte(len(hdr)), 0)
		b = append(append(b, hdr...), make([]byte, 8)...)
		require.NoError(t, os.WriteFile(p, b, 0o644))
		a, err := NewFileAcquisition(FileConfig{Path: p})
		require.NoError(t, err)
		err = a.Prepare()
		require.ErrorContains(t, err, `dtype "<f4", expected uint16`)
		require.ErrorIs(t, err, backend.ErrInvalid)
	})
}

// TestClosedAcquisitionRefusesPrepare: every source, once closed, refuses
// Prepare and an engine's claim with ErrClosed (told apart from a bad
// configuration), and closing it again is a no-op.
func TestClosedAcquisitionRefusesPrepare(t *testing.T) {
	raw := filepath.Join(t.TempDir(), "spectra.raw")
	require.NoError(t, os.WriteFile(raw, make([]byte, 64), 0o644))
	type source interface {
		Prepare() error
		Close() error
		Claims() []*engine.Claim
	}
	tests := []struct {
		name string
		make func() (source, error)
	}{
		{"SimulatedAcquisition", func() (source, error) {
			cfg := DefaultSimulatedConfig()
			cfg.SamplesPerRecord, cfg.AscansPerBscan, cfg.BscansPerVolume, cfg.Volumes = 16, 2, 2, 1
			return NewSimulatedAcquisition(cfg)
		}},
		{"NullAcquisition", func() (source, error) { return NewNullAcquisition(NullConfig{SamplesPerRecord: 4}) }},
		{"FileAcquisition", func() (source, error) { return NewFileAcquisition(FileConfig{Path: raw, SamplesPerRecord: 4}) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a, err := tc.make()
			require.NoError(t, err)
			require.NoError(t, a.Prepare(), "an open source prepares")
			claims := a.Claims()
			require.Len(t, claims, 1)
			require.NoError(t, claims[0].Take())
			require.ErrorIs(t, a.Close(), backend.ErrInUse, "refused while an engine uses it")
			require.NoError(t, a.Prepare(), "a refused close leaves it open")
			claims[0].Drop()
			require.NoError(t, a.Close())
			require.NoError(t, a.Close(), "closing twice is a no-op")
			err = a.Prepare()
			require.ErrorIs(t, err, backend.ErrClosed)
			require.ErrorContains(t, err, tc.name+" is closed")
			require.ErrorIs(t, claims[0].Take(), backend.ErrClosed, "no engine may take it")
		})
	}
}

func writeBigEndianNPY(t *testing.T, path string, data []uint16, shape ...int) {
	t.Helper()
	require.NoError(t, WriteNPY(path, data, shape...))
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	hlen := int(binary.LittleEndian.Uint16(b[8:10]))
	hdr := b[10 : 10+hlen]
	copy(hdr[11:14], ">u2") // {'descr': '<u2' -> '>u2'
	body := b[10+hlen:]
	for i := 0; i+1 < len(body); i += 2 {
		body[i], body[i+1] = body[i+1], body[i]
	}
	require.NoError(t, os.WriteFile(path, b, 0o644))
}

// BenchmarkSimulatedPrepare measures synthesis per record (1024 samples).
func BenchmarkSimulatedPrepare(b *testing.B) {
	cfg := DefaultSimulatedConfig()
	cfg.AscansPerBscan, cfg.BscansPerVolume, cfg.Volumes = 64, 16, 1
	for b.Loop() {
		a, err := NewSimulatedAcquisition(cfg)
		require.NoError(b, err)
		require.NoError(b, a.Prepare())
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*64*16), "ns/record")
}

// BenchmarkSimulatedFill measures replay: a memcpy of 1000-record blocks.
func BenchmarkSimulatedFill(b *testing.B) {
	cfg := DefaultSimulatedConfig()
	cfg.AscansPerBscan, cfg.BscansPerVolume, cfg.Volumes, cfg.NoiseLevel = 100, 20, 1, 0
	a, err := NewSimulatedAcquisition(cfg)
	require.NoError(b, err)
	require.NoError(b, a.Prepare())
	require.NoError(b, a.Start())
	dst := make([]uint16, 1000*cfg.SamplesPerRecord)
	b.SetBytes(int64(len(dst) * 2))
	for b.Loop() {
		if _, err := a.Fill(dst, 1000); err != nil {
			b.Fatal(err)
		}
	}
}

// TestSimulatedLendMatchesFill: lent ring addresses hold exactly what Fill
// copies, across the ring's wrap, with the same end-of-data behaviour.
func TestSimulatedLendMatchesFill(t *testing.T) {
	cfg := DefaultSimulatedConfig()
	cfg.SamplesPerRecord, cfg.AscansPerBscan, cfg.BscansPerVolume, cfg.Volumes = 32, 8, 2, 2
	cfg.TotalVolumes = 3 // 48 records, over a ring of 32
	mk := func() *SimulatedAcquisition {
		a, err := NewSimulatedAcquisition(cfg)
		require.NoError(t, err)
		require.NoError(t, a.Prepare())
		return a
	}
	lender, filler := mk(), mk()
	dev := cpu.Default()
	_, _, err := lender.Lend(4)
	require.ErrorContains(t, err, "before PinTo")
	require.ErrorContains(t, lender.PinTo(dev, 0), "maxRecords > 0")
	require.NoError(t, lender.PinTo(dev, 12))
	defer func() { require.NoError(t, lender.Close()) }()
	require.NoError(t, lender.Start())
	require.NoError(t, filler.Start())
	_, _, err = lender.Lend(13)
	require.ErrorContains(t, err, "expected 1..12")
	dst := make([]uint16, 12*32)
	total := 0
	for {
		src, n, lerr := lender.Lend(12)
		m, ferr := filler.Fill(dst, 12)
		if lerr != nil || ferr != nil {
			require.ErrorIs(t, lerr, io.EOF)
			require.ErrorIs(t, ferr, io.EOF)
			break
		}
		require.Equal(t, m, n)
		got := unsafe.Slice((*uint16)(ptrOf(src)), n*32)
		require.Equal(t, dst[:m*32], got, "records %d..%d", total, total+n)
		total += n
	}
	require.Equal(t, 48, total)
}

func TestSimulatedCloseWaitsForTheEngine(t *testing.T) {
	cfg := DefaultSimulatedConfig()
	cfg.AscansPerBscan, cfg.BscansPerVolume, cfg.Volumes = 4, 4, 1
	a, err := NewSimulatedAcquisition(cfg)
	require.NoError(t, err)
	require.NoError(t, a.Prepare())
	require.NoError(t, a.PinTo(cpu.Default(), 4))
	claims := a.Claims()
	require.Len(t, claims, 1)
	require.NoError(t, claims[0].Take())
	require.ErrorIs(t, a.Close(), backend.ErrInUse, "the ring is still lent to an engine")
	require.NoError(t, a.Start())
	src, n, err := a.Lend(4)
	require.NoError(t, err)
	require.Equal(t, 4, n)
	require.NotZero(t, src, "the ring is still there")
	require.NoError(t, a.Stop())
	claims[0].Drop()
	require.NoError(t, a.Close())
	require.NoError(t, a.Close(), "closing twice is a no-op")
	require.ErrorIs(t, claims[0].Take(), backend.ErrClosed)
}
