package pyapi

import (
	"errors"
	"os"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/cuda"
	"github.com/vortexgo/vortexgo/gosrc/guard"
	"github.com/vortexgo/vortexgo/gosrc/memory"
	"github.com/vortexgo/vortexgo/gosrc/pipeline"
)

// classes maps the core packages' typed errors to the Python classes of
// python/vortexgo/_errors.py; the first match wins, so the more specific
// class comes first (a budget error is a MemoryError too, but says more).
var classes = []struct {
	name string
	is   func(error) bool
}{
	{"KeyError", is(pipeline.ErrUnknownOp)},  // an op id the coordinator never issued
	{"InternalError", as[*guard.PanicError]}, // a recovered Go panic: a bug, whatever it wraps
	{"MemoryBudgetError", as[*memory.BudgetError]},
	{"LockError", is(memory.ErrLockHeld)},
	{"ClosedError", is(backend.ErrClosed)},
	{"InUseError", is(backend.ErrInUse)},
	{"MemoryError", is(backend.ErrTooLarge)},
	{"ValueError", is(backend.ErrInvalid)},
	{"CudaError", as[*cuda.Error]},
	{"TimeoutError", isTimeout},
	{"OSError", as[*os.PathError]},
}

// tag prefixes err's text with the Python class it maps to ("VortexError"
// when none does). It is applied once, at the boundary, so Go code below
// keeps plain errors.
func tag(err error) error {
	if err == nil {
		return nil
	}
	for _, c := range classes {
		if c.is(err) {
			return errors.New(c.name + ": " + err.Error())
		}
	}
	return errors.New("VortexError: " + err.Error())
}

func is(target error) func(error) bool { return func(err error) bool { return errors.Is(err, target) } }

func as[T error](err error) bool {
	var t T
	return errors.As(err, &t)
}

// isTimeout: errors that declare themselves timeouts (Timeout() true), as
// context's and os's deadlines, memory's lock waits and pools and net's do.
func isTimeout(err error) bool {
	var t interface{ Timeout() bool }
	return errors.As(err, &t) && t.Timeout()
}

// badArg is a bad argument met while marshalling (backend.Invalidf).
var badArg = backend.Invalidf

// tagged returns v, or the zero value and err with its Python class: a
// wrapper built around a failed constructor's result is dropped here.
func tagged[T any](v T, err error) (T, error) {
	if err != nil {
		var zero T
		return zero, tag(err)
	}
	return v, nil
}
