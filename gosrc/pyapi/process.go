package pyapi

import (
	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/engine"
	"github.com/vortexgo/vortexgo/gosrc/hostmem"
	"github.com/vortexgo/vortexgo/gosrc/process"
)

// The bindings of python/vortexgo/process.py: the processors (package
// process), each built on the device the user names from its
// process.Config as one JSON record, with the resampling positions
// (float32) and the spectral filter (complex64) each given as (address,
// count) of a NumPy array, count 0 for none: copied before the call
// returns.

// processor is what the bindings call on every processor.
type processor interface {
	engine.Processor
	Config() process.Config
}

// Processor turns raw spectra into A-scans (engine.Processor).
type Processor struct {
	Object
	p processor
}

// processorConfig decodes config and copies the two arrays in.
func processorConfig(config string, resPtr, resN, filtPtr, filtN int) (process.Config, error) {
	var c process.Config
	err := decodeRecord("ProcessorConfig", config, &c)
	if err == nil {
		c.ResamplingSamples, err = hostmem.CopyIn[float32](resPtr, resN)
	}
	if err == nil {
		c.SpectralFilter, err = hostmem.CopyIn[complex64](filtPtr, filtN)
	}
	return c, err
}

// newProcessor builds a processor on dev from its config record and arrays
// with newP.
func newProcessor[P processor](dev *Device, config string, resPtr, resN, filtPtr, filtN int,
	newP func(backend.Device, process.Config) (P, error)) (*Processor, error) {
	c, err := processorConfig(config, resPtr, resN, filtPtr, filtN)
	if err != nil {
		return nil, tag(err)
	}
	p, err := newP(dev.d, c)
	if err != nil {
		return nil, tag(err)
	}
	return &Processor{Object: Object{obj: p}, p: p}, nil
}

// NewCPUProcessor builds a process.CPUProcessor on dev (the cpu device).
func NewCPUProcessor(dev *Device, config string, resPtr, resN, filtPtr, filtN int) (*Processor, error) {
	return newProcessor(dev, config, resPtr, resN, filtPtr, filtN, process.NewCPUProcessorOn)
}

// NewCUDAProcessor builds a process.CUDAProcessor on dev (a CUDA device).
func NewCUDAProcessor(dev *Device, config string, resPtr, resN, filtPtr, filtN int) (*Processor, error) {
	return newProcessor(dev, config, resPtr, resN, filtPtr, filtN, process.NewCUDAProcessorOn)
}

// NewCopyProcessor builds a process.CopyProcessor on dev (the cpu device);
// it has no arrays.
func NewCopyProcessor(dev *Device, config string) (*Processor, error) {
	return newProcessor(dev, config, 0, 0, 0, 0, process.NewCopyProcessorOn)
}

// NewNullProcessor builds a process.NullProcessor (any device); it has no
// arrays.
func NewNullProcessor(dev *Device, config string) (*Processor, error) {
	return newProcessor(dev, config, 0, 0, 0, 0, process.NewNullProcessorOn)
}

// OutputSamples is the length of one processed A-scan.
func (p *Processor) OutputSamples() int { return p.p.OutputSamples() }

// Change adopts to's configuration from the next block on (vortex's
// change; to is a processor the binding built for the new configuration).
func (p *Processor) Change(to *Processor) error {
	c, ok := p.p.(interface{ Change(process.Config) error })
	if !ok {
		return tag(badArg("%T has no change, expected a CPUProcessor, CUDAProcessor or CopyProcessor", p.p))
	}
	return tag(c.Change(to.p.Config()))
}

// Next processes one block outside an engine and waits for it (vortex's
// next): the raw uint16 input at in, the float32 output at out and the int8
// output at out8 (0: not wanted), host memory when host is set, else
// device memory of the processor's device (process.StandaloneBlock).
// inBytes is 0, or the bytes readable at in when the input is one channel
// of a larger interleaved block (StandaloneBlock.InBytes).
func (p *Processor) Next(in, inBytes, out, out8, records int, appendHistory, host bool) error {
	s, ok := p.p.(interface {
		Next(process.StandaloneBlock) error
	})
	if !ok {
		return tag(badArg("%T has no next, expected a CPUProcessor, CUDAProcessor or CopyProcessor", p.p))
	}
	return tag(s.Next(process.StandaloneBlock{In: uintptr(in), InBytes: inBytes, Out: uintptr(out), Out8: uintptr(out8),
		Records: records, AppendHistory: appendHistory, Host: host}))
}
