// Package storage writes acquired volumes to disk.
//
// SimpleStack follows vortex's storage object of the same name: a file of
// consecutive (bscans, ascans, depth) volumes of one element type, with
// either no header (raw bytes) or a NumPy header that makes the file a
// valid .npy array of shape (volumes, bscans, ascans, depth).
//
// # Crash safety
//
// The NumPy header is written with a shape field padded to a fixed width,
// so it can be rewritten in place without moving the data. It is rewritten
// after every completed volume and at Close, so a crash, a Stop in the
// middle of a volume or a killed process leaves a file that numpy.load
// reads with every volume completed so far.
package storage

import (
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"sync"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/engine"
)

// Header selects what precedes the volumes in the file.
type Header int

const (
	// HeaderEmpty writes the raw volumes with nothing before them.
	HeaderEmpty Header = iota
	// HeaderNumPy writes a .npy (format 1.0) header.
	HeaderNumPy
)

// String returns "empty" or "numpy".
func (h Header) String() string {
	switch h {
	case HeaderEmpty:
		return "empty"
	case HeaderNumPy:
		return "numpy"
	}
	return fmt.Sprintf("Header(%d)", int(h))
}

// npyHeaderLen is the fixed size of the .npy preamble, magic included. 256
// bytes leave room for four 20-digit dimensions, and a multiple of 64 keeps
// the data aligned as the format recommends.
const npyHeaderLen = 256

// ErrNotOpen is returned (wrapped) by writes to a stack that is not open
// (never opened, or closed). It wraps backend.ErrClosed: Python's
// ClosedError, a ValueError.
var ErrNotOpen error = notOpen{}

type notOpen struct{}

func (notOpen) Error() string { return "storage: stack is not open, expected open(config) first" }
func (notOpen) Unwrap() error { return backend.ErrClosed }

// SimpleStackConfig says where and how a SimpleStack writes.
type SimpleStackConfig struct {
	// Path is the file to create (truncated if it exists).
	Path string
	// Shape is one volume: (bscans, ascans, depth).
	Shape [3]int
	// Header is HeaderEmpty or HeaderNumPy.
	Header Header
}

// MaxVolumeBytes bounds one volume (1 TiB): the byte offsets of a file of
// such volumes stay far inside int64 for any volume count that fits a
// disk, and a shape whose product overflows is refused instead of wrapping
// into a small, wrong file.
const MaxVolumeBytes = 1 << 40

// Validate checks the configuration, naming the offending field.
func (c SimpleStackConfig) Validate() error {
	if c.Path == "" {
		return engine.Invalid(`SimpleStackConfig.Path: "", expected a file path`)
	}
	for i, n := range c.Shape {
		if n <= 0 {
			return engine.Invalid("SimpleStackConfig.Shape[%d]: %d, expected > 0 (shape is (bscans, ascans, depth))", i, n)
		}
	}
	if n, ok := engine.MulSize(c.Shape[0], c.Shape[1], c.Shape[2], 4); !ok || n > MaxVolumeBytes {
		return engine.TooLarge("SimpleStackConfig.Shape: %v is a volume of more than %d bytes, expected a smaller shape",
			c.Shape, MaxVolumeBytes)
	}
	if c.Header != HeaderEmpty && c.Header != HeaderNumPy {
		return engine.Invalid("SimpleStackConfig.Header: %d, expected HeaderEmpty or HeaderNumPy", int(c.Header))
	}
	return nil
}

// SimpleStack writes volumes of one dtype to a file. Its methods are safe
// for concurrent use; the engine's storage endpoints call them from a writer
// goroutine, off the acquisition's hot path.
type SimpleStack struct {
	dtype backend.DType

	mu        sync.Mutex
	f         *os.File
	cfg       SimpleStackConfig
	volume    int   // volume the next write goes to
	completed int   // volumes completely written (the header's first dimension)
	dataOff   int64 // bytes before the first volume

	claim engine.Claim // refuses Close while an engine stores into the stack
}

// Claims reports the claim an engine takes while one of its storage
// endpoints writes here (engine.Claimer): Close is refused until the
// engine's run ends, so a running engine never writes into a closed file.
func (s *SimpleStack) Claims() []*engine.Claim {
	s.claim.Name("SimpleStack")
	return []*engine.Claim{&s.claim}
}

// NewSimpleStack returns a closed stack for int8, uint16 or float32 volumes
// (vortex's SimpleStackInt8, SimpleStackUInt16, SimpleStackFloat32).
func NewSimpleStack(dtype backend.DType) (*SimpleStack, error) {
	switch dtype {
	case backend.Int8, backend.Uint16, backend.Float32:
		return &SimpleStack{dtype: dtype}, nil
	}
	return nil, engine.Invalid("storage.NewSimpleStack: dtype=%v, expected int8, uint16 or float32", dtype)
}

