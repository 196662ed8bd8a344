package acquire

import (
	"fmt"
	"unsafe"

	"github.com/vortexgo/vortexgo/gosrc/engine"
)

// vortex's standalone calls of an AlazarAcquisition (and so of an
// AlazarFFTAcquisition, which embeds it), outside an engine, in vortex's
// order (acquire/dso/alazar/base.hpp): PrepareStandalone configures the
// capture, buffers are posted (PostStandalone), StartStandalone starts the
// board, each posted buffer is waited for in order (WaitStandalone) and
// StopStandalone aborts. Next is a post and its wait. The buffers are the
// caller's memory, which the board writes until its wait returns or the
// capture is stopped: the caller keeps them alive that long (vortexgo's
// Python side holds every posted array until then). Each call but the
// wait is refused while an engine uses the source (backend.ErrInUse) or
// once it is closed; a wait ended by a stop, a close or a new prepare
// reports 0 records and no error (vortex's aborted block).

// name is the source's name in messages.
func (a *AlazarAcquisition) name() string { return a.claim.Label("AlazarAcquisition") }

// standalone refuses a standalone call on a closed source, or while an
// engine uses it.
func (a *AlazarAcquisition) standalone(op string) error {
	op = a.name() + "." + op
	if err := a.claim.Err("acquire: " + op); err != nil {
		return err
	}
	return notInUse(&a.claim, op)
}

// notPrepared is the error of a post or start with no capture configured.
func (a *AlazarAcquisition) notPrepared(op string) error {
	return fmt.Errorf("acquire: %s.%s: no capture is prepared, expected prepare() first (and again after stop())",
		a.name(), op)
}

// PrepareStandalone is vortex's prepare: it configures the board's
// capture of RecordsPerBlock-record buffers (AlazarBeforeAsyncRead),
// abandoning buffers posted before. While an engine uses the source it is
// the engine's Prepare (the engine configures the capture at each
// session's Start). Refused while the board is acquiring.
func (a *AlazarAcquisition) PrepareStandalone() error {
	if a.claim.InUse() {
		return a.Prepare()
	}
	if err := a.standalone("prepare"); err != nil {
		return err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.running && a.capture {
		return fmt.Errorf("acquire: %s.prepare: the board is acquiring, expected stop() first", a.name())
	}
	return a.configureLocked()
}

// StartStandalone is vortex's start: it starts the board's capture of the
// prepared acquisition (nothing while it runs). Buffers are posted before
// or after it.
func (a *AlazarAcquisition) StartStandalone() error {
	if err := a.standalone("start"); err != nil {
		return err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.running {
		return a.notPrepared("start")
	}
	if a.capture {
		return nil
	}
	if err := a.board.StartCapture(); err != nil {
		return err
	}
	a.capture = true
	return nil
}

// StopStandalone is vortex's stop: it aborts the capture; the posted
// buffers are abandoned (the board writes none after it returns) and
// their waits report 0 records. Nothing happens when none is prepared.
func (a *AlazarAcquisition) StopStandalone() error {
	if err := a.standalone("stop"); err != nil {
		return err
	}
	return a.Stop()
}

// Running reports whether the board is capturing (vortex's running).
func (a *AlazarAcquisition) Running() bool { return a.board.Running() }

// PostStandalone posts size bytes at ptr, the caller's buffer of one
// block (RecordsPerBlock records), to the board. An error from the board
// stops it when StopOnError.
func (a *AlazarAcquisition) PostStandalone(ptr uintptr, size int) error {
	if err := a.standalone("next"); err != nil {
		return err
	}
	if need := a.cfg.RecordsPerBlock * a.values * 2; size < need {
		return fmt.Errorf("output buffer is not appropriately sized: %d < %d", size, need) // vortex's runtime_error
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.running {
		return a.notPrepared("next")
	}
	if err := a.board.PostBuffer(ptr, size); err != nil {
		return a.failLocked(err)
	}
	a.posted = append(a.posted, ptr)
	return nil
}

// WaitStandalone waits up to AcquireTimeout for the posted buffer at ptr
// and returns RecordsPerBlock; 0 and no error when the capture is stopped
// (before or during the wait). A wait of a buffer never posted, or not
// the oldest, fails with the board's error. An error stops the board when
// StopOnError.
func (a *AlazarAcquisition) WaitStandalone(ptr uintptr) (int, error) {
	a.mu.Lock()
	if !a.running {
		a.mu.Unlock()
		return 0, nil
	}
	stopping := a.stopping
	a.mu.Unlock()
	switch stopped, err := a.waitFor(ptr, stopping); {
	case stopped:
		return 0, nil
	case err != nil:
		return 0, a.fail(err)
	}
	return a.cfg.RecordsPerBlock, nil
}

// Next is vortex's standalone next: it posts dst, one block of
// RecordsPerBlock records of SamplesPerRecord() values, and waits for it.
// records must be RecordsPerBlock (vortex's message otherwise).
func (a *AlazarAcquisition) Next(dst []uint16, records int) (int, error) {
	if records != a.cfg.RecordsPerBlock {
		return 0, engine.Invalid("block is not exactly equal to the configured size: %d != %d", records, a.cfg.RecordsPerBlock)
	}
	if err := checkFill(dst, records, a.values); err != nil {
		return 0, err
	}
	p := uintptr(unsafe.Pointer(unsafe.SliceData(dst)))
	if err := a.PostStandalone(p, 2*len(dst)); err != nil {
		return 0, err
	}
	return a.WaitStandalone(p)
}
