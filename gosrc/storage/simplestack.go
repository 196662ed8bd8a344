// Package storage writes acquired volumes to disk.
//
// SimpleStack follows vortex's simple_stack_t: a file of consecutive
// (bscans, ascans, samples, channels) volumes of one element type, after
// one of vortex's headers (none, NumPy, MATLAB v5, NRRD, NIfTI-2), laid out
// byte for byte as vortex lays them out (headers.go says where vortex's
// own files cannot be read and vortexgo differs). See SimpleStack for the
// crash-safety addition.
package storage

import (
	"errors"
	"fmt"
	"math"
	"os"
	"sync"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/claim"
)

// Header selects what precedes the volumes in the file. The values are
// vortex's simple_stack_header_t (none, numpy, matlab, nrrd, nifti).
type Header int

const (
	// HeaderEmpty writes the raw volumes with nothing before them.
	HeaderEmpty Header = iota
	// HeaderNumPy writes a .npy (format 2.0) header.
	HeaderNumPy
	// HeaderMATLAB writes a MATLAB v5 .mat header (one variable, "data").
	HeaderMATLAB
	// HeaderNRRD writes an NRRD0005 header (raw encoding).
	HeaderNRRD
	// HeaderNIfTI writes a NIfTI-2 header.
	HeaderNIfTI
)

// String returns the header's name as vortex's Python enum spells it.
func (h Header) String() string {
	switch h {
	case HeaderEmpty:
		return "Empty"
	case HeaderNumPy:
		return "NumPy"
	case HeaderMATLAB:
		return "MATLAB"
	case HeaderNRRD:
		return "NRRD"
	case HeaderNIfTI:
		return "NifTI"
	}
	return fmt.Sprintf("Header(%d)", int(h))
}

// ErrNotOpen is returned (wrapped) by writes to a storage that is not open
// (never opened, or closed). It wraps backend.ErrClosed: Python's
// ClosedError, a ValueError.
var ErrNotOpen error = notOpen{}

type notOpen struct{}

func (notOpen) Error() string { return "storage: not open, expected open(config) first" }
func (notOpen) Unwrap() error { return backend.ErrClosed }

// SimpleStackConfig says where and how a SimpleStack writes (vortex's
// simple_stack_config_t). vortex's 4-D shape (bscans, ascans, samples,
// channels) is Shape plus Channels, so that 3-D callers keep working.
type SimpleStackConfig struct {
	// Path is the file to create (truncated if it exists).
	Path string
	// Shape is one volume: (bscans, ascans, samples).
	Shape [3]int
	// Channels is vortex's fourth dimension, channels per sample; 0 means 1.
	Channels int
	// Header is one of HeaderEmpty ... HeaderNIfTI.
	Header Header
	// Buffering is vortex's flag; writes here are unbuffered either way
	// (each lands in the file before the call returns).
	Buffering bool
}

// channels returns Channels with 0 read as 1.
func (c SimpleStackConfig) channels() int {
	if c.Channels == 0 {
		return 1
	}
	return c.Channels
}

// MaxVolumeBytes bounds one volume (1 TiB): the byte offsets of a file of
// such volumes stay far inside int64 for any volume count that fits a
// disk, and a shape whose product overflows is refused instead of wrapping
// into a small, wrong file.
const MaxVolumeBytes = 1 << 40

// Validate checks the configuration, naming the offending field.
func (c SimpleStackConfig) Validate() error {
	if c.Path == "" {
		return backend.Invalidf(`SimpleStackConfig.Path: "", expected a file path`)
	}
	for i, n := range c.Shape {
		if n <= 0 {
			return backend.Invalidf("SimpleStackConfig.Shape[%d]: %d, expected > 0 (shape is (bscans, ascans, samples, channels))", i, n)
		}
	}
	if c.Channels < 0 {
		return backend.Invalidf("SimpleStackConfig.Channels: %d, expected > 0 (shape[3], channels per sample)", c.Channels)
	}
	if n, ok := backend.MulSize(c.Shape[0], c.Shape[1], c.Shape[2], c.channels(), 8); !ok || n > MaxVolumeBytes {
		return backend.TooLargef("SimpleStackConfig.Shape: %v x %d channels is a volume of more than %d bytes, expected a smaller shape",
			c.Shape, c.channels(), MaxVolumeBytes)
	}
	if c.Header < HeaderEmpty || c.Header > HeaderNIfTI {
		return backend.Invalidf("SimpleStackConfig.Header: %d, expected 0 (Empty), 1 (NumPy), 2 (MATLAB), 3 (NRRD) or 4 (NifTI)", int(c.Header))
	}
	return nil
}

