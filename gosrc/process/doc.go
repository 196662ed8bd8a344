// Package process turns raw OCT spectra into A-scans: vortex's OCT
// processor, on the CPU (CPUProcessor) and on CUDA (CUDAProcessor).
//
// # The processing chain
//
// For every record (raw spectrum of SamplesPerRecord uint16 values) of a
// block, in this order, each step optional as Config says:
//
//  1. Background (DC) subtraction, AverageWindow = W > 0: the record minus
//     the per-sample mean of W consecutive records of the same block, the
//     window as centred on the record as the block allows: records
//     [s, s+W) with s = clamp(r - W/2, 0, R - W), where R is the number of
//     records in the call; when R < W the window is the whole block. Sums
//     are exact integers and the mean is float32(sum)/float32(W). The
//     estimate never reaches across blocks, so slots are independent.
//  2. Resampling, ResamplingSamples = p (length M): output sample j is the
//     linear interpolation of the spectrum at fractional position p[j]:
//     x[i] + f*(x[i+1]-x[i]) with i = min(floor(p[j]), N-2), f = p[j]-i.
//     Without it, M = N and the spectrum passes through.
//  3. Spectral filter, SpectralFilter = h (length M, complex): the
//     spectrum is multiplied by h (a window times a dispersion phasor),
//     making it complex.
//  4. EnableIFFT: the inverse DFT of length M (a power of two), normalised
//     by 1/M: y[n] = (1/M) * sum_j X[j] exp(+2*pi*i*j*n/M). A fringe
//     cos(2*pi*d*j/M) of amplitude A thus gives peaks of A/2 at bins d and
//     M-d.
//  5. Per output value: the real part, or the magnitude |y|
//     (EnableMagnitude); squared (EnableSquare: |y|^2 or Re(y)^2); in
//     decibels (EnableLog10: 20*log10 of the amplitude, which is 10*log10
//     of the square, so EnableSquare does not change it; computed as
//     10*log10(max(P, 2^-126)) with P the power |y|^2 or Re(y)^2, which
//     keeps outputs finite, >= -379 dB). The result is written as float32
//     (out), and, when requested, as int8 (outInt8): Levels [lo, hi] map
//     linearly onto -128..127, rounded to nearest even and clamped.
//
// Both processors implement the engine's Processor interface and compute
// the same values: bit for bit up to the FFT, then within float32 rounding.
package process
