package cuda

/*
#include "shim.h"
*/
import "C"

import (
	"fmt"
)

// Error is a failed driver (or cuFFT) call.
type Error struct {
	// Op is the driver function that failed ("cuMemAlloc_v2").
	Op string
	// Code is the CUresult (or cufftResult for cufft* ops).
	Code int
	// Name is the code's symbolic name ("CUDA_ERROR_OUT_OF_MEMORY").
	Name string
	// Msg is the driver's description ("out of memory").
	Msg string
}

// Error formats as "cuda: cuMemAlloc_v2: CUDA_ERROR_OUT_OF_MEMORY (2): out of memory".
func (e *Error) Error() string {
	name := e.Name
	if name == "" {
		name = fmt.Sprintf("CUresult(%d)", e.Code)
	}
	if e.Msg == "" {
		return fmt.Sprintf("cuda: %s: %s (%d)", e.Op, name, e.Code)
	}
	return fmt.Sprintf("cuda: %s: %s (%d): %s", e.Op, name, e.Code, e.Msg)
}

// Is matches another *Error with the same Code (Op is ignored), so callers
// can test errors.Is(err, &cuda.Error{Code: cuda.CodeOutOfMemory}).
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

// CUresult codes callers commonly branch on.
const (
	// CodeInvalidValue is CUDA_ERROR_INVALID_VALUE.
	CodeInvalidValue = 1
	// CodeOutOfMemory is CUDA_ERROR_OUT_OF_MEMORY.
	CodeOutOfMemory = 2
	// CodeNoDevice is CUDA_ERROR_NO_DEVICE.
	CodeNoDevice = 100
	// CodeInvalidPTX is CUDA_ERROR_INVALID_PTX.
	CodeInvalidPTX = 218
	// CodeUnsupportedPTXVersion is CUDA_ERROR_UNSUPPORTED_PTX_VERSION: the
	// PTX was made by a newer toolkit than the driver.
	CodeUnsupportedPTXVersion = 222
	// CodeNotFound is CUDA_ERROR_NOT_FOUND (e.g. an unknown kernel name).
	CodeNotFound = 500
	// CodeNotReady is CUDA_ERROR_NOT_READY; Query methods turn it into false.
	CodeNotReady = 600
)

// errOf turns a wrapper's result into nil or an *Error, asking the driver
// for the code's name and text.
func errOf(r C.vg_ret) error {
	if r.code == 0 {
		return nil
	}
	op := "cuda"
	if r.op != nil {
		op = C.GoString(r.op)
	}
	return newError(op, int(r.code))
}

// newError builds an *Error for a driver call. Only CUresult codes are
// looked up in the driver; cuFFT codes use cufftNames.
func newError(op string, code int) *Error {
	e := &Error{Op: op, Code: code}
	if len(op) >= 5 && op[:5] == "cufft" {
		e.Name, e.Msg = cufftResultText(code)
		return e
	}
	if s := C.vg_error_name(C.int(code)); s != nil {
		e.Name = C.GoString(s)
	}
	if s := C.vg_error_string(C.int(code)); s != nil {
		e.Msg = C.GoString(s)
	}
	return e
}

// queryResult maps a query's result to (done, err): CUDA_ERROR_NOT_READY
// is the expected "still running" answer, not a failure.
func queryResult(r C.vg_ret) (bool, error) {
	switch r.code {
	case 0:
		return true, nil
	case CodeNotReady:
		return false, nil
	}
	return false, errOf(r)
}
