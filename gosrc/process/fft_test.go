package process

import (
	"fmt"
	"math"
	"math/cmplx"
	"regexp"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/vortexgo/vortexgo/kernels"
)

// TestOnePassFFTTableMatchesPTX checks onePassFFTs against kernels/fft.ptx,
// so a geometry edited on one side only fails here, not on the GPU: each
// length has its entry point, launched with the block the kernel was
// compiled for (.maxntid) and the records per block its shared transpose
// holds (S x P x (R+1) complex64), and no entry point lacks a length.
func TestOnePassFFTTableMatchesPTX(t *testing.T) {
	entries, err := kernels.Entries(fftModule)
	require.NoError(t, err)
	ptx, err := kernels.PTX(fftModule)
	require.NoError(t, err)
	text := string(ptx)
	require.Len(t, entries, len(onePassFFTs), "one table row per entry point")
	for n, f := range onePassFFTs {
		t.Run(strconv.Itoa(n), func(t *testing.T) {
			assert.Equal(t, n, f.n())
			assert.Equal(t, 1, f.p%2, "P is odd")
			assert.Equal(t, 0, f.r&(f.r-1), "R is a power of two")
			assert.Contains(t, entries, f.entry())
			// The entry's body: from its .entry line to the next one.
			start := regexp.MustCompile(`\.entry ` + f.entry() + `\(`).FindStringIndex(text)
			require.NotNil(t, start)
			body := text[start[0]:]
			if next := regexp.MustCompile(`\.entry `).FindAllStringIndex(body, 2); len(next) == 2 {
				body = body[:next[1][0]]
			}
			assert.Regexp(t, fmt.Sprintf(`\.maxntid %d, 1, 1`, f.threads), body)
			assert.Regexp(t, fmt.Sprintf(`\.shared \.align 8 \.b8 \S+\[%d\]`, f.records*f.p*(f.r+1)*8), body)
			assert.Equal(t, uint32(ceilDiv(1000, f.records)), f.grid(1000).X)
			assert.Equal(t, uint32(f.threads), f.block().X)
		})
	}
}

// TestOnePassFFTTwiddles checks the roots-of-unity table: unit modulus,
// exp(+2 pi i j / n) within float32 rounding, and the inverse direction.
func TestOnePassFFTTwiddles(t *testing.T) {
	for n, f := range onePassFFTs {
		tw := f.twiddles()
		require.Len(t, tw, 2*n)
		for j := range n {
			w := complex(float64(tw[2*j]), float64(tw[2*j+1]))
			want := cmplx.Exp(complex(0, 2*math.Pi*float64(j)/float64(n)))
			require.InDelta(t, 0, cmplx.Abs(w-want), 1e-7, "n=%d j=%d", n, j)
		}
		require.Greater(t, tw[2*(n/4)+1], float32(0.99), "n=%d: j=n/4 is +i (the inverse transform's sign)", n)
	}
}

// TestLoadOnePassFFTLeavesOtherLengthsToCuFFT: a length without a kernel
// needs no device and no module.
func TestLoadOnePassFFTLeavesOtherLengthsToCuFFT(t *testing.T) {
	for _, m := range []int{1, 77, 1000, 1024, 1375, 2048, 4096} {
		k, err := loadOnePassFFT(nil, m)
		require.NoError(t, err)
		require.Nil(t, k, "m=%d", m)
	}
}
