package acquire

import (
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/engine"
	"github.com/vortexgo/vortexgo/gosrc/guard"
)

// NullConfig configures a NullAcquisition (vortex's NullAcquisitionConfig
// plus Records and Rate).
type NullConfig struct {
	// SamplesPerRecord is the number of samples of one spectrum (>= 1).
	SamplesPerRecord int
	// ChannelsPerSample is the number of interleaved channels per sample;
	// 0 is 1. A record is SamplesPerRecord*ChannelsPerSample values.
	ChannelsPerSample int
	// Records is how many records the source delivers before io.EOF;
	// 0 means endless.
	Records int
	// Rate throttles delivery in A-scans per second; 0 is unlimited.
	Rate float64
}

// NullAcquisition performs no acquisition, as vortex's does: a source for
// measuring the pipeline without acquisition costs, and for tests.
//
// It does no work per block. In an engine it lends one block of zeros in
// pinned memory (engine.Lender), zeroed once by PinTo and never rewritten,
// so the engine uploads zeros without a host copy or memset per block; the
// memset of every block it used to do bound the engine to one CPU thread
// at large blocks (issue 10). Standalone, Next leaves the buffer untouched
// and reports its records, like vortex's next.
type NullAcquisition struct {
	cfg NullConfig

	// mu guards sent and the pinned block against a standalone Next racing
	// an engine's Lend: uncontended (one engine goroutine) it costs tens of
	// nanoseconds per block.
	mu     sync.Mutex
	sent   int
	zeros  backend.Buffer // PinTo's block of zeros
	maxRec int            // records in zeros
	// retired are blocks of zeros replaced by a larger one: another
	// engine prepared with this source may still upload from them, so
	// they are freed by Close, never before.
	retired []backend.Buffer
	run     runState
	claim   engine.Claim // refuses Close while an engine uploads from zeros
	// panicLend: the next Lend panics (the "debug_panic" test hook,
	// under mu, which Lend holds anyway: no cost per block).
	panicLend bool
}

var _ engine.Lender = (*NullAcquisition)(nil)

// NewNullAcquisition validates cfg and returns the source.
func NewNullAcquisition(cfg NullConfig) (*NullAcquisition, error) {
	if cfg.SamplesPerRecord < 1 {
		return nil, engine.Invalid("acquire: NullConfig.SamplesPerRecord=%d, expected >= 1", cfg.SamplesPerRecord)
	}
	if cfg.ChannelsPerSample < 0 {
		return nil, engine.Invalid("acquire: NullConfig.ChannelsPerSample=%d, expected >= 1", cfg.ChannelsPerSample)
	}
	cfg.ChannelsPerSample = max(cfg.ChannelsPerSample, 1)
	if _, ok := engine.MulSize(cfg.SamplesPerRecord, cfg.ChannelsPerSample, 2); !ok {
		return nil, engine.TooLarge("acquire: NullConfig: SamplesPerRecord=%d x ChannelsPerSample=%d values per record overflow",
			cfg.SamplesPerRecord, cfg.ChannelsPerSample)
	}
	if cfg.Records < 0 {
		return nil, engine.Invalid("acquire: NullConfig.Records=%d, expected >= 0 (0 = endless)", cfg.Records)
	}
	if err := checkRate(cfg.Rate); err != nil {
		return nil, err
	}
	a := &NullAcquisition{cfg: cfg}
	a.claim.Name("NullAcquisition")
	return a, nil
}

// Prepare does nothing but refuse a closed source (backend.ErrClosed).
func (a *NullAcquisition) Prepare() error { return a.claim.Err("acquire: NullAcquisition.Prepare") }

// Claims reports the claim an engine takes while it uses the source
// (engine.Claimer).
func (a *NullAcquisition) Claims() []*engine.Claim {
	return []*engine.Claim{&a.claim}
}

// Close frees the pinned block of zeros: Prepare and an engine's Prepare
// fail after it; backend.ErrInUse while an engine uses it. Closing twice
// is a no-op.
func (a *NullAcquisition) Close() error {
	return a.claim.Close(func() error {
		a.mu.Lock()
		defer a.mu.Unlock()
		var errs []error
		for _, b := range append(a.retired, a.zeros) {
			if b != nil {
				errs = append(errs, b.Free())
			}
		}
		a.zeros, a.maxRec, a.retired = nil, 0, nil
		return errors.Join(errs...)
	})
}

// Start arms the source; the record count carries on from where Stop left it.
func (a *NullAcquisition) Start() error {
	a.run.start(a.cfg.Rate)
	return nil
}

// Stop disarms the source; a Fill waiting for the rate limiter returns io.EOF.
func (a *NullAcquisition) Stop() error {
	a.run.halt()
	return nil
}

