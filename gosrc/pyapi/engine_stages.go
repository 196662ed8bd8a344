package pyapi

import (
	"fmt"

	"github.com/vortexgo/vortexgo/gosrc/acquire"
	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/endpoint"
	"github.com/vortexgo/vortexgo/gosrc/engine"
	"github.com/vortexgo/vortexgo/gosrc/format"
	"github.com/vortexgo/vortexgo/gosrc/handle"
	"github.com/vortexgo/vortexgo/gosrc/hostmem"
	"github.com/vortexgo/vortexgo/gosrc/process"
	"github.com/vortexgo/vortexgo/gosrc/storage"
)

// The handles of the engine's stages: acquisitions, processors, the stack
// formatter, storage and endpoints. NumPy data cross as (address, count)
// and are copied (or, for synchronous writes, read in place) before the
// call returns (gosrc/hostmem): Go keeps no pointer into Python memory.

// --- acquisitions ------------------------------------------------------------

// Acquisition is a source of raw spectra (engine.Acquisition).
type Acquisition struct {
	a interface {
		engine.Acquisition
		Close() error
	}
	kind string
	sim  *acquire.SimulatedAcquisition
}

// NewSimulatedAcquisition synthesises OCT interferograms of a 3D phantom
// (acquire.SimulatedConfig, field for field; seed must be >= 0).
func NewSimulatedAcquisition(samples, ascans, bscans, volumes, totalVolumes int, rate float64, seed int,
	noise, reference, dark, center, span, bandwidth, dispersion float64) (*Acquisition, error) {
	if seed < 0 {
		return nil, tag(badArg("seed=%d, expected >= 0", seed))
	}
	a, err := acquire.NewSimulatedAcquisition(acquire.SimulatedConfig{
		SamplesPerRecord: samples, AscansPerBscan: ascans, BscansPerVolume: bscans,
		Volumes: volumes, TotalVolumes: totalVolumes, Rate: rate, Seed: uint64(seed),
		NoiseLevel: noise, ReferenceLevel: reference, DarkLevel: dark,
		CenterWavelength: center, WavelengthSpan: span, SourceBandwidth: bandwidth, Dispersion: dispersion,
	})
	return tagged(&Acquisition{a: a, kind: "SimulatedAcquisition", sim: a}, err)
}

// NewFileAcquisition replays raw uint16 spectra (raw or .npy) from path.
func NewFileAcquisition(path string, samples int, loop bool, rate float64) (*Acquisition, error) {
	a, err := acquire.NewFileAcquisition(acquire.FileConfig{Path: path, SamplesPerRecord: samples, Loop: loop, Rate: rate})
	return tagged(&Acquisition{a: a, kind: "FileAcquisition"}, err)
}

// NewNullAcquisition delivers zeros (records = 0: endless).
func NewNullAcquisition(samples, records int, rate float64) (*Acquisition, error) {
	a, err := acquire.NewNullAcquisition(acquire.NullConfig{SamplesPerRecord: samples, Records: records, Rate: rate})
	return tagged(&Acquisition{a: a, kind: "NullAcquisition"}, err)
}

// Close frees what the source holds outside the Go heap (the simulated
// source's pinned replay ring); InUseError while an engine uses it.
func (a *Acquisition) Close() error { return tag(a.a.Close()) }

// SamplesPerRecord is the raw spectrum length (a FileAcquisition of a
// .npy file knows it only after Prepare).
func (a *Acquisition) SamplesPerRecord() int { return a.a.SamplesPerRecord() }

// Prepare readies the source ahead of the engine (idempotent for the
// simulated source; reads the header of a file).
func (a *Acquisition) Prepare() error { return tag(a.a.Prepare()) }

// simulated is the phantom behind a: the simulated source, or a ValueError.
func (a *Acquisition) simulated() (*acquire.SimulatedAcquisition, error) {
	if a.sim == nil {
		return nil, badArg("%s has no phantom, expected a SimulatedAcquisition", a.kind)
	}
	return a.sim, nil
}

// ResamplingPositionsInto writes the simulated spectrometer's resampling
// positions (float32) into the caller's buffer of n elements.
func (a *Acquisition) ResamplingPositionsInto(ptr, n int) error {
	s, err := a.simulated()
	if err == nil {
		err = hostmem.CopyOut(ptr, n, s.ResamplingPositions())
	}
	return tag(err)
}

// DispersionCompensationInto writes the phasor (complex64) that undoes the
// simulated dispersion into the caller's buffer of n elements.
func (a *Acquisition) DispersionCompensationInto(ptr, n int) error {
	s, err := a.simulated()
	if err == nil {
		err = hostmem.CopyOut(ptr, n, s.DispersionCompensation())
	}
	return tag(err)
}

