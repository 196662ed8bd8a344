package process

import (
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// BenchmarkCPUProcessor measures the CPU chain (average, resampling,
// filter or none, inverse FFT, dB, int8 through levels) on 1024-record
// blocks at 1376 samples (vortex's Axsun100k) next to 1024 and 2048.
func BenchmarkCPUProcessor(b *testing.B) {
	const records = 1024
	for _, filter := range []bool{true, false} {
		for _, n := range []int{1024, 1376, 2048} {
			b.Run("n="+strconv.Itoa(n)+"/filter="+strconv.FormatBool(filter), func(b *testing.B) {
				rng := rand.New(rand.NewPCG(1, 2))
				c := smallConfig(n, records)
				c.AverageWindow = 64
				c.ResamplingSamples = sortedPositions(rng, n, n)
				if filter {
					c.SpectralFilter = randomFilter(rng, n)
				}
				c.Levels = [2]float32{0, 80}
				p, err := NewCPUProcessor(c)
				require.NoError(b, err)
				require.NoError(b, p.Prepare())
				defer p.Close()
				h := newHostBuffers(b, n, n, records)
				copy(h.raw, randomRaw(rng, len(h.raw), false))
				b.SetBytes(int64(records * n * 2))
				for b.Loop() {
					if err := p.Process(0, h.s, h.in.Ptr(), records, h.out.Ptr(), h.out8.Ptr()); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.N*records)/b.Elapsed().Seconds(), "ascans/s")
			})
		}
	}
}
