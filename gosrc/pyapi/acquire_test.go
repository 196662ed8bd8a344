package pyapi

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vortexgo/vortexgo/gosrc/acquire"
)

// TestAcquisitions: each kind from its config record, the standalone calls
// of the sources that have them, and the phantom's arrays equal to the
// typed accessors.
func TestAcquisitions(t *testing.T) {
	_, err := NewNullAcquisition(`{"SamplesPerRecord": 64, "Bogus": 1}`)
	require.ErrorContains(t, err, "ValueError: ")
	require.ErrorContains(t, err, "Bogus")

	null, err := NewNullAcquisition(`{"SamplesPerRecord": 4, "Records": 5}`)
	require.NoError(t, err)
	require.Equal(t, 4, null.SamplesPerRecord())
	buf := make([]uint16, 3*4)
	got, err := null.Next(3, addr(buf), len(buf))
	require.NoError(t, err)
	require.Equal(t, 3, got)
	_, err = null.Next(4, addr(buf), len(buf))
	require.ErrorContains(t, err, "ValueError: ", "the core checks the buffer")
	require.NoError(t, null.Start())
	require.NoError(t, null.Stop())
	_, err = null.Pinned()
	require.ErrorContains(t, err, "has no pinned")
	_, err = null.ResamplingPositions(0, 0)
	require.ErrorContains(t, err, "expected a SimulatedAcquisition", "only the simulated source has a phantom")
	require.NoError(t, null.Close())
	require.ErrorContains(t, null.Start(), "ClosedError: ")

	src, err := NewSimulatedAcquisition(`{"SamplesPerRecord": 64, "AscansPerBscan": 4, "BscansPerVolume": 2,
		"Volumes": 1, "NoiseLevel": 0.01, "ReferenceLevel": 1, "CenterWavelength": 840e-9, "WavelengthSpan": 80e-9,
		"SourceBandwidth": 50e-9}`)
	require.NoError(t, err)
	defer func() { require.NoError(t, src.Close()) }()
	require.ErrorContains(t, src.Start(), "has no start")
	sim := src.a.(*acquire.SimulatedAcquisition)

	out := make([]float64, 256)
	n, err := src.ResamplingPositions(addr(out), 1)
	require.NoError(t, err)
	require.Equal(t, 64, n, "the length when the buffer is short")
	n, err = src.ResamplingPositions(addr(out), len(out))
	require.NoError(t, err)
	for i, v := range sim.ResamplingPositions() {
		require.Equal(t, float64(v), out[i])
	}
	n, err = src.DispersionCompensation(addr(out), len(out))
	require.NoError(t, err)
	want := sim.DispersionCompensation()
	require.Equal(t, 2*len(want), n)
	require.Equal(t, float64(imag(want[3])), out[7])
	n, err = src.Reflectors(0, 1, 3, addr(out), len(out))
	require.NoError(t, err)
	rs, err := sim.Reflectors(0, 1, 3)
	require.NoError(t, err)
	require.Equal(t, 2*len(rs), n)
	require.Equal(t, rs[0].Depth, out[0])
	_, err = src.Reflectors(0, 2, 0, addr(out), len(out))
	require.ErrorContains(t, err, "bscan=2")
}
