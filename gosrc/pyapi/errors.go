package pyapi

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/cuda"
	"github.com/vortexgo/vortexgo/gosrc/memory"
)

// Class tags understood by python/vortexgo/_errors.py.
const (
	tagCuda    = "CudaError: "
	tagValue   = "ValueError: "
	tagTimeout = "TimeoutError: "
	tagClosed  = "ClosedError: "
	tagBudget  = "MemoryBudgetError: "
	tagIO      = "OSError: "
	tagRuntime = "VortexError: "
	tagLock    = "LockError: "
	tagInUse   = "InUseError: "
	tagMemory  = "MemoryError: "
)

// tag prefixes err's text with the Python exception class it maps to. It is
// applied once, at the boundary, so Go code below keeps plain errors.
func tag(err error) error {
	if err == nil {
		return nil
	}
	var ce *cuda.Error
	var be *memory.BudgetError
	var pe *os.PathError
	switch {
	case errors.As(err, &be):
		return errors.New(tagBudget + err.Error())
	case errors.Is(err, memory.ErrLockHeld):
		return errors.New(tagLock + err.Error())
	case errors.Is(err, backend.ErrClosed):
		return errors.New(tagClosed + err.Error())
	case errors.Is(err, backend.ErrInUse):
		return errors.New(tagInUse + err.Error())
	case errors.Is(err, backend.ErrTooLarge):
		return errors.New(tagMemory + err.Error())
	case errors.Is(err, backend.ErrInvalid):
		return errors.New(tagValue + err.Error())
	case errors.As(err, &ce):
		return errors.New(tagCuda + err.Error())
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, os.ErrDeadlineExceeded),
		errors.Is(err, memory.ErrLockTimeout), isTimeout(err):
		return errors.New(tagTimeout + err.Error())
	case errors.As(err, &pe):
		return errors.New(tagIO + err.Error())
	}
	return errors.New(tagRuntime + err.Error())
}

// badArg is a bad argument met while marshalling: its text names the
// argument, and it wraps backend.ErrInvalid like the core packages' errors.
func badArg(format string, args ...any) error { return invalidArg(fmt.Sprintf(format, args...)) }

type invalidArg string

func (e invalidArg) Error() string { return string(e) }
func (e invalidArg) Unwrap() error { return backend.ErrInvalid }

// isTimeout recognises errors that declare themselves timeouts
// (interface { Timeout() bool }), as net and memory errors do.
func isTimeout(err error) bool {
	var t interface{ Timeout() bool }
	return errors.As(err, &t) && t.Timeout()
}
