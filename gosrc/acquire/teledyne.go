package acquire

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"
	"unsafe"

	"github.com/vortexgo/vortexgo/gosrc/driver/teledyne"
	"github.com/vortexgo/vortexgo/gosrc/engine"
)

// TeledyneClock is the board's clock system (vortex's teledyne.Clock).
type TeledyneClock struct {
	SamplingFrequency, ReferenceFrequency int
	ClockGenerator                        teledyne.ClockGenerator
	ReferenceSource                       teledyne.ClockReferenceSource
	DelayAdjustment                       int
	LowJitterModeEnabled                  bool
}

// TeledyneConfig configures a TeledyneAcquisition (vortex's TeledyneConfig;
// its fields and defaults, DefaultTeledyneConfig).
type TeledyneConfig struct {
	// Device is the board's index (from 0).
	Device                            int
	SamplesPerRecord, RecordsPerBlock int
	Clock                             TeledyneClock
	// Inputs are the channels acquired (vortex's teledyne.Input.channel).
	Inputs                   []int
	TriggerSource            teledyne.TriggerSource
	TriggerSkipFactor        int32
	TriggerOffsetSamples     int64
	TriggerSyncPassthrough   bool
	SampleSkipFactor         int64
	EnableFWOCT              bool
	ResamplingFactor         float64
	ClockDelaySamples        float64
	ClockEdges               teledyne.ClockEdges
	Background               []int16
	SpectralFilter           []complex64
	FFTMode                  teledyne.FFTMode
	AcquireTimeout           time.Duration
	EnableHugepages          bool
	StopOnError              bool
	PeriodicTriggerFrequency float64
	TestPatternSignal        bool
}

// DefaultTeledyneConfig is vortex's default TeledyneConfig: device 0, 1024
// samples x 1000 records, the internal PLL at 2.5 GS/s from the internal
// 10 MHz reference with low jitter, no inputs, the TRIG port, no skipping,
// sync passthrough, FWOCT off (resampling factor 1), a 1 s timeout, stop
// on error, a 10 kHz periodic trigger.
func DefaultTeledyneConfig() TeledyneConfig {
	return TeledyneConfig{
		SamplesPerRecord: 1024, RecordsPerBlock: 1000,
		Clock: TeledyneClock{SamplingFrequency: 2_500_000_000, ReferenceFrequency: 10_000_000,
			ClockGenerator: teledyne.ClockInternalPLL, ReferenceSource: teledyne.ReferenceInternal, LowJitterModeEnabled: true},
		TriggerSource: teledyne.TriggerPortTrig, TriggerSkipFactor: 1, TriggerSyncPassthrough: true,
		SampleSkipFactor: 1, ResamplingFactor: 1, ClockEdges: teledyne.EdgesRising, FFTMode: teledyne.FFTDisabled,
		AcquireTimeout: time.Second, StopOnError: true, PeriodicTriggerFrequency: 10_000,
	}
}

// ChannelMask is the inputs' channels together.
func (c *TeledyneConfig) ChannelMask() uint32 {
	var m uint32
	for _, ch := range c.Inputs {
		m |= 1 << ch
	}
	return m
}

func (c *TeledyneConfig) checkShape() error {
	switch {
	case c.SamplesPerRecord < 1 || c.SamplesPerRecord > 1<<30:
		return engine.Invalid("acquire: TeledyneConfig.SamplesPerRecord=%d, expected >= 1", c.SamplesPerRecord)
	case c.RecordsPerBlock < 1 || c.RecordsPerBlock > 1<<30:
		return engine.Invalid("acquire: TeledyneConfig.RecordsPerBlock=%d, expected >= 1", c.RecordsPerBlock)
	case c.AcquireTimeout < 0:
		return engine.Invalid("acquire: TeledyneConfig.AcquireTimeout=%v, expected >= 0", c.AcquireTimeout)
	case c.Device < 0:
		return engine.Invalid("acquire: TeledyneConfig.Device=%d, expected >= 0", c.Device)
	}
	for i, ch := range c.Inputs {
		if ch < 0 || ch >= 32 {
			return engine.Invalid("acquire: TeledyneConfig.Inputs[%d].Channel=%d, expected 0..31", i, ch)
		}
	}
	if _, ok := engine.MulSize(c.SamplesPerRecord, max(len(c.Inputs), 1), c.RecordsPerBlock, 2); !ok {
		return engine.TooLarge("acquire: TeledyneConfig: a block of %d records x %d samples x %d channels overflows",
			c.RecordsPerBlock, c.SamplesPerRecord, len(c.Inputs))
	}
	return nil
}