// SamplesPerRecord returns the values of one record, SamplesPerRecord x
// ChannelsPerSample (what the engine sizes its blocks by).
func (a *NullAcquisition) SamplesPerRecord() int {
	return a.cfg.SamplesPerRecord * a.cfg.ChannelsPerSample
}

// take reserves up to records records of the Records limit (io.EOF once
// it is spent).
func (a *NullAcquisition) take(records int) (int, error) {
	n := records
	if a.cfg.Records > 0 {
		n = min(n, a.cfg.Records-a.sent)
		if n == 0 && records > 0 {
			return 0, io.EOF
		}
	}
	return n, nil
}

// PinTo allocates the block of zeros the source lends (engine.Lender): one
// block of maxRecords records of pinned memory of dev, zeroed once. Calling
// it again (another engine) keeps the block when it is large enough and on
// dev; otherwise a new one replaces it and the old one is kept until Close,
// as an engine prepared before may still upload from it.
func (a *NullAcquisition) PinTo(dev backend.Device, maxRecords int) error {
	if dev == nil || maxRecords <= 0 {
		return fmt.Errorf("acquire: NullAcquisition.PinTo: dev=%v maxRecords=%d, expected a device and maxRecords > 0", dev, maxRecords)
	}
	a.mu.Lock()
	reuse := a.zeros != nil && a.maxRec >= maxRecords && a.zeros.Device() == dev
	a.mu.Unlock()
	if reuse {
		return nil
	}
	bytes, ok := engine.MulSize(maxRecords, a.SamplesPerRecord(), 2)
	if !ok || bytes > engine.MaxPoolBytes {
		return engine.TooLarge("acquire: NullAcquisition: a block of %d records x %d values is more than %d bytes",
			maxRecords, a.SamplesPerRecord(), engine.MaxPoolBytes)
	}
	buf, err := dev.AllocPinned(bytes)
	if err != nil {
		return fmt.Errorf("acquire: NullAcquisition: pinning a block of zeros (%d bytes): %w", bytes, err)
	}
	// Fresh pinned memory is not promised to be zero (cuMemAllocHost);
	// this is the only time the source writes it.
	clear(hostBytes(buf.Ptr(), bytes))
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.zeros != nil {
		a.retired = append(a.retired, a.zeros)
	}
	a.zeros, a.maxRec = buf, maxRecords
	return nil
}

// Lend returns the block of zeros for the next records records
// (engine.Lender), after the Records limit and the rate limiter: no work
// per block. The block is never rewritten, so every upload in flight from
// it reads zeros.
func (a *NullAcquisition) Lend(records int) (uintptr, int, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.zeros == nil {
		return 0, 0, errors.New("acquire: NullAcquisition.Lend before PinTo")
	}
	if records <= 0 || records > a.maxRec {
		return 0, 0, fmt.Errorf("acquire: Lend: records=%d, expected 1..%d (PinTo's maxRecords)", records, a.maxRec)
	}
	if a.panicLend {
		a.panicLend = false
		panic("acquire: NullAcquisition.Lend: debug_panic (test hook, " + guard.TestPanicsEnv + "=1)")
	}
	n, err := a.take(records)
	if err != nil {
		return 0, 0, err
	}
	if err := a.run.admit(n); err != nil {
		return 0, 0, err
	}
	a.sent += n
	return a.zeros.Ptr(), n, nil
}

// Fill zeroes records spectra in dst: for a consumer that does not borrow
// the lent block (the engine lends; it never calls Fill on this source).
func (a *NullAcquisition) Fill(dst []uint16, records int) (int, error) {
	if err := checkFill(dst, records, a.SamplesPerRecord()); err != nil {
		return 0, err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	n, err := a.take(records)
	if err != nil {
		return 0, err
	}
	if err := a.run.admit(n); err != nil {
		return 0, err
	}
	clear(dst[:n*a.SamplesPerRecord()])
	a.sent += n
	return n, nil
}

// Next is vortex's standalone next: it reports records records acquired,
// fewer at the end of the Records limit (0 after it), and leaves dst as it
// is. It needs no Start and ignores Rate, as vortex's does.
func (a *NullAcquisition) Next(dst []uint16, records int) (int, error) {
	if err := checkFill(dst, records, a.SamplesPerRecord()); err != nil {
		return 0, err
	}
	if err := a.standalone("NullAcquisition.next"); err != nil {
		return 0, err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	n, err := a.take(records)
	if errors.Is(err, io.EOF) {
		return 0, nil
	}
	a.sent += n
	return n, nil
}

// standalone refuses a standalone call while an engine uses the source: its
// blocks would lose records to the caller.
func (a *NullAcquisition) standalone(op string) error {
	if err := a.claim.Err("acquire: " + op); err != nil {
		return err
	}
	return notInUse(&a.claim, op)
}
