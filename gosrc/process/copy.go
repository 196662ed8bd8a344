package process

import (
	"fmt"
	"math"
	"sync"
	"sync/atomic"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/cpu"
	"github.com/vortexgo/vortexgo/gosrc/engine"
)

// CopyProcessor is vortex's CopyProcessor, a CPU processor that copies the
// raw samples of one channel into the A-scans without any OCT processing:
// SampleSlice selects the samples (vortex's count: (stop-start)/step),
// SampleTransform maps each value to scale*x+offset. The float32 output
// holds the (transformed) values; the int8 output is their C cast, as
// vortex's: a raw uint16 keeps its low byte (1007 -> -17), a transformed
// value is truncated toward zero and keeps its low byte.
type CopyProcessor struct {
	cfg    atomic.Pointer[Config]
	mu     sync.Mutex // serialises Change and Close
	closed atomic.Bool
	claim  engine.Claim
	alone  standalone
}

// NewCopyProcessor validates cfg (the record layout, Channel, SampleSlice
// inside the record, Slots) and returns the processor.
func NewCopyProcessor(cfg Config) (*CopyProcessor, error) {
	if err := checkCopy(&cfg); err != nil {
		return nil, err
	}
	p := &CopyProcessor{}
	cfg = cfg.clone()
	p.cfg.Store(&cfg)
	p.claim.Name("CopyProcessor")
	return p, nil
}

func checkCopy(c *Config) error {
	bad := func(field string, v any, want string) error {
		return fmt.Errorf("process: CopyProcessorConfig.%s=%v, expected %s", field, v, want)
	}
	sl := c.SampleSlice
	switch {
	case c.SamplesPerRecord < 1:
		return bad("SamplesPerRecord", c.SamplesPerRecord, ">= 1")
	case c.AscansPerBlock < 1:
		return bad("AscansPerBlock", c.AscansPerBlock, ">= 1")
	case c.ChannelsPerSample < 0:
		return bad("ChannelsPerSample", c.ChannelsPerSample, ">= 1")
	case c.Channel < 0 || c.Channel >= c.Channels():
		return bad("Channel", c.Channel, fmt.Sprintf("in [0, ChannelsPerSample=%d)", c.Channels()))
	case c.Slots < 1:
		return bad("Slots", c.Slots, ">= 1")
	case sl != [3]int{} && (sl[0] < 0 || sl[1] > c.SamplesPerRecord || sl[2] < 1 || (sl[1]-sl[0])/sl[2] < 1):
		return bad("SampleSlice", sl, fmt.Sprintf("start >= 0, stop <= SamplesPerRecord=%d, step >= 1 and at least one sample", c.SamplesPerRecord))
	case math.IsNaN(c.SampleTransform[0]) || math.IsInf(c.SampleTransform[0], 0) ||
		math.IsNaN(c.SampleTransform[1]) || math.IsInf(c.SampleTransform[1], 0):
		return bad("SampleTransform", c.SampleTransform, "finite (scale, offset)")
	}
	if int64(c.AscansPerBlock)*int64(c.SamplesPerRecord*c.Channels()) > maxElements {
		return bad("AscansPerBlock", c.AscansPerBlock, fmt.Sprintf("AscansPerBlock*SamplesPerRecord*ChannelsPerSample <= %d", maxElements))
	}
	return nil
}

// slice is the configured slice as (start, count, step).
func copySlice(c *Config) (start, count, step int) {
	if c.SampleSlice == [3]int{} {
		return 0, c.SamplesPerRecord, 1
	}
	s := c.SampleSlice
	return s[0], (s[1] - s[0]) / s[2], s[2]
}

// Config returns a copy of the configuration.
func (p *CopyProcessor) Config() Config { return p.cfg.Load().clone() }

// OutputSamples is the slice's sample count.
func (p *CopyProcessor) OutputSamples() int {
	_, n, _ := copySlice(p.cfg.Load())
	return n
}

// InputValues is SamplesPerRecord x ChannelsPerSample.
func (p *CopyProcessor) InputValues() int {
	c := p.cfg.Load()
	return c.SamplesPerRecord * c.Channels()
}

// Prepare allocates nothing; a closed processor fails with
// backend.ErrClosed.
func (p *CopyProcessor) Prepare() error {
	if p.closed.Load() {
		return errClosed("process: CopyProcessor.Prepare")
	}
	return nil
}

// Process enqueues the copy of records records at host address in into out
// (float32) and outInt8 (int8, when not 0) on s, a CPU stream: vortex's
// CopyProcessor runs on the CPU only.
func (p *CopyProcessor) Process(slot int, s backend.Stream, in uintptr, records int, out uintptr, outInt8 uintptr) error {
	return p.ProcessHistory(slot, s, in, records, out, outInt8, true)
}