// SimpleStack writes volumes of one element type to a file, as vortex's
// simple_stack_t does: writes land in the current volume, AdvanceVolume
// moves to the next (reserving it on disk), Seek moves anywhere, and Close
// pads an unfinished last volume with zeros and writes the final header.
//
// # Crash safety
//
// Beyond vortex, the header is rewritten with the number of volumes
// advanced past after each AdvanceVolume, so a crash, a stop, a full disk
// or a killed process leaves a file that numpy.load (and the other
// readers) open with every volume completed so far. Two headers need
// more, as their readers refuse bytes after the counted volumes (those of
// the volume being written): MATLAB's data element spans the volume being
// written before its first byte lands (matHeader), and an NRRD file is
// always whole volumes, the header counting them: a write that starts a
// volume first extends the file to its end (zeros) and counts it, and a
// failed write shrinks the file back to the completed volumes. Between
// that extension and its header (two system calls) a killed process
// leaves an NRRD file one volume longer than its header says.
// Close writes the same final header as vortex (the MATLAB element's size
// counts the data's padding, headers.go), so a closed file is vortex's.
//
// # Ownership
//
// A stack opening a file another open storage of the process writes (a
// notebook cell run twice) takes it over: the older one lets go of it
// without another write (its later calls fail with ErrSuperseded). While
// an engine writes through the older one the open is refused instead.
//
// Its methods are safe for concurrent use; the engine's storage endpoints
// call them from a writer goroutine, off the acquisition's hot path.
type SimpleStack struct {
	elem elem

	mu        sync.Mutex
	f         *os.File
	cfg       SimpleStackConfig
	headerEnd int64 // bytes before the first volume (vortex's _header_position)
	volumePos int64 // file offset of the current volume
	farthest  int64 // end of the farthest byte written
	completed int   // volume count in the header on disk
	covered   int64 // MATLAB: the end of the bytes the header's element spans
	id        fileID
	gone      bool // another storage took the file over (supersede)

	claim claim.Claim // refuses Close while an engine stores into the stack
}

func (s *SimpleStack) inUse() bool { return s.claim.InUse() }

func (s *SimpleStack) supersede(string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f != nil {
		_ = s.f.Close() // its bytes are the newer storage's now: nothing to finish
		s.f, s.gone, s.cfg = nil, true, SimpleStackConfig{}
	}
}

// notOpen is the error of an operation on a stack without a file.
func (s *SimpleStack) notOpen(op string) error {
	if s.gone {
		return fmt.Errorf("storage.%s: SimpleStack: %w", op, ErrSuperseded)
	}
	return fmt.Errorf("storage.%s: %w", op, ErrNotOpen)
}

// Claims reports the claim an engine takes while one of its storage
// endpoints writes here (engine.Claimer): Close is refused until the
// engine's run ends, so a running engine never writes into a closed file.
func (s *SimpleStack) Claims() []*claim.Claim {
	s.claim.Name("SimpleStack")
	return []*claim.Claim{&s.claim}
}

// NewSimpleStack returns a closed stack for int8, uint16, float32 or
// float64 volumes; NewSimpleStackNamed also takes "uint64".
func NewSimpleStack(dtype backend.DType) (*SimpleStack, error) {
	return NewSimpleStackNamed(dtype.String())
}

// NewSimpleStackNamed returns a closed stack of the element type named as
// NumPy does: vortex's SimpleStackInt8 ("int8"), SimpleStackUInt16,
// SimpleStackUInt64, SimpleStackFloat32 and SimpleStackFloat64.
func NewSimpleStackNamed(dtype string) (*SimpleStack, error) {
	e, ok := elemNamed(dtype)
	if !ok {
		return nil, backend.Invalidf("storage.NewSimpleStack: dtype=%q, expected int8, uint16, uint32, uint64, float32 or float64", dtype)
	}
	return &SimpleStack{elem: e}, nil
}

