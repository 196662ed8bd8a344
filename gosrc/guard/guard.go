// Package guard turns a Go panic into an error, so that a bug in the Go
// core (a nil interface, an index out of range) fails the operation or the
// engine session it happened in instead of ending the user's Python
// interpreter: an unrecovered panic on any goroutine ends the whole
// process, and gopy's wrappers recover none.
//
// Every goroutine the core starts, and every call from Python (the build
// adds a recover to each gopy wrapper: see setup.py and docs/design.md,
// "Go panics never end the interpreter"), recovers with this package and
// reports the panic through the error its owner already reports: a
// session's error, a writer's sticky error, a Fill's error.
//
// A recovered panic must not leave its goroutine's protocol half done:
// the owner still closes its channels, signals its WaitGroup and releases
// what it holds, so recover where the normal exit path still runs (a
// deferred call registered after the exit's own defers, or around one
// unit of work inside a loop that goes on).
//
// It is not under gosrc/internal because the generated wrapper package
// (build/_gopy-*, outside gosrc) imports it too: the text of a panic is the
// same whether Python gets it from a call or from an engine's session.
package guard

import (
	"errors"
	"fmt"
	"os"
	"runtime/debug"

	"github.com/vortexgo/vortexgo/gosrc/internal/invariants"
)

// MaxStack bounds the stack kept in a PanicError: the panicking goroutine's
// frames come first, and a deep recursion (a stack overflow is fatal, not a
// panic, but a long one is not) must not make an error of megabytes that
// every event and log line then carries.
const MaxStack = 8 << 10

// PanicError is a recovered panic: where it was recovered, the panic value
// and the panicking goroutine's stack. Python maps it to
// vortexgo.InternalError (a bug to report, with the stack).
type PanicError struct {
	Where string // the goroutine or call that recovered it
	Value any    // the value passed to panic (a runtime.Error for a fault)
	Stack []byte // debug.Stack at the recover, at most MaxStack bytes
}

// Error is one line naming the place and the value, then the stack: the
// first line is the message, the rest is for the bug report.
func (e *PanicError) Error() string {
	return fmt.Sprintf("%s: internal error (Go panic: %v)\n%s", e.Where, e.Value, e.Stack)
}

// Unwrap returns the panic value when it is an error (a runtime.Error, or
// an error a caller panicked with), so errors.Is and errors.As see it.
func (e *PanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}

// Error converts r, a value recover returned in a goroutine or call named
// where, into a *PanicError with the current goroutine's stack (call it in
// the deferred function, while the panicking frames are still below).
//
// In invariant builds (tests with -race or the invariants tag) a misuse
// the invariants package caught is panicked again: those checks exist to
// stop a test loudly, and a recover here must not make one pass.
func Error(where string, r any) error {
	if v, ok := r.(*invariants.Violation); ok && invariants.Enabled {
		panic(v)
	}
	stack := debug.Stack()
	if len(stack) > MaxStack {
		stack = append(stack[:MaxStack:MaxStack], "\n... (stack trimmed)"...)
	}
	return &PanicError{Where: where, Value: r, Stack: stack}
}

// Recover, deferred directly (`defer guard.Recover(&err, "where")`),
// recovers a panic of the deferring function and joins it into *err. It
// must be the deferred call itself: recover only stops a panic when the
// deferred function calls it.
func Recover(err *error, where string) {
	if r := recover(); r != nil {
		*err = errors.Join(*err, Error(where, r))
	}
}

// Call runs fn and returns its error, or the panic it raised as a
// *PanicError: the guard for one unit of work inside a loop that must go
// on (a writer's job, a reader's chunk).
func Call(where string, fn func() error) (err error) {
	defer Recover(&err, where)
	return fn()
}

// Undo, deferred directly (`defer guard.Undo(func() { free <- j })`), runs
// undo only when the deferring function panics, then lets the panic go on
// to the goroutine's recover: for something taken from a pool (a storage
// writer's job) that the panicking code would never give back, so that
// the owner's Flush does not wait for it forever.
func Undo(undo func()) {
	if r := recover(); r != nil {
		undo()
		panic(r)
	}
}

// TestPanicsEnv is the environment variable that enables the test-only
// "debug_panic" operations (TestPanic): tests reach a Go panic from
// Python with it set to 1, users never do.
const TestPanicsEnv = "VORTEXGO_TEST_PANICS"

// TestPanic is the test hook behind the "debug_panic" operations: with
// VORTEXGO_TEST_PANICS=1 it panics with a message naming where; without,
// it returns an error saying the operation is disabled (wrapping errInvalid,
// the caller's bad-argument sentinel), so a user who finds the name gets a
// ValueError, never a crash.
func TestPanic(where string, errInvalid error) error {
	if !TestPanicsEnabled() {
		return fmt.Errorf("%s: debug_panic is a test hook, enabled only with %s=1: %w", where, TestPanicsEnv, errInvalid)
	}
	panic(fmt.Sprintf("%s: debug_panic (test hook, %s=1)", where, TestPanicsEnv))
}

// TestPanicsEnabled reports whether VORTEXGO_TEST_PANICS=1 (read at each
// call: the hooks are never on a hot path).
func TestPanicsEnabled() bool { return os.Getenv(TestPanicsEnv) == "1" }
