package acquire

import (
	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/engine"
)

// Source is an acquisition that holds resources outside the Go heap until
// closed: what New returns.
type Source interface {
	engine.Acquisition
	Close() error
}

// New builds the acquisition of kind ("SimulatedAcquisition",
// "FileAcquisition" or "NullAcquisition") from its config (SimulatedConfig,
// FileConfig or NullConfig) as a JSON record (backend.DecodeRecord), for
// bindings that pass a config as one value.
func New(kind, config string) (Source, error) {
	switch kind {
	case "SimulatedAcquisition":
		return build(kind, config, NewSimulatedAcquisition)
	case "FileAcquisition":
		return build(kind, config, NewFileAcquisition)
	case "NullAcquisition":
		return build(kind, config, NewNullAcquisition)
	}
	return nil, backend.Invalidf("acquisition kind %q, expected SimulatedAcquisition, FileAcquisition or NullAcquisition", kind)
}

func build[C any, A Source](kind, config string, newA func(C) (A, error)) (Source, error) {
	var c C
	if err := backend.DecodeRecord(kind+"Config", config, &c); err != nil {
		return nil, err
	}
	a, err := newA(c)
	if err != nil {
		return nil, err
	}
	return a, nil
}

// PhantomArray names one of the simulated source's arrays for Phantom.
type PhantomArray int

const (
	// PhantomResampling is ResamplingPositions.
	PhantomResampling PhantomArray = iota
	// PhantomDispersion is DispersionCompensation as (re, im) pairs.
	PhantomDispersion
	// PhantomReflectors is Reflectors of one A-scan as (depth,
	// reflectivity) pairs.
	PhantomReflectors
)

// Phantom is one of the arrays that describe a's phantom, as float64s (the
// bindings' record form; exact for the float32 and complex64 sources), so
// that a caller can build a matching processor and check its output. Only
// a SimulatedAcquisition has a phantom; volume, bscan and ascan select the
// A-scan of PhantomReflectors.
func Phantom(a any, what PhantomArray, volume, bscan, ascan int) ([]float64, error) {
	s, ok := a.(*SimulatedAcquisition)
	if !ok {
		return nil, backend.Invalidf("%T has no phantom, expected a SimulatedAcquisition", a)
	}
	var out []float64
	switch what {
	case PhantomResampling:
		for _, v := range s.ResamplingPositions() {
			out = append(out, float64(v))
		}
	case PhantomDispersion:
		for _, v := range s.DispersionCompensation() {
			out = append(out, float64(real(v)), float64(imag(v)))
		}
	case PhantomReflectors:
		rs, err := s.Reflectors(volume, bscan, ascan)
		if err != nil {
			return nil, err
		}
		for _, r := range rs {
			out = append(out, r.Depth, r.Reflectivity)
		}
	default:
		return nil, backend.Invalidf("phantom array %d, expected 0 (resampling), 1 (dispersion) or 2 (reflectors)", what)
	}
	return out, nil
}