// DType returns the element type of the volumes; for uint64, which
// backend has no type for, an invalid DType (storage endpoints refuse it).
func (s *SimpleStack) DType() backend.DType { return s.elem.dtype }

// DTypeName returns the NumPy name of the element type.
func (s *SimpleStack) DTypeName() string { return s.elem.name }

// Config returns the configuration of the open stack (zero when closed).
func (s *SimpleStack) Config() SimpleStackConfig {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cfg
}

// VolumeShape returns the open stack's volume shape, (bscans, ascans,
// samples, channels) (zeros when closed).
func (s *SimpleStack) VolumeShape() [4]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f == nil {
		return [4]int{}
	}
	return [4]int{s.cfg.Shape[0], s.cfg.Shape[1], s.cfg.Shape[2], s.cfg.channels()}
}

// VolumeBytes returns the size of one volume in bytes (0 when closed).
func (s *SimpleStack) VolumeBytes() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f == nil {
		return 0
	}
	return int(s.volumeBytes())
}

func (s *SimpleStack) ascanBytes() int64 {
	return int64(s.cfg.Shape[2]) * int64(s.cfg.channels()) * int64(s.elem.size)
}

func (s *SimpleStack) bscanBytes() int64  { return int64(s.cfg.Shape[1]) * s.ascanBytes() }
func (s *SimpleStack) volumeBytes() int64 { return int64(s.cfg.Shape[0]) * s.bscanBytes() }

// IsOpen reports whether a file is open (vortex's ready).
func (s *SimpleStack) IsOpen() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.f != nil
}

// Completed returns the number of volumes the header counts so far.
func (s *SimpleStack) Completed() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.completed
}

// shape5 is the file's shape: (volumes, bscans, ascans, samples, channels).
func (s *SimpleStack) shape5(volumes int) []int {
	return []int{volumes, s.cfg.Shape[0], s.cfg.Shape[1], s.cfg.Shape[2], s.cfg.channels()}
}

// Open creates the file and writes the provisional header (zero volumes).
// An open stack is closed first, as in vortex. It fails at once on a path
// that cannot be written, so a bad path surfaces before an engine starts.
func (s *SimpleStack) Open(cfg SimpleStackConfig) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	if s.IsOpen() {
		if err := s.Close(); err != nil {
			return fmt.Errorf("storage.Open: closing %q first: %w", s.Config().Path, err)
		}
	}
	// Before s.mu: Claim.Close holds the claim's lock while it takes s.mu.
	s.claim.Reopen()
	probe := &SimpleStack{elem: s.elem, cfg: cfg}
	h, err := header(cfg.Header, s.elem, probe.shape5(0), 0)
	if err == nil && cfg.Header == HeaderMATLAB {
		// The element's size is a uint32: refuse a volume that cannot fit
		// now rather than at the first AdvanceVolume (the header spans two
		// while the second is written).
		_, err = header(cfg.Header, s.elem, probe.shape5(1), 2*probe.volumeBytes())
	}
	if err != nil {
		return fmt.Errorf("storage.Open: SimpleStackConfig.Header=%v with shape %v: %w", cfg.Header, probe.shape5(0)[1:], err)
	}
	// Not under s.mu: taking the file over from another storage takes
	// that storage's lock, and two stacks opening each other's files at
	// once must not wait for each other.
	f, id, err := openOwned("storage.Open", cfg.Path, os.O_RDWR, s)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f != nil {
		forget(id, s)
		_ = f.Close()
		return backend.Invalidf("storage.Open: %q is already open, expected Close first", s.cfg.Path)
	}
	if _, err := f.WriteAt(h, 0); err != nil {
		forget(id, s)
		_ = f.Close()
		return fmt.Errorf("storage.Open: writing the header of path=%q: %w", cfg.Path, err)
	}
	s.f, s.id, s.gone, s.cfg, s.completed = f, id, false, cfg, 0
	s.headerEnd = int64(len(h))
	s.volumePos, s.farthest, s.covered = s.headerEnd, s.headerEnd, s.headerEnd
	return nil
}

