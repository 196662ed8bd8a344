// Package invariants holds checks that run only in test builds, in the
// style of pebble's internal/invariants: built with the "invariants" tag,
// or with -race (which CI's `go test -race` sets), Enabled is true and
//
//   - using a stream, event, buffer or graph after Close, and closing it
//     twice, panics with a *Violation naming the object, where it was
//     created and where it was closed, instead of only returning an error
//     wrapping backend.ErrClosed;
//   - every tracked object (streams, events, buffers, graphs of both
//     backends, tensor locks held) is recorded with its creation stack
//     until it is closed, so a package's TestMain can report leaks.
//
// In other builds (the Python extension, users' programs) Enabled is false,
// the hooks compile to nothing and misuse keeps returning its error:
// a user's mistake must raise ClosedError, never crash the interpreter.
//
// # Hooks
//
// An object keeps an Obj from Track(kind, id) and calls Release when it is
// closed. Where it returns an error for use after close or double close it
// returns o.Misuse(err) instead: the error itself in user builds, a panic in
// invariant builds. Tensor locks call Acquired and Released.
//
// # Tests
//
// A package's tests report leaks at the end with
//
//	func TestMain(m *testing.M) { os.Exit(invariants.RunTests(m)) }
//
// and a test that checks the user-facing error of a deliberate misuse calls
// AllowMisuse(t) first.
package invariants
