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
