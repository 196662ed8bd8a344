package storage

import (
	"encoding/binary"
	"fmt"
	"os"
	"strconv"
	"sync"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/claim"
	"github.com/vortexgo/vortexgo/gosrc/marker"
)

// appender is the file behind vortex's append-only storages (simple_stream_t,
// stream_dump_t, marker_log_t): opened truncated, written in order, every
// write landing in the file before it returns (so a crash keeps everything
// written so far, as vortex's unbuffered streams do).
type appender struct {
	name string // "SimpleStream", ... in messages

	mu    sync.Mutex
	f     *os.File
	path  string
	bytes int64 // written since Open
	id    fileID
	gone  bool // another storage took the file over (supersede)

	claim claim.Claim // refuses Close while an engine writes here
}

func (a *appender) inUse() bool { return a.claim.InUse() }

func (a *appender) supersede(string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.f != nil {
		_ = a.f.Close() // the newer storage truncated it: nothing of ours is left
		a.f, a.gone = nil, true
	}
}

// Claims reports the claim an engine takes while one of its endpoints
// writes here (engine.Claimer): Close is refused until the run ends.
func (a *appender) Claims() []*claim.Claim {
	a.claim.Name(a.name)
	return []*claim.Claim{&a.claim}
}

// open closes an open file (vortex's open does) and creates path.
func (a *appender) open(path string) error {
	if path == "" {
		return backend.Invalidf(`%sConfig.Path: "", expected a file path`, a.name)
	}
	if err := a.Close(); err != nil {
		return fmt.Errorf("storage.%s.Open: closing %q first: %w", a.name, a.Path(), err)
	}
	a.claim.Reopen() // before a.mu: Claim.Close holds its lock while it takes a.mu
	// Not under a.mu: taking the file over from another storage takes
	// that storage's lock (openOwned).
	f, id, err := openOwned("storage."+a.name+".Open", path, os.O_WRONLY, a)
	if err != nil {
		return err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.f, a.id, a.gone, a.path, a.bytes = f, id, false, path, 0
	return nil
}

// write appends b; op names the caller in errors.
func (a *appender) write(op string, b []byte) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.writeLocked(op, b)
}

func (a *appender) writeLocked(op string, b []byte) error {
	if a.f == nil {
		if a.gone {
			return fmt.Errorf("storage.%s.%s: %w", a.name, op, ErrSuperseded)
		}
		return fmt.Errorf("storage.%s.%s: %w", a.name, op, ErrNotOpen)
	}
	if len(b) == 0 {
		return nil
	}
	n, err := a.f.Write(b)
	a.bytes += int64(n)
	if err != nil {
		return fmt.Errorf("storage.%s.%s: %q at byte %d: %w", a.name, op, a.path, a.bytes, err)
	}
	return nil
}

// IsOpen reports whether a file is open (vortex's ready).
func (a *appender) IsOpen() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.f != nil
}

// Path is the open file's path ("" when closed).
func (a *appender) Path() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.f == nil {
		return ""
	}
	return a.path
}

// Close closes the file (a no-op when closed). While an engine writes here
// it refuses with backend.ErrInUse: stop the engine first.
func (a *appender) Close() error {
	return a.claim.Close(func() error {
		a.mu.Lock()
		defer a.mu.Unlock()
		if a.f == nil {
			return nil
		}
		defer forget(a.id, a)
		err := a.f.Close()
		a.f = nil
		if err != nil {
			return fmt.Errorf("storage.%s.Close: %q: %w", a.name, a.path, err)
		}
		return nil
	})
}

// SimpleStreamConfig is vortex's simple_stream_config_t. Its only header
// is none (vortex's SimpleStreamHeader.Empty).
type SimpleStreamConfig struct {
	// Path is the file to create (truncated if it exists).
	Path string
	// Buffering is vortex's flag; writes here are unbuffered either way.
	Buffering bool
	// Header must be 0 (Empty).
	Header int
}

