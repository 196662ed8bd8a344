package pyapi

import (
	"github.com/vortexgo/vortexgo/gosrc/endpoint"
	"github.com/vortexgo/vortexgo/gosrc/engine"
	"github.com/vortexgo/vortexgo/gosrc/format"
)

// NewExecutorEndpoint builds endpoint.NewWithExecutor's kind of dtype with
// executor x and volume shape (s0, s1, s2) (zeros: from the planner).
func NewExecutorEndpoint(kind, dtype string, x *Object, s0, s1, s2 int) (*Endpoint, error) {
	return newEndpoint(endpoint.NewWithExecutor(kind, dtype, x.obj, []int{s0, s1, s2}))
}

// Endpoint receives formatted volumes (engine.Endpoint); a storage
// endpoint's Record is the volumes written. It is registered, so that
// closing it makes its stream's wrapper stale on every call path.
type Endpoint struct {
	Object
	e engine.Endpoint
}

func newEndpoint(e engine.Endpoint, err error) (*Endpoint, error) {
	if err != nil {
		return nil, tag(err)
	}
	return &Endpoint{Object: owner(e), e: e}, nil
}

// NewEndpoint builds a tensor endpoint ("device", "host" or "spectra") of
// dtype, or a "null" one (endpoint.New).
func NewEndpoint(kind, dtype string) (*Endpoint, error) {
	return newEndpoint(endpoint.New(kind, dtype, nil))
}

// NewStorageEndpoint builds an "ascan_stack" or "spectra_stack" endpoint
// storing each completed volume in s (NewObject("storage", ...); open it
// first), formatted by the stack executor x (pass s for none).
func NewStorageEndpoint(kind string, s, x *Object) (*Endpoint, error) {
	st, ok := s.obj.(endpoint.VolumeWriter)
	if !ok {
		return nil, tag(badArg("storage %T, expected a SimpleStack", s.obj))
	}
	e, err := endpoint.New(kind, "", st)
	if ex, ok := x.obj.(*format.StackFormatExecutor); ok && err == nil {
		err = e.(*endpoint.StackStorageEndpoint).SetExecutor(ex)
	}
	return newEndpoint(e, err)
}

// Prepared reports whether an engine has prepared the endpoint.
func (e *Endpoint) Prepared() bool { return e.e.Stream() != nil }

// Tensor is a tensor endpoint's locked volume (endpoint.TensorOf).
func (e *Endpoint) Tensor() (*Tensor, error) { return newTensor(endpoint.TensorOf(e.e)) }

// Stream is a wrapper of the endpoint's stream borrowed from the endpoint
// (the Python endpoint keeps the first): every method of it fails with
// ClosedError once the endpoint is closed (closing it only forgets it).
func (e *Endpoint) Stream() (*Stream, error) {
	s := e.e.Stream()
	if s == nil && handles.Live(e.id) {
		return nil, tag(badArg("%T.stream does not exist yet, expected Engine.prepare() first", e.e))
	}
	return tagged(borrowStream(e.id, s)) // a closed endpoint's id: a ClosedError
}