// validate is vortex's TeledyneConfig.validate (its messages) against the board.
func (c *TeledyneConfig) validate(info *teledyne.Info) error {
	if len(c.Inputs) == 0 {
		return errors.New("no inputs are configured")
	}
	for i := range c.Inputs {
		for j := range i {
			if c.Inputs[i] == c.Inputs[j] {
				return fmt.Errorf("cannot configure the same channel as two different inputs: inputs[%d] = Channel #%d and inputs[%d] = Channel #%d",
					i, c.Inputs[i], j, c.Inputs[j])
			}
		}
	}
	if c.SampleSkipFactor < 1 {
		return errors.New("sample skip factor must be positive")
	}
	if c.TriggerSkipFactor < 1 {
		return errors.New("trigger skip factor must be positive")
	}
	f := info.FWOCT
	if f.Detected {
		if c.SamplesPerRecord%f.AlignmentDivisor != 0 {
			return fmt.Errorf("record length of %d is not a multiple of %d (FWOCT requirement)", c.SamplesPerRecord, f.AlignmentDivisor)
		}
		if c.EnableFWOCT {
			if c.FFTMode != teledyne.FFTDisabled && c.SamplesPerRecord > f.FFTCapacity {
				return fmt.Errorf("required FFT size of %d exceeds capacity of %d", c.SamplesPerRecord, f.FFTCapacity)
			}
			if len(c.SpectralFilter) > 0 && len(c.SpectralFilter) != c.SamplesPerRecord {
				return fmt.Errorf("spectral filter and record length mismatch: %d vs %d", len(c.SpectralFilter), c.SamplesPerRecord)
			}
			if len(c.Background) > 0 && len(c.Background) != c.SamplesPerRecord {
				return fmt.Errorf("background and record length mismatch: %d vs %d", len(c.Background), c.SamplesPerRecord)
			}
		}
	} else if c.EnableFWOCT {
		return errors.New("FWOCT is requested but not detected")
	}
	if c.EnableHugepages {
		return errors.New("hugepages are not supported by vortexgo's Teledyne driver: the transfer buffers are ADQAPI's own (enable_hugepages=False)")
	}
	return nil
}

// apply is vortex's teledyne_acquisition_t::initialize after validation.
func (c *TeledyneConfig) apply(b *teledyne.Board) error {
	k := &c.Clock
	b.ConfigureSamplingClock(float64(k.SamplingFrequency), float64(k.ReferenceFrequency), k.ClockGenerator, k.ReferenceSource,
		float64(k.DelayAdjustment), k.LowJitterModeEnabled)
	if err := b.ConfigureTriggerSource(c.TriggerSource, c.PeriodicTriggerFrequency, c.TriggerOffsetSamples, c.TriggerSkipFactor); err != nil {
		return err
	}
	b.ConfigureCapture(c.ChannelMask(), int64(c.SamplesPerRecord), int32(c.RecordsPerBlock), teledyne.InfiniteAcquisition,
		c.TestPatternSignal, c.SampleSkipFactor)
	if c.TriggerSyncPassthrough {
		if err := b.ConfigureTriggerSync(true); err != nil {
			return err
		}
	}
	if err := b.CommitConfiguration(); err != nil {
		return err
	}
	if !b.Info().FWOCT.Detected {
		return nil
	}
	mapping := uint32(0b11) // FWOCT bypassed: raw k-clock on channel A, raw OCT signal on channel B
	if c.EnableFWOCT {
		mapping = 0
	}
	return b.ConfigureFWOCT(uint32(c.SamplesPerRecord), c.ClockEdges, c.ClockDelaySamples, 1/c.ResamplingFactor,
		c.Background, c.SpectralFilter, c.FFTMode, mapping)
}

// TeledyneAcquisition acquires from a Teledyne SP Devices ADQ digitizer
// (vortex's TeledyneAcquisition). The board DMAs into ADQAPI's own
// transfer buffers (ADQAPI owns them: it takes no caller memory without
// bus addresses); Fill waits for the block's buffer, locks it, copies its
// records into the engine's pinned block and hands it back to the board
// (vortex's wait_and_copy_buffer). Stop stops the capture and leaves the
// board ready for the next session; an overflow, a timeout or a board
// error ends the session with vortex's error (stop_on_error stops the
// board).
type TeledyneAcquisition struct {
	cfg    TeledyneConfig
	board  *teledyne.Board
	values int

	mu       sync.Mutex
	running  bool // between Start and Stop
	capture  bool // the board was started this session
	index    int  // the next transfer buffer, counting from the start
	stopping chan struct{}

	claim engine.Claim
}

var (
	_ acquisition    = (*TeledyneAcquisition)(nil)
	_ engine.Claimer = (*TeledyneAcquisition)(nil)
)