// ProcessHistory is Process (a copy has no history to append to).
func (p *CopyProcessor) ProcessHistory(slot int, s backend.Stream, in uintptr, records int, out uintptr, outInt8 uintptr, _ bool) error {
	const op = "process: CopyProcessor.Process"
	c := p.cfg.Load()
	if err := checkProcess(op, p.closed.Load(), true, c, slot, s, in, records, out, 1); /* the copy always writes float32 */ err != nil {
		return err
	}
	hs, ok := s.(backend.HostStream)
	if !ok {
		return fmt.Errorf("%s: s is a %T, expected a CPU stream (vortex's CopyProcessor runs on the CPU): %w", op, s, backend.ErrInvalid)
	}
	if records == 0 {
		return nil
	}
	ch, vals := c.Channels(), c.SamplesPerRecord*c.Channels()
	start, m, step := copySlice(c)
	raw := hostSlice[uint16](in, records*vals)
	dst := hostSlice[float32](out, records*m)
	var dst8 []int8
	if outInt8 != 0 {
		dst8 = hostSlice[int8](outInt8, records*m)
	}
	scale, offset := c.SampleTransform[0], c.SampleTransform[1]
	linear := c.SampleTransform != [2]float64{}
	channel := c.Channel
	return hs.Enqueue(func() {
		for r := range records {
			for j := range m {
				x := raw[r*vals+(start+j*step)*ch+channel]
				if !linear {
					dst[r*m+j] = float32(x)
					if dst8 != nil {
						dst8[r*m+j] = int8(x) // the low byte, as C's cast
					}
					continue
				}
				v := scale*float64(x) + offset
				dst[r*m+j] = float32(v)
				if dst8 != nil {
					dst8[r*m+j] = int8(truncInt(v))
				}
			}
		}
	})
}

// truncInt truncates toward zero like x86's conversion (C's double to int
// cast), the out-of-range values to the "integer indefinite" value.
func truncInt(v float64) int64 {
	if math.IsNaN(v) || v >= math.MaxInt64 || v < math.MinInt64 {
		return math.MinInt64
	}
	return int64(v)
}

// Change adopts cfg from the next block on (vortex's change); while an
// engine runs the processor, a change of the block's shape is refused
// with backend.ErrInUse.
func (p *CopyProcessor) Change(cfg Config) error {
	const op = "process: CopyProcessor.Change"
	if err := checkCopy(&cfg); err != nil {
		return err
	}
	cfg = cfg.clone()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed.Load() {
		return errClosed(op)
	}
	prev := p.cfg.Load()
	_, m0, _ := copySlice(prev)
	_, m1, _ := copySlice(&cfg)
	if p.claim.InUse() && (prev.SamplesPerRecord != cfg.SamplesPerRecord || prev.Channels() != cfg.Channels() ||
		prev.AscansPerBlock != cfg.AscansPerBlock || m0 != m1) {
		return fmt.Errorf("%s: the block's shape changes while an engine runs the processor, expected the same "+
			"samples, channels, records and slice length (stop the engine first): %w", op, backend.ErrInUse)
	}
	p.cfg.Store(&cfg)
	return nil
}

// Close frees the standalone scratch; backend.ErrInUse while an engine
// runs the processor.
func (p *CopyProcessor) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed.Load() {
		return errClosed("process: CopyProcessor.Close")
	}
	return p.claim.Close(func() error {
		p.closed.Store(true)
		return p.alone.close()
	})
}

// Claims reports the claim an engine takes while it uses the processor.
func (p *CopyProcessor) Claims() []*engine.Claim { return []*engine.Claim{&p.claim} }

// Next processes b outside an engine and waits for it (vortex's next; host
// memory only), refused with backend.ErrInUse while an engine that
// prepared the processor has not finished its run.
func (p *CopyProcessor) Next(b StandaloneBlock) error {
	return p.alone.next("CopyProcessor", p, cpu.Default(), &p.claim, b)
}

// NullProcessor is vortex's NullProcessor: it processes nothing. In an
// engine its A-scan buffers are never written (pair it with spectra
// endpoints, which read the raw block); outside one it only holds its
// configuration, as vortex's (which has no next).
type NullProcessor struct {
	cfg    atomic.Pointer[Config]
	closed atomic.Bool
	claim  engine.Claim
}

// NewNullProcessor validates cfg's block shape and returns the processor.
func NewNullProcessor(cfg Config) (*NullProcessor, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	p := &NullProcessor{}
	cfg = cfg.clone()
	p.cfg.Store(&cfg)
	p.claim.Name("NullProcessor")
	return p, nil
}

// Config returns a copy of the configuration.
func (p *NullProcessor) Config() Config { return p.cfg.Load().clone() }

// OutputSamples is the configuration's samples per A-scan (the engine
// sizes the never-written A-scan buffers by it).
func (p *NullProcessor) OutputSamples() int { return p.cfg.Load().OutputSamples() }

// A NullProcessor has no InputValues: it reads nothing, so the engine
// pairs it with any acquisition's block, as vortex's null processor
// ignores its input shape (a two-channel AlazarAcquisition feeding one
// configured with the per-channel samples_per_record, acquire_to_disk.py).

// Prepare does nothing but refuse a closed processor.
func (p *NullProcessor) Prepare() error {
	if p.closed.Load() {
		return errClosed("process: NullProcessor.Prepare")
	}
	return nil
}

// Process enqueues nothing.
func (p *NullProcessor) Process(int, backend.Stream, uintptr, int, uintptr, uintptr) error {
	if p.closed.Load() {
		return errClosed("process: NullProcessor.Process")
	}
	return nil
}

// Close marks the processor closed; backend.ErrInUse while an engine uses
// it.
func (p *NullProcessor) Close() error {
	return p.claim.Close(func() error {
		p.closed.Store(true)
		return nil
	})
}

// Claims reports the claim an engine takes while it uses the processor.
func (p *NullProcessor) Claims() []*engine.Claim { return []*engine.Claim{&p.claim} }
