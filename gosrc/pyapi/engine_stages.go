package pyapi

import (
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"unsafe"

	"github.com/vortexgo/vortexgo/gosrc/acquire"
	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/cuda"
	"github.com/vortexgo/vortexgo/gosrc/endpoint"
	"github.com/vortexgo/vortexgo/gosrc/engine"
	"github.com/vortexgo/vortexgo/gosrc/format"
	"github.com/vortexgo/vortexgo/gosrc/process"
	"github.com/vortexgo/vortexgo/gosrc/storage"
)

// This file holds the handles of the engine's stages: acquisitions,
// processors, the stack formatter, storage and endpoints. NumPy data cross
// as (address, count) and are copied (or, for synchronous writes, read in
// place) before the call returns: Go keeps no pointer into Python memory.

// hostSpan views n elements of T at the address of a caller's buffer (a
// NumPy array the caller keeps alive for the duration of the call).
func hostSpan[T any](ptr, n int) ([]T, error) {
	if n < 0 {
		return nil, badArg("n=%d, expected >= 0", n)
	}
	if n == 0 {
		return nil, nil
	}
	if ptr == 0 {
		return nil, badArg("ptr=0 with n=%d, expected the address of %d elements", n, n)
	}
	p := uintptr(ptr)
	// Pointer-to-pointer conversion: the memory belongs to NumPy, never to
	// the Go heap, so vet's uintptr->Pointer concern does not apply.
	up := *(*unsafe.Pointer)(unsafe.Pointer(&p))
	return unsafe.Slice((*T)(up), n), nil
}

// copyIn copies n elements of T from a caller's buffer.
func copyIn[T any](ptr, n int) ([]T, error) {
	s, err := hostSpan[T](ptr, n)
	if err != nil || s == nil {
		return nil, err
	}
	return append([]T(nil), s...), nil
}

// --- acquisitions ------------------------------------------------------------

// Acquisition is a source of raw spectra (engine.Acquisition).
type Acquisition struct {
	a    engine.Acquisition
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
	cfg := acquire.SimulatedConfig{
		SamplesPerRecord: samples, AscansPerBscan: ascans, BscansPerVolume: bscans,
		Volumes: volumes, TotalVolumes: totalVolumes, Rate: rate, Seed: uint64(seed),
		NoiseLevel: noise, ReferenceLevel: reference, DarkLevel: dark,
		CenterWavelength: center, WavelengthSpan: span, SourceBandwidth: bandwidth, Dispersion: dispersion,
	}
	a, err := acquire.NewSimulatedAcquisition(cfg)
	if err != nil {
		return nil, tag(badArg("%v", err))
	}
	return &Acquisition{a: a, kind: "SimulatedAcquisition", sim: a}, nil
}

// NewFileAcquisition replays raw uint16 spectra (raw or .npy) from path.
func NewFileAcquisition(path string, samples int, loop bool, rate float64) (*Acquisition, error) {
	a, err := acquire.NewFileAcquisition(acquire.FileConfig{Path: path, SamplesPerRecord: samples, Loop: loop, Rate: rate})
	if err != nil {
		return nil, tag(badArg("%v", err))
	}
	return &Acquisition{a: a, kind: "FileAcquisition"}, nil
}

// NewNullAcquisition delivers zeros (records = 0: endless).
func NewNullAcquisition(samples, records int, rate float64) (*Acquisition, error) {
	a, err := acquire.NewNullAcquisition(acquire.NullConfig{SamplesPerRecord: samples, Records: records, Rate: rate})
	if err != nil {
		return nil, tag(badArg("%v", err))
	}
	return &Acquisition{a: a, kind: "NullAcquisition"}, nil
}

// Kind is the acquisition's class name.
func (a *Acquisition) Kind() string { return a.kind }

// Close frees what the source holds outside the Go heap (the simulated
// source's pinned replay ring); call it once no engine uses the source.
func (a *Acquisition) Close() error {
	if a.sim != nil {
		return tag(a.sim.Close())
	}
	return nil
}

// SamplesPerRecord is the raw spectrum length (a FileAcquisition of a
// .npy file knows it only after Prepare).
func (a *Acquisition) SamplesPerRecord() int { return a.a.SamplesPerRecord() }

// Prepare readies the source ahead of the engine (idempotent for the
// simulated source; reads the header of a file).
func (a *Acquisition) Prepare() error {
	if err := a.a.Prepare(); err != nil {
		return tag(badArg("%v", err))
	}
	return nil
}

