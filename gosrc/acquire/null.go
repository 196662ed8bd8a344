package acquire

import (
	"io"

	"github.com/vortexgo/vortexgo/gosrc/engine"
)

// NullConfig configures a NullAcquisition.
type NullConfig struct {
	// SamplesPerRecord is the length of one spectrum (>= 1).
	SamplesPerRecord int
	// Records is how many records the source delivers before io.EOF;
	// 0 means endless.
	Records int
	// Rate throttles delivery in A-scans per second; 0 is unlimited.
	Rate float64
}

// NullAcquisition delivers spectra of zeros: a source for measuring the
// pipeline without acquisition costs, and for tests.
type NullAcquisition struct {
	cfg   NullConfig
	sent  int
	run   runState
	claim engine.Claim // so that a closed source is refused, as the others are
}

// NewNullAcquisition validates cfg and returns the source.
func NewNullAcquisition(cfg NullConfig) (*NullAcquisition, error) {
	if cfg.SamplesPerRecord < 1 {
		return nil, engine.Invalid("acquire: NullConfig.SamplesPerRecord=%d, expected >= 1", cfg.SamplesPerRecord)
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

// Close marks the source closed (it holds nothing to free): Prepare and
// an engine's Prepare fail after it; backend.ErrInUse while an engine uses
// it. Closing twice is a no-op.
func (a *NullAcquisition) Close() error { return a.claim.Close(func() error { return nil }) }

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

// SamplesPerRecord returns the configured record length.
func (a *NullAcquisition) SamplesPerRecord() int { return a.cfg.SamplesPerRecord }

// Fill zeroes records spectra in dst.
func (a *NullAcquisition) Fill(dst []uint16, records int) (int, error) {
	if err := checkFill(dst, records, a.cfg.SamplesPerRecord); err != nil {
		return 0, err
	}
	n := records
	if a.cfg.Records > 0 {
		n = min(n, a.cfg.Records-a.sent)
		if n == 0 {
			return 0, io.EOF
		}
	}
	if err := a.run.admit(n); err != nil {
		return 0, err
	}
	clear(dst[:n*a.cfg.SamplesPerRecord])
	a.sent += n
	return n, nil
}
