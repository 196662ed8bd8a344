package acquire

import (
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"sync"
	"time"
	"unsafe"

	"github.com/vortexgo/vortexgo/gosrc/driver/alazar"
	"github.com/vortexgo/vortexgo/gosrc/engine"
)

// AlazarClockKind selects the clock variant of an AlazarClock.
type AlazarClockKind int

// The clocks (vortex's alazar.InternalClock, alazar.ExternalClock).
const (
	AlazarInternalClock AlazarClockKind = iota
	AlazarExternalClock
)

// AlazarClock is the board's sample clock (vortex's clock variant).
type AlazarClock struct {
	Kind AlazarClockKind
	// SamplesPerSecond is the internal clock's rate.
	SamplesPerSecond int
	// LevelRatio (in [0, 1]), Coupling, Edge and Dual (dual-edge
	// sampling) are the external clock's.
	LevelRatio float32
	Coupling   alazar.Coupling
	Edge       alazar.ClockEdge
	Dual       bool
}

// AlazarTriggerKind selects the trigger variant of an AlazarTrigger.
type AlazarTriggerKind int

// The triggers (vortex's alazar.SingleExternalTrigger,
// alazar.DualExternalTrigger).
const (
	AlazarSingleExternalTrigger AlazarTriggerKind = iota
	AlazarDualExternalTrigger
)

// AlazarTrigger is the board's trigger (vortex's trigger variant).
type AlazarTrigger struct {
	Kind AlazarTriggerKind
	// RangeMillivolts is the external trigger's range (0: TTL).
	RangeMillivolts int
	// LevelRatios are the levels in [-1, 1]: a single trigger uses the
	// first, a dual one both.
	LevelRatios  [2]float32
	DelaySamples int
	// Slope is the single trigger's slope, the dual trigger's first.
	Slope    alazar.TriggerSlope
	Coupling alazar.Coupling
}

// AlazarInput is one input channel (vortex's alazar.Input).
type AlazarInput struct {
	Channel         alazar.Channel
	RangeMillivolts int
	ImpedanceOhms   int
	Coupling        alazar.Coupling
}

// AlazarOptionKind selects the variant of an AlazarOption.
type AlazarOptionKind int

// The options (vortex's alazar.AuxIOTriggerOut, AuxIOClockOut,
// AuxIOPacerOut, OCTIgnoreBadClock).
const (
	AlazarAuxIOTriggerOut AlazarOptionKind = iota
	AlazarAuxIOClockOut
	AlazarAuxIOPacerOut
	AlazarOCTIgnoreBadClock
)

// AlazarOption is one board option (vortex's option variant).
type AlazarOption struct {
	Kind AlazarOptionKind
	// Divider is the pacer's.
	Divider uint32
	// GoodSeconds and BadSeconds are OCTIgnoreBadClock's.
	GoodSeconds, BadSeconds float64
}

// AlazarConfig configures an AlazarAcquisition (vortex's AlazarConfig).
type AlazarConfig struct {
	// SystemIndex and BoardIndex pick the board (vortex's device, from 1).
	SystemIndex, BoardIndex uint32
	// SamplesPerRecord is the record length (a multiple of the board's
	// alignment); RecordsPerBlock the records of each posted buffer, which
	// must be the engine's RecordsPerBlock.
	SamplesPerRecord, RecordsPerBlock int
	Clock                             AlazarClock
	Trigger                           AlazarTrigger
	Inputs                            []AlazarInput
	Options                           []AlazarOption
	// Resampling lists the samples kept of each record (the board's sample
	// skipping); empty keeps them all.
	Resampling []int
	// AcquireTimeout bounds the wait for one block.
	AcquireTimeout time.Duration
	// StopOnError stops the board at the first error of a post or wait.
	StopOnError bool
}

// DefaultAlazarConfig is vortex's default AlazarConfig: board 1 of system
// 1, 1024 samples per record, 1000 records per block, the internal clock
// at 800 MS/s, a single external trigger (2500 mV range, level 0.09, 80
// samples of delay, positive slope, DC), no inputs, a 1 s timeout, stop on
// error.
func DefaultAlazarConfig() AlazarConfig {
	return AlazarConfig{
		SystemIndex: 1, BoardIndex: 1,
		SamplesPerRecord: 1024, RecordsPerBlock: 1000,
		Clock:          AlazarClock{Kind: AlazarInternalClock, SamplesPerSecond: 800_000_000},
		Trigger:        AlazarTrigger{Kind: AlazarSingleExternalTrigger, RangeMillivolts: 2500, LevelRatios: [2]float32{0.09, 0.09}, DelaySamples: 80, Slope: alazar.TriggerSlopePositive, Coupling: alazar.CouplingDC},
		AcquireTimeout: time.Second,
		StopOnError:    true,
	}
}