// SimpleStream writes a flat stream of one element type with no header,
// as vortex's simple_stream_t: each Write appends its elements.
type SimpleStream struct {
	appender
	elem elem
}

// NewSimpleStreamNamed returns a closed stream of the element type named
// as NumPy does (vortex's SimpleStream{Int8,UInt16,UInt64,Float32,Float64}).
func NewSimpleStreamNamed(dtype string) (*SimpleStream, error) {
	e, ok := elemNamed(dtype)
	if !ok {
		return nil, backend.Invalidf("storage.NewSimpleStream: dtype=%q, expected int8, uint16, uint32, uint64, float32 or float64", dtype)
	}
	return &SimpleStream{appender: appender{name: "SimpleStream"}, elem: e}, nil
}

// DTypeName returns the NumPy name of the element type.
func (s *SimpleStream) DTypeName() string { return s.elem.name }

// ElemSize is the size of one element in bytes.
func (s *SimpleStream) ElemSize() int { return s.elem.size }

// Open creates the file (closing an open one first, as vortex).
func (s *SimpleStream) Open(cfg SimpleStreamConfig) error {
	if cfg.Header != 0 {
		return backend.Invalidf("SimpleStreamConfig.Header: %d, expected 0 (Empty, the only stream header)", cfg.Header)
	}
	return s.open(cfg.Path)
}

// Write appends whole elements (vortex's write).
func (s *SimpleStream) Write(data []byte) error {
	if len(data)%s.elem.size != 0 {
		return backend.Invalidf("storage.SimpleStream.Write: data of %d bytes, expected whole %s elements of %d bytes",
			len(data), s.elem.name, s.elem.size)
	}
	return s.write("Write", data)
}

// StreamDumpConfig is vortex's stream_dump_config_t.
type StreamDumpConfig struct {
	// Path is the file to create (truncated if it exists).
	Path string
	// Stream is which of the block's streams is dumped (vortex's
	// stream_index_t: 0 counter, 1 galvo_target, 2 sample_target,
	// 3 galvo_actual, 4 sample_actual, 5 strobes).
	Stream int
	// Divisor keeps every Divisor-th row of each block (1: all).
	Divisor int
	// Buffering is vortex's flag; writes here are unbuffered either way.
	Buffering bool
}

// StreamDump appends one of each block's streams to a file, as vortex's
// stream_dump_t: each block's rows (flattened after the first axis) with
// every Divisor-th row kept, counted from the block's first row.
type StreamDump struct {
	appender
	cfg StreamDumpConfig
	buf []byte // Dump's kept rows, reused per block
}

// NewStreamDump returns a closed stream dump.
func NewStreamDump() *StreamDump { return &StreamDump{appender: appender{name: "StreamDump"}} }

// Open creates the file (closing an open one first, as vortex).
func (d *StreamDump) Open(cfg StreamDumpConfig) error {
	if cfg.Stream < 0 || cfg.Stream > 5 {
		return backend.Invalidf("StreamDumpConfig.Stream: %d, expected 0 (counter) ... 5 (strobes)", cfg.Stream)
	}
	if cfg.Divisor < 1 {
		return backend.Invalidf("StreamDumpConfig.Divisor: %d, expected >= 1", cfg.Divisor)
	}
	if err := d.open(cfg.Path); err != nil {
		return err
	}
	d.mu.Lock()
	d.cfg = cfg
	d.mu.Unlock()
	return nil
}

// Config returns the configuration of the last Open.
func (d *StreamDump) Config() StreamDumpConfig {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.cfg
}

