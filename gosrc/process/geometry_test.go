package process

import (
	"fmt"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/vortexgo/vortexgo/kernels"
)

// TestSpectrumRecordsPer checks oct_spectrum's split of a block's records
// over its threads: one record a thread until a thread per value fills
// the device, then more, never past spectrumRecordsPerThread, and the
// grid it gives covers every record within CUDA's gridDim.y.
func TestSpectrumRecordsPer(t *testing.T) {
	tests := []struct {
		records, m, want int
	}{
		{1, 1024, 1},
		{256, 1024, 1}, // a user's small block: 256 rows of threads, not 32
		{256, 2048, 1},
		{512, 1024, 1},
		{512, 2048, 3},
		{1024, 1024, 3},
		{2048, 2048, 8},
		{8192, 1024, 8}, // large blocks keep the tables' reads amortised
		{1 << 20, 64, 8},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%dx%d", tc.records, tc.m), func(t *testing.T) {
			got := spectrumRecordsPer(tc.records, tc.m)
			assert.Equal(t, tc.want, got)
			rows := min(ceilDiv(tc.records, got), maxGridY)
			assert.GreaterOrEqual(t, rows*got, min(tc.records, maxGridY*got), "the grid's rows cover the records (the kernel strides past gridDim.y)")
		})
	}
}

// TestHistoryMeanRowsMatchPTX checks that oct_history_mean's shared
// partial sums hold meanRows rows of 32 int64 (OCT_MEAN_ROWS in
// kernels/oct.cu): a launch with more rows than the array would write past
// it, and the tree reduction needs a power of two.
func TestHistoryMeanRowsMatchPTX(t *testing.T) {
	ptx, err := kernels.PTX("oct")
	require.NoError(t, err)
	m := regexp.MustCompile(`\.shared \.align 8 \.b8 \S*oct_history_mean\S*\[(\d+)\]`).FindSubmatch(ptx)
	require.NotNil(t, m, "oct_history_mean's shared array in oct.ptx")
	assert.Equal(t, fmt.Sprint(meanRows*32*8), string(m[1]))
	assert.Zero(t, meanRows&(meanRows-1), "meanRows is a power of two")
	assert.LessOrEqual(t, meanRows*32, 1024, "a block of at most 1024 threads")
}

// TestFusedKernelsMatchPTX checks fusedKernels against the PTX: each
// length's module holds its one entry, launched with m / 4 threads, its
// shared memory two buffers of m complex64 (the Stockham passes'
// ping-pong), one record a block.
func TestFusedKernelsMatchPTX(t *testing.T) {
	require.NotEmpty(t, fusedKernels)
	for m, f := range fusedKernels {
		t.Run(fmt.Sprint(m), func(t *testing.T) {
			assert.Equal(t, m, f.m)
			assert.Zero(t, m&(m-1), "m is a power of two")
			entries, err := kernels.Entries(f.module())
			require.NoError(t, err)
			assert.Equal(t, []string{f.entry()}, entries)
			ptx, err := kernels.PTX(f.module())
			require.NoError(t, err)
			assert.Regexp(t, fmt.Sprintf(`\.maxntid %d, 1, 1`, m/4), string(ptx))
			assert.Equal(t, uint32(m/4), f.block().X)
			assert.Regexp(t, fmt.Sprintf(`\.shared \.align \d+ \.b8 \S+\[%d\]`, 2*m*8), string(ptx))
			assert.Equal(t, uint32(1001), f.grid(1001).X)
		})
	}
}

// TestFusedChoice covers fusable and FusedEnv's values.
func TestFusedChoice(t *testing.T) {
	clock := 0
	for _, tc := range []struct {
		name string
		m    int
		mod  func(*Config)
		want bool
	}{
		{"1024", 1024, func(*Config) {}, true},
		{"2048", 2048, func(*Config) {}, true},
		{"1376: the one-pass FFT", 1376, func(*Config) {}, false},
		{"no inverse FFT", 1024, func(c *Config) { c.EnableIFFT = false }, false},
		{"k-clock", 1024, func(c *Config) { c.ClockChannel = &clock }, false},
		{"1024 x 1024: the largest block", 1024, func(c *Config) { c.AscansPerBlock = 1024 }, true},
		{"1025 x 1024", 1024, func(c *Config) { c.AscansPerBlock = 1025 }, false},
		{"512 x 2048", 2048, func(c *Config) { c.AscansPerBlock = 512 }, true},
		{"8192 x 2048", 2048, func(c *Config) { c.AscansPerBlock = 8192 }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := smallConfig(tc.m, 8)
			tc.mod(&c)
			assert.Equal(t, tc.want, fusable(&c, tc.m))
		})
	}
	for _, tc := range []struct {
		env     string
		want    bool
		invalid bool
	}{{"", true, false}, {"0", false, false}, {"1", true, false}, {"on", false, true}} {
		t.Run("env="+tc.env, func(t *testing.T) {
			t.Setenv(FusedEnv, tc.env)
			got, err := fusedEnabled()
			if tc.invalid {
				require.ErrorContains(t, err, FusedEnv)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}