// ResamplingPositionsInto writes the simulated spectrometer's resampling
// positions (float32) into the caller's buffer of n elements.
func (a *Acquisition) ResamplingPositionsInto(ptr, n int) error {
	if a.sim == nil {
		return tag(badArg("%s has no resampling positions, expected a SimulatedAcquisition", a.kind))
	}
	pos := a.sim.ResamplingPositions()
	dst, err := hostSpan[float32](ptr, n)
	if err != nil {
		return tag(err)
	}
	if len(dst) != len(pos) {
		return tag(badArg("n=%d, expected %d", n, len(pos)))
	}
	copy(dst, pos)
	return nil
}

// DispersionCompensationInto writes the phasor (complex64) that undoes the
// simulated dispersion into the caller's buffer of n elements.
func (a *Acquisition) DispersionCompensationInto(ptr, n int) error {
	if a.sim == nil {
		return tag(badArg("%s has no dispersion compensation, expected a SimulatedAcquisition", a.kind))
	}
	ph := a.sim.DispersionCompensation()
	dst, err := hostSpan[complex64](ptr, n)
	if err != nil {
		return tag(err)
	}
	if len(dst) != len(ph) {
		return tag(badArg("n=%d, expected %d", n, len(ph)))
	}
	copy(dst, ph)
	return nil
}

// Reflectors lists the simulated interfaces of one A-scan as
// "depth:reflectivity" pairs joined by ";" (depth in output bins).
func (a *Acquisition) Reflectors(volume, bscan, ascan int) (string, error) {
	if a.sim == nil {
		return "", tag(badArg("%s has no phantom, expected a SimulatedAcquisition", a.kind))
	}
	rs, err := a.sim.Reflectors(volume, bscan, ascan)
	if err != nil {
		return "", tag(badArg("%v", err))
	}
	parts := make([]string, len(rs))
	for i, r := range rs {
		parts[i] = strconv.FormatFloat(r.Depth, 'g', -1, 64) + ":" + strconv.FormatFloat(r.Reflectivity, 'g', -1, 64)
	}
	return strings.Join(parts, ";"), nil
}

// --- processors -----------------------------------------------------------------

// Processor turns raw spectra into A-scans (engine.Processor).
type Processor struct {
	p     engine.Processor
	kind  string
	slots int
}

// NewProcessor builds a "cpu" or "cuda" processor (process.Config field for
// field; resampling positions as float32 and the spectral filter as
// complex64, each (address, count) of a NumPy array, count 0 for none).
func NewProcessor(dev *Device, kind string, samples, ascansPerBlock, averageWindow, resPtr, resN, filtPtr, filtN int,
	ifft, magnitude, square, log10 bool, levelLo, levelHi float64, slots int) (*Processor, error) {
	if dev == nil {
		return nil, tag(badArg("device=None, expected a Device"))
	}
	res, err := copyIn[float32](resPtr, resN)
	if err != nil {
		return nil, tag(err)
	}
	filt, err := copyIn[complex64](filtPtr, filtN)
	if err != nil {
		return nil, tag(err)
	}
	cfg := process.Config{
		SamplesPerRecord: samples, AscansPerBlock: ascansPerBlock, AverageWindow: averageWindow,
		ResamplingSamples: res, SpectralFilter: filt,
		EnableIFFT: ifft, EnableMagnitude: magnitude, EnableSquare: square, EnableLog10: log10,
		Levels: [2]float32{float32(levelLo), float32(levelHi)}, Slots: slots,
	}
	switch kind {
	case "cpu":
		if dev.d.Kind() != backend.CPU {
			return nil, tag(badArg("CPUProcessor on device %s, expected the cpu device", dev.d.Name()))
		}
		p, err := process.NewCPUProcessor(cfg)
		if err != nil {
			return nil, tag(badArg("%v", err))
		}
		return &Processor{p: p, kind: "CPUProcessor", slots: slots}, nil
	case "cuda":
		cd, ok := dev.d.(*cuda.Device)
		if !ok {
			return nil, tag(badArg("CUDAProcessor on device %q, expected a CUDA device", dev.d.Name()))
		}
		p, err := process.NewCUDAProcessor(cd, cfg)
		if err != nil {
			return nil, tag(badArg("%v", err))
		}
		return &Processor{p: p, kind: "CUDAProcessor", slots: slots}, nil
	}
	return nil, tag(badArg("kind=%q, expected \"cpu\" or \"cuda\"", kind))
}

