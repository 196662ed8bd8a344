package process

import (
	"errors"
	"fmt"
	"sync"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/cpu"
	"github.com/vortexgo/vortexgo/gosrc/engine"
)

// This file holds the processors' standalone calls (vortex's
// next(input, output) outside an engine; change is Change).

// standalone is a processor's state for calls outside an engine: its own
// stream and scratch, made on first use and freed by Close.
type standalone struct {
	// mu makes standalone calls take turns: they share the stream and the
	// scratch. The engine's path (Process) never takes it.
	mu     sync.Mutex
	stream backend.Stream
	bufs   [3]backend.Buffer // scratch: raw input, float32 output, int8 output
}

// StandaloneBlock is one block processed outside an engine (vortex's
// next(input, output)). Addresses are the caller's memory: host memory
// when Host is set, else device memory of the processor's device.
type StandaloneBlock struct {
	In, Out, Out8 uintptr // raw uint16 input; float32 and int8 outputs (0: not wanted)
	Records       int
	// InBytes, when not 0, is how many bytes at In may be read, fewer than
	// the block's records x samples x channels x 2: In is one channel of a
	// larger interleaved block (vortex's pre-indexed spectra[..., c], whose
	// last sample ends before the block's last channel). The processor
	// reads its channel 0 there, so the input is first copied into scratch
	// (InBytes of it; the other channels' slots there are never read).
	InBytes       int
	AppendHistory bool // vortex's append_history: the block enters the rolling average
	Host          bool
}

// standaloneProcessor is what the standalone calls need of CPUProcessor,
// CUDAProcessor and CopyProcessor.
type standaloneProcessor interface {
	Prepare() error
	ProcessHistory(slot int, s backend.Stream, in uintptr, records int, out uintptr, outInt8 uintptr, appendHistory bool) error
	Config() Config
	OutputSamples() int
}

// Next processes b outside an engine and waits for it (vortex's next;
// host memory only), refused with backend.ErrInUse while an engine that
// prepared the processor has not finished its run.
func (p *CPUProcessor) Next(b StandaloneBlock) error {
	return p.alone.next("CPUProcessor", p, cpu.Default(), &p.claim, b)
}

// Next processes b outside an engine and waits for it (vortex's next):
// host arrays are staged through device scratch, device arrays are read in
// place after the device's earlier work. Refused with backend.ErrInUse
// while an engine that prepared the processor has not finished its run.
func (p *CUDAProcessor) Next(b StandaloneBlock) error {
	return p.alone.next("CUDAProcessor", p, p.dev, &p.claim, b)
}

