package acquire

import (
	"math"
	"math/cmplx"
)

// spectrometer is the forward model of a spectral-domain OCT spectrometer
// whose pixels are evenly spaced in wavelength. Because the interferometric
// phase is linear in wavenumber k = 2*pi/lambda, not in lambda, a fringe
// sampled this way is chirped: its Fourier transform smears unless the
// spectrum is first resampled onto an even k grid (ResamplingPositions).
//
// Depths are expressed in output bins: a reflector at depth d bins produces,
// after resampling to n even-k samples and an inverse FFT of length n, a
// peak at bin d.
type spectrometer struct {
	n         int
	kappa     []float64 // phase per depth bin at raw sample i, relative to mid-band
	theta     []float64 // dispersion phase at raw sample i
	envelope  []float64 // source spectrum at raw sample i (peak 1)
	positions []float32 // raw positions of the even-k output samples
}

func newSpectrometer(cfg *SimulatedConfig) *spectrometer {
	n := cfg.SamplesPerRecord
	lambdaMin := cfg.CenterWavelength - cfg.WavelengthSpan/2
	dLambda := cfg.WavelengthSpan / float64(n-1)
	kFirst := 2 * math.Pi / lambdaMin                         // raw sample 0: shortest wavelength
	kLast := 2 * math.Pi / (lambdaMin + float64(n-1)*dLambda) // raw sample n-1
	dk := (kFirst - kLast) / float64(n-1)                     // even-k step of the output
	kMid := (kFirst + kLast) / 2
	half := (kFirst - kLast) / 2
	k0 := 2 * math.Pi / cfg.CenterWavelength
	// FWHM in k of a source whose FWHM in wavelength is SourceBandwidth.
	fwhmK := 2 * math.Pi * cfg.SourceBandwidth / (cfg.CenterWavelength * cfg.CenterWavelength)

	s := &spectrometer{
		n:         n,
		kappa:     make([]float64, n),
		theta:     make([]float64, n),
		envelope:  make([]float64, n),
		positions: make([]float32, n),
	}
	for i := range n {
		k := 2 * math.Pi / (lambdaMin + float64(i)*dLambda)
		// A depth z gives phase 2kz; measuring z in output bins,
		// z = pi*d/(n*dk), so the phase is 2*pi*k*d/(n*dk). The constant
		// part at kMid is a per-reflector phase offset and is dropped to
		// keep the arguments of cos small.
		s.kappa[i] = 2 * math.Pi * (k - kMid) / (float64(n) * dk)
		u := (k - kMid) / half
		s.theta[i] = cfg.Dispersion * u * u
		x := (k - k0) / fwhmK
		s.envelope[i] = math.Exp(-4 * math.Ln2 * x * x)
	}
	for j := range n {
		// Output sample j sits at k = kFirst - j*dk; find its fractional
		// raw pixel by inverting lambda(i).
		k := kFirst - float64(j)*dk
		p := (2*math.Pi/k - lambdaMin) / dLambda
		s.positions[j] = float32(min(max(p, 0), float64(n-1)))
	}
	return s
}

// QuadraticPhasor returns exp(i*radians*u^2) for n samples with u running
// evenly from -1 to 1 across a spectrum evenly spaced in wavenumber: a
// quadratic (second-order dispersion) phase of `radians` at the band edges.
// QuadraticPhasor(n, -a) compensates a dispersion mismatch of a radians;
// multiply it into ProcessorConfig's SpectralFilter together with a window.
func QuadraticPhasor(n int, radians float64) []complex64 {
	out := make([]complex64, n)
	for j := range out {
		u := 0.0
		if n > 1 {
			u = 2*float64(j)/float64(n-1) - 1
		}
		out[j] = complex64(cmplx.Exp(complex(0, radians*u*u)))
	}
	return out
}

// fastCos is cos to 3e-7 absolute, a few times faster than math.Cos: the
// simulator evaluates it about 10^9 times for a modest ring, and the result
// is quantised to whole counts anyway.
func fastCos(x float64) float64 {
	// Reduce to r in [-pi, pi], then cos r = 1 - 2 sin^2(r/2) with r/2 in
	// [-pi/2, pi/2], where an odd Taylor polynomial to h^11 errs < 6e-8
	// (so cos errs < 3e-7).
	r := x - 2*math.Pi*math.Round(x*(1/(2*math.Pi)))
	h := r / 2
	h2 := h * h
	s := h * (1 + h2*(-1.0/6+h2*(1.0/120+h2*(-1.0/5040+h2*(1.0/362880+h2*(-1.0/39916800))))))
	return 1 - 2*s*s
}
