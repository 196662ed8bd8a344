package process

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// BenchmarkCPUProcessor measures the CPU chain on the simulated phantom:
// 1024 samples, 1024-record blocks, background over the block, resampling,
// filter, inverse FFT, dB and int8.
func BenchmarkCPUProcessor(b *testing.B) {
	const n, ascans, bscans = 1024, 64, 16
	const records = ascans * bscans
	a, raw := simulatedBlock(b, n, ascans, bscans)
	c := phantomConfig(b, a, records, true, true)
	p, err := NewCPUProcessor(c)
	require.NoError(b, err)
	require.NoError(b, p.Prepare())
	defer p.Close()
	h := newHostBuffers(b, n, n, records)
	copy(h.raw, raw)
	b.SetBytes(int64(records * n * 2))
	for b.Loop() {
		if err := p.Process(0, h.s, h.in.Ptr(), records, h.out.Ptr(), h.out8.Ptr()); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*records)/b.Elapsed().Seconds(), "ascans/s")
}

// BenchmarkFFT1024 measures one inverse transform of 1024 points.
func BenchmarkFFT1024(b *testing.B) {
	p := newFFTPlan(1024)
	x := make([]complex64, 1024)
	for b.Loop() {
		p.inverse(x)
	}
}
