//go:build gpu

package process

import (
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/vortexgo/vortexgo/gosrc/cuda"
)

// designedBytes is what the CUDA chain's kernels move through device
// memory per A-scan of n raw samples and m output samples, as designed:
// oct_spectrum reads the raw record (2n) and writes complex64 (8m), the
// in-place inverse FFT reads and writes it (16m: one pass while m fits
// cuFFT's shared-memory kernels), oct_post reads it (8m) and writes float32
// and int8 (5m). The history and mean kernels touch W records per block
// (negligible at thousands of records per block) and are left out, as are
// the resampling and filter tables (cached).
func designedBytes(n, m int) int { return 2*n + 37*m }

// BenchmarkCUDAProcessor measures the processor alone on device-resident
// spectra (8192-record blocks, two slots on two streams, as the engine runs
// it) and reports A-scans/s, the designed bytes per A-scan, the bandwidth
// that implies, and its fraction of the device-to-device copy bandwidth
// measured in the same run (read + write bytes: the memory roofline).
//
//	gpu-build/bin/process.test -test.run '^$' -test.bench CUDAProcessor
func BenchmarkCUDAProcessor(b *testing.B) {
	dev := gpuDevice(b)
	peak := d2dBandwidth(b, dev)
	const records = 8192
	for _, tc := range []struct {
		n         int
		cuFFTOnly bool
	}{{1024, false}, {1376, false}, {1376, true}, {2048, false}, {2752, false}, {2752, true}} {
		n := tc.n
		name := "n=" + strconv.Itoa(n)
		if tc.cuFFTOnly {
			name += "/cufft"
		}
		b.Run(name, func(b *testing.B) {
			rng := rand.New(rand.NewPCG(1, 2))
			c := smallConfig(n, records)
			c.AverageWindow = 64
			c.ResamplingSamples = sortedPositions(rng, n, n)
			c.SpectralFilter = randomFilter(rng, n)
			c.Levels = [2]float32{0, 80}
			c.Slots = 2
			p, err := NewCUDAProcessor(dev, c)
			require.NoError(b, err)
			p.cuFFTOnly = tc.cuFFTOnly
			require.NoError(b, p.Prepare())
			defer p.Close()
			m := p.OutputSamples()
			in := mallocB(b, dev, 2*records*n*2)
			out := mallocB(b, dev, 2*records*m*4)
			out8 := mallocB(b, dev, 2*records*m)
			streams := [2]*cuda.Stream{}
			for i := range streams {
				streams[i], err = dev.CreateStream(0)
				require.NoError(b, err)
				defer streams[i].Close()
			}
			run := func(blocks int) {
				for k := range blocks {
					i := k & 1
					if err := p.Process(i, streams[i], in.Ptr()+uintptr(i*records*n*2), records,
						out.Ptr()+uintptr(i*records*m*4), out8.Ptr()+uintptr(i*records*m)); err != nil {
						b.Fatal(err)
					}
				}
				if err := dev.Synchronize(); err != nil {
					b.Fatal(err)
				}
			}
			run(4) // plans, modules, caches
			b.SetBytes(int64(records * n * 2))
			b.ResetTimer()
			t := time.Now()
			blocks := 0
			for b.Loop() {
				run(8)
				blocks += 8
			}
			rate := float64(blocks*records) / time.Since(t).Seconds()
			moved := rate * float64(designedBytes(n, m))
			b.ReportMetric(rate, "ascans/s")
			b.ReportMetric(float64(designedBytes(n, m)), "bytes/ascan")
			b.ReportMetric(moved/1e9, "GB/s_moved")
			b.ReportMetric(moved/peak, "of_d2d_bw")
			b.ReportMetric(peak/1e9, "d2d_GB/s")
			// Where the time goes: the inverse FFT the processor uses
			// alone on the same batches (in place, two streams), and the
			// roofline with the FFT's own cost measured instead of
			// designed: the elementwise kernels' bytes at copy bandwidth
			// plus the FFT's time. At lengths with a large prime factor
			// (1376 = 2^5 x 43) cuFFT takes several passes and the
			// designed byte count understates its traffic; the one-pass
			// kernel (fft.go) reads and writes each record once.
			var fft float64
			if k := p.state().fft; k != nil {
				fft = onePassSeconds(b, dev, k, m, records, streams)
			} else {
				fft = cuFFTSeconds(b, dev, m, records, streams)
			}
			perAscan := 1 / rate
			bound := fft + float64(2*n+21*m)/peak
			b.ReportMetric(fft*1e9, "ns/ascan_fft")
			b.ReportMetric(fft/perAscan, "fft_share")
			b.ReportMetric(bound/perAscan, "of_fft_roofline")
		})
	}
}

// cuFFTSeconds is the time per A-scan of the processor's inverse FFT alone:
// m-point C2C in place over blocks of records, alternating two streams
// with a plan each, as the processor runs it.
func cuFFTSeconds(b *testing.B, dev *cuda.Device, m, records int, streams [2]*cuda.Stream) float64 {
	buf := mallocB(b, dev, 2*records*m*8)
	var plans [2]*cuda.FFTPlan
	for i := range plans {
		p, err := cuda.NewFFTPlan(dev, m, records, cuda.C2C)
		require.NoError(b, err)
		defer p.Close()
		require.NoError(b, p.SetStream(streams[i]))
		plans[i] = p
	}
	return bestPerRecord(b, dev, records, func(k int) {
		i := k & 1
		ptr := buf.Ptr() + uintptr(i*records*m*8)
		require.NoError(b, plans[i].ExecC2C(ptr, ptr, false))
	})
}