// Dump appends one block of a stream: data holds rows of rowBytes bytes;
// rows 0, Divisor, 2 Divisor, ... are written.
func (d *StreamDump) Dump(data []byte, rowBytes int) error {
	if rowBytes <= 0 || len(data)%rowBytes != 0 {
		return backend.Invalidf("storage.StreamDump.Dump: data of %d bytes, expected whole rows of rowBytes=%d bytes", len(data), rowBytes)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.cfg.Divisor <= 1 {
		return d.writeLocked("Dump", data)
	}
	rows := len(data) / rowBytes
	out := d.buf[:0]
	for r := 0; r < rows; r += d.cfg.Divisor {
		out = append(out, data[r*rowBytes:(r+1)*rowBytes]...)
	}
	d.buf = out
	return d.writeLocked("Dump", out)
}

// MarkerLogConfig is vortex's marker_log_config_t.
type MarkerLogConfig struct {
	// Path is the file to create (truncated if it exists).
	Path string
	// Binary selects vortex's 42-byte binary records over its text lines.
	Binary bool
	// Buffering is vortex's flag; writes here are unbuffered either way.
	Buffering bool
}

// MarkerLog writes markers as vortex's marker_log_t does: one text line
// per marker ("%12d <type> ...") or, with Binary, one 42-byte record
// (sample, type byte, two int64 fields, a direction byte, two more).
type MarkerLog struct {
	appender
	binary bool
	buf    []byte
}

// NewMarkerLog returns a closed marker log.
func NewMarkerLog() *MarkerLog { return &MarkerLog{appender: appender{name: "MarkerLog"}} }

// Open creates the file (closing an open one first, as vortex).
func (l *MarkerLog) Open(cfg MarkerLogConfig) error {
	if err := l.open(cfg.Path); err != nil {
		return err
	}
	l.mu.Lock()
	l.binary = cfg.Binary
	l.mu.Unlock()
	return nil
}

// markerFields are the five fields after the type in vortex's log: two
// counters, a direction ('R', 'F' or '-'), two more counters.
func markerFields(m marker.Marker) (kind byte, a, b uint64, dir byte, c, d uint64) {
	dirOf := func(r bool) byte {
		if r {
			return 'R'
		}
		return 'F'
	}
	switch m.Kind {
	case marker.ScanBoundary:
		return 'C', uint64(m.Sequence), 0, '-', uint64(m.CountHint), uint64(m.Flags)
	case marker.VolumeBoundary:
		return 'V', uint64(m.Sequence), uint64(m.Index), dirOf(m.Reversed), uint64(m.CountHint), uint64(m.Flags)
	case marker.SegmentBoundary:
		return 'S', uint64(m.Sequence), uint64(m.Index), dirOf(m.Reversed), uint64(m.CountHint), uint64(m.Flags)
	case marker.ActiveLines:
		return 'A', 0, 0, '-', 0, 0
	case marker.InactiveLines:
		return 'I', 0, 0, '-', 0, 0
	case marker.Event:
		return 'E', m.ID, 0, '-', 0, 0
	}
	return '?', 0, 0, 'X', 0, 0
}

// Write appends the markers in order (vortex's write); nothing for none.
func (l *MarkerLog) Write(markers []marker.Marker) error {
	if len(markers) == 0 {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.buf[:0]
	for _, m := range markers {
		kind, f1, f2, dir, f3, f4 := markerFields(m)
		if l.binary {
			b = binary.LittleEndian.AppendUint64(b, uint64(m.Sample))
			b = append(b, kind)
			b = binary.LittleEndian.AppendUint64(b, f1)
			b = binary.LittleEndian.AppendUint64(b, f2)
			if kind == '?' {
				dir = '-' // vortex's binary placeholder
			}
			b = append(b, dir)
			b = binary.LittleEndian.AppendUint64(b, f3)
			b = binary.LittleEndian.AppendUint64(b, f4)
			continue
		}
		s := strconv.FormatInt(m.Sample, 10)
		for range 12 - len(s) {
			b = append(b, ' ')
		}
		b = append(b, s...)
		b = append(b, ' ', kind, ' ')
		b = strconv.AppendUint(b, f1, 10)
		b = append(b, ' ')
		b = strconv.AppendUint(b, f2, 10)
		b = append(b, ' ', dir, ' ')
		b = strconv.AppendUint(b, f3, 10)
		b = append(b, ' ')
		b = strconv.AppendUint(b, f4, 10)
		b = append(b, '\n')
	}
	l.buf = b
	return l.writeLocked("Write", b)
}