// DType returns the element type of the volumes.
func (s *SimpleStack) DType() backend.DType { return s.dtype }

// Config returns the configuration of the open stack (zero when closed).
func (s *SimpleStack) Config() SimpleStackConfig {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cfg
}

// VolumeBytes returns the size of one volume in bytes (0 when closed).
func (s *SimpleStack) VolumeBytes() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.volumeBytes()
}

func (s *SimpleStack) volumeBytes() int {
	return s.cfg.Shape[0] * s.cfg.Shape[1] * s.cfg.Shape[2] * s.dtype.Size()
}

func (s *SimpleStack) bscanBytes() int {
	return s.cfg.Shape[1] * s.cfg.Shape[2] * s.dtype.Size()
}

// IsOpen reports whether a file is open.
func (s *SimpleStack) IsOpen() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.f != nil
}

// Completed returns the number of volumes completely written.
func (s *SimpleStack) Completed() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.completed
}

// Open creates the file and writes the header. It fails at once on a path
// that cannot be written, so a bad path surfaces before an engine starts.
func (s *SimpleStack) Open(cfg SimpleStackConfig) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	// Before s.mu: Claim.Close holds the claim's lock while it takes s.mu.
	s.claim.Reopen()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f != nil {
		return engine.Invalid("storage.Open: %q is already open, expected Close first", s.cfg.Path)
	}
	f, err := os.OpenFile(cfg.Path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("storage.Open: path=%q cannot be written: %w", cfg.Path, err)
	}
	s.f, s.cfg, s.volume, s.completed, s.dataOff = f, cfg, 0, 0, 0
	if cfg.Header == HeaderNumPy {
		s.dataOff = npyHeaderLen
		if err := s.writeHeader(); err != nil {
			_ = f.Close()
			s.f = nil
			return err
		}
	}
	return nil
}

// npyHeader renders the .npy preamble for the given number of volumes,
// padded with spaces to exactly npyHeaderLen bytes.
func npyHeader(dtype backend.DType, volumes int, shape [3]int) []byte {
	b := make([]byte, 0, npyHeaderLen)
	b = append(b, "\x93NUMPY\x01\x00"...)
	hlen := npyHeaderLen - 10
	b = append(b, byte(hlen), byte(hlen>>8))
	b = append(b, "{'descr': '"...)
	b = append(b, dtype.TypeStr()...)
	b = append(b, "', 'fortran_order': False, 'shape': ("...)
	b = strconv.AppendInt(b, int64(volumes), 10)
	for _, n := range shape {
		b = append(b, ", "...)
		b = strconv.AppendInt(b, int64(n), 10)
	}
	b = append(b, "), }"...)
	for len(b) < npyHeaderLen-1 {
		b = append(b, ' ')
	}
	return append(b, '\n')
}

func (s *SimpleStack) writeHeader() error {
	if s.cfg.Header != HeaderNumPy {
		return nil
	}
	h := npyHeader(s.dtype, s.completed, s.cfg.Shape)
	if len(h) != npyHeaderLen {
		return fmt.Errorf("storage: .npy header for shape %v needs %d bytes, expected at most %d", s.cfg.Shape, len(h), npyHeaderLen)
	}
	if _, err := s.f.WriteAt(h, 0); err != nil {
		return fmt.Errorf("storage: writing header of %q: %w", s.cfg.Path, err)
	}
	return nil
}

// WriteVolume writes one whole volume (exactly VolumeBytes bytes, C order
// (bscans, ascans, depth)) at the current volume and advances to the next.
func (s *SimpleStack) WriteVolume(data []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f == nil {
		return fmt.Errorf("storage.WriteVolume: %w", ErrNotOpen)
	}
	if len(data) != s.volumeBytes() {
		return engine.Invalid("storage.WriteVolume: len(data)=%d, expected %d (shape %v of %v)", len(data), s.volumeBytes(), s.cfg.Shape, s.dtype)
	}
	off := s.dataOff + int64(s.volume)*int64(s.volumeBytes())
	if _, err := s.f.WriteAt(data, off); err != nil {
		return fmt.Errorf("storage.WriteVolume: volume %d of %q: %w", s.volume, s.cfg.Path, err)
	}
	return s.advance()
}

