package storage

import (
	"encoding/binary"
	"fmt"
	"os"
	"strings"
	"sync"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/claim"
	"github.com/vortexgo/vortexgo/gosrc/storage/hdf5"
)

// HDF5 headers (vortex's hdf5_stack_header_t).
const (
	// HDF5HeaderEmpty is a plain HDF5 file.
	HDF5HeaderEmpty = 0
	// HDF5HeaderMATLAB reserves a 512-byte userblock holding MATLAB's v7.3
	// preamble and tags the dataset with its MATLAB_class: a .mat file.
	HDF5HeaderMATLAB = 1
)

// HDF5StackConfig is vortex's hdf5_stack_config_t.
type HDF5StackConfig struct {
	// Path is the file to create (truncated if it exists).
	Path string
	// Shape is one volume: (bscans, ascans, samples).
	Shape [3]int
	// Channels is vortex's fourth dimension, channels per sample; 0 means 1.
	Channels int
	// Header is HDF5HeaderEmpty or HDF5HeaderMATLAB.
	Header int
	// CompressionLevel is the deflate level, 0 (none) to 9.
	CompressionLevel int
	// Library lists extra candidate paths of the HDF5 library (hdf5.Load):
	// the Python layer passes h5py's bundled copy.
	Library []string
}

func (c HDF5StackConfig) channels() int {
	if c.Channels == 0 {
		return 1
	}
	return c.Channels
}

// Validate checks the configuration, naming the offending field.
func (c HDF5StackConfig) Validate() error {
	sc := SimpleStackConfig{Path: c.Path, Shape: c.Shape, Channels: c.Channels}
	if err := sc.Validate(); err != nil {
		return fmt.Errorf("HDF5StackConfig: %w", err)
	}
	if c.Header != HDF5HeaderEmpty && c.Header != HDF5HeaderMATLAB {
		return backend.Invalidf("HDF5StackConfig.Header: %d, expected 0 (Empty) or 1 (MATLAB)", c.Header)
	}
	if c.CompressionLevel < 0 || c.CompressionLevel > 9 {
		return backend.Invalidf("HDF5StackConfig.CompressionLevel: %d, expected 0 (none) to 9", c.CompressionLevel)
	}
	return nil
}

// matlabClass is the MATLAB_class attribute of a MATLAB-headed file.
// vortex writes NumPy's names ("float32", "float64"); MATLAB's are
// "single" and "double", which its loader needs, so vortexgo writes those.
func matlabClass(e elem) string {
	switch e.name {
	case "float32":
		return "single"
	case "float64":
		return "double"
	}
	return e.name
}

// matlabPreamble is vortex's MATLAB preamble for HDF5 files: "MATLAB"
// padded to 116 bytes, 8 zero bytes, version 0x0200, endian "IM".
func matlabPreamble() []byte {
	b := []byte("MATLAB" + strings.Repeat(" ", 110))
	b = append(b, make([]byte, 8)...)
	b = binary.LittleEndian.AppendUint16(b, 0x0200)
	return binary.LittleEndian.AppendUint16(b, 0x4d49)
}

// HDF5Stack writes volumes to the dataset "data" of an HDF5 file, shape
// (volumes, bscans, ascans, samples, channels), as vortex's hdf5_stack_t:
// writes land in the current volume (the dataset grows to hold it),
// AdvanceVolume moves to the next. Beyond vortex, the file is flushed at
// each AdvanceVolume, so a crash leaves a file h5py opens with every
// volume advanced past.
type HDF5Stack struct {
	elem elem

	mu        sync.Mutex
	s         *hdf5.Stack
	cfg       HDF5StackConfig
	volume    int // the current volume (vortex's _volume_index)
	allocated int // volumes in the dataset (vortex's _volume_allocate)

	res     *reserver // our descriptor on the file (nil: none, writes unguarded)
	broken  error     // the write that failed in HDF5
	frozen  bool      // HDF5 writes nothing since broken (reserver.freeze)
	indexed bool      // a chunk was written: HDF5 made the chunk index

	claim claim.Claim
}

// NewHDF5StackNamed returns a closed stack of the element type named as
// NumPy does (vortex's HDF5Stack{Int8,UInt16,UInt64,Float64}, and Float32).
func NewHDF5StackNamed(dtype string) (*HDF5Stack, error) {
	e, ok := elemNamed(dtype)
	if !ok {
		return nil, backend.Invalidf("storage.NewHDF5Stack: dtype=%q, expected int8, uint16, uint32, uint64, float32 or float64", dtype)
	}
	return &HDF5Stack{elem: e}, nil
}

