package pyapi

import (
	"github.com/vortexgo/vortexgo/gosrc/acquire"
	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/endpoint"
	"github.com/vortexgo/vortexgo/gosrc/engine"
	"github.com/vortexgo/vortexgo/gosrc/format"
	"github.com/vortexgo/vortexgo/gosrc/format/stage"
	"github.com/vortexgo/vortexgo/gosrc/hostmem"
	gio "github.com/vortexgo/vortexgo/gosrc/io"
	"github.com/vortexgo/vortexgo/gosrc/process"
)

// The engine's stages. NumPy data cross as (address, count), copied (or,
// for synchronous writes, read in place) before the call returns
// (gosrc/hostmem): Go keeps no pointer into Python memory.

// Acquisition is a source of raw spectra (acquire.Source).
type Acquisition struct {
	Object
	a acquire.Source
}

// NewAcquisition builds a "SimulatedAcquisition", "FileAcquisition" or
// "NullAcquisition" from its config record (acquire.New).
func NewAcquisition(kind, config string) (*Acquisition, error) {
	a, err := acquire.New(kind, config)
	return tagged(&Acquisition{Object: Object{obj: a}, a: a}, err)
}

// SamplesPerRecord is the raw spectrum length (a FileAcquisition of a
// .npy file knows it only after Prepare).
func (a *Acquisition) SamplesPerRecord() int { return a.a.SamplesPerRecord() }

// Prepare readies the source ahead of the engine (idempotent for the
// simulated source; reads the header of a file).
func (a *Acquisition) Prepare() error { return tag(a.a.Prepare()) }

// Phantom writes one array of the simulated phantom (acquire.Phantom: 0
// resampling positions, 1 dispersion compensation as (re, im), 2 the
// reflectors of one A-scan as (depth, reflectivity)) into the caller's n
// float64s at dst when they fit, and returns its length.
func (a *Acquisition) Phantom(what, volume, bscan, ascan, dst, n int) (int, error) {
	vals, err := acquire.Phantom(a.a, acquire.PhantomArray(what), volume, bscan, ascan)
	return hostmem.Record(dst, n, vals...), tag(err)
}

// Processor turns raw spectra into A-scans (engine.Processor).
type Processor struct {
	Object
	p engine.Processor
}

// NewProcessor builds a "cpu" or "cuda" processor (process.New) from its
// process.Config record, the resampling positions (float32) and the
// spectral filter (complex64) each given as (address, count) of a NumPy
// array, count 0 for none.
func NewProcessor(dev *Device, kind, config string, resPtr, resN, filtPtr, filtN int) (*Processor, error) {
	var c process.Config
	err := backend.DecodeRecord("ProcessorConfig", config, &c)
	if err == nil {
		c.ResamplingSamples, err = hostmem.CopyIn[float32](resPtr, resN)
	}
	if err == nil {
		c.SpectralFilter, err = hostmem.CopyIn[complex64](filtPtr, filtN)
	}
	if err != nil {
		return nil, tag(err)
	}
	p, _, err := process.New(dev.d, kind, c)
	return tagged(&Processor{Object: Object{obj: p}, p: p}, err)
}

// OutputSamples is the length of one processed A-scan.
func (p *Processor) OutputSamples() int { return p.p.OutputSamples() }

// NewStage builds a "format" (format.New: the FormatPlanner, an executor)
// or "io" (io.New: NullIO, SimIO) object from its JSON record.
func NewStage(pkg, kind, record string) (*Object, error) {
	if pkg == "io" {
		o, err := gio.New(kind, record)
		return tagged(&Object{obj: o}, err)
	}
	o, err := format.New(kind, record)
	return tagged(&Object{obj: o}, err)
}

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
	if ex, ok := x.obj.(*stage.StackFormatExecutor); ok && err == nil {
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
