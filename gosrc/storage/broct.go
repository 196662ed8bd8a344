package storage

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"sync"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/claim"
)

// BroctScan is vortex's broct_scan_t, the scan type in a BROCT header.
type BroctScan int32

// The scan types, with vortex's values.
const (
	BroctRectangular BroctScan = iota
	BroctBscan
	BroctAiming
	BroctMscan
	BroctRadial
	BroctAscan
	BroctSpeckle
	BroctMixed
	BroctXfastYfast
	BroctXfastYfastSpeckle
	BroctSpiral
)

// BroctStorageConfig is vortex's broct_storage_config_t. Shape is
// (bscans, ascans, samples); each B-scan is stored transposed, as
// (samples, ascans) (vortex's broct_bscan_shape).
type BroctStorageConfig struct {
	// Path is the file to create (truncated if it exists).
	Path string
	// Shape is one volume: (bscans, ascans, samples).
	Shape [3]int
	// Dimensions are the physical lengths written to the header.
	Dimensions [3]float64
	// ScanType is the header's scan type.
	ScanType BroctScan
	// Notes is free text stored at the end of the header.
	Notes string
	// Buffering is vortex's flag; writes here are unbuffered either way.
	Buffering bool
}

// maxBroctBscans bounds the B-scans of a BROCT volume: its header's scan
// map (4 bytes a B-scan) stays under 64 MiB.
const maxBroctBscans = 1 << 24

// Validate checks the configuration, naming the offending field.
func (c BroctStorageConfig) Validate() error {
	if c.Path == "" {
		return backend.Invalidf(`BroctStorageConfig.Path: "", expected a file path`)
	}
	for i, n := range c.Shape {
		if n <= 0 || n > math.MaxInt32 {
			return backend.Invalidf("BroctStorageConfig.Shape[%d]: %d, expected 0 < n <= %d (shape is (bscans, ascans, samples); BROCT stores int32 sizes)",
				i, n, math.MaxInt32)
		}
	}
	if c.Shape[0] > maxBroctBscans {
		// The header lists every B-scan (4 bytes each) and is built in memory.
		return backend.TooLargef("BroctStorageConfig.Shape[0]: %d B-scans, expected at most %d (the header maps each)", c.Shape[0], maxBroctBscans)
	}
	if n, ok := backend.MulSize(c.Shape[0], c.Shape[1], c.Shape[2]); !ok || n > MaxVolumeBytes {
		return backend.TooLargef("BroctStorageConfig.Shape: %v is a volume of more than %d bytes, expected a smaller shape", c.Shape, MaxVolumeBytes)
	}
	if c.ScanType < BroctRectangular || c.ScanType > BroctSpiral {
		return backend.Invalidf("BroctStorageConfig.ScanType: %d, expected 0 (rectangular) ... 10 (spiral)", c.ScanType)
	}
	if len(c.Notes) > math.MaxInt32 {
		return backend.Invalidf("BroctStorageConfig.Notes: %d bytes, expected at most %d", len(c.Notes), math.MaxInt32)
	}
	return nil
}

// broctHeader is vortex's BROCT header: meta 70, the sizes in the order
// (ascans, samples, bscans), their ranges, the physical dimensions, the
// scan type, five zero fields, the identity scan map over the B-scans and
// the notes.
func broctHeader(c BroctStorageConfig) []byte {
	var b bytes.Buffer
	w := func(v any) { _ = binary.Write(&b, binary.LittleEndian, v) }
	order := [3]int{1, 2, 0}
	w(int32(70))
	for _, d := range order {
		w(int32(c.Shape[d]))
	}
	for _, d := range order {
		w([2]int32{0, int32(c.Shape[d] - 1)})
	}
	w(int32(0)) // inactive
	w(c.Dimensions)
	w(int32(c.ScanType))
	w([5]int32{}) // big_xdim, big_xmin, big_xmax, big_inactive, roi
	for i := range c.Shape[0] {
		w(int32(i))
	}
	w(int32(len(c.Notes)))
	b.WriteString(c.Notes)
	return b.Bytes()
}

