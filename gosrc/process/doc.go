// Package process turns raw OCT spectra into A-scans: vortex's OCT
// processors, on the CPU (CPUProcessor) and on CUDA (CUDAProcessor),
// computing what vortex 0.5.1's CPUProcessor and CUDAProcessor compute.
//
// # The processing chain
//
// A block is records x SamplesPerRecord x ChannelsPerSample uint16 values
// (the channels interleaved); Channel selects the one processed, read as
// int16 with InterpretAsSigned (as is the clock channel). For every record,
// in this order, each step optional as Config says (N = SamplesPerRecord,
// M = OutputSamples()):
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
//     With a clock instead, ClockChannel = k (vortex's clock_channel,
//     dynamic resampling; M = N; it excludes ResamplingSamples), every
//     record gets its own positions from channel k's samples c, read raw
//     (the average is the processed channel's):
//     a. c minus its mean (the exact integer sum over N);
//     b. its analytic signal z: the forward DFT, bins 0 and N/2 (integer
//     division) kept, bins 1..N/2-1 doubled, the others zeroed, the
//     inverse DFT over N (for odd N vortex's window leaves bin (N-1)/2
//     undoubled; so does this one);
//     c. the unwrapped phase: phase[0] = 0, phase[i] = phase[i-1] +
//     arg z[i] - arg z[i-1] wrapped into [-pi, pi]; and its maximum P;
//     d. for output j, the linear phase q = P*j/N, b = the index thrust's
//     lower_bound returns on phase (the first sample whose phase is not
//     below q while the phase ascends), at most N-1, after = min(b+1,
//     N-1), r = q - phase[b] (<= 0 on an ascending phase), and the output
//     x[b]*(1-r) + x[after]*r, in float32 as above.
//     These are vortex's expressions (cuda.cu's resample_phase). Two of
//     them are not the textbook interpolation: r is a phase difference
//     in radians, not a fraction of a sample, and it reaches back from b
//     along the slope of [b, b+1]; the estimate is exact only where the
//     clock advances 1 radian a sample, and the output jumps where q
//     crosses a sample's phase unless it does. vortexgo keeps them, so
//     its A-scans are vortex's. The CPU processor computes a-d in float64
//     (gonum's FFT), the CUDA processor in float32 (cuFFT, atan2f, a
//     scan per record), so a query within float32 error of a sample's
//     phase may take the neighbouring interval on one of them: the two
//     agree within 2% of a record's peak (tested) rather than to rounding.
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
// bit for bit as the CPU and steps 4-5 in float32 (cuFFT, or at lengths
// such as 1376 = 2^5 x 43 a one-pass kernel of kernels/fft.cu, whose error
// is of cuFFT's order: within 2e-6 of a record's peak). At 1024 and 2048
// points without a k-clock the CUDA processor runs steps 1-5 as one kernel
// of kernels/fused.cuh (fused.go; VORTEXGO_FUSED_KERNELS=0 turns it off):
// steps 1-3 and 5 the same per value, the FFT a Stockham radix-4 one in
// shared memory, within the same bounds of the CPU's. Against vortex's
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
// vortex has clock_channel on its CUDAProcessor only; both processors
// here compute it. vortex's CUDA kernel keeps the clock's phase
// differences in the buffer that holds the processed channel once it is
// averaged or read as signed, so with clock_channel and AverageWindow > 0
// or InterpretAsSigned vortex resamples those differences instead of the
// record; both processors here resample the record. Its clock mean is a
// float32 sum; both processors here use the exact sum. Where vortex's
// lower_bound finds no sample (a phase that is not ascending) it reads
// past the record; both processors here take sample N-1.
//
// vortex's next(..., append_history=False) is ProcessHistory: the block
// is processed against the current history without entering it.
package process
