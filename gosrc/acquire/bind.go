package acquire

import (
	"encoding/json"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/guard"
	"github.com/vortexgo/vortexgo/gosrc/hostmem"
)

// The standalone operations of vortex's acquisition bindings (prepare,
// start, stop, next), for bindings that drive a source by name
// (pyapi's Object.Do). Each refuses with backend.ErrInUse while an engine
// has prepared the source.

// Do runs op on the NullAcquisition: "start", "stop", or "next" with
// args {"Records": r} on the caller's n uint16 values at dst (left as they
// are), returning {"Records": acquired}. "debug_panic" is a test hook
// (debugPanic).
func (a *NullAcquisition) Do(op string, args []byte, _ any, dst, n int) ([]byte, error) {
	if op == "debug_panic" {
		return nil, a.debugPanic(args)
	}
	return doSource("NullAcquisition", op, args, dst, n, a.standalone, a.Start, a.Stop, a.Next)
}

// debugPanic is the test hook behind "debug_panic", which tests use to
// reach a Go panic from Python: with VORTEXGO_TEST_PANICS=1 only
// (guard.TestPanic; otherwise a ValueError), args {} panics in this call,
// {"Lend": true} in the next Lend, on the engine's acquire goroutine.
func (a *NullAcquisition) debugPanic(args []byte) error {
	var arg struct{ Lend bool }
	if len(args) > 0 {
		if err := backend.DecodeRecord("NullAcquisition.debug_panic", string(args), &arg); err != nil {
			return err
		}
	}
	if !arg.Lend || !guard.TestPanicsEnabled() {
		return guard.TestPanic("acquire: NullAcquisition.debug_panic", backend.ErrInvalid)
	}
	a.mu.Lock()
	a.panicLend = true
	a.mu.Unlock()
	return nil
}

// Do runs op on the FileAcquisition: "start", "stop", "next" with args
// {"Records": r} reading into the caller's n uint16 values at dst,
// returning {"Records": acquired}, or "pinned", returning {"Pinned": b}
// (Pinned).
func (a *FileAcquisition) Do(op string, args []byte, _ any, dst, n int) ([]byte, error) {
	if op == "pinned" {
		return json.Marshal(struct{ Pinned bool }{a.Pinned()})
	}
	standalone := func(op string) error {
		if err := a.claim.Err("acquire: " + op); err != nil {
			return err
		}
		return notInUse(&a.claim, op)
	}
	return doSource("FileAcquisition", op, args, dst, n, standalone, a.Start, a.Stop, a.Next)
}

func doSource(kind, op string, args []byte, dst, n int, standalone func(string) error,
	start, stop func() error, next func([]uint16, int) (int, error)) ([]byte, error) {
	switch op {
	case "start", "stop":
		if err := standalone(kind + "." + op); err != nil {
			return nil, err
		}
		if op == "start" {
			return nil, start()
		}
		return nil, stop()
	case "next":
		var a struct{ Records int }
		if err := backend.DecodeRecord(kind+".next", string(args), &a); err != nil {
			return nil, err
		}
		if a.Records < 0 {
			return nil, backend.Invalidf("%s.next: buffer of %d records, expected >= 0", kind, a.Records)
		}
		buf, err := hostmem.Span[uint16](dst, n)
		if err != nil {
			return nil, err
		}
		got, err := next(buf, a.Records)
		if err != nil {
			return nil, err
		}
		return json.Marshal(struct{ Records int }{got})
	}
	return nil, backend.Invalidf("%s: operation %q, expected start, stop or next", kind, op)
}