// ChannelMask is the inputs' channels together.
func (c *AlazarConfig) ChannelMask() alazar.Channel {
	var m alazar.Channel
	for _, in := range c.Inputs {
		m |= in.Channel
	}
	return m
}

// checkShape validates what needs no board. Its errors, like the board's,
// are plain (vortex raises them as runtime errors).
func (c *AlazarConfig) checkShape() error {
	switch {
	case c.SamplesPerRecord < 1 || c.SamplesPerRecord > math.MaxUint32:
		return engine.Invalid("acquire: AlazarConfig.SamplesPerRecord=%d, expected >= 1", c.SamplesPerRecord)
	case c.RecordsPerBlock < 1 || c.RecordsPerBlock > math.MaxUint32:
		return engine.Invalid("acquire: AlazarConfig.RecordsPerBlock=%d, expected >= 1", c.RecordsPerBlock)
	case c.AcquireTimeout < 0:
		return engine.Invalid("acquire: AlazarConfig.AcquireTimeout=%v, expected >= 0", c.AcquireTimeout)
	}
	if _, ok := engine.MulSize(c.SamplesPerRecord, max(len(c.Inputs), 1), c.RecordsPerBlock, 2); !ok {
		return engine.TooLarge("acquire: AlazarConfig: a block of %d records x %d samples x %d channels overflows",
			c.RecordsPerBlock, c.SamplesPerRecord, len(c.Inputs))
	}
	return nil
}

// validate is vortex's AlazarConfig.validate against the board.
func (c *AlazarConfig) validate(info *alazar.Info) error {
	if len(c.Inputs) == 0 {
		return errors.New("no inputs are configured")
	}
	for i := range c.Inputs {
		for j := range i {
			if c.Inputs[i].Channel == c.Inputs[j].Channel {
				return fmt.Errorf("cannot configure the same channel as two different inputs: input %d = %s and input %d = %s",
					i, c.Inputs[i].Channel, j, c.Inputs[j].Channel)
			}
		}
	}
	if d := int(info.SampleAlignmentDivisor); d > 0 && c.SamplesPerRecord%d != 0 {
		return fmt.Errorf("samples per record must be evenly divisible by %d: %d", d, c.SamplesPerRecord)
	}
	if c.SamplesPerRecord < int(info.MinSamplesPerRecord) {
		return fmt.Errorf("samples per record must equal or exceed %d: %d", info.MinSamplesPerRecord, c.SamplesPerRecord)
	}
	if len(c.Resampling) > 0 && len(c.Resampling) != c.SamplesPerRecord {
		return fmt.Errorf("samples per record does not match number of resampled samples: %d vs %d", c.SamplesPerRecord, len(c.Resampling))
	}
	return nil
}

