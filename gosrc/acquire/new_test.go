package acquire

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vortexgo/vortexgo/gosrc/backend"
)

// TestNewAndPhantom: acquisitions by kind from a config record, and the
// phantom's arrays as float64 records equal to the typed accessors.
func TestNewAndPhantom(t *testing.T) {
	for _, tc := range []struct{ kind, config, errText string }{
		{"NullAcquisition", `{"SamplesPerRecord": 64, "Records": 10}`, ""},
		{"NullAcquisition", `{"SamplesPerRecord": 64, "Bogus": 1}`, "Bogus"},
		{"CameraAcquisition", `{}`, `kind "CameraAcquisition"`},
	} {
		a, err := New(tc.kind, tc.config)
		if tc.errText != "" {
			require.ErrorIs(t, err, backend.ErrInvalid)
			require.ErrorContains(t, err, tc.errText)
			continue
		}
		require.NoError(t, err)
		require.Equal(t, 64, a.SamplesPerRecord())
		_, err = Phantom(a, PhantomResampling, 0, 0, 0)
		require.ErrorContains(t, err, "expected a SimulatedAcquisition", "only the simulated source has a phantom")
		require.NoError(t, a.Close())
	}

	src, err := New("SimulatedAcquisition", `{"SamplesPerRecord": 64, "AscansPerBscan": 4, "BscansPerVolume": 2,
		"Volumes": 1, "NoiseLevel": 0.01, "ReferenceLevel": 1, "CenterWavelength": 840e-9, "WavelengthSpan": 80e-9,
		"SourceBandwidth": 50e-9}`)
	require.NoError(t, err)
	defer func() { require.NoError(t, src.Close()) }()
	sim := src.(*SimulatedAcquisition)
	pos, err := Phantom(src, PhantomResampling, 0, 0, 0)
	require.NoError(t, err)
	for i, v := range sim.ResamplingPositions() {
		require.Equal(t, float64(v), pos[i])
	}
	disp, err := Phantom(src, PhantomDispersion, 0, 0, 0)
	require.NoError(t, err)
	want := sim.DispersionCompensation()
	require.Len(t, disp, 2*len(want))
	require.Equal(t, float64(imag(want[3])), disp[7])
	refl, err := Phantom(src, PhantomReflectors, 0, 1, 3)
	require.NoError(t, err)
	rs, err := sim.Reflectors(0, 1, 3)
	require.NoError(t, err)
	require.Len(t, refl, 2*len(rs))
	_, err = Phantom(src, PhantomReflectors, 0, 2, 0)
	require.ErrorContains(t, err, "bscan=2")
	_, err = Phantom(src, PhantomArray(7), 0, 0, 0)
	require.ErrorIs(t, err, backend.ErrInvalid)
}