// ReflectorsInto writes the simulated interfaces of one A-scan as
// (depth in output bins, reflectivity) float64 pairs into the caller's
// buffer of n pairs, and returns how many there are (all of them when the
// count exceeds n: call again with a larger buffer).
func (a *Acquisition) ReflectorsInto(volume, bscan, ascan, ptr, n int) (int, error) {
	s, err := a.simulated()
	if err != nil {
		return 0, tag(err)
	}
	rs, err := s.Reflectors(volume, bscan, ascan)
	if err != nil {
		return 0, tag(err)
	}
	dst, err := hostmem.Span[float64](ptr, 2*n)
	for i := 0; err == nil && i < len(rs) && i < n; i++ {
		dst[2*i], dst[2*i+1] = rs[i].Depth, rs[i].Reflectivity
	}
	return len(rs), tag(err)
}

// --- processors -----------------------------------------------------------------

// Processor turns raw spectra into A-scans (engine.Processor).
type Processor struct{ p engine.Processor }

// NewProcessor builds a "cpu" or "cuda" processor (process.New;
// process.Config field for field; resampling positions as float32 and the
// spectral filter as complex64, each (address, count) of a NumPy array,
// count 0 for none).
func NewProcessor(dev *Device, kind string, samples, ascansPerBlock, averageWindow, resPtr, resN, filtPtr, filtN int,
	ifft, magnitude, square, log10 bool, levelLo, levelHi float64, slots int) (*Processor, error) {
	if dev == nil {
		return nil, tag(badArg("device=None, expected a Device"))
	}
	res, err := hostmem.CopyIn[float32](resPtr, resN)
	if err != nil {
		return nil, tag(err)
	}
	filt, err := hostmem.CopyIn[complex64](filtPtr, filtN)
	if err != nil {
		return nil, tag(err)
	}
	p, _, err := process.New(dev.d, kind, process.Config{
		SamplesPerRecord: samples, AscansPerBlock: ascansPerBlock, AverageWindow: averageWindow,
		ResamplingSamples: res, SpectralFilter: filt,
		EnableIFFT: ifft, EnableMagnitude: magnitude, EnableSquare: square, EnableLog10: log10,
		Levels: [2]float32{float32(levelLo), float32(levelHi)}, Slots: slots,
	})
	return tagged(&Processor{p: p}, err)
}

// OutputSamples is the length of one processed A-scan.
func (p *Processor) OutputSamples() int { return p.p.OutputSamples() }

// Close releases the processor's device resources (InUseError while an
// engine runs it).
func (p *Processor) Close() error { return tag(p.p.Close()) }

// --- formatting -------------------------------------------------------------------

// Formatter is a StackFormatExecutor over a RasterScan (engine.Formatter).
type Formatter struct{ f *format.StackFormatExecutor }

// NewStackFormatExecutor places records into (bscans, ascans, depth)
// volumes; sliceStop 0 keeps depth through the end; volumes 0 repeats the
// scan forever.
func NewStackFormatExecutor(ascansPerBscan, bscansPerVolume int, bidirectional bool, volumes, sliceStart, sliceStop int) (*Formatter, error) {
	f, err := format.NewStackFormatExecutor(
		format.RasterScan{AscansPerBscan: ascansPerBscan, BscansPerVolume: bscansPerVolume, Bidirectional: bidirectional, Volumes: volumes},
		format.SampleSlice{Start: sliceStart, Stop: sliceStop})
	return tagged(&Formatter{f: f}, err)
}

// --- storage ------------------------------------------------------------------------

// Storage is a SimpleStack file of volumes.
type Storage struct{ s *storage.SimpleStack }

// NewSimpleStack returns a closed stack of "int8", "uint16" or "float32".
func NewSimpleStack(dtype string) (*Storage, error) {
	dt, err := backend.ParseDType(dtype)
	if err != nil {
		return nil, tag(err)
	}
	s, err := storage.NewSimpleStack(dt)
	return tagged(&Storage{s: s}, err)
}

// Open creates the file for volumes of shape (bscans, ascans, depth);
// numpy selects the .npy header. An unwritable path fails here (OSError).
func (s *Storage) Open(path string, bscans, ascans, depth int, numpy bool) error {
	h := storage.HeaderEmpty
	if numpy {
		h = storage.HeaderNumPy
	}
	return tag(s.s.Open(storage.SimpleStackConfig{Path: path, Shape: [3]int{bscans, ascans, depth}, Header: h}))
}

// Close finalises the header and closes the file (no-op when closed;
// InUseError while an engine stores into it).
func (s *Storage) Close() error { return tag(s.s.Close()) }

// IsOpen reports whether a file is open.
func (s *Storage) IsOpen() bool { return s.s.IsOpen() }

// Completed is the number of volumes completely written.
func (s *Storage) Completed() int { return s.s.Completed() }

// WriteVolume writes one whole volume of n bytes at ptr (written before
// the call returns, so the caller's buffer is read in place).
func (s *Storage) WriteVolume(ptr, n int) error {
	data, err := hostmem.Span[byte](ptr, n)
	if err == nil {
		err = s.s.WriteVolume(data)
	}
	return tag(err)
}