// Claims reports the claim an engine takes while an endpoint writes here.
func (h *HDF5Stack) Claims() []*claim.Claim {
	h.claim.Name("HDF5Stack")
	return []*claim.Claim{&h.claim}
}

// IsOpen reports whether a file is open (vortex's ready).
func (h *HDF5Stack) IsOpen() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.s != nil
}

// Config returns the configuration of the open stack (zero when closed).
func (h *HDF5Stack) Config() HDF5StackConfig {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.cfg
}

// VolumeShape returns the open stack's volume shape, (bscans, ascans,
// samples, channels) (zeros when closed).
func (h *HDF5Stack) VolumeShape() [4]int {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.s == nil {
		return [4]int{}
	}
	return [4]int{h.cfg.Shape[0], h.cfg.Shape[1], h.cfg.Shape[2], h.cfg.channels()}
}

func (h *HDF5Stack) ascanBytes() int64 {
	return int64(h.cfg.Shape[2]) * int64(h.cfg.channels()) * int64(h.elem.size)
}
func (h *HDF5Stack) bscanBytes() int64  { return int64(h.cfg.Shape[1]) * h.ascanBytes() }
func (h *HDF5Stack) volumeBytes() int64 { return int64(h.cfg.Shape[0]) * h.bscanBytes() }

// Open loads the HDF5 library if needed and creates the file (closing an
// open one first, as vortex). Without the library it fails with an error
// wrapping hdf5.ErrNoLibrary that says what to install.
func (h *HDF5Stack) Open(cfg HDF5StackConfig) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	// Before the library opens it by name: a FIFO would block it.
	if err := checkWritablePath("storage.HDF5Stack.Open", cfg.Path); err != nil {
		return err
	}
	if _, err := hdf5.Load(cfg.Library...); err != nil {
		return fmt.Errorf("storage.HDF5Stack.Open: %w", err)
	}
	if err := h.Close(); err != nil {
		return fmt.Errorf("storage.HDF5Stack.Open: closing %q first: %w", h.Config().Path, err)
	}
	h.claim.Reopen()
	h.mu.Lock()
	defer h.mu.Unlock()
	s, err := hdf5.Create(hdf5.StackConfig{Path: cfg.Path, DType: h.elem.name,
		Shape: [4]int{cfg.Shape[0], cfg.Shape[1], cfg.Shape[2], cfg.channels()}, CompressionLevel: cfg.CompressionLevel,
		MATLAB: cfg.Header == HDF5HeaderMATLAB, Preamble: matlabPreamble(), MATLABClass: matlabClass(h.elem)})
	if err != nil {
		return fmt.Errorf("storage.HDF5Stack.Open: %w", err)
	}
	// The empty dataset on disk: the state a full disk at the first
	// volume leaves (HDF5 keeps its creation metadata in memory until a
	// flush, and a close on a full disk could not write it).
	if err := s.Flush(); err != nil {
		_ = s.Close()
		return fmt.Errorf("storage.HDF5Stack.Open: %w", err)
	}
	res, err := openReserver(cfg.Path, s.FD())
	if err != nil {
		_ = s.Close()
		return fmt.Errorf("storage.HDF5Stack.Open: %w", err)
	}
	h.s, h.cfg, h.volume, h.allocated, h.res, h.broken, h.frozen, h.indexed = s, cfg, 0, 0, res, nil, false, false
	return nil
}

func (h *HDF5Stack) requireOpen(op string) error {
	if h.s == nil {
		return fmt.Errorf("storage.HDF5Stack.%s: %w", op, ErrNotOpen)
	}
	if h.broken != nil {
		return &os.PathError{Op: fmt.Sprintf("HDF5Stack.%s after a failed write (the file keeps the %d volumes flushed before it; close the stack)",
			op, h.volume), Path: h.cfg.Path, Err: h.broken}
	}
	return nil
}

// failed marks the stack broken after err from HDF5 (a write, an extent,
// a flush): HDF5's state in memory is no longer what the file can hold, so
// its descriptor is frozen (reserver.freeze) and the file stays as of the
// last flush, plus what the failed call had written beyond its end.
func (h *HDF5Stack) failed(err error) error {
	h.broken = err
	h.frozen = h.res.freeze(h.s.FD())
	return err
}

