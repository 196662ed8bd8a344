package storage

import (
	"fmt"
	"strings"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/claim"
	"github.com/vortexgo/vortexgo/gosrc/hostmem"
)

// New builds a storage object for the bindings' generic path
// (pyapi.NewObject) from its kind: a dtype ("int8", "uint16", "uint64",
// "float32", "float64") is a SimpleStack of it; "SimpleStream:<dtype>",
// "HDF5Stack:<dtype>", "StreamDump", "MarkerLog" and "BroctStorage" are
// the others (their engine endpoints are endpoint.BlockEndpoint's). Each
// object's Do documents its operations.
func New(kind string) (any, error) {
	name, dtype, _ := strings.Cut(kind, ":")
	switch name {
	case "SimpleStream":
		return NewSimpleStreamNamed(dtype)
	case "HDF5Stack":
		return NewHDF5StackNamed(dtype)
	case "StreamDump":
		return NewStreamDump(), nil
	case "MarkerLog":
		return NewMarkerLog(), nil
	case "BroctStorage":
		return NewBroctStorage(), nil
	}
	if dtype == "" {
		if _, ok := elemNamed(name); ok {
			return NewSimpleStackNamed(name)
		}
	}
	return nil, backend.Invalidf("storage kind %q, expected a dtype (a SimpleStack), SimpleStream:<dtype>, HDF5Stack:<dtype>, "+
		"StreamDump, MarkerLog or BroctStorage", kind)
}

// stackArgs are the arguments of the stacks' write, advance_volume and
// seek operations; Method is the Python method that called (messages).
type stackArgs struct {
	Bscan, Ascan, Volume int
	Allocate             *bool
	Method               string
}

// notWhileEngine refuses a user's write, advance or seek (method of the
// storage what) while an engine holds the storage: the engine's writer
// goroutine writes and advances there from Prepare until its run ends, so
// a user's call in between would tear a volume or interleave volumes
// without a word. close() and open() are refused the same way (Claim).
// The engine's own writes go through the Go methods, never through Do.
func notWhileEngine(c *claim.Claim, what, method string) error {
	if !c.InUse() {
		return nil
	}
	if method == "" {
		method = "write"
	}
	return fmt.Errorf("%s.%s: an engine writes to this storage (one of its endpoints was prepared with it and "+
		"the engine has not finished), and a call of yours would tear or interleave its volumes; stop the engine "+
		"first (engine.stop(), or wait() for the end of its run; engine.close() for an engine prepared but never "+
		"started): %w", what, method, backend.ErrInUse)
}

func hostmemSpan(dst, n int) ([]byte, error) { return hostmem.Span[byte](dst, n) }

func decodeArgs(what, op string, args []byte, v any) error {
	if len(args) == 0 {
		return nil
	}
	return backend.DecodeRecord(what+"."+op, string(args), v)
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
	var a stackArgs
	if err := decodeArgs("SimpleStack", op, args, &a); err != nil {
		return nil, err
	}
	if err := notWhileEngine(&s.claim, "SimpleStack", a.Method); err != nil {
		return nil, err
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

// Do runs a named operation: open (the SimpleStreamConfig record) and
// write (the caller's n bytes at dst, whole elements, appended).
func (s *SimpleStream) Do(op string, args []byte, _ any, dst, n int) ([]byte, error) {
	switch op {
	case "open":
		var c SimpleStreamConfig
		if err := backend.DecodeRecord("SimpleStreamConfig", string(args), &c); err != nil {
			return nil, err
		}
		return nil, s.Open(c)
	case "write":
		if err := notWhileEngine(&s.claim, "SimpleStream", "write"); err != nil {
			return nil, err
		}
		data, err := hostmem.Span[byte](dst, n)
		if err != nil {
			return nil, err
		}
		return nil, s.Write(data)
	}
	return nil, backend.Invalidf("SimpleStream: operation %q, expected open or write", op)
}

// Do runs a named operation: open (the StreamDumpConfig record) and dump
// ({RowBytes}: the caller's n bytes at dst, rows of RowBytes bytes).
func (d *StreamDump) Do(op string, args []byte, _ any, dst, n int) ([]byte, error) {
	switch op {
	case "open":
		var c StreamDumpConfig
		if err := backend.DecodeRecord("StreamDumpConfig", string(args), &c); err != nil {
			return nil, err
		}
		return nil, d.Open(c)
	case "dump":
		var a struct{ RowBytes int }
		if err := decodeArgs("StreamDump", op, args, &a); err != nil {
			return nil, err
		}
		if err := notWhileEngine(&d.claim, "StreamDump", "write"); err != nil {
			return nil, err
		}
		data, err := hostmem.Span[byte](dst, n)
		if err != nil {
			return nil, err
		}
		return nil, d.Dump(data, a.RowBytes)
	}
	return nil, backend.Invalidf("StreamDump: operation %q, expected open or dump", op)
}

// Do runs a named operation: open (the MarkerLogConfig record) and write
// (the caller's n int64s at dst: marker records, python/vortexgo/marker.py's
// layout, 8 per marker).
func (l *MarkerLog) Do(op string, args []byte, _ any, dst, n int) ([]byte, error) {
	switch op {
	case "open":
		var c MarkerLogConfig
		if err := backend.DecodeRecord("MarkerLogConfig", string(args), &c); err != nil {
			return nil, err
		}
		return nil, l.Open(c)
	case "write":
		if err := notWhileEngine(&l.claim, "MarkerLog", "write"); err != nil {
			return nil, err
		}
		rec, err := hostmem.Span[int64](dst, n)
		if err != nil {
			return nil, err
		}
		ms, err := markersFromRecords(rec)
		if err != nil {
			return nil, err
		}
		return nil, l.Write(ms)
	}
	return nil, backend.Invalidf("MarkerLog: operation %q, expected open or write", op)
}

// Do runs a named operation: open (the BroctStorageConfig record), write
// ({Bscan}: whole transposed B-scans from B-scan Bscan, the caller's n
// bytes at dst), write_volume (one volume in BROCT order, then the next
// volume, as vortex), advance_volume ({Allocate}) and seek ({Volume,
// Bscan}).
func (s *BroctStorage) Do(op string, args []byte, _ any, dst, n int) ([]byte, error) {
	if op == "open" {
		var c BroctStorageConfig
		if err := backend.DecodeRecord("BroctStorageConfig", string(args), &c); err != nil {
			return nil, err
		}
		return nil, s.Open(c)
	}
	var a stackArgs
	if err := decodeArgs("BroctStorage", op, args, &a); err != nil {
		return nil, err
	}
	if err := notWhileEngine(&s.claim, "BroctStorage", a.Method); err != nil {
		return nil, err
	}
	switch op {
	case "write", "write_volume":
		data, err := hostmem.Span[byte](dst, n)
		if err != nil {
			return nil, err
		}
		if op == "write_volume" {
			return nil, s.WriteBroctVolume(data)
		}
		return nil, s.WriteMultiBscan(a.Bscan, data)
	case "advance_volume":
		return nil, s.AdvanceVolume(a.Allocate == nil || *a.Allocate)
	case "seek":
		return nil, s.Seek(a.Volume, a.Bscan)
	}
	return nil, backend.Invalidf("BroctStorage: operation %q, expected open, write, write_volume, advance_volume or seek", op)
}