// onePassSeconds is cuFFTSeconds for the processor's one-pass kernel.
func onePassSeconds(b *testing.B, dev *cuda.Device, fft *onePassKernel, m, records int, streams [2]*cuda.Stream) float64 {
	buf := mallocB(b, dev, 2*records*m*8)
	return bestPerRecord(b, dev, records, func(k int) {
		i := k & 1
		require.NoError(b, fft.exec(streams[i], buf.Ptr()+uintptr(i*records*m*8), records))
	})
}

// bestPerRecord runs enqueue for 16 blocks (k = 0..15) five times after a
// warm-up and returns the best time per record.
func bestPerRecord(b *testing.B, dev *cuda.Device, records int, enqueue func(k int)) float64 {
	run := func(blocks int) {
		for k := range blocks {
			enqueue(k)
		}
		require.NoError(b, dev.Synchronize())
	}
	run(4)
	best := 0.0
	for range 5 {
		t := time.Now()
		run(16)
		per := time.Since(t).Seconds() / float64(16*records)
		if best == 0 || per < best {
			best = per
		}
	}
	return best
}

// d2dBandwidth is the device's memory bandwidth as a device-to-device copy
// achieves it (read + write bytes per second), the best of a few 512 MiB
// copies.
func d2dBandwidth(b *testing.B, dev *cuda.Device) float64 {
	const size = 512 << 20
	src, dst := mallocB(b, dev, size), mallocB(b, dev, size)
	s, err := dev.CreateStream(0)
	require.NoError(b, err)
	defer s.Close()
	best := 0.0
	for range 6 {
		t := time.Now()
		for range 4 {
			require.NoError(b, s.CopyDtoD(dst.Ptr(), src.Ptr(), size))
		}
		require.NoError(b, s.Synchronize())
		best = max(best, 4*2*size/time.Since(t).Seconds())
	}
	return best
}

func mallocB(b *testing.B, dev *cuda.Device, n int) *cuda.Buffer {
	buf, err := dev.Malloc(n)
	require.NoError(b, err)
	b.Cleanup(func() { buf.Free() })
	return buf
}

// BenchmarkCUDAProcessorSmallBlocks measures the processor's device time
// per block at the block sizes users pick for latency (256 and 512
// records), on one stream (one slot: each block's kernels follow the last
// block's) and on two, with and without the rolling average, whose
// history chains every slot's blocks in order. It reports the host's time
// to enqueue a block (host_us/block) beside the wall time per block with
// the device drained at the end (us/block): where the second is the
// larger, the device's chain of kernels, not the host, sets the pace.
//
//	gpu-build/bin/process.test -test.run '^$' -test.bench CUDAProcessorSmallBlocks
//
// With VORTEXGO_FUSED_KERNELS=1 in the environment the 1024- and
// 2048-point chains run as one fused kernel (fused.go): run it with and
// without to compare.
func BenchmarkCUDAProcessorSmallBlocks(b *testing.B) {
	dev := gpuDevice(b)
	for _, n := range []int{1024, 2048} {
		for _, records := range []int{256, 512} {
			for _, slots := range []int{1, 2} {
				for _, window := range []int{0, 64} {
					name := "n=" + strconv.Itoa(n) + "/records=" + strconv.Itoa(records) + "/slots=" + strconv.Itoa(slots) + "/window=" + strconv.Itoa(window)
					b.Run(name, func(b *testing.B) {
						rng := rand.New(rand.NewPCG(1, 2))
						c := smallConfig(n, records)
						c.AverageWindow = window
						c.ResamplingSamples = sortedPositions(rng, n, n)
						c.SpectralFilter = randomFilter(rng, n)
						c.Levels = [2]float32{0, 80}
						c.Slots = slots
						p, err := NewCUDAProcessor(dev, c)
						require.NoError(b, err)
						require.NoError(b, p.Prepare())
						defer p.Close()
						m := p.OutputSamples()
						in := mallocB(b, dev, slots*records*n*2)
						out8 := mallocB(b, dev, slots*records*m)
						streams := make([]*cuda.Stream, slots)
						for i := range streams {
							streams[i], err = dev.CreateStream(0)
							require.NoError(b, err)
							defer streams[i].Close()
						}
						var host time.Duration
						run := func(blocks int) {
							t := time.Now()
							for k := range blocks {
								i := k % slots
								if err := p.Process(i, streams[i], in.Ptr()+uintptr(i*records*n*2), records,
									0, out8.Ptr()+uintptr(i*records*m)); err != nil {
									b.Fatal(err)
								}
							}
							host += time.Since(t)
							if err := dev.Synchronize(); err != nil {
								b.Fatal(err)
							}
						}
						run(64) // plans, modules, graphs
						host = 0
						b.ResetTimer()
						t := time.Now()
						blocks := 0
						for b.Loop() {
							run(256)
							blocks += 256
						}
						wall := time.Since(t)
						b.ReportMetric(float64(wall.Microseconds())/float64(blocks), "us/block")
						b.ReportMetric(float64(host.Microseconds())/float64(blocks), "host_us/block")
					})
				}
			}
		}
	}
}