// NewTeledyneAcquisition opens the board of cfg, validates cfg against it
// (vortex's messages) and configures it. Without libadq the error wraps
// teledyne.ErrNoLibrary.
func NewTeledyneAcquisition(cfg TeledyneConfig) (*TeledyneAcquisition, error) {
	if err := cfg.checkShape(); err != nil {
		return nil, err
	}
	cfg.Inputs = slices.Clone(cfg.Inputs)
	cfg.Background = slices.Clone(cfg.Background)
	cfg.SpectralFilter = slices.Clone(cfg.SpectralFilter)
	b, err := teledyne.Open(cfg.Device)
	if err != nil {
		return nil, err
	}
	info := b.Info()
	if err := cfg.validate(&info); err != nil {
		_ = b.Close()
		return nil, err
	}
	if err := cfg.apply(b); err != nil {
		_ = b.Close()
		return nil, err
	}
	a := &TeledyneAcquisition{cfg: cfg, board: b, values: cfg.SamplesPerRecord * len(cfg.Inputs)}
	a.claim.Name("TeledyneAcquisition")
	return a, nil
}

// Config returns the configuration the source was made with.
func (a *TeledyneAcquisition) Config() TeledyneConfig { return a.cfg }

// Board is the source's board.
func (a *TeledyneAcquisition) Board() *teledyne.Board { return a.board }

// Claims reports the claim an engine holds while it uses the source.
func (a *TeledyneAcquisition) Claims() []*engine.Claim { return []*engine.Claim{&a.claim} }

// SamplesPerRecord is the raw values per record: samples x channels. A
// block is vortex's layout for this board: one plane of (RecordsPerBlock,
// SamplesPerRecord) per input (non-interleaved channels).
func (a *TeledyneAcquisition) SamplesPerRecord() int { return a.values }

// ChannelsPerSample is one per input (vortex's channels_per_sample).
func (a *TeledyneAcquisition) ChannelsPerSample() int { return max(len(a.cfg.Inputs), 1) }

// Prepare checks the source is open (vortex's prepare does nothing).
func (a *TeledyneAcquisition) Prepare() error {
	return a.claim.Err("acquire: TeledyneAcquisition.Prepare")
}

// Start begins a session; the board starts at the first Fill.
func (a *TeledyneAcquisition) Start() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.running {
		return nil
	}
	a.running, a.capture, a.index = true, false, 0
	a.stopping = make(chan struct{})
	return nil
}

func (a *TeledyneAcquisition) stopLocked() error {
	if !a.running {
		return nil
	}
	a.running = false
	close(a.stopping)
	if !a.capture {
		return nil
	}
	a.capture = false
	return a.board.StopCapture()
}

// Stop stops the capture; a Fill waiting returns io.EOF.
func (a *TeledyneAcquisition) Stop() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.stopLocked()
}

func (a *TeledyneAcquisition) fail(err error) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.cfg.StopOnError {
		_ = a.stopLocked()
	}
	return err
}

// Fill waits for the next transfer buffer and copies its records into dst.
func (a *TeledyneAcquisition) Fill(dst []uint16, records int) (int, error) {
	if err := checkFill(dst, records, a.values); err != nil {
		return 0, err
	}
	if records != a.cfg.RecordsPerBlock {
		return 0, fmt.Errorf("block is not exactly equal to the configured size: %d != %d", records, a.cfg.RecordsPerBlock)
	}
	a.mu.Lock()
	if !a.running {
		a.mu.Unlock()
		return 0, io.EOF
	}
	if !a.capture {
		if err := a.board.StartCapture(); err != nil {
			a.mu.Unlock()
			return 0, a.fail(err)
		}
		a.capture = true
	}
	idx := a.index % a.board.Info().BufferCount
	stopping := a.stopping
	a.mu.Unlock()
	p, n, err := a.waitFor(idx, stopping)
	select {
	case <-stopping:
		return 0, io.EOF
	default:
	}
	if err != nil {
		return 0, a.fail(err)
	}
	copy(dst[:records*a.values], unsafe.Slice((*uint16)(p), n*a.values))
	if err := a.board.UnlockBuffer(idx); err != nil {
		return 0, a.fail(err)
	}
	a.mu.Lock()
	a.index++
	a.mu.Unlock()
	return min(n, records), nil
}

// waitFor waits up to AcquireTimeout in slices so that a Stop is seen soon.
func (a *TeledyneAcquisition) waitFor(idx int, stopping <-chan struct{}) (unsafe.Pointer, int, error) {
	deadline := time.Now().Add(a.cfg.AcquireTimeout)
	for {
		slice := max(min(time.Until(deadline), waitSlice), 0)
		p, n, err := a.board.WaitAndLockBuffer(idx, slice)
		select {
		case <-stopping:
			return nil, 0, io.EOF
		default:
		}
		if errors.Is(err, teledyne.ErrWaitTimeout) && time.Now().Before(deadline) {
			continue
		}
		return p, n, err
	}
}

// Close stops a capture still running and closes the board. While an
// engine that prepared the source has not finished it refuses with
// backend.ErrInUse.
func (a *TeledyneAcquisition) Close() error {
	return a.claim.Close(func() error {
		a.mu.Lock()
		defer a.mu.Unlock()
		_ = a.stopLocked()
		return a.board.Close()
	})
}
