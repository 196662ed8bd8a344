package endpoint

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/format"
)

// fakeStore is a VolumeWriter that keeps nothing.
type fakeStore struct{}

func (fakeStore) DType() backend.DType       { return backend.Int8 }
func (fakeStore) VolumeBytes() int           { return 0 }
func (fakeStore) WriteVolume(_ []byte) error { return nil }

// TestNewByKind: every endpoint kind by name, its errors, and a tensor
// endpoint's TensorOf before Prepare.
func TestNewByKind(t *testing.T) {
	tests := []struct {
		kind, dtype string
		want        any
		errText     string
	}{
		{"device", "int8", &StackTensorEndpoint{}, ""},
		{"host", "float32", &StackTensorEndpoint{}, ""},
		{"spectra", "uint16", &StackTensorEndpoint{}, ""},
		{"null", "", &NullEndpoint{}, ""},
		{"ascan_stack", "", &StackStorageEndpoint{}, ""},
		{"spectra_stack", "", &StackStorageEndpoint{}, ""},
		{"spectra", "int8", nil, "expected uint16"},
		{"device", "float64", nil, "dtype=float64"},
		{"camera", "int8", nil, `memory="camera"`},
	}
	for _, tc := range tests {
		t.Run(tc.kind+"/"+tc.dtype, func(t *testing.T) {
			e, err := New(tc.kind, tc.dtype, fakeStore{})
			if tc.errText != "" {
				require.ErrorContains(t, err, tc.errText)
				return
			}
			require.NoError(t, err)
			require.IsType(t, tc.want, e)
			_, err = TensorOf(e)
			require.ErrorIs(t, err, backend.ErrInvalid, "no tensor before Prepare, or none at all")
			if s, ok := e.(*StackStorageEndpoint); ok {
				require.Equal(t, []float64{0}, s.Record())
			}
		})
	}
}

func TestNewWithExecutor(t *testing.T) {
	stack, err := format.NewStackFormatExecutor(format.StackFormatExecutorConfig{})
	require.NoError(t, err)
	radial, err := format.NewRadialFormatExecutor(format.RadialFormatExecutorConfig{
		SegmentRTExtent: [2]format.Range{{Min: -1, Max: 1}, {Min: 0, Max: 3}}, RadialShape: [2]int{4, 8}})
	require.NoError(t, err)
	tests := []struct {
		kind, dtype string
		exec        any
		shape       []int
		want        string
	}{
		{"stack_device", "int8", stack, []int{3, 4, 5}, ""},
		{"stack_host", "float32", nil, nil, ""},
		{"spectra_stack_device", "uint16", stack, nil, ""},
		{"spectra_stack_device", "float32", stack, nil, "uint16"},
		{"stack_device", "int8", radial, nil, "expected a StackFormatExecutor"},
		{"radial", "float32", radial, []int{8, 8, 16}, ""},
		{"radial", "float32", radial, nil, "shape=None"},
		{"spectra_radial", "uint16", radial, []int{8, 8, 16}, ""},
		{"spiral", "float32", stack, []int{8, 8, 16}, "expected a Radial"},
		{"stack_device", "int8", stack, []int{3, 4}, "3 dimensions"},
		{"cube", "int8", nil, nil, "endpoint kind"},
	}
	for _, tc := range tests {
		t.Run(tc.kind+tc.want, func(t *testing.T) {
			e, err := NewWithExecutor(tc.kind, tc.dtype, tc.exec, tc.shape)
			if tc.want != "" {
				require.ErrorContains(t, err, tc.want)
				return
			}
			require.NoError(t, err)
			require.NoError(t, e.Close())
		})
	}
}
