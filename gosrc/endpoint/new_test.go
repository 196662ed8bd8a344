package endpoint

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vortexgo/vortexgo/gosrc/backend"
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