// apply is vortex's AlazarConfig.apply: clock, trigger, inputs, options,
// then sample skipping.
func (c *AlazarConfig) apply(b *alazar.Board) error {
	info := b.Info()
	switch c.Clock.Kind {
	case AlazarInternalClock:
		if err := b.ConfigureClockInternal(c.Clock.SamplesPerSecond, 0); err != nil {
			return err
		}
	case AlazarExternalClock:
		if r := info.Features.ADCCalibrationSamplingRate; r > 0 {
			// Calibrating the ADC on the internal clock first reduces the
			// noise of an external clock on these boards.
			if err := b.ConfigureClockInternal(r, 0); err != nil {
				return err
			}
		}
		if info.Features.DualEdgeSampling {
			// Dual-edge sampling is set before the clock (the SDK guide's
			// order), on channel A, the only one it applies to.
			if err := b.SetDualEdgeSampling(uint8(alazar.ChannelA), c.Clock.Dual); err != nil {
				return err
			}
		} else if c.Clock.Dual {
			return fmt.Errorf("dual edge sampling is requested but is not supported by the %s", info.Type.Model)
		}
		if err := b.ConfigureClockExternal(c.Clock.LevelRatio, c.Clock.Coupling, c.Clock.Edge, 0); err != nil {
			return err
		}
	default:
		return engine.Invalid("acquire: AlazarConfig.Clock.Kind=%d, expected internal (0) or external (1)", c.Clock.Kind)
	}
	t := &c.Trigger
	switch t.Kind {
	case AlazarSingleExternalTrigger:
		if err := b.ConfigureSingleTriggerExternal(t.RangeMillivolts, t.LevelRatios[0], t.DelaySamples, t.Slope, t.Coupling); err != nil {
			return err
		}
	case AlazarDualExternalTrigger:
		if err := b.ConfigureDualTriggerExternal(t.RangeMillivolts, t.LevelRatios[0], t.LevelRatios[1], t.DelaySamples, t.Slope, t.Coupling); err != nil {
			return err
		}
	default:
		return engine.Invalid("acquire: AlazarConfig.Trigger.Kind=%d, expected single (0) or dual (1)", t.Kind)
	}
	for _, in := range c.Inputs {
		if err := b.ConfigureInput(in.Channel, in.Coupling, in.RangeMillivolts, in.ImpedanceOhms); err != nil {
			return err
		}
	}
	for i, o := range c.Options {
		var err error
		switch o.Kind {
		case AlazarAuxIOTriggerOut:
			err = b.ConfigureAuxIOTriggerOut()
		case AlazarAuxIOClockOut:
			err = b.ConfigureAuxIOClockOut()
		case AlazarAuxIOPacerOut:
			err = b.ConfigureAuxIOPacerOut(o.Divider)
		case AlazarOCTIgnoreBadClock:
			err = b.SetIgnoreBadClock(true, o.GoodSeconds, o.BadSeconds)
		default:
			err = engine.Invalid("acquire: AlazarConfig.Options[%d].Kind=%d, expected 0..3", i, o.Kind)
		}
		if err != nil {
			return err
		}
	}
	if len(c.Resampling) > 0 {
		clocks, bitmap, err := skipBitmap(c.Resampling)
		if err != nil {
			return err
		}
		return b.ConfigureSampleSkipping(clocks, bitmap)
	} else if info.Features.SampleSkipping {
		return b.ConfigureSampleSkipping(0, nil)
	}
	return nil
}

// skipBitmap is the sample skipping table that keeps the samples idx: one
// bit per clock, 16 clocks a word, as many clocks as the last kept sample
// needs rounded up to a word. (vortex rounds the last index down to a
// word, which drops the samples past that word; this keeps them.)
func skipBitmap(idx []int) (uint32, []uint16, error) {
	s := slices.Clone(idx)
	slices.Sort(s)
	if s[0] < 0 || s[len(s)-1] >= math.MaxUint32-16 {
		return 0, nil, engine.Invalid("acquire: AlazarConfig.Resampling holds %d..%d, expected sample indices >= 0", s[0], s[len(s)-1])
	}
	words := s[len(s)-1]/16 + 1
	bitmap := make([]uint16, words)
	for _, i := range s {
		bitmap[i/16] |= 1 << (i % 16)
	}
	return uint32(16 * words), bitmap, nil
}

// AlazarAcquisition acquires from an AlazarTech digitizer (vortex's
// AlazarAcquisition): the engine posts its blocks' pinned buffers
// (engine.Poster) and the board DMAs each block's records straight into
// them, so no host copy is made; Fill waits for the block's buffer.
// The board is opened, checked and configured when the source is made;
// each engine session configures the capture (AlazarBeforeAsyncRead) at
// Start and starts the board at the first Fill, once the preload blocks
// are posted (vortex's order). An overflow, a timeout or a board error
// ends the session with the SDK's error; Stop aborts the capture,
// abandoning the buffers still posted, and leaves the board ready for the
// next session.
type AlazarAcquisition struct {
	cfg    AlazarConfig
	board  *alazar.Board
	values int // raw values per record: samples x channels

	mu       sync.Mutex
	running  bool      // a capture is configured: between Start (or PrepareStandalone) and Stop
	byEngine bool      // the capture is an engine session's (Start), not a standalone one
	capture  bool      // the board was started this session
	posted   []uintptr // posted buffers, oldest first
	stopping chan struct{}

	// configureCapture, when set, readies the capture in place of
	// ConfigureCapture (AlazarFFTAcquisition's, through the FFT module).
	configureCapture func() error
	// apply configures the board (clock, trigger, inputs; the FFT module's
	// too): when the source is made, and again before a capture when
	// another acquisition configured the board since (alazar_board.go).
	apply func() error

	claim engine.Claim
}

