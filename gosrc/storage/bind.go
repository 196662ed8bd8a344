package storage

import (
	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/hostmem"
)

// New is NewSimpleStackNamed (int8, uint16, uint64, float32, float64),
// the constructor of the bindings' generic path (pyapi.NewObject).
func New(dtype string) (*SimpleStack, error) {
	return NewSimpleStackNamed(dtype)
}

// Do runs a named operation for the bindings' generic path: open (args:
// the SimpleStackConfig record; an unwritable path is an OSError there),
// write ({Bscan, Ascan}: the caller's n bytes at dst, read in place before
// Do returns: whole B-scans from B-scan Ascan of the current volume when
// Bscan < 0 (vortex's write_multi_bscan / write_volume, no advance), else
// whole A-scans into B-scan Bscan from A-scan Ascan), advance_volume
// ({Allocate}), and seek ({Volume, Bscan}). No op returns a result.
func (s *SimpleStack) Do(op string, args []byte, _ any, dst, n int) ([]byte, error) {
	if op == "open" {
		var c SimpleStackConfig
		if err := backend.DecodeRecord("SimpleStackConfig", string(args), &c); err != nil {
			return nil, err
		}
		return nil, s.Open(c)
	}
	var a struct {
		Bscan, Ascan, Volume int
		Allocate             *bool
	}
	if len(args) > 0 {
		if err := backend.DecodeRecord("SimpleStack."+op, string(args), &a); err != nil {
			return nil, err
		}
	}
	switch op {
	case "write":
		data, err := hostmem.Span[byte](dst, n)
		if err != nil {
			return nil, err
		}
		if a.Bscan < 0 {
			return nil, s.WriteMultiBscan(a.Ascan, data)
		}
		return nil, s.WritePartialBscan(a.Bscan, a.Ascan, data)
	case "advance_volume":
		return nil, s.AdvanceVolume(a.Allocate == nil || *a.Allocate)
	case "seek":
		return nil, s.Seek(a.Volume, a.Bscan)
	}
	return nil, backend.Invalidf("SimpleStack: operation %q, expected open, write, advance_volume or seek", op)
}
