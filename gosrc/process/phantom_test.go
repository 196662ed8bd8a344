package process

import (
	"math"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/vortexgo/vortexgo/gosrc/acquire"
)

// simulatedBlock synthesises one small volume of the retina phantom and
// returns the source and its records.
func simulatedBlock(t testing.TB, n, ascans, bscans int) (*acquire.SimulatedAcquisition, []uint16) {
	t.Helper()
	cfg := acquire.DefaultSimulatedConfig()
	cfg.SamplesPerRecord, cfg.AscansPerBscan, cfg.BscansPerVolume, cfg.Volumes = n, ascans, bscans, 1
	a, err := acquire.NewSimulatedAcquisition(cfg)
	require.NoError(t, err)
	require.NoError(t, a.Prepare())
	require.NoError(t, a.Start())
	raw := make([]uint16, ascans*bscans*n)
	k, err := a.Fill(raw, ascans*bscans)
	require.NoError(t, err)
	require.Equal(t, ascans*bscans, k)
	return a, raw
}

// phantomConfig is the processing matched to the simulated spectrometer:
// background over the whole block, resampling to even k, a Hann window
// times the dispersion compensation, magnitude in dB.
func phantomConfig(t testing.TB, a *acquire.SimulatedAcquisition, records int, resample, compensate bool) Config {
	n := a.SamplesPerRecord()
	c := DefaultConfig(n, records)
	c.AverageWindow = records
	if resample {
		c.ResamplingSamples = a.ResamplingPositions()
	}
	var phasor []complex64
	if compensate {
		phasor = a.DispersionCompensation()
	}
	h, err := SpectralFilter(HannWindow(n), phasor)
	require.NoError(t, err)
	c.SpectralFilter = h
	c.Levels = [2]float32{0, 70}
	return c
}

func processCPU(t *testing.T, c Config, raw []uint16, records int) []float32 {
	p, err := NewCPUProcessor(c)
	require.NoError(t, err)
	require.NoError(t, p.Prepare())
	defer p.Close()
	h := newHostBuffers(t, c.SamplesPerRecord, p.OutputSamples(), records)
	copy(h.raw, raw)
	require.NoError(t, p.Process(0, h.s, h.in.Ptr(), records, h.out.Ptr(), h.out8.Ptr()))
	return slices.Clone(h.result)
}

// TestPhantomReflectorsAtExpectedDepths is the end-to-end check of the
// simulator and the CPU chain: every strong reflector of every A-scan is a
// local peak well above the noise floor at the bin the simulator reports,
// and the brightest bin of each A-scan is one of the reflectors.
func TestPhantomReflectorsAtExpectedDepths(t *testing.T) {
	const n, ascans, bscans = 1024, 64, 4
	const records = ascans * bscans
	a, raw := simulatedBlock(t, n, ascans, bscans)
	out := processCPU(t, phantomConfig(t, a, records, true, true), raw, records)

	floor := noiseFloor(out, n)
	for r := range records {
		line := out[r*n : (r+1)*n]
		refl, err := a.Reflectors(0, r/ascans, r%ascans)
		require.NoError(t, err)
		for _, f := range refl {
			if f.Reflectivity < 1e-3 {
				continue
			}
			d := int(math.Round(f.Depth))
			peak := slices.Max(line[d-1 : d+2])
			require.Greater(t, peak, floor+25, "record %d: reflector at %.2f (R=%.1e) is %.1f dB, floor %.1f dB",
				r, f.Depth, f.Reflectivity, peak, floor)
		}
		// The brightest bin away from DC is a reflector.
		best := 8 + argmax(line[8:n/2])
		near := false
		for _, f := range refl {
			near = near || math.Abs(f.Depth-float64(best)) <= 1.5
		}
		require.True(t, near, "record %d: brightest bin %d is no reflector (%v)", r, best, refl)
	}
}

// TestPhantomNeedsResamplingAndCompensation shows the simulated
// nonlinearity and dispersion matter: without either correction the RPE
// peak drops by several dB on average.
func TestPhantomNeedsResamplingAndCompensation(t *testing.T) {
	const n, ascans, bscans = 1024, 32, 2
	const records = ascans * bscans
	a, raw := simulatedBlock(t, n, ascans, bscans)
	rpe := func(c Config) float64 {
		out := processCPU(t, c, raw, records)
		sum := 0.0
		for r := range records {
			refl, err := a.Reflectors(0, r/ascans, r%ascans)
			require.NoError(t, err)
			d := int(math.Round(refl[5].Depth)) // the RPE
			sum += float64(slices.Max(out[r*n+d-1 : r*n+d+2]))
		}
		return sum / records
	}
	full := rpe(phantomConfig(t, a, records, true, true))
	noResampling := rpe(phantomConfig(t, a, records, false, true))
	noCompensation := rpe(phantomConfig(t, a, records, true, false))
	t.Logf("RPE peak: %.1f dB corrected, %.1f dB without resampling, %.1f dB without dispersion compensation",
		full, noResampling, noCompensation)
	require.Greater(t, full-noResampling, 6.0, "resampling gains > 6 dB")
	require.Greater(t, full-noCompensation, 3.0, "dispersion compensation gains > 3 dB")
}

// noiseFloor is the median dB value of the deep half of the first records'
// unaliased range, where the phantom has no reflectors.
func noiseFloor(out []float32, n int) float32 {
	var vals []float32
	for r := range 16 {
		vals = append(vals, out[r*n+n*47/100:r*n+n/2-4]...)
	}
	slices.Sort(vals)
	return vals[len(vals)/2]
}

func argmax(x []float32) int {
	best := 0
	for i, v := range x {
		if v > x[best] {
			best = i
		}
	}
	return best
}