var (
	_ acquisition    = (*AlazarAcquisition)(nil)
	_ engine.Poster  = (*AlazarAcquisition)(nil)
	_ engine.Claimer = (*AlazarAcquisition)(nil)
)

// NewAlazarAcquisition opens the board of cfg, validates cfg against it
// (vortex's messages) and configures it. Without the ATS-SDK library the
// error wraps alazar.ErrNoLibrary.
func NewAlazarAcquisition(cfg AlazarConfig) (*AlazarAcquisition, error) {
	if err := cfg.checkShape(); err != nil {
		return nil, err
	}
	cfg.Inputs = slices.Clone(cfg.Inputs)
	cfg.Options = slices.Clone(cfg.Options)
	cfg.Resampling = slices.Clone(cfg.Resampling)
	b, err := alazar.Open(cfg.SystemIndex, cfg.BoardIndex)
	if err != nil {
		return nil, err
	}
	info := b.Info()
	if err := cfg.validate(&info); err != nil {
		return nil, err
	}
	a := &AlazarAcquisition{cfg: cfg, board: b, values: cfg.SamplesPerRecord * len(cfg.Inputs)}
	a.claim.Name("AlazarAcquisition")
	a.apply = func() error { return a.cfg.apply(b) }
	if err := a.applyNew(); err != nil {
		return nil, err
	}
	return a, nil
}

// Config returns the configuration the source was made with.
func (a *AlazarAcquisition) Config() AlazarConfig { return a.cfg }

// Board is the source's board.
func (a *AlazarAcquisition) Board() *alazar.Board { return a.board }

// Claims reports the claim an engine holds while it uses the source.
func (a *AlazarAcquisition) Claims() []*engine.Claim { return []*engine.Claim{&a.claim} }

// SamplesPerRecord is the raw values per record (the engine's contract):
// samples x channels, interleaved by sample. vortex's samples_per_record
// is the config's, per channel: a block is (RecordsPerBlock,
// Config().SamplesPerRecord, ChannelsPerSample()) row-major, vortex's
// layout (ADMA_INTERLEAVE_SAMPLES).
func (a *AlazarAcquisition) SamplesPerRecord() int { return a.values }

// ChannelsPerSample is the interleaved channels of each sample, one per
// input (vortex's channels_per_sample).
func (a *AlazarAcquisition) ChannelsPerSample() int { return max(len(a.cfg.Inputs), 1) }

// Prepare checks the source is open (the board was configured when it
// was made).
func (a *AlazarAcquisition) Prepare() error {
	return a.claim.Err("acquire: AlazarAcquisition.Prepare")
}

// Start readies the board's capture of RecordsPerBlock-record buffers
// (vortex's prepare); the board starts at the first Fill.
func (a *AlazarAcquisition) Start() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.running && a.byEngine {
		return nil
	}
	if a.running { // a standalone capture left prepared or running: the engine's session starts afresh
		if err := a.stopLocked(); err != nil {
			return err
		}
	}
	if err := a.configureLocked(); err != nil {
		return err
	}
	a.byEngine = true
	return nil
}

// configureLocked readies the board's capture (vortex's prepare; a.mu
// held). Buffers posted before are abandoned and waits for them end as
// at a Stop.
func (a *AlazarAcquisition) configureLocked() error {
	if err := a.claimCapture(); err != nil {
		return err
	}
	var err error
	if a.configureCapture != nil {
		err = a.configureCapture()
	} else {
		err = a.board.ConfigureCapture(a.cfg.ChannelMask(), uint32(a.cfg.SamplesPerRecord), uint32(a.cfg.RecordsPerBlock),
			alazar.InfiniteAcquisition, 0)
	}
	if err != nil {
		if !a.running {
			a.releaseCapture()
		}
		return err
	}
	if a.running {
		close(a.stopping)
	}
	a.running, a.byEngine, a.capture, a.posted = true, false, false, a.posted[:0]
	a.stopping = make(chan struct{})
	return nil
}

// stopLocked aborts the capture (a.mu held): the board writes no posted
// buffer after it returns.
func (a *AlazarAcquisition) stopLocked() error {
	if !a.running {
		return nil
	}
	a.running = false
	close(a.stopping)
	a.posted = a.posted[:0]
	defer a.releaseCapture() // after the abort: no other capture starts under this one's DMA
	return a.board.StopCapture()
}