// next processes a.Records records outside an engine and waits for them.
func (al *standalone) next(kind string, p standaloneProcessor, dev backend.Device, claim *engine.Claim, a StandaloneBlock) error {
	op := kind + ".next"
	if claim.InUse() {
		return fmt.Errorf("process: %s: an engine that prepared the processor has not finished its run; "+
			"stop the engine first: %w", op, backend.ErrInUse)
	}
	if err := p.Prepare(); err != nil {
		return err
	}
	cfg := p.Config()
	if a.Records < 1 || a.Records > cfg.AscansPerBlock {
		return backend.Invalidf("%s: %d records, expected 1..ascans_per_block=%d", op, a.Records, cfg.AscansPerBlock)
	}
	if a.In == 0 || a.Out == 0 && a.Out8 == 0 {
		return backend.Invalidf("%s: input=%#x float32 output=%#x int8 output=%#x, expected an input and an output", op, a.In, a.Out, a.Out8)
	}
	rawBytes := a.Records * cfg.SamplesPerRecord * cfg.Channels() * 2
	if a.InBytes < 0 || a.InBytes > rawBytes {
		return backend.Invalidf("%s: %d input bytes, expected 0 (the whole block) up to the block's %d", op, a.InBytes, rawBytes)
	}
	if a.InBytes > 0 && a.InBytes < rawBytes && (cfg.Channel != 0 || cfg.ClockChannel != nil) {
		return backend.Invalidf("%s: a single channel of an interleaved block with channel=%d and clock_channel=%v, "+
			"expected channel=0 and no clock channel (the input holds the processed channel alone)",
			op, cfg.Channel, cfg.ClockChannel != nil)
	}
	onHost := dev.Kind() == backend.CPU
	if !a.Host && onHost {
		return backend.Invalidf("%s: device arrays, expected host (NumPy) arrays on the CPU backend", op)
	}
	al.mu.Lock()
	defer al.mu.Unlock()
	if al.stream == nil {
		s, err := dev.NewStream(0)
		if err != nil {
			return fmt.Errorf("process: %s: stream: %w", op, err)
		}
		al.stream = s
	}
	s := al.stream
	m := p.OutputSamples()
	in, out, out8 := a.In, a.Out, a.Out8
	var err error
	stage := a.Host && !onHost                       // host arrays on a device: copy through scratch
	partial := a.InBytes > 0 && a.InBytes < rawBytes // one channel of a larger block: read from scratch
	if !stage && partial {
		if !a.Host {
			// Another library's device work wrote the input: wait for it before the copy.
			if err := dev.Synchronize(); err != nil {
				return fmt.Errorf("process: %s: waiting for the input: %w", op, err)
			}
		}
		if in, err = al.scratch(dev, 0, rawBytes); err != nil {
			return err
		}
		if err := s.Copy(in, a.In, a.InBytes); err != nil {
			return fmt.Errorf("process: %s: staging the input channel: %w", op, err)
		}
	}
	if stage {
		n := rawBytes
		if partial {
			n = a.InBytes
		}
		if in, err = al.scratch(dev, 0, rawBytes); err != nil {
			return err
		}
		if err := s.Copy(in, a.In, n); err != nil {
			return fmt.Errorf("process: %s: upload: %w", op, err)
		}
		if out8 != 0 {
			if out8, err = al.scratch(dev, 2, a.Records*m); err != nil {
				return err
			}
		}
	} else if !a.Host && !partial {
		// The caller's arrays were written by work we cannot order after
		// (another library's stream): wait for the device. Standalone
		// calls are not the engine's path; this is their one host wait
		// before the work.
		if err := dev.Synchronize(); err != nil {
			return fmt.Errorf("process: %s: waiting for the input: %w", op, err)
		}
	}
	if out == 0 || stage {
		if out, err = al.scratch(dev, 1, a.Records*m*4); err != nil {
			return err
		}
	}
	if err := p.ProcessHistory(0, s, in, a.Records, out, out8, a.AppendHistory); err != nil {
		return err
	}
	if stage {
		if a.Out != 0 {
			if err := s.Copy(a.Out, out, a.Records*m*4); err != nil {
				return fmt.Errorf("process: %s: download: %w", op, err)
			}
		}
		if a.Out8 != 0 {
			if err := s.Copy(a.Out8, out8, a.Records*m); err != nil {
				return fmt.Errorf("process: %s: download: %w", op, err)
			}
		}
	}
	return s.Synchronize()
}

// scratch returns buffer i of at least n bytes, growing it.
func (al *standalone) scratch(dev backend.Device, i, n int) (uintptr, error) {
	if b := al.bufs[i]; b != nil && b.Size() >= n {
		return b.Ptr(), nil
	}
	if b := al.bufs[i]; b != nil {
		al.bufs[i] = nil
		if err := b.Free(); err != nil {
			return 0, err
		}
	}
	b, err := dev.Alloc(n)
	if err != nil {
		return 0, fmt.Errorf("process: standalone scratch of %d bytes: %w", n, err)
	}
	al.bufs[i] = b
	return b.Ptr(), nil
}

// close frees the stream and scratch (the processor's Close).
func (al *standalone) close() error {
	al.mu.Lock()
	defer al.mu.Unlock()
	var errs []error
	for i, b := range al.bufs {
		if b != nil {
			errs = append(errs, b.Free())
			al.bufs[i] = nil
		}
	}
	if al.stream != nil {
		errs = append(errs, al.stream.Close())
		al.stream = nil
	}
	return errors.Join(errs...)
}