// BroctStorage writes int8 volumes in the BROCT format, as vortex's
// broct_storage_t: the header, then volumes of B-scans stored transposed
// ((samples, ascans) each). Its write_volume advances to the next volume
// by itself (vortex's does), and Close pads an unfinished last volume.
// The header holds no volume count, so a crash leaves every completed
// volume readable.
type BroctStorage struct {
	mu        sync.Mutex
	f         *os.File
	cfg       BroctStorageConfig
	headerEnd int64
	volumePos int64
	farthest  int64
	scratch   []byte // WriteVolume's transposed volume
	id        fileID
	gone      bool // another storage took the file over (supersede)

	claim claim.Claim
}

func (s *BroctStorage) inUse() bool { return s.claim.InUse() }

func (s *BroctStorage) supersede(string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f != nil {
		_ = s.f.Close() // the newer storage truncated it: nothing of ours is left
		s.f, s.gone = nil, true
	}
}

// NewBroctStorage returns a closed BROCT storage.
func NewBroctStorage() *BroctStorage { return &BroctStorage{} }

// Claims reports the claim an engine takes while an endpoint writes here.
func (s *BroctStorage) Claims() []*claim.Claim {
	s.claim.Name("BroctStorage")
	return []*claim.Claim{&s.claim}
}

// Config returns the configuration of the open storage (zero when closed).
func (s *BroctStorage) Config() BroctStorageConfig {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cfg
}

// IsOpen reports whether a file is open (vortex's ready).
func (s *BroctStorage) IsOpen() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.f != nil
}

func (s *BroctStorage) bscanBytes() int64  { return int64(s.cfg.Shape[1]) * int64(s.cfg.Shape[2]) }
func (s *BroctStorage) volumeBytes() int64 { return int64(s.cfg.Shape[0]) * s.bscanBytes() }

// Open creates the file and writes the header (closing an open one first).
func (s *BroctStorage) Open(cfg BroctStorageConfig) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	if err := s.Close(); err != nil {
		return fmt.Errorf("storage.BroctStorage.Open: closing %q first: %w", s.Config().Path, err)
	}
	s.claim.Reopen()
	// Not under s.mu: taking the file over from another storage takes
	// that storage's lock (openOwned).
	f, id, err := openOwned("storage.BroctStorage.Open", cfg.Path, os.O_RDWR, s)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	h := broctHeader(cfg)
	if _, err := f.WriteAt(h, 0); err != nil {
		forget(id, s)
		_ = f.Close()
		return fmt.Errorf("storage.BroctStorage.Open: writing the header of path=%q: %w", cfg.Path, err)
	}
	s.f, s.cfg, s.id, s.gone = f, cfg, id, false
	s.headerEnd = int64(len(h))
	s.volumePos, s.farthest = s.headerEnd, s.headerEnd
	return nil
}

func (s *BroctStorage) writeAt(op string, data []byte, off int64) error {
	if _, err := s.f.WriteAt(data, off); err != nil {
		return fmt.Errorf("storage.BroctStorage.%s: %q at byte %d: %w", op, s.cfg.Path, off, err)
	}
	s.farthest = max(s.farthest, off+int64(len(data)))
	return nil
}

func (s *BroctStorage) requireOpen(op string) error {
	if s.f == nil {
		if s.gone {
			return fmt.Errorf("storage.BroctStorage.%s: %w", op, ErrSuperseded)
		}
		return fmt.Errorf("storage.BroctStorage.%s: %w", op, ErrNotOpen)
	}
	return nil
}

// WriteMultiBscan writes whole transposed B-scans ((n, samples, ascans))
// into the current volume from B-scan index (vortex's write_multi_bscan;
// write_bscan is the one-B-scan case).
func (s *BroctStorage) WriteMultiBscan(index int, data []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.requireOpen("WriteMultiBscan"); err != nil {
		return err
	}
	return s.writeMulti(index, data)
}