// WritePartialBscan writes n bytes of whole A-scans into B-scan bscan of
// the current volume from A-scan ascan.
func (s *Storage) WritePartialBscan(bscan, ascan, ptr, n int) error {
	data, err := hostmem.Span[byte](ptr, n)
	if err == nil {
		err = s.s.WritePartialBscan(bscan, ascan, data)
	}
	return tag(err)
}

// AdvanceVolume completes the current volume and moves to the next.
func (s *Storage) AdvanceVolume() error { return tag(s.s.AdvanceVolume()) }

// Seek moves the write position to (volume, bscan).
func (s *Storage) Seek(volume, bscan int) error { return tag(s.s.Seek(volume, bscan)) }

// --- endpoints ------------------------------------------------------------------------

// Endpoint receives formatted volumes (engine.Endpoint).
type Endpoint struct {
	e       engine.Endpoint
	id      handle.ID // in the registry: its stream wrapper is borrowed from it
	kind    string
	tensor  *endpoint.StackTensorEndpoint
	storage *endpoint.StackStorageEndpoint
	stream  *Stream // the borrowed wrapper of the endpoint's stream, made once
}

// newEndpoint registers an endpoint, so that closing it invalidates the
// stream wrapper borrowed from it on every call path.
func newEndpoint(e engine.Endpoint, kind string, t *endpoint.StackTensorEndpoint, st *endpoint.StackStorageEndpoint) *Endpoint {
	ep := &Endpoint{e: e, kind: kind, tensor: t, storage: st}
	ep.id = handles.Register(ep)
	return ep
}

// NewStackTensorEndpoint keeps processed volumes of dtype in "device" or
// pinned "host" memory, or the raw uint16 spectra in device memory for
// "spectra" (endpoint.NewStackTensorEndpoint).
func NewStackTensorEndpoint(memory, dtype string) (*Endpoint, error) {
	dt, err := backend.ParseDType(dtype)
	if err != nil {
		return nil, tag(err)
	}
	e, name, err := endpoint.NewStackTensorEndpoint(memory, dt)
	if err != nil {
		return nil, tag(err)
	}
	return newEndpoint(e, name, e, nil), nil
}

// NewStorageEndpoint stores each completed volume in s (open it first):
// processed A-scans (AscanStackEndpoint) or, with spectra, the raw spectra
// (SpectraStackEndpoint).
func NewStorageEndpoint(s *Storage, spectra bool) (*Endpoint, error) {
	if s == nil {
		return nil, tag(badArg("storage=None, expected a SimpleStack"))
	}
	newEp, name := endpoint.NewAscanStackEndpoint, "AscanStackEndpoint"
	if spectra {
		newEp, name = endpoint.NewSpectraStackEndpoint, "SpectraStackEndpoint"
	}
	e, err := newEp(s.s)
	if err != nil {
		return nil, tag(err)
	}
	return newEndpoint(e, name, nil, e), nil
}

// NewNullEndpoint discards blocks; its events still fire.
func NewNullEndpoint() *Endpoint {
	return newEndpoint(endpoint.NewNullEndpoint(), "NullEndpoint", nil, nil)
}

// Prepared reports whether an engine has prepared the endpoint.
func (e *Endpoint) Prepared() bool { return e.e.Stream() != nil }

// Tensor is the endpoint's locked volume (after the engine's Prepare).
func (e *Endpoint) Tensor() (*Tensor, error) {
	if e.tensor == nil {
		return nil, tag(badArg("%s has no tensor, expected a Stack*TensorEndpoint", e.kind))
	}
	t := e.tensor.Tensor()
	if t == nil {
		return nil, tag(badArg("%s.tensor does not exist yet, expected Engine.prepare() first", e.kind))
	}
	return &Tensor{t: t}, nil
}

// Stream is the endpoint's stream, borrowed from the endpoint: the same
// wrapper on every call, and every method of it fails with ClosedError
// once the endpoint is closed (closing the wrapper only forgets it).
func (e *Endpoint) Stream() (*Stream, error) {
	if !handles.Live(e.id) {
		return nil, tag(fmt.Errorf("%s.stream: the endpoint is closed: %w", e.kind, handle.ErrStale))
	}
	if e.stream != nil && e.stream.live() == nil {
		return e.stream, nil
	}
	s := e.e.Stream()
	if s == nil {
		return nil, tag(badArg("%s.stream does not exist yet, expected Engine.prepare() first", e.kind))
	}
	st, err := borrowStream(e.id, s)
	if err != nil {
		return nil, tag(err)
	}
	e.stream = st
	return st, nil
}

// Written is the number of volumes a storage endpoint has stored.
func (e *Endpoint) Written() int {
	if e.storage == nil {
		return 0
	}
	return e.storage.Written()
}

// Close releases the endpoint's stream and buffers (its tensor too), and
// its id with every wrapper borrowed from it; InUseError while an engine
// uses it.
func (e *Endpoint) Close() error {
	if !engine.Claimed(e.e) { // else Close is refused and the endpoint stays usable
		// The id goes first, so no call path can reach the stream being
		// destroyed below.
		handles.Release(e.id)
	}
	return tag(e.e.Close())
}
