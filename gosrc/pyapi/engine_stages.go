package pyapi

import (
	"github.com/vortexgo/vortexgo/gosrc/acquire"
	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/engine"
	"github.com/vortexgo/vortexgo/gosrc/format"
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