// HDF5's chunk index as Create leaves it: a version 1 B-tree (the default
// file format) of at most 2K = 64 chunks a node (HDF5's default istore_k,
// 32), keyed by the chunk's size, filter mask and 6 offsets (rank 5 + 1).
const (
	h5BTreeEntries  = 64
	h5BTreeNodeSize = 24 + h5BTreeEntries*8 + (h5BTreeEntries+1)*(8+6*8) // header, child addresses, keys: 4176 bytes
	h5AggrBlock     = 2048                                               // HDF5's metadata and small-data aggregator blocks
)

// reserveBytes bounds the bytes by which the file may grow while the
// dataset grows to volumes volumes and the last is written and flushed:
// every chunk (one A-scan) through deflate (always on, zlib's
// compressBound), and, once the chunk index may outgrow its root node,
// the B-tree nodes its splits may add (a split for every 32 chunks at
// each level, one more per level, the root's move) with an aggregator
// block each that a node's allocation may strand, and two more blocks.
// Written B-scan by B-scan in order, HDF5 splits a node every 57 chunks.
func (h *HDF5Stack) reserveBytes(volumes int) int64 {
	chunks := int64(h.cfg.Shape[0]) * int64(h.cfg.Shape[1])
	a := h.ascanBytes()
	chunk := a + a>>12 + a>>14 + a>>25 + 13
	data := chunks * chunk
	total := int64(volumes) * chunks
	if !h.indexed {
		data += h5BTreeNodeSize // HDF5 creates the index, its root node, at the first chunk
	}
	if total <= h5BTreeEntries && chunk < h5AggrBlock {
		return data // the root leaf holds every chunk; chunks come from the small-data block at the file's end
	}
	nodes := int64(1) // the root's move when it splits
	if total > h5BTreeEntries {
		splits := chunks
		for capacity := int64(h5BTreeEntries); ; capacity *= 32 {
			splits = (splits+31)/32 + 1
			nodes += splits
			if capacity >= total {
				break
			}
		}
	}
	return data + nodes*(h5BTreeNodeSize+h5AggrBlock) + 2*h5AggrBlock
}

// resize grows the dataset to hold the current volume (vortex's _resize),
// first reserving the disk space the volume needs: a full disk refuses the
// volume here, before HDF5 changes anything, and the stack stays usable.
func (h *HDF5Stack) resize() error {
	if h.volume < h.allocated {
		return nil
	}
	if err := h.res.reserve(h.reserveBytes(h.volume + 1)); err != nil {
		return fmt.Errorf("storage.HDF5Stack: volume %d: %w", h.volume, err)
	}
	if err := h.s.Extend(h.volume + 1); err != nil {
		return h.failed(err)
	}
	h.allocated = h.volume + 1
	return nil
}

// WriteMultiBscan writes whole B-scans ((n, ascans, samples, channels))
// into the current volume from B-scan index.
func (h *HDF5Stack) WriteMultiBscan(index int, data []byte) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if err := h.requireOpen("WriteMultiBscan"); err != nil {
		return err
	}
	return h.writeMulti(index, data)
}

func (h *HDF5Stack) writeMulti(index int, data []byte) error {
	bb := h.bscanBytes()
	if len(data) == 0 || int64(len(data))%bb != 0 {
		return backend.Invalidf("storage.HDF5Stack.WriteMultiBscan: data of %d bytes, expected whole B-scans of %d bytes (%d ascans x %d samples x %d channels of %s)",
			len(data), bb, h.cfg.Shape[1], h.cfg.Shape[2], h.cfg.channels(), h.elem.name)
	}
	n := int(int64(len(data)) / bb)
	if index < 0 || index >= h.cfg.Shape[0] || index+n > h.cfg.Shape[0] {
		return backend.Invalidf("storage.HDF5Stack.WriteMultiBscan: index=%d with %d B-scans, expected 0 <= index and index + count <= %d (B-scans per volume)",
			index, n, h.cfg.Shape[0])
	}
	if err := h.resize(); err != nil {
		return err
	}
	if err := h.s.Write([5]int{h.volume, index}, [5]int{1, n, h.cfg.Shape[1], h.cfg.Shape[2], h.cfg.channels()}, data); err != nil {
		return h.failed(err)
	}
	h.indexed = true
	return nil
}

