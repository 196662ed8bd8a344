package pyapi

import (
	"github.com/vortexgo/vortexgo/gosrc/acquire"
	"github.com/vortexgo/vortexgo/gosrc/engine"
	"github.com/vortexgo/vortexgo/gosrc/hostmem"
)

// The bindings of python/vortexgo/acquire.py: the acquisitions (package
// acquire). NumPy data cross as (address, count), read or written before
// the call returns (gosrc/hostmem): Go keeps no pointer into Python memory.

// source is an acquisition that holds resources outside the Go heap until
// closed: every acquire source.
type source interface {
	engine.Acquisition
	Close() error
}

// standaloneSource is a source with vortex's standalone calls
// (FileAcquisition, NullAcquisition, AlazarAcquisition).
type standaloneSource interface {
	StartStandalone() error
	StopStandalone() error
	Next(dst []uint16, records int) (int, error)
}

// Acquisition is a source of raw spectra (SimulatedAcquisition,
// FileAcquisition or NullAcquisition).
type Acquisition struct {
	Object
	a source
}

func newAcquisition[A source](a A, err error) (*Acquisition, error) {
	if err != nil {
		return nil, tag(err)
	}
	return &Acquisition{Object: Object{obj: a}, a: a}, nil
}

// newFromRecord decodes config (a JSON record of C's fields, what
// names it) and builds the source with newA.
func newFromRecord[C any, A source](what, config string, c C, newA func(C) (A, error)) (*Acquisition, error) {
	if err := decodeRecord(what, config, &c); err != nil {
		return nil, tag(err)
	}
	return newAcquisition(newA(c))
}

// NewSimulatedAcquisition builds an acquire.SimulatedAcquisition from its
// acquire.SimulatedConfig as a JSON record.
func NewSimulatedAcquisition(config string) (*Acquisition, error) {
	return newFromRecord("SimulatedAcquisitionConfig", config, acquire.SimulatedConfig{}, acquire.NewSimulatedAcquisition)
}

// NewFileAcquisition builds an acquire.FileAcquisition from its
// acquire.FileConfig as a JSON record.
func NewFileAcquisition(config string) (*Acquisition, error) {
	return newFromRecord("FileAcquisitionConfig", config, acquire.FileConfig{}, acquire.NewFileAcquisition)
}

// NewNullAcquisition builds an acquire.NullAcquisition from its
// acquire.NullConfig as a JSON record.
func NewNullAcquisition(config string) (*Acquisition, error) {
	return newFromRecord("NullAcquisitionConfig", config, acquire.NullConfig{}, acquire.NewNullAcquisition)
}

// SamplesPerRecord is the raw spectrum length (a FileAcquisition of a
// .npy file knows it only after Prepare).
func (a *Acquisition) SamplesPerRecord() int { return a.a.SamplesPerRecord() }

// Prepare readies the source ahead of the engine (idempotent for the
// simulated source; reads the header of a file).
func (a *Acquisition) Prepare() error { return tag(a.a.Prepare()) }

// standalone is the source's standalone calls, or a ValueError naming op.
func (a *Acquisition) standalone(op string) (standaloneSource, error) {
	s, ok := a.a.(standaloneSource)
	if !ok {
		return nil, tag(badArg("%T has no %s, expected a FileAcquisition, NullAcquisition or AlazarAcquisition", a.a, op))
	}
	return s, nil
}

// Start is vortex's standalone start (StartStandalone).
func (a *Acquisition) Start() error {
	s, err := a.standalone("start")
	if err != nil {
		return err
	}
	return tag(s.StartStandalone())
}

// Stop is vortex's standalone stop (StopStandalone).
func (a *Acquisition) Stop() error {
	s, err := a.standalone("stop")
	if err != nil {
		return err
	}
	return tag(s.StopStandalone())
}

// Next is vortex's standalone next: records records into the caller's n
// uint16 values at dst (a NullAcquisition leaves them as they are); it
// returns the records acquired.
func (a *Acquisition) Next(records, dst, n int) (int, error) {
	s, err := a.standalone("next")
	if err != nil {
		return 0, err
	}
	buf, err := hostmem.Span[uint16](dst, n)
	if err != nil {
		return 0, tag(err)
	}
	return tagged(s.Next(buf, records))
}

// Pinned reports whether a FileAcquisition's file is pinned in place for
// an engine to upload from (acquire.FileAcquisition.Pinned).
func (a *Acquisition) Pinned() (bool, error) {
	f, ok := a.a.(*acquire.FileAcquisition)
	if !ok {
		return false, tag(badArg("%T has no pinned, expected a FileAcquisition", a.a))
	}
	return f.Pinned(), nil
}

// DebugPanic is NullAcquisition's test hook (acquire.NullAcquisition.DebugPanic).
func (a *Acquisition) DebugPanic(lend bool) error {
	na, ok := a.a.(*acquire.NullAcquisition)
	if !ok {
		return tag(badArg("%T has no debug_panic, expected a NullAcquisition", a.a))
	}
	return tag(na.DebugPanic(lend))
}

// simulated is the simulated source behind a phantom's accessors.
func (a *Acquisition) simulated() (*acquire.SimulatedAcquisition, error) {
	s, ok := a.a.(*acquire.SimulatedAcquisition)
	if !ok {
		return nil, tag(badArg("%T has no phantom, expected a SimulatedAcquisition", a.a))
	}
	return s, nil
}

// ResamplingPositions writes the simulated spectrometer's resampling
// positions (SimulatedAcquisition.ResamplingPositions) as float64s into the
// caller's n float64s at dst when they fit, and returns their count.
func (a *Acquisition) ResamplingPositions(dst, n int) (int, error) {
	s, err := a.simulated()
	if err != nil {
		return 0, err
	}
	pos := s.ResamplingPositions()
	vals := make([]float64, len(pos))
	for i, v := range pos {
		vals[i] = float64(v)
	}
	return hostmem.Record(dst, n, vals...), nil
}

// DispersionCompensation writes the phasor that undoes the simulated
// dispersion (SimulatedAcquisition.DispersionCompensation) as (re, im)
// float64 pairs into the caller's n float64s at dst when they fit, and
// returns their count.
func (a *Acquisition) DispersionCompensation(dst, n int) (int, error) {
	s, err := a.simulated()
	if err != nil {
		return 0, err
	}
	var vals []float64
	for _, v := range s.DispersionCompensation() {
		vals = append(vals, float64(real(v)), float64(imag(v)))
	}
	return hostmem.Record(dst, n, vals...), nil
}

// Reflectors writes the phantom's interfaces seen by one A-scan
// (SimulatedAcquisition.Reflectors) as (depth, reflectivity) pairs into the
// caller's n float64s at dst when they fit, and returns their count.
func (a *Acquisition) Reflectors(volume, bscan, ascan, dst, n int) (int, error) {
	s, err := a.simulated()
	if err != nil {
		return 0, err
	}
	rs, err := s.Reflectors(volume, bscan, ascan)
	if err != nil {
		return 0, tag(err)
	}
	var vals []float64
	for _, r := range rs {
		vals = append(vals, r.Depth, r.Reflectivity)
	}
	return hostmem.Record(dst, n, vals...), nil
}
