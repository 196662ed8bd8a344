package pyapi

import (
	"github.com/vortexgo/vortexgo/gosrc/acquire"
	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/endpoint"
	"github.com/vortexgo/vortexgo/gosrc/engine"
	"github.com/vortexgo/vortexgo/gosrc/format"
	"github.com/vortexgo/vortexgo/gosrc/hostmem"
	"github.com/vortexgo/vortexgo/gosrc/process"
	"github.com/vortexgo/vortexgo/gosrc/storage"
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

// NewStackFormatExecutor is a formatter (format.StackFormatExecutor, whose
// only use is EngineConfig.Link) placing records into (bscans, ascans,
// depth) volumes; sliceStop 0 keeps depth through the end; volumes 0
// repeats the scan forever.
func NewStackFormatExecutor(ascansPerBscan, bscansPerVolume int, bidirectional bool, volumes, sliceStart, sliceStop int) (*Object, error) {
	f, err := format.NewStackFormatExecutor(
		format.RasterScan{AscansPerBscan: ascansPerBscan, BscansPerVolume: bscansPerVolume, Bidirectional: bidirectional, Volumes: volumes},
		format.SampleSlice{Start: sliceStart, Stop: sliceStop})
	return tagged(&Object{obj: f}, err)
}

// Storage is a SimpleStack file of volumes; its Record is open (0/1) and
// the volumes completed (storage.SimpleStack.Record).
type Storage struct {
	Object
	s *storage.SimpleStack
}

// NewSimpleStack returns a closed stack of "int8", "uint16" or "float32".
func NewSimpleStack(dtype string) (*Storage, error) {
	dt, err := backend.ParseDType(dtype)
	if err != nil {
		return nil, tag(err)
	}
	s, err := storage.NewSimpleStack(dt)
	return tagged(&Storage{Object: Object{obj: s}, s: s}, err)
}

// Open creates the file from a storage.SimpleStackConfig record (Header 0
// none, 1 .npy). An unwritable path fails here (OSError).
func (s *Storage) Open(config string) error {
	var c storage.SimpleStackConfig
	err := backend.DecodeRecord("SimpleStackConfig", config, &c)
	if err == nil {
		err = s.s.Open(c)
	}
	return tag(err)
}

// Write writes the n bytes at ptr (read in place: written before the call
// returns): a whole volume when bscan < 0, else whole A-scans into B-scan
// bscan of the current volume from A-scan ascan.
func (s *Storage) Write(bscan, ascan, ptr, n int) error {
	data, err := hostmem.Span[byte](ptr, n)
	switch {
	case err != nil:
	case bscan < 0:
		err = s.s.WriteVolume(data)
	default:
		err = s.s.WritePartialBscan(bscan, ascan, data)
	}
	return tag(err)
}

// AdvanceVolume completes the current volume and moves to the next.
func (s *Storage) AdvanceVolume() error { return tag(s.s.AdvanceVolume()) }

// Seek moves the write position to (volume, bscan).
func (s *Storage) Seek(volume, bscan int) error { return tag(s.s.Seek(volume, bscan)) }

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
// storing each completed volume in s (open it first).
func NewStorageEndpoint(kind string, s *Storage) (*Endpoint, error) {
	return newEndpoint(endpoint.New(kind, "", s.s))
}

// Prepared reports whether an engine has prepared the endpoint.
func (e *Endpoint) Prepared() bool { return e.e.Stream() != nil }

// Tensor is a tensor endpoint's locked volume (endpoint.TensorOf).
func (e *Endpoint) Tensor() (*Tensor, error) {
	return newTensor(endpoint.TensorOf(e.e))
}

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
