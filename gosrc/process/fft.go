package process

import (
	"math"
	"math/bits"
)

// fftPlan is an in-place radix-2 decimation-in-time FFT of a power-of-two
// length. It exists so the CPU backend needs no cgo and no third-party
// module; the CUDA backend uses cuFFT.
type fftPlan struct {
	n   int
	rev []int32     // bit-reversal permutation
	tw  []complex64 // exp(+2*pi*i*k/n), k < n/2: the inverse transform's twiddles
}

// newFFTPlan prepares transforms of length n, a power of two >= 1.
func newFFTPlan(n int) *fftPlan {
	p := &fftPlan{n: n, rev: make([]int32, n), tw: make([]complex64, n/2)}
	shift := bits.UintSize - bits.TrailingZeros(uint(n))
	for i := range n {
		if n > 1 {
			p.rev[i] = int32(bits.Reverse(uint(i)) >> shift)
		}
	}
	for k := range p.tw {
		// Twiddles in float64, rounded once: the FFT's error is then that of
		// its float32 butterflies only.
		s, c := math.Sincos(2 * math.Pi * float64(k) / float64(n))
		p.tw[k] = complex(float32(c), float32(s))
	}
	return p
}

// inverse replaces x (len n) by its unnormalised inverse DFT,
// x[m] = sum_j x[j] exp(+2*pi*i*j*m/n).
func (p *fftPlan) inverse(x []complex64) {
	n := p.n
	x = x[:n]
	for i, r := range p.rev {
		if int(r) > i {
			x[i], x[r] = x[r], x[i]
		}
	}
	for size := 2; size <= n; size <<= 1 {
		half, step := size>>1, n/size
		for start := 0; start < n; start += size {
			a := x[start : start+half]
			b := x[start+half : start+size]
			for k := range a {
				t := p.tw[k*step] * b[k]
				b[k] = a[k] - t
				a[k] += t
			}
		}
	}
}
