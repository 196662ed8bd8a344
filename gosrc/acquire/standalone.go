package acquire

import (
	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/guard"
)

// vortex's standalone calls (start, stop and next outside an engine) on the
// sources that have them, FileAcquisition and NullAcquisition. Each is
// refused with backend.ErrInUse while an engine has prepared the source
// (Next, in null.go and file.go, is the standalone next).

// StartStandalone is vortex's standalone start: Start, refused while an
// engine uses the source.
func (a *NullAcquisition) StartStandalone() error {
	if err := a.standalone("NullAcquisition.start"); err != nil {
		return err
	}
	return a.Start()
}

// StopStandalone is vortex's standalone stop: Stop, refused while an
// engine uses the source.
func (a *NullAcquisition) StopStandalone() error {
	if err := a.standalone("NullAcquisition.stop"); err != nil {
		return err
	}
	return a.Stop()
}

// StartStandalone is vortex's standalone start: Start (opening the file),
// refused while an engine uses the source.
func (a *FileAcquisition) StartStandalone() error {
	if err := a.standalone("FileAcquisition.start"); err != nil {
		return err
	}
	return a.Start()
}

// StopStandalone is vortex's standalone stop: Stop (closing the file),
// refused while an engine uses the source.
func (a *FileAcquisition) StopStandalone() error {
	if err := a.standalone("FileAcquisition.stop"); err != nil {
		return err
	}
	return a.Stop()
}

// standalone refuses a standalone call on a closed source, or while an
// engine uses it.
func (a *FileAcquisition) standalone(op string) error {
	if err := a.claim.Err("acquire: " + op); err != nil {
		return err
	}
	return notInUse(&a.claim, op)
}

// DebugPanic is a test hook, which tests use to reach a Go panic from
// Python: with VORTEXGO_TEST_PANICS=1 only (guard.TestPanic; otherwise an
// error matching backend.ErrInvalid), it panics in this call, or with lend
// in the next Lend, on the engine's acquire goroutine.
func (a *NullAcquisition) DebugPanic(lend bool) error {
	if !lend || !guard.TestPanicsEnabled() {
		return guard.TestPanic("acquire: NullAcquisition.debug_panic", backend.ErrInvalid)
	}
	a.mu.Lock()
	a.panicLend = true
	a.mu.Unlock()
	return nil
}
