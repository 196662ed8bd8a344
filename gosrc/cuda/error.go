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

// Error formats as "cuda: cuMemAlloc_v2: CUDA_ERROR_OUT_OF_MEMORY (2): out of memory",
// followed by what to do for the stream-capture errors (captureHints).
func (e *Error) Error() string {
	name := e.Name
	if name == "" {
		name = fmt.Sprintf("CUresult(%d)", e.Code)
	}
	var s string
	if e.Msg == "" {
		s = fmt.Sprintf("cuda: %s: %s (%d)", e.Op, name, e.Code)
	} else {
		s = fmt.Sprintf("cuda: %s: %s (%d): %s", e.Op, name, e.Code, e.Msg)
	}
	if hint, ok := captureHints[e.Code]; ok && !isCUFFT(e.Op) {
		s += "; " + hint
	}
	return s
}

// captureHints say what to do about the driver's stream-capture errors,
// whose text names the rule broken but not the way out. The first refused
// call invalidates the capture, and every later call on the stream (the
// fast paths' retries included) reports CUDA_ERROR_STREAM_CAPTURE_INVALIDATED,
// so that hint names every cause.
var captureHints = map[int]string{
	CodeCaptureUnsupported: "a stream capturing a graph (ScopedCapture) cannot be synchronized or queried: " +
		"synchronize before the capture begins or after it ends",
	CodeCaptureInvalidated: "the stream's graph capture was invalidated by a call that a graph cannot hold: " +
		"inside a capture, the capturing stream (or an event recorded in it) cannot be synchronized or " +
		"queried, and the stream cannot wait on an event recorded outside the capture; do that work before " +
		"the capture begins (synchronize outside work there) or after it ends, then capture again",
	CodeCaptureMerge: "a wait would join two separate graph captures: wait only on events recorded inside " +
		"the same capture",
	CodeCaptureUnjoined: "work forked onto another stream inside the capture was not joined back: record an " +
		"event on that stream and make the capturing stream wait on it before the capture ends",
	CodeCaptureIsolation: "a stream capturing a graph cannot wait on an event recorded outside the capture: " +
		"synchronize that work before the capture begins, or record the event inside the capture",
	CodeCaptureImplicit: "the legacy default stream cannot be used while a stream captures a graph: use " +
		"non-blocking streams (vortexgo's) for all work during the capture",
	CodeCapturedEvent: "an event last recorded inside a graph capture cannot be queried or synchronized " +
		"from the host: launch the graph and synchronize its stream instead",
}

func isCUFFT(op string) bool { return len(op) >= 5 && op[:5] == "cufft" }

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
	// CodeCaptureUnsupported is CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED: a
	// call not permitted while the stream captures (a synchronize, a query).
	CodeCaptureUnsupported = 900
	// CodeCaptureInvalidated is CUDA_ERROR_STREAM_CAPTURE_INVALIDATED: an
	// earlier refused call invalidated the capture.
	CodeCaptureInvalidated = 901
	// CodeCaptureMerge is CUDA_ERROR_STREAM_CAPTURE_MERGE.
	CodeCaptureMerge = 902
	// CodeCaptureUnjoined is CUDA_ERROR_STREAM_CAPTURE_UNJOINED.
	CodeCaptureUnjoined = 904
	// CodeCaptureIsolation is CUDA_ERROR_STREAM_CAPTURE_ISOLATION: a wait on
	// work outside the capture.
	CodeCaptureIsolation = 905
	// CodeCaptureImplicit is CUDA_ERROR_STREAM_CAPTURE_IMPLICIT.
	CodeCaptureImplicit = 906
	// CodeCapturedEvent is CUDA_ERROR_CAPTURED_EVENT.
	CodeCapturedEvent = 907
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
	if isCUFFT(op) {
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