// Stop aborts the capture and abandons the posted buffers; a Fill waiting
// returns io.EOF.
func (a *AlazarAcquisition) Stop() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.stopLocked()
}

// fail stops the board on err when StopOnError (vortex's stop_on_error).
func (a *AlazarAcquisition) fail(err error) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.failLocked(err)
}

// failLocked is fail with a.mu held.
func (a *AlazarAcquisition) failLocked(err error) error {
	if a.cfg.StopOnError {
		_ = a.stopLocked() // err is the one to report
	}
	return err
}

// Post queues a block's buffer with the board (engine.Poster).
func (a *AlazarAcquisition) Post(dst []uint16) error {
	want := a.cfg.RecordsPerBlock * a.values
	if len(dst) != want {
		return fmt.Errorf("block is not exactly equal to the configured size: %d != %d", len(dst)/max(a.values, 1), a.cfg.RecordsPerBlock)
	}
	a.mu.Lock()
	if !a.running {
		a.mu.Unlock()
		return fmt.Errorf("acquire: AlazarAcquisition.Post: %w", io.EOF)
	}
	p := uintptr(unsafe.Pointer(unsafe.SliceData(dst)))
	if err := a.board.PostBuffer(p, 2*want); err != nil {
		err = a.failLocked(err)
		a.mu.Unlock()
		return err
	}
	a.posted = append(a.posted, p)
	a.mu.Unlock()
	return nil
}

// waitSlice bounds one wait on the board, so that a Stop is seen soon
// even by a library that does not end a wait at an abort.
const waitSlice = 100 * time.Millisecond

// Fill waits for dst, the oldest posted buffer, and returns records (the
// engine's Poster contract; the board fills the whole block).
func (a *AlazarAcquisition) Fill(dst []uint16, records int) (int, error) {
	if err := checkFill(dst, records, a.values); err != nil {
		return 0, err
	}
	p := uintptr(unsafe.Pointer(unsafe.SliceData(dst)))
	a.mu.Lock()
	if !a.running {
		a.mu.Unlock()
		return 0, io.EOF
	}
	if len(a.posted) == 0 || a.posted[0] != p {
		a.mu.Unlock()
		return 0, fmt.Errorf("acquire: AlazarAcquisition.Fill: dst 0x%x is not the oldest posted buffer (%d posted): "+
			"an engine posts each block (engine.Poster) before it fills it", p, len(a.posted))
	}
	if !a.capture {
		if err := a.board.StartCapture(); err != nil {
			err = a.failLocked(err)
			a.mu.Unlock()
			return 0, err
		}
		a.capture = true
	}
	stopping := a.stopping
	a.mu.Unlock()
	switch stopped, err := a.waitFor(p, stopping); {
	case stopped:
		return 0, io.EOF // stopped: what the wait returned does not matter
	case err != nil:
		return 0, a.fail(err)
	}
	return records, nil
}

// waitFor waits up to AcquireTimeout for the posted buffer at p, in
// slices of waitSlice so that a Stop (stopping closed) is seen soon; it
// reports stopped then, whatever the wait returned. A filled buffer
// leaves the posted list.
func (a *AlazarAcquisition) waitFor(p uintptr, stopping <-chan struct{}) (stopped bool, err error) {
	deadline := time.Now().Add(a.cfg.AcquireTimeout)
	for {
		slice := min(time.Until(deadline), waitSlice)
		err := a.board.WaitBuffer(p, max(slice, 0))
		select {
		case <-stopping:
			return true, nil
		default:
		}
		switch {
		case err == nil:
			a.mu.Lock()
			if len(a.posted) > 0 && a.posted[0] == p {
				a.posted = a.posted[1:]
			}
			a.mu.Unlock()
			return false, nil
		case errors.Is(err, alazar.ErrWaitTimeout) && time.Now().Before(deadline):
			continue
		}
		return false, err
	}
}

// Close stops a capture still running. While an engine that prepared the
// source has not finished it refuses with backend.ErrInUse.
func (a *AlazarAcquisition) Close() error {
	return a.claim.Close(func() error {
		a.mu.Lock()
		defer a.mu.Unlock()
		if err := a.stopLocked(); err != nil {
			return err
		}
		a.forgetBoard()
		return a.board.Close()
	})
}