// WritePartialBscan writes data (whole A-scans, C order (ascans, depth))
// into B-scan bscan of the current volume, starting at A-scan ascan.
func (s *SimpleStack) WritePartialBscan(bscan, ascan int, data []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f == nil {
		return fmt.Errorf("storage.WritePartialBscan: %w", ErrNotOpen)
	}
	if bscan < 0 || bscan >= s.cfg.Shape[0] {
		return engine.Invalid("storage.WritePartialBscan: bscan=%d, expected 0 <= bscan < %d", bscan, s.cfg.Shape[0])
	}
	ascanBytes := s.cfg.Shape[2] * s.dtype.Size()
	if ascan < 0 || ascan >= s.cfg.Shape[1] {
		return engine.Invalid("storage.WritePartialBscan: ascan=%d, expected 0 <= ascan < %d", ascan, s.cfg.Shape[1])
	}
	if len(data)%ascanBytes != 0 || ascan+len(data)/ascanBytes > s.cfg.Shape[1] {
		return engine.Invalid("storage.WritePartialBscan: len(data)=%d, expected a multiple of %d bytes (one A-scan) fitting in the %d A-scans after ascan=%d",
			len(data), ascanBytes, s.cfg.Shape[1]-ascan, ascan)
	}
	off := s.dataOff + int64(s.volume)*int64(s.volumeBytes()) + int64(bscan)*int64(s.bscanBytes()) + int64(ascan)*int64(ascanBytes)
	if _, err := s.f.WriteAt(data, off); err != nil {
		return fmt.Errorf("storage.WritePartialBscan: %q: %w", s.cfg.Path, err)
	}
	return nil
}

// AdvanceVolume marks the current volume complete (after partial writes)
// and moves to the next one.
func (s *SimpleStack) AdvanceVolume() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f == nil {
		return fmt.Errorf("storage.AdvanceVolume: %w", ErrNotOpen)
	}
	return s.advance()
}

func (s *SimpleStack) advance() error {
	s.volume++
	if s.volume > s.completed {
		s.completed = s.volume
		// Rewriting 256 bytes per volume is what makes a crash leave a
		// valid file; it costs one small write next to a whole volume.
		return s.writeHeader()
	}
	return nil
}

// Seek moves the write position to the start of (volume, bscan); the next
// WritePartialBscan calls address that volume. Volumes already complete
// stay counted.
func (s *SimpleStack) Seek(volume, bscan int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f == nil {
		return fmt.Errorf("storage.Seek: %w", ErrNotOpen)
	}
	if volume < 0 || volume > s.maxVolume() {
		return engine.Invalid("storage.Seek: volume=%d, expected 0 <= volume <= %d (the largest volume index whose "+
			"bytes a file can address)", volume, s.maxVolume())
	}
	if bscan < 0 || bscan >= s.cfg.Shape[0] {
		return engine.Invalid("storage.Seek: bscan=%d, expected 0 <= bscan < %d", bscan, s.cfg.Shape[0])
	}
	// Partial writes carry their own B-scan index, so only the volume
	// position is state; bscan is validated for vortex compatibility.
	s.volume = volume
	return nil
}

// maxVolume is the largest volume index whose last byte a file offset
// (int64) can address.
func (s *SimpleStack) maxVolume() int {
	vb := int64(s.volumeBytes())
	if vb <= 0 {
		return 0
	}
	return int((math.MaxInt64-s.dataOff)/vb - 1)
}

// Close rewrites the header, trims any incomplete trailing volume so that
// a NumPy file holds exactly its declared shape, and closes the file.
// Closing a closed stack is a no-op. While an engine stores into the stack
// it refuses with backend.ErrInUse (stop the engine first: closing under a
// run used to drop its volumes without a word).
func (s *SimpleStack) Close() error {
	return s.claim.Close(s.close)
}

func (s *SimpleStack) close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f == nil {
		return nil
	}
	f := s.f
	s.f = nil
	var errs []error
	if s.cfg.Header == HeaderNumPy {
		s.f = f // writeHeader writes through s.f
		errs = append(errs, s.writeHeader())
		s.f = nil
		size := s.dataOff + int64(s.completed)*int64(s.volumeBytes())
		if err := f.Truncate(size); err != nil {
			errs = append(errs, fmt.Errorf("storage.Close: trimming %q to %d bytes: %w", s.cfg.Path, size, err))
		}
	}
	if err := f.Close(); err != nil {
		errs = append(errs, fmt.Errorf("storage.Close: %q: %w", s.cfg.Path, err))
	}
	return errors.Join(errs...)
}

// Record is the stack's state for bindings: open (0/1), then the volumes
// completely written.
func (s *SimpleStack) Record() []float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	open := 0.0
	if s.f != nil {
		open = 1
	}
	return []float64{open, float64(s.completed)}
}