func (s *BroctStorage) writeMulti(index int, data []byte) error {
	bb := s.bscanBytes()
	if err := checkBscans("storage.BroctStorage.WriteMultiBscan", index, len(data), bb, s.cfg.Shape[0],
		"(%d samples x %d ascans) int8", s.cfg.Shape[2], s.cfg.Shape[1]); err != nil {
		return err
	}
	return s.writeAt("WriteMultiBscan", data, s.volumePos+int64(index)*bb)
}

// WriteBroctVolume writes one whole volume in BROCT order ((bscans,
// samples, ascans)) at the current volume and moves past it: vortex's
// write_volume, which advances by itself.
func (s *BroctStorage) WriteBroctVolume(data []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.requireOpen("WriteVolume"); err != nil {
		return err
	}
	if int64(len(data)) != s.volumeBytes() {
		return backend.Invalidf("storage.BroctStorage.WriteVolume: data of %d bytes, expected %d (broct_volume_shape (%d, %d, %d) int8)",
			len(data), s.volumeBytes(), s.cfg.Shape[0], s.cfg.Shape[2], s.cfg.Shape[1])
	}
	if err := s.writeAt("WriteVolume", data, s.volumePos); err != nil {
		return err
	}
	s.volumePos += s.volumeBytes()
	return nil
}

// AdvanceVolume moves to the next volume (vortex's advance_volume); with
// allocate a volume the file does not reach yet is reserved on disk.
func (s *BroctStorage) AdvanceVolume(allocate bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.requireOpen("AdvanceVolume"); err != nil {
		return err
	}
	return s.advance(allocate)
}

func (s *BroctStorage) advance(allocate bool) error {
	if s.volumePos > math.MaxInt64-2*s.volumeBytes() {
		return backend.Invalidf("storage.BroctStorage.AdvanceVolume: volume at byte %d, expected a file offset below 2^63", s.volumePos)
	}
	s.volumePos += s.volumeBytes()
	if allocate && s.farthest < s.volumePos {
		return s.writeAt("AdvanceVolume", []byte{0}, s.volumePos-1)
	}
	return nil
}

// Seek makes volume the current volume (vortex's seek); bscan is checked
// and otherwise unused: every write names its B-scan.
func (s *BroctStorage) Seek(volume, bscan int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.requireOpen("Seek"); err != nil {
		return err
	}
	maxVolume := int((math.MaxInt64-s.headerEnd)/s.volumeBytes() - 2)
	if volume < 0 || volume > maxVolume {
		return backend.Invalidf("storage.BroctStorage.Seek: volume_index=%d, expected 0 <= volume_index <= %d", volume, maxVolume)
	}
	if bscan < 0 || bscan >= s.cfg.Shape[0] {
		return backend.Invalidf("storage.BroctStorage.Seek: bscan_index=%d, expected 0 <= bscan_index < %d", bscan, s.cfg.Shape[0])
	}
	s.volumePos = s.headerEnd + int64(volume)*s.volumeBytes()
	return nil
}

// DType is int8: BROCT stores the processed int8 rendering
// (endpoint.VolumeWriter).
func (s *BroctStorage) DType() backend.DType { return backend.Int8 }

// VolumeBytes is one volume's size (0 when closed; endpoint.VolumeWriter).
func (s *BroctStorage) VolumeBytes() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f == nil {
		return 0
	}
	return int(s.volumeBytes())
}

// WriteVolume stores one volume as a stack endpoint formats it, (bscans,
// ascans, samples), transposing each B-scan to BROCT's (samples, ascans)
// first, and moves to the next volume: what vortex's BroctStorageEndpoint
// does (its executor transposes on the device; here the writer goroutine
// transposes, off the engine's hot path).
func (s *BroctStorage) WriteVolume(data []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.requireOpen("WriteVolume"); err != nil {
		return err
	}
	if int64(len(data)) != s.volumeBytes() {
		return backend.Invalidf("storage.BroctStorage.WriteVolume: data of %d bytes, expected %d (shape %v int8)", len(data), s.volumeBytes(), s.cfg.Shape)
	}
	if err := s.writeMulti(0, s.transposed(data)); err != nil {
		return err
	}
	return s.advance(false)
}

