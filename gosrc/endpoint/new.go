package endpoint

import (
	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/engine"
	"github.com/vortexgo/vortexgo/gosrc/memory"
)

// New builds the endpoint of kind, for bindings that name endpoints by
// kind: a tensor endpoint of dtype ("device", "host" or "spectra", see
// NewStackTensorEndpoint), a storage endpoint writing into store
// ("ascan_stack" or "spectra_stack"; dtype unused) or "null".
func New(kind, dtype string, store VolumeWriter) (engine.Endpoint, error) {
	switch kind {
	case "null":
		return NewNullEndpoint(), nil
	case "ascan_stack":
		return NewAscanStackEndpoint(store)
	case "spectra_stack":
		return NewSpectraStackEndpoint(store)
	}
	dt, err := backend.ParseDType(dtype)
	if err != nil {
		return nil, err
	}
	e, _, err := NewStackTensorEndpoint(kind, dt)
	return e, err
}

// TensorOf is a tensor endpoint's volume, or an error naming why there is
// none: e keeps no tensor, or no engine has prepared it yet.
func TensorOf(e engine.Endpoint) (*memory.DeviceTensor, error) {
	te, ok := e.(*StackTensorEndpoint)
	switch {
	case !ok:
		return nil, backend.Invalidf("%T has no tensor, expected a Stack*TensorEndpoint", e)
	case te.Tensor() == nil:
		return nil, backend.Invalidf("%s.tensor does not exist yet, expected Engine.prepare() first", te.name)
	}
	return te.Tensor(), nil
}

// Record is the storage endpoint's state for bindings: the volumes
// written.
func (e *StackStorageEndpoint) Record() []float64 { return []float64{float64(e.Written())} }
