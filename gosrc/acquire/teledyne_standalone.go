package acquire

import (
	"errors"
	"io"
)

// vortex's standalone calls of a TeledyneAcquisition, outside an engine
// (acquire/dso/teledyne.hpp): start starts the board's capture, next waits
// for the next transfer buffer and copies its records into the caller's
// memory (vortex's wait_and_copy_buffer), stop stops the capture and leaves
// the board ready for another start. Each is refused while an engine uses
// the source (backend.ErrInUse) or once it is closed.

// name is the source's name in messages.
func (a *TeledyneAcquisition) name() string { return a.claim.Label("TeledyneAcquisition") }

// standalone refuses a standalone call on a closed source, or while an
// engine uses it.
func (a *TeledyneAcquisition) standalone(op string) error {
	op = a.name() + "." + op
	if err := a.claim.Err("acquire: " + op); err != nil {
		return err
	}
	return notInUse(&a.claim, op)
}

// StartStandalone is vortex's start: it starts the board's capture
// (nothing while it runs).
func (a *TeledyneAcquisition) StartStandalone() error {
	if err := a.standalone("start"); err != nil {
		return err
	}
	if err := a.Start(); err != nil {
		return err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.capture {
		return nil
	}
	if err := a.board.StartCapture(); err != nil {
		if a.cfg.StopOnError {
			_ = a.stopLocked()
		}
		return err
	}
	a.capture = true
	return nil
}

// StopStandalone is vortex's stop: it stops the capture.
func (a *TeledyneAcquisition) StopStandalone() error {
	if err := a.standalone("stop"); err != nil {
		return err
	}
	return a.Stop()
}

// Next is vortex's next: it waits up to AcquireTimeout for the next
// transfer buffer and copies its records into dst, returning them (0 and
// no error when the capture is not running: vortex's aborted block). A
// board error (an overflow, a timeout) stops the capture when StopOnError.
func (a *TeledyneAcquisition) Next(dst []uint16, records int) (int, error) {
	if err := a.standalone("next"); err != nil {
		return 0, err
	}
	a.mu.Lock()
	running := a.running
	a.mu.Unlock()
	if !running {
		return 0, nil
	}
	n, err := a.Fill(dst, records)
	if errors.Is(err, io.EOF) {
		return 0, nil
	}
	return n, err
}

// Running reports whether the board is capturing (vortex's running).
func (a *TeledyneAcquisition) Running() bool { return a.board.Running() }