// transposed is data, whole B-scans of (ascans, samples), with each
// B-scan transposed to BROCT's (samples, ascans), in s.scratch.
func (s *BroctStorage) transposed(data []byte) []byte {
	a, n := s.cfg.Shape[1], s.cfg.Shape[2]
	if cap(s.scratch) < len(data) {
		s.scratch = make([]byte, len(data))
	}
	out := s.scratch[:len(data)]
	for k := range len(data) / (a * n) {
		src, dst := data[k*a*n:(k+1)*a*n], out[k*a*n:(k+1)*a*n]
		for i := range a {
			for j := range n {
				dst[j*a+i] = src[i*n+j]
			}
		}
	}
	return out
}

// WriteStackBscans writes whole B-scans as a stack endpoint formats them,
// (n, ascans, samples), from B-scan index of the current volume,
// transposing each to BROCT's (samples, ascans) (what vortex's
// BroctFormatExecutor does on the device).
func (s *BroctStorage) WriteStackBscans(index int, data []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.requireOpen("WriteMultiBscan"); err != nil {
		return err
	}
	bb := s.bscanBytes()
	if err := checkBscans("storage.BroctStorage.WriteMultiBscan", index, len(data), bb, s.cfg.Shape[0],
		"(%d ascans x %d samples) int8", s.cfg.Shape[1], s.cfg.Shape[2]); err != nil {
		return err
	}
	return s.writeMulti(index, s.transposed(data))
}

// WriteStackAscans writes whole A-scans, (n, samples), into B-scan bscan
// of the current volume from A-scan ascan: one run of n bytes per sample
// row of the transposed B-scan (vortex's write_partial_bscan).
func (s *BroctStorage) WriteStackAscans(bscan, ascan int, data []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.requireOpen("WritePartialBscan"); err != nil {
		return err
	}
	a, n := s.cfg.Shape[1], s.cfg.Shape[2]
	if len(data) == 0 || len(data)%n != 0 {
		return backend.Invalidf("storage.BroctStorage.WritePartialBscan: data of %d bytes, expected whole A-scans of %d int8 samples", len(data), n)
	}
	count := len(data) / n
	if bscan < 0 || bscan >= s.cfg.Shape[0] {
		return backend.Invalidf("storage.BroctStorage.WritePartialBscan: bscan_index=%d, expected 0 <= bscan_index < %d (B-scans per volume)", bscan, s.cfg.Shape[0])
	}
	if ascan < 0 || ascan+count > a {
		return backend.Invalidf("storage.BroctStorage.WritePartialBscan: ascan_index=%d with %d A-scans, expected 0 <= ascan_index and ascan_index + count <= %d",
			ascan, count, a)
	}
	if cap(s.scratch) < count {
		s.scratch = make([]byte, count)
	}
	row := s.scratch[:count]
	base := s.volumePos + int64(bscan)*s.bscanBytes() + int64(ascan)
	for j := range n {
		for i := range count {
			row[i] = data[i*n+j]
		}
		if err := s.writeAt("WritePartialBscan", row, base+int64(j*a)); err != nil {
			return err
		}
	}
	return nil
}

// Close pads an unfinished last volume with zeros and closes the file (a
// closed storage is left as is); refused while an engine writes here.
func (s *BroctStorage) Close() error {
	return s.claim.Close(func() error {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.f == nil {
			return nil
		}
		defer forget(s.id, s)
		var errs []error
		vb := s.volumeBytes()
		if (s.farthest-s.headerEnd)%vb != 0 {
			s.volumePos = s.headerEnd + (s.farthest-s.headerEnd)/vb*vb
			errs = append(errs, s.advance(true))
		}
		if err := s.f.Close(); err != nil {
			errs = append(errs, fmt.Errorf("storage.BroctStorage.Close: %q: %w", s.cfg.Path, err))
		}
		s.f = nil
		return errors.Join(errs...)
	})
}
