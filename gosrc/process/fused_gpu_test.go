//go:build gpu

package process

import (
	"math"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestFusedKernelMatchesChain runs the whole chain at each fused length
// with the fused kernel and with the three kernels (unfused), over
// configurations that take each branch of the kernel's per-value steps
// (resampling, the average, the filter, signed samples, a second channel,
// each step-5 form), the blocks on alternating slots and streams with
// short ones among them, and checks both against the CPU processor as
// TestCUDAMatchesCPU does; it logs how far the two GPU outputs are apart.
func TestFusedKernelMatchesChain(t *testing.T) {
	t.Setenv(FusedEnv, "1")
	dev := gpuDevice(t)
	rng := rand.New(rand.NewPCG(7, 8))
	for n := range fusedKernels {
		for _, tc := range []struct {
			name string
			mod  func(*Config)
		}{
			{"plain", func(*Config) {}},
			{"resampled, filtered, averaged, levels", func(c *Config) {
				c.AverageWindow = 3
				c.ResamplingSamples = sortedPositions(rng, n, n)
				c.SpectralFilter = randomFilter(rng, n)
				c.Levels = [2]float32{0, 80}
			}},
			{"signed, second of two channels, averaged", func(c *Config) {
				c.InterpretAsSigned, c.ChannelsPerSample, c.Channel, c.AverageWindow = true, 2, 1, 50
			}},
			{"magnitude only", func(c *Config) { c.EnableLog10, c.EnableSquare = false, false }},
			{"square, no log", func(c *Config) { c.EnableLog10, c.EnableMagnitude = false, false }},
			{"real part", func(c *Config) { c.EnableLog10, c.EnableSquare, c.EnableMagnitude = false, false, false }},
		} {
			t.Run(strconv.Itoa(n)+"/"+tc.name, func(t *testing.T) {
				blocks := []int{40, 7, 40, 1, 33}
				c := smallConfig(n, 40)
				tc.mod(&c)
				require.NoError(t, c.Validate())
				raw := randomRaw(rng, 121*n*c.Channels(), c.InterpretAsSigned)
				want, want8 := cpuBlocks(t, c, raw, blocks)
				var fused, unfused bool
				got, got8 := gpuBlocksSet(t, dev, c, raw, blocks, func(*CUDAProcessor) {},
					func(p *CUDAProcessor) { fused = p.state().fused != nil })
				three, three8 := gpuBlocksSet(t, dev, c, raw, blocks, func(p *CUDAProcessor) { p.unfused = true },
					func(p *CUDAProcessor) { unfused = p.state().fused == nil })
				require.True(t, fused, "the fused kernel ran")
				require.True(t, unfused, "the three kernels ran")
				compareOutputs(t, &c, want, got, want8, got8)
				compareOutputs(t, &c, want, three, want8, three8)
				diff, differ := 0.0, 0
				for i := range got {
					if !math.IsNaN(float64(got[i])) {
						diff = max(diff, math.Abs(float64(got[i]-three[i])))
					}
					if got8[i] != three8[i] {
						differ++
					}
				}
				t.Logf("n=%d %s: largest |fused - three kernels| %.3g, int8 values that differ %d of %d", n, tc.name, diff, differ, len(got8))
			})
		}
	}
}

// TestFusedKernelChoice: the fused kernel runs only where FusedEnv asks
// for it, the length has one and the chain has the inverse FFT and no
// k-clock; a processor that runs it holds no cuFFT plan; a bad value of
// the variable fails Prepare naming it.
func TestFusedKernelChoice(t *testing.T) {
	dev := gpuDevice(t)
	for _, tc := range []struct {
		name, env string
		n         int
		mod       func(*Config)
		fused     bool
	}{
		{"asked, 1024", "1", 1024, func(*Config) {}, true},
		{"asked, 2048", "1", 2048, func(*Config) {}, true},
		{"not asked: the default", "", 1024, func(*Config) {}, true},
		{"off", "0", 2048, func(*Config) {}, false},
		{"no kernel for 1376", "1", 1376, func(*Config) {}, false},
		{"without the inverse FFT", "1", 1024, func(c *Config) { c.EnableIFFT = false }, false},
		{"with a k-clock", "1", 1024, func(c *Config) { ch := 1; c.ChannelsPerSample, c.ClockChannel = 2, &ch }, false},
		{"1024 x 1024: the largest fused block", "1", 1024, func(c *Config) { c.AscansPerBlock = 1024 }, true},
		{"1025 x 1024: the three kernels", "1", 1024, func(c *Config) { c.AscansPerBlock = 1025 }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(FusedEnv, tc.env)
			c := smallConfig(tc.n, 16)
			tc.mod(&c)
			p, err := NewCUDAProcessor(dev, c)
			require.NoError(t, err)
			require.NoError(t, p.Prepare())
			defer func() { require.NoError(t, p.Close()) }()
			st := p.state()
			require.Equal(t, tc.fused, st.fused != nil)
			if tc.fused {
				for _, sl := range st.slots {
					require.Nil(t, sl.plan, "no cuFFT plan beside the fused kernel")
				}
			}
		})
	}
	t.Run("bad value", func(t *testing.T) {
		t.Setenv(FusedEnv, "yes")
		p, err := NewCUDAProcessor(dev, smallConfig(1024, 16))
		require.NoError(t, err)
		err = p.Prepare()
		require.ErrorContains(t, err, FusedEnv)
		require.NoError(t, p.Close())
	})
}
