package process

import (
	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/cuda"
	"github.com/vortexgo/vortexgo/gosrc/engine"
)

// New builds the processor of kind "cpu" (CPUProcessor, on the CPU
// device), "cuda" (CUDAProcessor, on a CUDA device), "copy" (CopyProcessor,
// on the CPU device) or "null" (NullProcessor, any device) for cfg, and
// returns its class name. A kind that does not match dev, or a bad cfg, is an
// error matching backend.ErrInvalid naming the value.
func New(dev backend.Device, kind string, cfg Config) (engine.Processor, string, error) {
	switch kind {
	case "cpu":
		if dev.Kind() != backend.CPU {
			return nil, "", engine.Invalid("CPUProcessor on device %s, expected the cpu device", dev.Name())
		}
		p, err := NewCPUProcessor(cfg)
		if err != nil {
			return nil, "", engine.Invalid("%v", err)
		}
		return p, "CPUProcessor", nil
	case "cuda":
		cd, ok := dev.(*cuda.Device)
		if !ok {
			return nil, "", engine.Invalid("CUDAProcessor on device %q, expected a CUDA device", dev.Name())
		}
		p, err := NewCUDAProcessor(cd, cfg)
		if err != nil {
			return nil, "", engine.Invalid("%v", err)
		}
		return p, "CUDAProcessor", nil
	case "copy":
		if dev.Kind() != backend.CPU {
			return nil, "", engine.Invalid("CopyProcessor on device %s, expected the cpu device (vortex's CopyProcessor is a CPU processor)", dev.Name())
		}
		p, err := NewCopyProcessor(cfg)
		if err != nil {
			return nil, "", engine.Invalid("%v", err)
		}
		return p, "CopyProcessor", nil
	case "null":
		p, err := NewNullProcessor(cfg)
		if err != nil {
			return nil, "", engine.Invalid("%v", err)
		}
		return p, "NullProcessor", nil
	}
	return nil, "", engine.Invalid("kind=%q, expected \"cpu\", \"cuda\", \"copy\" or \"null\"", kind)
}