// writeHeader writes the header for volumes volumes; it must fit the
// space the provisional header reserved.
func (s *SimpleStack) writeHeader(volumes int) error {
	if s.cfg.Header == HeaderEmpty {
		return nil
	}
	h, err := header(s.cfg.Header, s.elem, s.shape5(volumes), s.covered-s.headerEnd)
	if err != nil {
		return fmt.Errorf("storage: header of %q for %d volumes: %w", s.cfg.Path, volumes, err)
	}
	if int64(len(h)) > s.headerEnd {
		return fmt.Errorf("storage: header of %q for %d volumes needs %d bytes, %d reserved: %w",
			s.cfg.Path, volumes, len(h), s.headerEnd, backend.ErrTooLarge)
	}
	if _, err := s.f.WriteAt(h, 0); err != nil {
		return fmt.Errorf("storage: writing the header of %q: %w", s.cfg.Path, err)
	}
	return nil
}

func (s *SimpleStack) writeAt(op string, data []byte, off int64) error {
	end := off + int64(len(data))
	if err := s.extend(op, end); err != nil {
		return err
	}
	if _, err := s.f.WriteAt(data, off); err != nil {
		err = fmt.Errorf("storage.%s: %q at byte %d: %w", op, s.cfg.Path, off, err)
		return errors.Join(err, s.rollback())
	}
	s.farthest = max(s.farthest, end)
	return nil
}

// extend readies the header for a write ending at end (see "Crash
// safety"): MATLAB's element is made to span the volume end falls in, an
// NRRD file grows to that volume's end and counts it. Before the write,
// so that a process killed during it leaves a file its readers open.
func (s *SimpleStack) extend(op string, end int64) error {
	vb := s.volumeBytes()
	volEnd := func(end int64) int64 { return s.headerEnd + (end-s.headerEnd+vb-1)/vb*vb }
	switch s.cfg.Header {
	case HeaderMATLAB:
		if end <= s.covered {
			return nil
		}
		prev := s.covered
		s.covered = (volEnd(end) + 7) / 8 * 8 // MATLAB's elements are 8-byte aligned
		if err := s.writeHeader(s.completed); err != nil {
			s.covered = prev
			return fmt.Errorf("storage.%s: %w", op, err)
		}
	case HeaderNRRD:
		if end <= s.farthest {
			return nil
		}
		grown := volEnd(end)
		if err := s.f.Truncate(grown); err != nil {
			return fmt.Errorf("storage.%s: %q growing to %d bytes: %w", op, s.cfg.Path, grown, err)
		}
		if err := s.writeHeader(int((grown - s.headerEnd) / vb)); err != nil {
			return errors.Join(fmt.Errorf("storage.%s: %w", op, err), s.rollback())
		}
		s.farthest = grown
	}
	return nil
}

// rollback, after a failed write, makes an NRRD file the completed
// volumes again (its header must count exactly the file's volumes, and
// the volume the write was for may stay short); the other headers count
// only completed volumes already and are left as they are.
func (s *SimpleStack) rollback() error {
	if s.cfg.Header != HeaderNRRD {
		return nil
	}
	done := s.headerEnd + int64(s.completed)*s.volumeBytes()
	if err := s.f.Truncate(done); err != nil {
		return fmt.Errorf("storage: %q shrinking back to its %d completed volumes: %w", s.cfg.Path, s.completed, err)
	}
	s.farthest = done
	return s.writeHeader(s.completed)
}

// Write is vortex's write_volume: whole B-scans (C order (bscans, ascans,
// samples, channels)) into the current volume from B-scan 0. It does not
// advance: call AdvanceVolume for that, as in vortex.
func (s *SimpleStack) Write(data []byte) error {
	return s.WriteMultiBscan(0, data)
}

// WriteMultiBscan writes whole B-scans into the current volume from
// B-scan index (vortex's write_multi_bscan).
func (s *SimpleStack) WriteMultiBscan(index int, data []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f == nil {
		return s.notOpen("WriteMultiBscan")
	}
	return s.writeMulti(index, data)
}