// Kind is the processor's class name.
func (p *Processor) Kind() string { return p.kind }

// OutputSamples is the length of one processed A-scan.
func (p *Processor) OutputSamples() int { return p.p.OutputSamples() }

// Close releases the processor's device resources.
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
	if err != nil {
		return nil, tag(badArg("%v", err))
	}
	return &Formatter{f: f}, nil
}

// Depth is the number of samples kept of A-scans of samples samples.
func (f *Formatter) Depth(samples int) int {
	s0, s1 := f.f.SampleRange(samples)
	return s1 - s0
}

// ScanRecords is the number of records in the scan (0 = forever).
func (f *Formatter) ScanRecords() int { return int(f.f.ScanRecords()) }

// --- storage ------------------------------------------------------------------------

// Storage is a SimpleStack file of volumes.
type Storage struct {
	s    *storage.SimpleStack
	open atomic.Bool // between a successful Open and Close
}

// NewSimpleStack returns a closed stack of "int8", "uint16" or "float32".
func NewSimpleStack(dtype string) (*Storage, error) {
	dt, err := parseDType(dtype)
	if err != nil {
		return nil, tag(err)
	}
	s, err := storage.NewSimpleStack(dt)
	if err != nil {
		return nil, tag(badArg("%v", err))
	}
	return &Storage{s: s}, nil
}

// Open creates the file; shape is "bscans,ascans,depth", header "empty"
// or "numpy". An unwritable path fails here (OSError).
func (s *Storage) Open(path, shape, header string) error {
	sh, err := parseShape(shape)
	if err != nil {
		return tag(err)
	}
	if len(sh) != 3 {
		return tag(badArg("shape=%q, expected (bscans, ascans, depth)", shape))
	}
	var h storage.Header
	switch header {
	case "empty":
		h = storage.HeaderEmpty
	case "numpy":
		h = storage.HeaderNumPy
	default:
		return tag(badArg("header=%q, expected \"empty\" or \"numpy\"", header))
	}
	cfg := storage.SimpleStackConfig{Path: path, Shape: [3]int{sh[0], sh[1], sh[2]}, Header: h}
	if err := cfg.Validate(); err != nil {
		return tag(badArg("%v", err))
	}
	if err := s.s.Open(cfg); err != nil {
		return tag(err)
	}
	s.open.Store(true)
	return nil
}

// Close finalises the header and closes the file (no-op when closed).
func (s *Storage) Close() error {
	s.open.Store(false)
	return tag(s.s.Close())
}

// IsOpen reports whether a file is open.
func (s *Storage) IsOpen() bool { return s.open.Load() }

// DType is the element type.
func (s *Storage) DType() string { return s.s.DType().String() }

// Path is the open file's path ("" when closed).
func (s *Storage) Path() string { return s.s.Config().Path }

// Shape is the volume shape "bscans,ascans,depth" ("" when closed).
func (s *Storage) Shape() string {
	c := s.s.Config()
	if !s.open.Load() {
		return ""
	}
	return formatShape(c.Shape[:])
}

// VolumeBytes is the size of one volume (0 when closed).
func (s *Storage) VolumeBytes() int { return s.s.VolumeBytes() }

// Completed is the number of volumes completely written.
func (s *Storage) Completed() int { return s.s.Completed() }

// WriteVolume writes one whole volume of n bytes at ptr (written before
// the call returns, so the caller's buffer is read in place).
func (s *Storage) WriteVolume(ptr, n int) error {
	data, err := hostSpan[byte](ptr, n)
	if err != nil {
		return tag(err)
	}
	return tag(s.s.WriteVolume(data))
}

// WritePartialBscan writes n bytes of whole A-scans into B-scan bscan of
// the current volume from A-scan ascan.
func (s *Storage) WritePartialBscan(bscan, ascan, ptr, n int) error {
	data, err := hostSpan[byte](ptr, n)
	if err != nil {
		return tag(err)
	}
	return tag(s.s.WritePartialBscan(bscan, ascan, data))
}

// AdvanceVolume completes the current volume and moves to the next.
func (s *Storage) AdvanceVolume() error { return tag(s.s.AdvanceVolume()) }

// Seek moves the write position to (volume, bscan).
func (s *Storage) Seek(volume, bscan int) error { return tag(s.s.Seek(volume, bscan)) }

