// Package pyerr is the error protocol of the Python boundary, declared
// once: which Python class each of the core's typed errors maps to, and the
// fields that class carries (CudaError.op, MemoryBudgetError.limit ...).
// pyapi tags every error it returns with it, and the panic guard setup.py
// adds to gopy's wrappers tags recovered panics with it; Python reads the
// result in python/vortexgo/_errors.py (translate).
package pyerr

import (
	"encoding/json"
	"errors"
	"os"
	"strings"

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

// Tag prefixes err's text with the Python class it maps to ("VortexError"
// when none does) and appends the error's fields (errorFields) after a
// record separator: "CudaError: <message>\x1e{"op": ...}". It is applied
// once, at the boundary, so Go code below keeps plain errors; gopy hands
// the text to Python as a RuntimeError, which _errors.translate turns into
// the class with the fields as attributes (CudaError.op, .code ...).
func Tag(err error) error {
	if err == nil {
		return nil
	}
	name := "VortexError"
	for _, c := range classes {
		if c.is(err) {
			name = c.name
			break
		}
	}
	msg := err.Error()
	if f := errorFields(err); f != nil {
		if b, jerr := json.Marshal(f); jerr == nil {
			if _, ok := f.(internalErrorFields); ok { // the stack travels as a field, not in the message
				msg, _, _ = strings.Cut(msg, "\n")
			}
			return errors.New(name + ": " + msg + FieldSep + string(b))
		}
	}
	return errors.New(name + ": " + msg)
}

// FieldSep separates an error's message from its fields (ASCII RS, which
// no message holds).
const FieldSep = "\x1e"

// The fields each error class carries to Python, in snake case (the
// attributes of python/vortexgo/_errors.py's classes).
type (
	cudaErrorFields struct {
		Op   string `json:"op"`   // the driver call: "cuMemAlloc_v2"
		Code int    `json:"code"` // the CUresult (cufftResult for cufft* ops)
		Name string `json:"name"` // "CUDA_ERROR_OUT_OF_MEMORY"
	}
	budgetErrorFields struct {
		Kind      string `json:"kind"`    // "device" or "pinned"
		Purpose   string `json:"purpose"` // the label the request was made under
		Requested int64  `json:"requested"`
		Current   int64  `json:"current"`
		Limit     int64  `json:"limit"`
	}
	internalErrorFields struct {
		Where   string `json:"where"`
		GoStack string `json:"go_stack"`
	}
)

// errorFields is the fields of err's class, or nil for a class without.
func errorFields(err error) any {
	var (
		c *cuda.Error
		b *memory.BudgetError
		p *guard.PanicError
	)
	switch {
	case errors.As(err, &p): // first: a panic may wrap anything
		return internalErrorFields{Where: p.Where, GoStack: string(p.Stack)}
	case errors.As(err, &b):
		return budgetErrorFields{Kind: b.Kind.String(), Purpose: b.Purpose, Requested: b.Requested, Current: b.Current, Limit: b.Limit}
	case errors.As(err, &c):
		return cudaErrorFields{Op: c.Op, Code: c.Code, Name: c.Name}
	}
	return nil
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
