package pyapi

import (
	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/endpoint"
	"github.com/vortexgo/vortexgo/gosrc/engine"
	"github.com/vortexgo/vortexgo/gosrc/format"
)

// The bindings of python/vortexgo/endpoint.py: one constructor per family
// of vortex's endpoint classes (the Python module makes each class from
// one table and passes its dtype, stream or source). Executors and
// storages cross as their wrappers; a stack executor of nil is passed as
// the storage (or any wrapper of no executor), shapes as (s0, s1, s2),
// zeros for none.

// Endpoint receives formatted volumes (engine.Endpoint). It is registered,
// so that closing it makes its stream's wrapper stale on every call path.
type Endpoint struct {
	Object
	e engine.Endpoint
}

func newEndpoint[E engine.Endpoint](e E, err error) (*Endpoint, error) {
	if err != nil {
		return nil, tag(err)
	}
	return &Endpoint{Object: owner(e), e: e}, nil
}

// shape is (s0, s1, s2) as a volume shape; nil for zeros (none given).
func shape(s0, s1, s2 int) []int {
	if s0 == 0 && s1 == 0 && s2 == 0 {
		return nil
	}
	return []int{s0, s1, s2}
}

// executor is the stack executor x wraps, nil when it wraps none.
func executor(x *Object) any {
	if ex, ok := x.obj.(*format.StackFormatExecutor); ok {
		return ex
	}
	return nil
}

// NewNullEndpoint builds vortex's NullEndpoint (endpoint.NewNullEndpoint).
func NewNullEndpoint() (*Endpoint, error) { return newEndpoint(endpoint.NewNullEndpoint(), nil) }

// NewStackTensorEndpoint builds a Stack{Device,Host}TensorEndpoint of
// dtype, or with spectra a SpectraStack{Device,Host}TensorEndpointUInt16
// (endpoint.NewStackTensor), with stack executor x (a wrapper of none:
// every sample) and volume shape (zeros: from the planner).
func NewStackTensorEndpoint(dtype string, host, spectra bool, x *Object, s0, s1, s2 int) (*Endpoint, error) {
	dt, err := backend.ParseDType(dtype)
	if err != nil {
		return nil, tag(err)
	}
	mem := backend.DeviceMem
	if host {
		mem = backend.PinnedMem
	}
	return newEndpoint(endpoint.NewStackTensor(mem, spectra, dt, x.obj, shape(s0, s1, s2)))
}

// NewGeometryTensorEndpoint builds vortex's Radial, Spiral or Position
// DeviceTensorEndpoint of dtype (spectra: the raw-spectra twin) for
// executor x, whose type picks the geometry, with volume shape (s0, s1,
// s2) (endpoint.NewGeometryTensorEndpoint).
func NewGeometryTensorEndpoint(dtype string, spectra bool, x *Object, s0, s1, s2 int) (*Endpoint, error) {
	dt, err := backend.ParseDType(dtype)
	if err != nil {
		return nil, tag(err)
	}
	return newEndpoint(endpoint.NewGeometryTensorEndpoint(x.obj, shape(s0, s1, s2), dt, spectra))
}

// NewStreamTensorEndpoint builds vortex's <Stream>StackHostTensorEndpoint
// of the stream named stream ("counter" or "galvo_actual") with stack
// executor x and volume shape (s0, s1, s2)
// (endpoint.NewStreamHostTensorEndpoint).
func NewStreamTensorEndpoint(stream string, x *Object, s0, s1, s2 int) (*Endpoint, error) {
	s, err := endpoint.ParseStream(stream)
	if err != nil {
		return nil, tag(err)
	}
	return newEndpoint(endpoint.NewStreamHostTensorEndpoint(s, executor(x), shape(s0, s1, s2)))
}

