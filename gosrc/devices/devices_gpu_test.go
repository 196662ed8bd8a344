//go:build gpu

package devices

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vortexgo/vortexgo/gosrc/backend"
)

// TestGPUSelection needs a driver and a device: on the GPU machine "auto"
// must not fall back to the CPU.
func TestGPUSelection(t *testing.T) {
	require.True(t, CUDAAvailable(), "the gpu build expects a CUDA driver and device")
	for _, spec := range []string{"auto", "", "cuda", "cuda:0"} {
		d, err := Get(spec)
		require.NoError(t, err, spec)
		require.Equal(t, backend.CUDA, d.Kind(), spec)
		require.Equal(t, 0, d.Ordinal(), spec)
		require.NotEmpty(t, d.Name())
	}
	all := All()
	require.GreaterOrEqual(t, len(all), 2)
	require.Equal(t, backend.CUDA, all[0].Kind())
	require.Equal(t, backend.CPU, all[len(all)-1].Kind())
	same, err := Get("cuda:0")
	require.NoError(t, err)
	require.Same(t, all[0], same, "one *cuda.Device per ordinal")
}
