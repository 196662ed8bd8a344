package alazar_test

import (
	"math"
	"math/cmplx"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vortexgo/vortexgo/gosrc/acquire"
	"github.com/vortexgo/vortexgo/gosrc/driver/alazar"
	"github.com/vortexgo/vortexgo/gosrc/internal/virtualtest"
)

func TestTheVirtualBoardsFFTModule(t *testing.T) {
	b := open(t)
	in := b.Info()
	require.Equal(t, uint32(1), in.DSPModules)
	fft, err := in.FindFFTInfo()
	require.NoError(t, err)
	require.Equal(t, uint32(alazar.DSPModuleFFT), fft.Type)
	require.Equal(t, uint32(4096), fft.MaxRecordLength)
	require.Equal(t, alazar.ChannelA, fft.SupportedChannels)
	require.True(t, fft.FFTTimeDomainSupported)
	require.True(t, fft.FFTSubtractorSupported)
	rate, err := fft.MaxTriggerRatePerFFTLength(1024)
	require.NoError(t, err)
	require.Greater(t, rate, 100e3)
	require.Equal(t, 5.0/32767, in.DAC.VoltsPerLSB)
	require.Equal(t, 16, in.DAC.SequenceCount)
	require.Len(t, in.DAC.SlotSizes, alazar.DACSlots)
}

func TestFFTSettingsAreValidatedWithTheSDKsCodes(t *testing.T) {
	b := open(t)
	require.NoError(t, b.ConfigureClockInternal(800_000_000, 0))
	cases := []struct {
		name        string
		ch          alazar.Channel
		record, fft uint32
		format      uint32
		code        alazar.ReturnCode
	}{
		{"channel B", alazar.ChannelB, 256, 256, alazar.FFTOutputFormatU16Log, alazar.ApiNotSupportThisChannel},
		{"not a power of two", alazar.ChannelA, 384, 384, alazar.FFTOutputFormatU16Log, alazar.ApiInvalidData},
		{"shorter than the record", alazar.ChannelA, 512, 256, alazar.FFTOutputFormatU16Log, alazar.ApiInvalidData},
		{"too large", alazar.ChannelA, 256, 8192, alazar.FFTOutputFormatU16Log, 608},
		{"another format", alazar.ChannelA, 256, 256, 0xA, alazar.ApiUnsupportedFunction},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := b.ConfigureCaptureFFT(tc.ch, tc.record, 16, tc.fft, tc.format, 0)
			var e *alazar.Error
			require.ErrorAs(t, err, &e)
			require.Equal(t, tc.code, e.Code, err.Error())
			require.Contains(t, err.Error(), "failed to configure FFT for channels")
		})
	}
	require.ErrorContains(t, b.ConfigureFFTWindow(4, []float32{1}, []float32{0}), "1 real and 1 imaginary values")
}

// dft is Y[k] = sum_i x[i] w[i] exp(-2 pi j i k / n) of the signed codes,
// the virtual module's definition (instruments/virtual/atsapi.c).
func dftU16Log(raw []uint16, w []complex128, bg []int16, n int) []float64 {
	out := make([]float64, n/2)
	for k := range n / 2 {
		var y complex128
		for i, c := range raw {
			x := float64(c) - 32768
			if bg != nil {
				x -= float64(bg[i])
			}
			y += complex(x, 0) * w[i] * cmplx.Exp(complex(0, -2*math.Pi*float64(i*k)/float64(n)))
		}
		out[k] = 10 * math.Log10(real(y)*real(y)+imag(y)*imag(y))
	}
	return out
}

func TestFFTCaptureIsTheWindowedSpectrumsFFT(t *testing.T) {
	b := open(t)
	const samples, fftLen, records = 256, 512, 8
	require.NoError(t, b.ConfigureClockInternal(800_000_000, 0))
	require.NoError(t, b.ConfigureInput(alazar.ChannelA, alazar.CouplingDC, 400, 50))
	// A Hann window with a small phase ramp (a dispersion-like phasor), and
	// a background, over the record; zero past it.
	re, im := make([]float32, fftLen), make([]float32, fftLen)
	w := make([]complex128, samples)
	bg := make([]int16, fftLen)
	for i := range samples {
		h := 0.5 - 0.5*math.Cos(2*math.Pi*float64(i)/samples)
		p := cmplx.Rect(h, 0.3*float64(i)/samples)
		re[i], im[i] = float32(real(p)), float32(imag(p))
		w[i] = complex(float64(re[i]), float64(im[i]))
		bg[i] = int16(-32000 + i)
	}
	require.NoError(t, b.ConfigureFFTWindow(fftLen, re, im))
	require.NoError(t, b.ConfigureFFTBackgroundSubtraction(bg))
	for _, raw := range []bool{false, true} {
		format := uint32(alazar.FFTOutputFormatU16Log)
		values := fftLen / 2
		if raw {
			format |= alazar.FFTOutputFormatRawPlusFFT
			values += fftLen
		}
		bytes, err := b.ConfigureCaptureFFT(alazar.ChannelA, samples, records, fftLen, format, 0)
		require.NoError(t, err)
		require.Equal(t, uint32(2*values), bytes)
		mem := pinned(t, int(bytes)*records)
		require.NoError(t, b.PostBuffer(addr(mem), len(mem)))
		require.NoError(t, b.StartCapture())
		require.NoError(t, b.WaitBuffer(addr(mem), time.Second))
		require.NoError(t, b.StopCapture())

		cfg := acquire.DefaultSimulatedConfig()
		cfg.SamplesPerRecord, cfg.Volumes, cfg.NoiseLevel = samples, 1, 0
		cfg.AscansPerBscan, cfg.BscansPerVolume = 32, 32
		sim, err := acquire.NewSimulatedAcquisition(cfg)
		require.NoError(t, err)
		require.NoError(t, sim.Prepare())
		require.NoError(t, sim.Start())
		spectra := make([]uint16, samples*records)
		_, err = sim.Fill(spectra, records)
		require.NoError(t, err)
		require.NoError(t, sim.Close())

		got := virtualtest.Uint16s(mem)
		for r := range records {
			rec := got[r*values : (r+1)*values]
			spectrum := spectra[r*samples : (r+1)*samples]
			if raw {
				for i := range fftLen {
					want := int16(0)
					if i < samples {
						want = int16(int(spectrum[i]) - 32768)
					}
					require.Equal(t, want, int16(rec[i]), "record %d sample %d", r, i)
				}
				rec = rec[fftLen:]
			}
			want := dftU16Log(spectrum, w, bg, fftLen)
			for k, v := range want {
				// 1/256 dB a count, rounded: half a count, plus float32 window rounding.
				require.InDelta(t, min(max(v, 0), 65535.0/256), float64(rec[k])/256, 1.0/256, "record %d bin %d", r, k)
			}
		}
	}
	// A plain capture after the FFT's uses the plain calls again.
	configure(t, b, 256, 4)
	mem := pinned(t, 256*4*2)
	require.NoError(t, b.PostBuffer(addr(mem), len(mem)))
	require.NoError(t, b.StartCapture())
	require.NoError(t, b.WaitBuffer(addr(mem), time.Second))
	require.NoError(t, b.StopCapture())
}
