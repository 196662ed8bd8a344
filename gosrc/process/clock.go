package process

import (
	"math"

	"gonum.org/v1/gonum/dsp/fourier"
)

// This file is vortex's dynamic resampling from a k-clock channel
// (Config.ClockChannel; vortex's CUDAProcessorConfig.clock_channel) on the
// CPU. doc.go defines it; kernels/oct.cu's oct_clock_* kernels and
// oct_spectrum compute the same on CUDA in float32.

// lowerBound is the binary search vortex's kernel uses (thrust's
// sequential lower_bound): on ascending phase it returns the first index
// whose value is not below q, len(phase) when none is. On a phase that is
// not ascending (a noisy or missing clock) it still returns what that
// search returns, so the CPU and CUDA processors pick the same sample.
func lowerBound[T float32 | float64](phase []T, q T) int {
	start, n := 0, len(phase)
	for start < n {
		i := (start + n) / 2
		if phase[i] < q {
			start = i + 1
		} else {
			n = i
		}
	}
	return start
}

// clockScratch is one goroutine's working memory for the clock's phase.
type clockScratch struct {
	rfft  *fourier.FFT      // forward, real input: the clock's coefficients 0..N/2
	cfft  *fourier.CmplxFFT // inverse: the analytic signal
	clock []int32           // the clock record's samples, as read
	re    []float64         // the clock record, mean removed
	half  []complex128      // its coefficients 0..N/2
	z     []complex128      // the windowed spectrum, then the analytic signal
	phase []float64         // the unwrapped phase
	res   resampling        // the record's interpolation tables
}

func newClockScratch(n int) *clockScratch {
	return &clockScratch{
		rfft: fourier.NewFFT(n), cfft: fourier.NewCmplxFFT(n),
		clock: make([]int32, n), re: make([]float64, n), half: make([]complex128, n/2+1), z: make([]complex128, n),
		phase: make([]float64, n),
		res: resampling{before: make([]int32, n), after: make([]int32, n),
			wBefore: make([]float32, n), wAfter: make([]float32, n)},
	}
}

// tables computes one record's interpolation tables from its N clock
// samples (cs.clock, or clock when not nil), in float64 until the
// weights:
//
//  1. the clock minus its mean (the exact integer sum over N);
//  2. its analytic signal: the forward DFT, bin 0 and bin N/2 (integer
//     division) kept, bins 1..N/2-1 doubled and the rest zeroed, the
//     inverse DFT divided by N (vortex's window, which for odd N keeps
//     bin (N-1)/2 undoubled);
//  3. the phase differences of successive samples, wrapped into
//     [-pi, pi], 0 for sample 0, summed into the unwrapped phase, and its
//     maximum;
//  4. for output sample j, the phase q = max*j/N, b = lowerBound(phase, q)
//     (at most N-1: vortex would read past the record), after = b+1 (at
//     most N-1), and vortex's weights 1-r and r for r = q - phase[b], a
//     difference of phases in radians (see doc.go).
func (cs *clockScratch) tables(clock []int32) *resampling {
	if clock == nil {
		clock = cs.clock
	}
	n := len(cs.re)
	var sum int64
	for _, v := range clock[:n] {
		sum += int64(v)
	}
	mean := float64(sum) / float64(n)
	for i, v := range clock[:n] {
		cs.re[i] = float64(v) - mean
	}
	cs.rfft.Coefficients(cs.half, cs.re)
	for k := range cs.z {
		switch {
		case k == 0 || k == n/2:
			cs.z[k] = cs.half[k]
		case k < n/2:
			cs.z[k] = 2 * cs.half[k]
		default:
			cs.z[k] = 0
		}
	}
	// The analytic signal is this over N: a positive scale the angles
	// below do not see.
	cs.cfft.Sequence(cs.z, cs.z)
	prev, acc, top := 0.0, 0.0, 0.0 // phase[0] = 0, so the maximum is at least 0
	for i, z := range cs.z {
		a := math.Atan2(imag(z), real(z))
		if i > 0 {
			d := a - prev
			if d > math.Pi {
				d -= 2 * math.Pi
			} else if d < -math.Pi {
				d += 2 * math.Pi
			}
			acc += d
		}
		prev = a
		cs.phase[i] = acc
		top = max(top, acc)
	}
	r := &cs.res
	for j := range r.before {
		q := top * float64(j) / float64(n)
		b := min(lowerBound(cs.phase, q), n-1)
		ratio := q - cs.phase[b]
		r.before[j], r.after[j] = int32(b), int32(min(b+1, n-1))
		r.wBefore[j], r.wAfter[j] = float32(1-ratio), float32(ratio)
	}
	return r
}
