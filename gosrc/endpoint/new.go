package endpoint

import (
	"strings"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/engine"
	"github.com/vortexgo/vortexgo/gosrc/format"
	"github.com/vortexgo/vortexgo/gosrc/memory"
)

// New builds the endpoint of kind, for bindings that name endpoints by
// kind: a tensor endpoint of dtype ("device", "host" or "spectra", see
// NewStackTensorEndpoint), a storage endpoint writing into store
// ("ascan_stack" or "spectra_stack"; dtype unused), a stream stack
// endpoint ("<stream>_stack", stream a vortex stream name such as
// "galvo_target"; NewStreamStackEndpoint) or "null". A stack kind may end
// in ":<strategy>" (Block, Segment or Volume, the default).
func New(kind, dtype string, store VolumeWriter) (engine.Endpoint, error) {
	base, st, withStrategy := strings.Cut(kind, ":")
	strategy := BufferVolume
	if withStrategy {
		var err error
		if strategy, err = ParseBufferStrategy(st); err != nil {
			return nil, err
		}
	}
	if name, ok := strings.CutSuffix(base, "_stack"); ok {
		if s, ok := streamNamed(name); ok {
			return NewStreamStackEndpoint(s, store, strategy)
		}
	}
	switch base {
	case "null":
		return NewNullEndpoint(), nil
	case "ascan_stack", "spectra_stack":
		e, err := NewAscanStackEndpoint(store)
		if base == "spectra_stack" {
			e, err = NewSpectraStackEndpoint(store)
		}
		if err != nil {
			return nil, err
		}
		return e, e.SetBufferStrategy(strategy)
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

// NewWithExecutor builds vortex's tensor endpoint of kind for exec (a
// stage executor) with volume shape (nil: a stack volume sized from the
// planner and the executor's slice), for bindings: "counter_stack_host"
// (dtype uint64) and "galvo_actual_stack_host" (float64), the stream
// tensor endpoints (NewStreamHostTensorEndpoint), "stack_device",
// "stack_host", "spectra_stack_device", "spectra_stack_host"
// (StackDeviceTensorEndpoint*, StackHostTensorEndpoint*,
// Spectra{Device,Host}TensorEndpointUInt16), or a
// geometry endpoint, "radial", "spiral", "position" (Radial, AscanSpiral,
// PositionDeviceTensorEndpoint) and their raw-spectra twins
// "spectra_radial", "spectra_spiral", "spectra_position".
func NewWithExecutor(kind, dtype string, exec any, shape []int) (engine.Endpoint, error) {
	if len(shape) == 3 && shape[0] == 0 && shape[1] == 0 && shape[2] == 0 {
		shape = nil // bindings pass no shape as zeros
	}
	switch kind {
	case "counter_stack_host", "galvo_actual_stack_host":
		// vortex's CounterStackHostTensorEndpoint (uint64) and
		// GalvoActualStackHostTensorEndpoint (float64).
		s := map[string]Stream{"counter_stack_host": StreamCounter, "galvo_actual_stack_host": StreamGalvoActual}[kind]
		if dtype != s.DTypeName() {
			return nil, engine.Invalid("%s: dtype %q, expected %q", kind, dtype, s.DTypeName())
		}
		if shape == nil {
			return nil, engine.Invalid("%s: shape=None, expected the volume's (segments, records, columns)", kind)
		}
		return NewStreamHostTensorEndpoint(s, exec, shape)
	}
	dt, err := backend.ParseDType(dtype)
	if err != nil {
		return nil, err
	}
	var e *StackTensorEndpoint
	switch kind {
	case "stack_device":
		e, _, err = NewStackTensorEndpoint("device", dt)
	case "stack_host":
		e, _, err = NewStackTensorEndpoint("host", dt)
	case "spectra_stack_device":
		e, _, err = NewStackTensorEndpoint("spectra", dt)
	case "spectra_stack_host":
		e, _, err = NewStackTensorEndpoint("spectra_host", dt)
	case "radial", "spiral", "position", "spectra_radial", "spectra_spiral", "spectra_position":
		return NewGeometryTensorEndpoint(exec, shape, dt, len(kind) > 8 && kind[:8] == "spectra_")
	default:
		return nil, engine.Invalid("endpoint kind %q, expected stack_device, stack_host, spectra_stack_device, spectra_stack_host, radial, spiral, position or a spectra_ geometry kind", kind)
	}
	if err != nil {
		return nil, err
	}
	if _, ok := exec.(*format.StackFormatExecutor); !ok && exec != nil {
		return nil, engine.Invalid("%s: executor %T, expected a StackFormatExecutor", e.name, exec)
	}
	return e, e.SetExecutor(exec, shape)
}
