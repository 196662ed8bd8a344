package endpoint

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/engine"
	"github.com/vortexgo/vortexgo/gosrc/format"
)

// fakeStore is a VolumeWriter that keeps nothing.
type fakeStore struct{}

func (fakeStore) DType() backend.DType       { return backend.Int8 }
func (fakeStore) VolumeBytes() int           { return 0 }
func (fakeStore) WriteVolume(_ []byte) error { return nil }

// TestConstructors: the tensor, null and storage endpoints, their errors,
// and a tensor endpoint's TensorOf before Prepare.
func TestConstructors(t *testing.T) {
	stack, err := format.NewStackFormatExecutor(format.StackFormatExecutorConfig{})
	require.NoError(t, err)
	radial, err := format.NewRadialFormatExecutor(format.RadialFormatExecutorConfig{
		SegmentRTExtent: [2]format.Range{{Min: -1, Max: 1}, {Min: 0, Max: 3}}, RadialShape: [2]int{4, 8}})
	require.NoError(t, err)
	build := func(f func() (engine.Endpoint, error)) func() (engine.Endpoint, error) { return f }
	stackTensor := func(mem backend.MemKind, spectra bool, dt backend.DType, exec any, shape []int) func() (engine.Endpoint, error) {
		return func() (engine.Endpoint, error) { return NewStackTensor(mem, spectra, dt, exec, shape) }
	}
	geometry := func(exec any, shape []int, dt backend.DType, spectra bool) func() (engine.Endpoint, error) {
		return func() (engine.Endpoint, error) { return NewGeometryTensorEndpoint(exec, shape, dt, spectra) }
	}
	tests := []struct {
		name string
		new  func() (engine.Endpoint, error)
		want string
	}{
		{"device", stackTensor(backend.DeviceMem, false, backend.Int8, stack, []int{3, 4, 5}), ""},
		{"host", stackTensor(backend.PinnedMem, false, backend.Float32, nil, nil), ""},
		{"spectra", stackTensor(backend.DeviceMem, true, backend.Uint16, stack, nil), ""},
		{"spectra host", stackTensor(backend.PinnedMem, true, backend.Uint16, nil, nil), ""},
		{"spectra int8", stackTensor(backend.DeviceMem, true, backend.Int8, stack, nil), "expected uint16"},
		{"device float64", stackTensor(backend.DeviceMem, false, backend.Float64, nil, nil), "dtype=float64"},
		{"radial executor", stackTensor(backend.DeviceMem, false, backend.Int8, radial, nil), "expected a StackFormatExecutor"},
		{"two dimensions", stackTensor(backend.DeviceMem, false, backend.Int8, stack, []int{3, 4}), "3 dimensions"},
		{"radial", geometry(radial, []int{8, 8, 16}, backend.Float32, false), ""},
		{"radial no shape", geometry(radial, nil, backend.Float32, false), "shape=None"},
		{"spectra radial", geometry(radial, []int{8, 8, 16}, backend.Uint16, true), ""},
		{"spiral of a stack", geometry(stack, []int{8, 8, 16}, backend.Float32, false), "expected a Radial"},
		{"null", build(func() (engine.Endpoint, error) { return NewNullEndpoint(), nil }), ""},
		{"ascan stack", build(func() (engine.Endpoint, error) { return NewAscanStackEndpoint(fakeStore{}) }), ""},
		{"spectra stack", build(func() (engine.Endpoint, error) { return NewSpectraStackEndpoint(fakeStore{}) }), ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e, err := tc.new()
			if tc.want != "" {
				require.ErrorContains(t, err, tc.want)
				return
			}
			require.NoError(t, err)
			_, err = TensorOf(e)
			require.ErrorIs(t, err, backend.ErrInvalid, "no tensor before Prepare, or none at all")
			if s, ok := e.(*StackStorageEndpoint); ok {
				require.Zero(t, s.Written())
			}
			require.NoError(t, e.Close())
		})
	}
	_, err = ParseStream("galvo")
	require.ErrorIs(t, err, backend.ErrInvalid)
	s, err := ParseStream("galvo_actual")
	require.NoError(t, err)
	require.Equal(t, StreamGalvoActual, s)
}