// NewStackStorageEndpoint builds vortex's AscanStackEndpoint, or with
// spectra its SpectraStackEndpoint (and their HDF5 and BROCT twins),
// storing each completed volume in s (open it first), formatted by stack
// executor x (a wrapper of none: every sample), buffered as the strategy
// named ("Block", "Segment" or "Volume") says.
func NewStackStorageEndpoint(spectra bool, strategy string, s, x *Object) (*Endpoint, error) {
	bs, err := endpoint.ParseBufferStrategy(strategy)
	if err != nil {
		return nil, tag(err)
	}
	st, ok := s.obj.(endpoint.VolumeWriter)
	if !ok {
		return nil, tag(badArg("storage %T, expected a SimpleStack", s.obj))
	}
	newStack := endpoint.NewAscanStackEndpoint
	if spectra {
		newStack = endpoint.NewSpectraStackEndpoint
	}
	e, err := newStack(st)
	if ex, ok := executor(x).(*format.StackFormatExecutor); ok && err == nil {
		err = e.SetExecutor(ex)
	}
	if err == nil {
		err = e.SetBufferStrategy(bs)
	}
	return newEndpoint(e, err)
}

// NewStreamStackEndpoint builds vortex's <Stream>StackEndpoint or
// <Stream>HDF5StackEndpoint of the stream named stream, storing its records
// in s (a SimpleStack or HDF5Stack of the stream's type), formatted by
// stack executor x, buffered as the strategy named says
// (endpoint.NewStreamStackEndpoint).
func NewStreamStackEndpoint(stream, strategy string, s, x *Object) (*Endpoint, error) {
	st, err := endpoint.ParseStream(stream)
	if err != nil {
		return nil, tag(err)
	}
	bs, err := endpoint.ParseBufferStrategy(strategy)
	if err != nil {
		return nil, tag(err)
	}
	e, err := endpoint.NewStreamStackEndpoint(st, s.obj, bs)
	if ex, ok := executor(x).(*format.StackFormatExecutor); ok && err == nil {
		err = e.SetExecutor(ex)
	}
	return newEndpoint(e, err)
}

// NewBlockEndpoint builds vortex's stream storage endpoint of source
// ("ascans", "spectra", a stream's name, "dump" or "markers": the
// AscanStreamEndpoint, ..., StreamDumpStorage, MarkerLogStorage) writing
// into s (a SimpleStream, StreamDump or MarkerLog) with vortex's
// lead_samples (endpoint.NewBlockEndpoint).
func NewBlockEndpoint(source string, s *Object, leadSamples int) (*Endpoint, error) {
	what, st, err := endpoint.ParseBlockSource(source)
	if err != nil {
		return nil, tag(err)
	}
	return newEndpoint(endpoint.NewBlockEndpoint(what, st, s.obj, leadSamples))
}

// Prepared reports whether an engine has prepared the endpoint.
func (e *Endpoint) Prepared() bool {
	if b, ok := e.e.(*endpoint.BlockEndpoint); ok {
		return b.Prepared()
	}
	return e.e.Stream() != nil
}

// VolumesWritten is a stack storage endpoint's count of volumes handed to
// its storage (StackStorageEndpoint.Written; still read after Close).
func (e *Endpoint) VolumesWritten() (int, error) {
	s, ok := e.e.(*endpoint.StackStorageEndpoint)
	if !ok {
		return 0, tag(badArg("%T writes no volumes, expected a stack storage endpoint", e.e))
	}
	return s.Written(), nil
}

// blockEndpointRecord is a stream storage endpoint's state (BLOCK_ENDPOINT).
type blockEndpointRecord struct{ Prepared, BlocksWritten int64 }

// BlockState writes a stream, dump or marker-log endpoint's BLOCK_ENDPOINT
// record into the caller's n bytes at dst (putRecord).
func (e *Endpoint) BlockState(dst, n int) (int, error) {
	b, ok := e.e.(*endpoint.BlockEndpoint)
	if !ok {
		return 0, tag(badArg("%T writes no blocks, expected a stream storage endpoint", e.e))
	}
	rec := blockEndpointRecord{BlocksWritten: int64(b.Written())}
	if b.Prepared() {
		rec.Prepared = 1
	}
	return putRecord(dst, n, &rec)
}

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
