// Package process turns raw OCT spectra into A-scans: vortex's OCT
// processors, on the CPU (CPUProcessor) and on CUDA (CUDAProcessor),
// computing what vortex 0.5.1's CPUProcessor and CUDAProcessor compute.
//
// # The processing chain
//
// A block is records x SamplesPerRecord x ChannelsPerSample uint16 values
// (the channels interleaved); Channel selects the one processed, read as
// int16 with InterpretAsSigned. For every record, in this order, each step
// optional as Config says (N = SamplesPerRecord, M = OutputSamples()):
//
//  1. Rolling average, AverageWindow = W > 0: before a block is processed,
//     its last min(records, W) records enter a history of the last W
//     records, carried across blocks (and across slots, in the order
//     Process is called); every record of the block is then the record
//     minus the mean of the history (its count records so far, at most W,
//     this block's included), in float32. The mean is the exact integer
//     sum divided by the count, rounded once to float32.
//  2. Resampling, ResamplingSamples = p (length M): vortex's linear
//     interpolation, x[b]*(1-f) + x[b+1]*f with b = floor(p[j]) and
//     f = p[j]-b in float32 (both samples N-1 where p[j] = N-1), the two
//     products and their sum each rounded to float32 (no fused
//     multiply-add). Without it, M = N.
//  3. Spectral filter, SpectralFilter = h (length M, complex): the
//     spectrum times h, in float32.
//  4. EnableIFFT: the unnormalised inverse DFT of length M, any length:
//     y[n] = sum_j X[j] exp(+2*pi*i*j*n/M); the normalisation factor 1/M
//     is applied in step 5 (factor 1 without the FFT).
//  5. Output, vortex's expressions, with a = factor*|y| (EnableMagnitude)
//     or factor*Re(y):
//     EnableLog10: 10*log10(a), or 20*log10(a) with EnableSquare (so the
//     default, all enabled, is 20*log10|y/M|); otherwise EnableSquare:
//     (factor*|y|)^2, the magnitude whatever EnableMagnitude says, as in
//     vortex; otherwise a. log10 of zero is -Inf and of a negative real part
//     NaN, as in vortex. This value is the float32 output.
//     The int8 output is that value, or with Levels [lo, hi] set the value
//     mapped linearly so lo -> -128 and hi -> 127 (scale 255/(hi-lo)),
//     rounded half away from zero and clipped to [-128, 127], NaN as 0:
//     vortex's output (its processors' output type is int8). Levels unset
//     (vortex's default) is a direct cast.
//
// The CPU processor computes steps 1-3 in vortex's float32 arithmetic and
// steps 4-5 in float64 (gonum's FFT); the CUDA processor computes steps 1-3
// bit for bit as the CPU and steps 4-5 in float32 (cuFFT). Against vortex's
// CPUProcessor (FFTW, float32), the int8 outputs are equal except for
// values within 5e-3 of a step from a rounding boundary (measured: 2e-3)
// and bins 80 dB or more below their record's peak, where float32 FFT
// error decides (testdata, written by scripts/golden/process_golden.py
// from vortex itself): about 1 value in 2,000 with the FFT, none without.
//
// # Where vortex's two processors differ
//
// With Levels, EnableLog10 and EnableIFFT together, vortex's CPUProcessor
// adds log10(1/M) to the level-mapped value without the decibel factor and
// the scale (cpu.hpp), while its CUDAProcessor maps the normalised
// decibels (cuda.cu). Both processors here follow the CUDAProcessor, the
// documented expression; TestGoldenVortexCPU shows vortex's CPU output is
// the other expression. vortex's CUDAProcessor's mean is a float32 running
// sum (equal to the exact mean while sums stay below 2^24), its
// CPUProcessor's an xtensor mean; both processors here use the exact sum.
//
// Not implemented: vortex's dynamic resampling from a k-clock channel
// (CUDAProcessorConfig.clock_channel) and next()'s append_history=False.
package process
