package pyapi

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestProcessors: each kind on its device from its config record and
// arrays; change and the standalone next; the calls a NullProcessor lacks.
func TestProcessors(t *testing.T) {
	dev, err := GetDevice("cpu")
	require.NoError(t, err)
	const n, R = 16, 2
	config := `{"SamplesPerRecord": 16, "AscansPerBlock": 2, "Slots": 1}`
	_, err = NewCUDAProcessor(dev, config, 0, 0, 0, 0)
	require.ErrorContains(t, err, "ValueError: CUDAProcessor on device")
	_, err = NewCPUProcessor(dev, `{"SamplesPerRecord": 16, "Bogus": 1}`, 0, 0, 0, 0)
	require.ErrorContains(t, err, "Bogus")
	res := []float32{0, 1.5, 3, 4.5}
	p, err := NewCPUProcessor(dev, config, addr(res), len(res), 0, 0)
	require.NoError(t, err)
	require.Equal(t, len(res), p.OutputSamples(), "the resampling positions crossed")
	to, err := NewCPUProcessor(dev, config, 0, 0, 0, 0)
	require.NoError(t, err)
	require.NoError(t, p.Change(to))
	require.Equal(t, n, p.OutputSamples())
	require.NoError(t, to.Close())

	raw := make([]uint16, R*n)
	out := make([]float32, R*n)
	require.NoError(t, p.Next(addr(raw), 0, addr(out), 0, R, true, true))
	require.ErrorContains(t, p.Next(addr(raw), 0, 0, 0, R, true, true), "expected an input and an output")
	require.NoError(t, p.Close())

	c, err := NewCopyProcessor(dev, config)
	require.NoError(t, err)
	require.NoError(t, c.Close())
	null, err := NewNullProcessor(dev, config)
	require.NoError(t, err)
	require.ErrorContains(t, null.Next(addr(raw), 0, addr(out), 0, R, true, true), "has no next")
	require.ErrorContains(t, null.Change(null), "has no change")
	require.NoError(t, null.Close())
}
