package endpoint

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vortexgo/vortexgo/gosrc/backend"
)

func TestFormatOnOwnStream(t *testing.T) {
	for _, tc := range []struct {
		env              string
		records, samples int
		blocksPerSlot    int
		own              bool
		bad              bool
		oneSlot          bool
	}{
		{"", 256, 1024, 0, true, false, false},
		{"", 256, 2048, 0, false, false, false}, // 1 MiB of uint16: the copy, not the host, sets the pace
		{"", 511, 1024, 16, true, false, false},
		{"", 512, 1024, 16, false, false, false},
		{"", 512, 1024, 3, false, false, false},
		{"", 512, 1024, 2, true, false, false}, // vortex's 4 blocks on 2 slots: the round trip sets the pace
		{"", 256, 2048, 2, true, false, false},
		{"", 1023, 1024, 1, true, false, false},
		{"", 1024, 1024, 2, false, false, false},
		{"auto", 8192, 1024, 2, false, false, false},
		{"endpoint", 8192, 2048, 16, true, false, false},
		{"slot", 256, 1024, 2, false, false, false},
		{"Slot", 256, 1024, 2, false, true, false},
		{"1", 256, 1024, 0, false, true, false},
		// one slot: the endpoint's stream up to 2^21 samples (the slot stream would hold the
		// next block's processing behind the formatting)
		{"", 512, 1024, 4, true, false, true},
		{"", 1024, 1024, 4, true, false, true},
		{"", 1024, 2048, 4, true, false, true},
		{"", 2048, 1024, 32, true, false, true},
		{"", 2049, 1024, 4, false, false, true},
		{"", 8192, 1024, 4, false, false, true},
		{"", 8192, 2048, 2, false, false, true},
		{"slot", 512, 1024, 4, false, false, true},
	} {
		t.Run(fmt.Sprintf("%q/%dx%d/%d per slot/one slot %v", tc.env, tc.records, tc.samples, tc.blocksPerSlot, tc.oneSlot), func(t *testing.T) {
			t.Setenv("VORTEXGO_FORMAT_STREAM", tc.env) // read live: the C environment, as Python's os.environ writes it
			own, err := formatOnOwnStream(tc.records, tc.samples, fewBlocksPerSlot(tc.blocksPerSlot), tc.oneSlot)
			if tc.bad {
				require.ErrorIs(t, err, backend.ErrInvalid)
				assert.Contains(t, err.Error(), "VORTEXGO_FORMAT_STREAM=")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.own, own)
		})
	}
}