// WritePartialBscan writes whole A-scans ((n, samples, channels)) into
// B-scan bscan of the current volume from A-scan ascan.
func (h *HDF5Stack) WritePartialBscan(bscan, ascan int, data []byte) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if err := h.requireOpen("WritePartialBscan"); err != nil {
		return err
	}
	ab := h.ascanBytes()
	if len(data) == 0 || int64(len(data))%ab != 0 {
		return backend.Invalidf("storage.HDF5Stack.WritePartialBscan: data of %d bytes, expected whole A-scans of %d bytes (%d samples x %d channels of %s)",
			len(data), ab, h.cfg.Shape[2], h.cfg.channels(), h.elem.name)
	}
	if bscan < 0 || bscan >= h.cfg.Shape[0] {
		return backend.Invalidf("storage.HDF5Stack.WritePartialBscan: bscan_index=%d, expected 0 <= bscan_index < %d (B-scans per volume)", bscan, h.cfg.Shape[0])
	}
	n := int(int64(len(data)) / ab)
	if ascan < 0 || ascan >= h.cfg.Shape[1] || ascan+n > h.cfg.Shape[1] {
		return backend.Invalidf("storage.HDF5Stack.WritePartialBscan: ascan_index=%d with %d A-scans, expected 0 <= ascan_index and ascan_index + count <= %d (A-scans per B-scan)",
			ascan, n, h.cfg.Shape[1])
	}
	if err := h.resize(); err != nil {
		return err
	}
	if err := h.s.Write([5]int{h.volume, bscan, ascan}, [5]int{1, 1, n, h.cfg.Shape[2], h.cfg.channels()}, data); err != nil {
		return h.failed(err)
	}
	h.indexed = true
	return nil
}

// AdvanceVolume moves to the next volume (vortex's advance_volume); with
// allocate the dataset grows to hold it at once. The file is flushed
// first, so the volumes advanced past survive a crash (and a full disk
// that refuses the next volume's allocation).
func (h *HDF5Stack) AdvanceVolume(allocate bool) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if err := h.requireOpen("AdvanceVolume"); err != nil {
		return err
	}
	return h.advance(allocate)
}

func (h *HDF5Stack) advance(allocate bool) error {
	if err := h.s.Flush(); err != nil {
		return h.failed(err) // the volume is not advanced past: it is not on disk
	}
	h.volume++
	if allocate {
		return h.resize()
	}
	return nil
}

// DType is the element type (invalid for uint64; endpoint.VolumeWriter).
func (h *HDF5Stack) DType() backend.DType { return h.elem.dtype }

// DTypeName returns the NumPy name of the element type.
func (h *HDF5Stack) DTypeName() string { return h.elem.name }

// VolumeBytes is one volume's size (0 when closed; endpoint.VolumeWriter).
func (h *HDF5Stack) VolumeBytes() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.s == nil {
		return 0
	}
	return int(h.volumeBytes())
}

// WriteVolume writes one whole volume and moves to the next, as vortex's
// stack endpoints do (write_multi_bscan, then advance_volume(false)).
func (h *HDF5Stack) WriteVolume(data []byte) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if err := h.requireOpen("WriteVolume"); err != nil {
		return err
	}
	if int64(len(data)) != h.volumeBytes() {
		return backend.Invalidf("storage.HDF5Stack.WriteVolume: len(data)=%d, expected %d (shape %v x %d channels of %s)",
			len(data), h.volumeBytes(), h.cfg.Shape, h.cfg.channels(), h.elem.name)
	}
	if err := h.writeMulti(0, data); err != nil {
		return err
	}
	return h.advance(false)
}

// Close closes the file (a closed stack is left as is); refused while an
// engine writes here.
func (h *HDF5Stack) Close() error {
	return h.claim.Close(func() error {
		h.mu.Lock()
		defer h.mu.Unlock()
		if h.s == nil {
			return nil
		}
		err := h.s.Close()
		h.res.release()
		frozen := h.frozen
		h.s, h.res, h.broken, h.frozen = nil, nil, nil, false
		if frozen {
			// HDF5's close could write nothing, as intended; the failed
			// write reported the error.
			return nil
		}
		if err != nil {
			return fmt.Errorf("storage.HDF5Stack.Close: %w", err)
		}
		return nil
	})
}