func (s *SimpleStack) writeMulti(index int, data []byte) error {
	bb := s.bscanBytes()
	if err := checkBscans("storage.WriteMultiBscan", index, len(data), bb, s.cfg.Shape[0],
		"%d bytes (%d ascans x %d samples x %d channels of %s)", bb, s.cfg.Shape[1], s.cfg.Shape[2], s.cfg.channels(), s.elem.name); err != nil {
		return err
	}
	return s.writeAt("WriteMultiBscan", data, s.volumePos+int64(index)*bb)
}

// checkBscans checks that n bytes of data are whole B-scans of bb bytes
// (described by bscan and its args in the error) that fit in a volume of
// perVolume B-scans from B-scan index.
func checkBscans(op string, index, n int, bb int64, perVolume int, bscan string, args ...any) error {
	if n == 0 || int64(n)%bb != 0 {
		return backend.Invalidf("%s: data of %d bytes, expected whole B-scans of "+bscan, append([]any{op, n}, args...)...)
	}
	count := int(int64(n) / bb)
	if index < 0 || index >= perVolume || index+count > perVolume {
		return backend.Invalidf("%s: index=%d with %d B-scans, expected 0 <= index and index + count <= %d (B-scans per volume)",
			op, index, count, perVolume)
	}
	return nil
}

// WriteVolume writes one whole volume (exactly VolumeBytes bytes) and
// advances to the next: vortex's write_volume then advance_volume, what a
// storage endpoint does with each completed volume.
func (s *SimpleStack) WriteVolume(data []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f == nil {
		return s.notOpen("WriteVolume")
	}
	if int64(len(data)) != s.volumeBytes() {
		return backend.Invalidf("storage.WriteVolume: len(data)=%d, expected %d (shape %v x %d channels of %s)",
			len(data), s.volumeBytes(), s.cfg.Shape, s.cfg.channels(), s.elem.name)
	}
	if err := s.writeMulti(0, data); err != nil {
		return err
	}
	return s.advance(true)
}

// WritePartialBscan writes whole A-scans (C order (ascans, samples,
// channels)) into B-scan bscan of the current volume from A-scan ascan.
func (s *SimpleStack) WritePartialBscan(bscan, ascan int, data []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f == nil {
		return s.notOpen("WritePartialBscan")
	}
	ab := s.ascanBytes()
	if len(data) == 0 || int64(len(data))%ab != 0 {
		return backend.Invalidf("storage.WritePartialBscan: data of %d bytes, expected whole A-scans of %d bytes (%d samples x %d channels of %s)",
			len(data), ab, s.cfg.Shape[2], s.cfg.channels(), s.elem.name)
	}
	if bscan < 0 || bscan >= s.cfg.Shape[0] {
		return backend.Invalidf("storage.WritePartialBscan: bscan_index=%d, expected 0 <= bscan_index < %d (B-scans per volume)", bscan, s.cfg.Shape[0])
	}
	n := int(int64(len(data)) / ab)
	if ascan < 0 || ascan >= s.cfg.Shape[1] || ascan+n > s.cfg.Shape[1] {
		return backend.Invalidf("storage.WritePartialBscan: ascan_index=%d with %d A-scans, expected 0 <= ascan_index and ascan_index + count <= %d (A-scans per B-scan)",
			ascan, n, s.cfg.Shape[1])
	}
	return s.writeAt("WritePartialBscan", data, s.volumePos+int64(bscan)*s.bscanBytes()+int64(ascan)*ab)
}

// AdvanceVolume moves to the next volume (vortex's advance_volume). With
// allocate, a volume the file does not reach yet is reserved on disk by
// writing its last byte, so volumes never written read as zeros.
func (s *SimpleStack) AdvanceVolume(allocate bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f == nil {
		return s.notOpen("AdvanceVolume")
	}
	return s.advance(allocate)
}