// --- endpoints ------------------------------------------------------------------------

// Endpoint receives formatted volumes (engine.Endpoint).
type Endpoint struct {
	e       engine.Endpoint
	kind    string
	tensor  *endpoint.StackTensorEndpoint
	storage *endpoint.StackStorageEndpoint
	store   *Storage
	streamW *Stream // non-owning wrapper of the endpoint's stream, made once
}

// NewStackTensorEndpoint keeps processed volumes of dtype in "device" or
// pinned "host" memory.
func NewStackTensorEndpoint(memory, dtype string) (*Endpoint, error) {
	dt, err := parseDType(dtype)
	if err != nil {
		return nil, tag(err)
	}
	var e *endpoint.StackTensorEndpoint
	var name string
	switch memory {
	case "device":
		e, err = endpoint.NewStackDeviceTensorEndpoint(dt)
		name = "StackDeviceTensorEndpoint"
	case "host":
		e, err = endpoint.NewStackHostTensorEndpoint(dt)
		name = "StackHostTensorEndpoint"
	default:
		return nil, tag(badArg("memory=%q, expected \"device\" or \"host\"", memory))
	}
	if err != nil {
		return nil, tag(badArg("%v", err))
	}
	return &Endpoint{e: e, kind: name, tensor: e}, nil
}

// NewSpectraStackDeviceTensorEndpoint keeps the raw uint16 spectra of each
// volume in device memory.
func NewSpectraStackDeviceTensorEndpoint() (*Endpoint, error) {
	e, err := endpoint.NewSpectraStackDeviceTensorEndpoint()
	if err != nil {
		return nil, tag(badArg("%v", err))
	}
	return &Endpoint{e: e, kind: "SpectraStackDeviceTensorEndpoint", tensor: e}, nil
}

// NewAscanStackEndpoint stores processed volumes in s (open it first).
func NewAscanStackEndpoint(s *Storage) (*Endpoint, error) {
	if s == nil {
		return nil, tag(badArg("storage=None, expected a SimpleStack"))
	}
	e, err := endpoint.NewAscanStackEndpoint(s.s)
	if err != nil {
		return nil, tag(badArg("%v", err))
	}
	return &Endpoint{e: e, kind: "AscanStackEndpoint", storage: e, store: s}, nil
}

// NewSpectraStackEndpoint stores the raw spectra of each volume in s.
func NewSpectraStackEndpoint(s *Storage) (*Endpoint, error) {
	if s == nil {
		return nil, tag(badArg("storage=None, expected a SimpleStack"))
	}
	e, err := endpoint.NewSpectraStackEndpoint(s.s)
	if err != nil {
		return nil, tag(badArg("%v", err))
	}
	return &Endpoint{e: e, kind: "SpectraStackEndpoint", storage: e, store: s}, nil
}

// NewNullEndpoint discards blocks; its events still fire.
func NewNullEndpoint() *Endpoint {
	return &Endpoint{e: endpoint.NewNullEndpoint(), kind: "NullEndpoint"}
}

// Kind is the endpoint's class name (without the dtype suffix).
func (e *Endpoint) Kind() string { return e.kind }

// Prepared reports whether an engine has prepared the endpoint.
func (e *Endpoint) Prepared() bool { return e.e.Stream() != nil }

// HasTensor reports whether the endpoint keeps a tensor.
func (e *Endpoint) HasTensor() bool { return e.tensor != nil }

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

// Stream is a non-owning handle on the stream the endpoint formats on:
// closing it leaves the endpoint's stream alive.
func (e *Endpoint) Stream() (*Stream, error) {
	s := e.e.Stream()
	if s == nil {
		return nil, tag(badArg("%s.stream does not exist yet, expected Engine.prepare() first", e.kind))
	}
	w, err := s.Device().WrapStream(s.Handle())
	if err != nil {
		return nil, tag(err)
	}
	return newStream(w), nil
}

// Written is the number of volumes a storage endpoint has stored.
func (e *Endpoint) Written() int {
	if e.storage == nil {
		return 0
	}
	return e.storage.Written()
}

// Close releases the endpoint's stream and buffers (its tensor too).
func (e *Endpoint) Close() error { return tag(e.e.Close()) }

// String describes the endpoint.
func (e *Endpoint) String() string { return fmt.Sprintf("%s(prepared=%v)", e.kind, e.Prepared()) }