func (s *SimpleStack) advance(allocate bool) error {
	next := s.volumePos + s.volumeBytes()
	if next > math.MaxInt64-s.volumeBytes() {
		return backend.Invalidf("storage.AdvanceVolume: volume at byte %d, expected a file offset below 2^63", next)
	}
	prev := s.volumePos
	s.volumePos = next
	// Beyond vortex, a volume left partly written (a stop's last volume,
	// which vortex's storage endpoints advance past without allocating)
	// is completed on disk now rather than at Close: the bytes are the
	// zeros Close would pad with, and the header below counts the volume.
	if (allocate || s.farthest > prev) && s.farthest < next {
		if err := s.writeAt("AdvanceVolume", []byte{0}, next-1); err != nil {
			return err
		}
	}
	// Rewriting the small header per volume is what makes a crash leave a
	// readable file; it costs one small write next to a whole volume.
	done := int(min(s.volumePos-s.headerEnd, s.farthest-s.headerEnd) / s.volumeBytes())
	if done > s.completed {
		// NRRD's header counts the file's volumes already (extend).
		if s.cfg.Header != HeaderNRRD {
			if err := s.writeHeader(done); err != nil {
				return err
			}
		}
		s.completed = done
	}
	return nil
}

// Seek moves the current volume to volume (vortex's seek). bscan is
// checked and otherwise unused: every write names its own B-scan.
func (s *SimpleStack) Seek(volume, bscan int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f == nil {
		return s.notOpen("Seek")
	}
	if volume < 0 || volume > s.maxVolume() {
		return backend.Invalidf("storage.Seek: volume_index=%d, expected 0 <= volume_index <= %d (the largest volume index whose "+
			"bytes a file can address)", volume, s.maxVolume())
	}
	if bscan < 0 || bscan >= s.cfg.Shape[0] {
		return backend.Invalidf("storage.Seek: bscan_index=%d, expected 0 <= bscan_index < %d", bscan, s.cfg.Shape[0])
	}
	s.volumePos = s.headerEnd + int64(volume)*s.volumeBytes()
	return nil
}

// maxVolume is the largest volume index whose last byte a file offset
// (int64) can address, with one more volume to advance into.
func (s *SimpleStack) maxVolume() int {
	vb := s.volumeBytes()
	return int((math.MaxInt64-s.headerEnd)/vb - 2)
}

// Close pads an unfinished last volume with zeros (vortex never trims),
// writes the final header (and, for MATLAB, pads the file to 8 bytes) and
// closes the file. Closing a closed stack is a no-op. While an engine
// stores into the stack it refuses with backend.ErrInUse (stop the engine
// first: closing under a run used to drop its volumes without a word).
// The file is closed even when finishing it fails; the error says why.
func (s *SimpleStack) Close() error {
	return s.claim.Close(s.close)
}

func (s *SimpleStack) close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f == nil {
		return nil
	}
	// A newer storage opening the file once it is closed finds it
	// registered to no one.
	defer forget(s.id, s)
	var errs []error
	vb := s.volumeBytes()
	if (s.farthest-s.headerEnd)%vb != 0 {
		s.volumePos = s.headerEnd + (s.farthest-s.headerEnd)/vb*vb
		errs = append(errs, s.advance(true))
	}
	volumes := int((s.farthest - s.headerEnd) / vb)
	if s.cfg.Header == HeaderMATLAB {
		// The data padded to 8 bytes, as MATLAB's elements are; the
		// element then spans exactly that, unless a failed write left
		// bytes after it (a full disk), which it keeps spanning.
		end := s.headerEnd + int64(volumes)*vb
		padded := (end + 7) / 8 * 8
		if s.farthest < padded {
			errs = append(errs, s.writeAt("Close", make([]byte, padded-s.farthest), s.farthest))
		}
		// covered, not farthest: a write that failed part way (a full
		// disk) may have left bytes past farthest, all inside covered,
		// which extend set before the write.
		s.covered = max(padded, s.covered)
	}
	errs = append(errs, s.writeHeader(volumes))
	if err := s.f.Close(); err != nil {
		errs = append(errs, fmt.Errorf("storage.Close: %q: %w", s.cfg.Path, err))
	}
	s.f = nil
	return errors.Join(errs...)
}
