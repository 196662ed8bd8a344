package pyapi

import (
	"fmt"
	"strings"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/hostmem"
	"github.com/vortexgo/vortexgo/gosrc/marker"
	"github.com/vortexgo/vortexgo/gosrc/storage"
	"github.com/vortexgo/vortexgo/gosrc/storage/hdf5"
)

// The storages of python/vortexgo/storage.py (gosrc/storage): one wrapper
// per storage kind, one method per Python method. Each embeds Object, so
// Close and the endpoints' wiring (which take the core storage from it)
// serve them all. Data crosses as the caller's (address, bytes) of host
// memory, read in place before the call returns. A user's write, advance
// or seek is refused while an engine writes to the storage (the core's
// CheckUserCall, named after the Python method); the engine's writes go
// to the core directly. The state records are STACK_STATE (SimpleStack,
// BroctStorage), HDF5_STACK_STATE and STREAM_STATE (SimpleStream,
// StreamDump, MarkerLog); their status is a storage.Status (0 closed, 1
// open, 2 closed because another storage took its file over).

// stackStateRecord is storage.StackState as a record (STACK_STATE).
type stackStateRecord struct{ Status, Volumes int64 }

// hdf5StackStateRecord is storage.HDF5State as a record (HDF5_STACK_STATE).
type hdf5StackStateRecord struct{ Status, Allocated, Volume int64 }

// streamStateRecord is storage.StreamState as a record (STREAM_STATE).
type streamStateRecord struct{ Status, Bytes int64 }

func putStackState(dst, n int, s storage.StackState) (int, error) {
	return putRecord(dst, n, &stackStateRecord{int64(s.Status), int64(s.Volumes)})
}

func putStreamState(dst, n int, s storage.StreamState) (int, error) {
	return putRecord(dst, n, &streamStateRecord{int64(s.Status), s.Bytes})
}

// userCall runs call unless an engine writes to the storage (check, its
// CheckUserCall, names method in the refusal).
func userCall(check func(string) error, method string, call func() error) error {
	if err := check(method); err != nil {
		return tag(err)
	}
	return tag(call())
}

// userWrite is userCall for a write of the caller's n bytes at data.
func userWrite(check func(string) error, method string, data, n int, write func([]byte) error) error {
	return userCall(check, method, func() error {
		b, err := hostmem.Span[byte](data, n)
		if err != nil {
			return err
		}
		return write(b)
	})
}

// libraryPaths are the HDF5 library candidates of a Python call, one a line.
func libraryPaths(libraries string) []string {
	return strings.FieldsFunc(libraries, func(r rune) bool { return r == '\n' })
}

// SimpleStack is storage.SimpleStack (python/vortexgo/storage.py's
// SimpleStack{Int8,...}).
type SimpleStack struct {
	Object
	s *storage.SimpleStack
}

// NewSimpleStack returns a closed stack of dtype (a NumPy name).
func NewSimpleStack(dtype string) (*SimpleStack, error) {
	s, err := storage.NewSimpleStackNamed(dtype)
	return tagged(&SimpleStack{Object: Object{obj: s}, s: s}, err)
}

// Open creates the file (storage.SimpleStack.Open); header is a
// storage.Header.
func (s *SimpleStack) Open(path string, bscans, ascans, samples, channels, header int, buffering bool) error {
	return tag(s.s.Open(storage.SimpleStackConfig{Path: path, Shape: [3]int{bscans, ascans, samples}, Channels: channels,
		Header: storage.Header(header), Buffering: buffering}))
}

// WriteVolume writes whole B-scans, the caller's n bytes at data, from
// B-scan 0 of the current volume, without advancing (write_volume).
func (s *SimpleStack) WriteVolume(data, n int) error {
	return userWrite(s.s.CheckUserCall, "write_volume", data, n, s.s.Write)
}

// WriteMultiBscan writes whole B-scans from B-scan index (write_multi_bscan).
func (s *SimpleStack) WriteMultiBscan(index, data, n int) error {
	return userWrite(s.s.CheckUserCall, "write_multi_bscan", data, n, func(b []byte) error {
		return s.s.WriteMultiBscan(index, b)
	})
}

// WritePartialBscan writes whole A-scans into B-scan bscan from A-scan
// ascan (write_partial_bscan).
func (s *SimpleStack) WritePartialBscan(bscan, ascan, data, n int) error {
	return userWrite(s.s.CheckUserCall, "write_partial_bscan", data, n, func(b []byte) error {
		return s.s.WritePartialBscan(bscan, ascan, b)
	})
}

// AdvanceVolume moves to the next volume (advance_volume).
func (s *SimpleStack) AdvanceVolume(allocate bool) error {
	return userCall(s.s.CheckUserCall, "advance_volume", func() error { return s.s.AdvanceVolume(allocate) })
}

// Seek makes volume the current volume (seek).
func (s *SimpleStack) Seek(volume, bscan int) error {
	return userCall(s.s.CheckUserCall, "seek", func() error { return s.s.Seek(volume, bscan) })
}

// State writes the stack's STACK_STATE record (volumes: those the header
// counts) into the caller's n bytes at dst when they hold it, and returns
// its size either way.
func (s *SimpleStack) State(dst, n int) (int, error) { return putStackState(dst, n, s.s.State()) }

// HDF5Stack is storage.HDF5Stack (HDF5Stack{Int8,...}).
type HDF5Stack struct {
	Object
	h *storage.HDF5Stack
}

// NewHDF5Stack returns a closed HDF5 stack of dtype (a NumPy name).
func NewHDF5Stack(dtype string) (*HDF5Stack, error) {
	h, err := storage.NewHDF5StackNamed(dtype)
	return tagged(&HDF5Stack{Object: Object{obj: h}, h: h}, err)
}

// Open loads the HDF5 library if needed, trying the candidate paths in
// libraries (one a line) after the system's, and creates the file
// (storage.HDF5Stack.Open); header is storage.HDF5HeaderEmpty or
// HDF5HeaderMATLAB.
func (h *HDF5Stack) Open(path string, bscans, ascans, samples, channels, header, compressionLevel int, libraries string) error {
	return tag(h.h.Open(storage.HDF5StackConfig{Path: path, Shape: [3]int{bscans, ascans, samples}, Channels: channels,
		Header: header, CompressionLevel: compressionLevel, Library: libraryPaths(libraries)}))
}

// WriteVolume writes whole B-scans from B-scan 0, without advancing
// (write_volume).
func (h *HDF5Stack) WriteVolume(data, n int) error {
	return userWrite(h.h.CheckUserCall, "write_volume", data, n, func(b []byte) error { return h.h.WriteMultiBscan(0, b) })
}

// WriteMultiBscan writes whole B-scans from B-scan index (write_multi_bscan).
func (h *HDF5Stack) WriteMultiBscan(index, data, n int) error {
	return userWrite(h.h.CheckUserCall, "write_multi_bscan", data, n, func(b []byte) error {
		return h.h.WriteMultiBscan(index, b)
	})
}

// WritePartialBscan writes whole A-scans into B-scan bscan from A-scan
// ascan (write_partial_bscan).
func (h *HDF5Stack) WritePartialBscan(bscan, ascan, data, n int) error {
	return userWrite(h.h.CheckUserCall, "write_partial_bscan", data, n, func(b []byte) error {
		return h.h.WritePartialBscan(bscan, ascan, b)
	})
}

// AdvanceVolume moves to the next volume (advance_volume).
func (h *HDF5Stack) AdvanceVolume(allocate bool) error {
	return userCall(h.h.CheckUserCall, "advance_volume", func() error { return h.h.AdvanceVolume(allocate) })
}

// State writes the stack's HDF5_STACK_STATE record (as SimpleStack.State).
func (h *HDF5Stack) State(dst, n int) (int, error) {
	s := h.h.State()
	return putRecord(dst, n, &hdf5StackStateRecord{int64(s.Status), int64(s.Allocated), int64(s.Volume)})
}

// LoadHDF5 loads the HDF5 library if it is not loaded yet, trying the
// candidate paths in libraries (one a line) after $VORTEXGO_HDF5_LIBRARY
// and the system's, and returns its version (hdf5.Load).
func LoadHDF5(libraries string) (string, error) {
	return tagged(hdf5.Load(libraryPaths(libraries)...))
}

// HDF5LibraryPath is the path of the loaded HDF5 library ("" before
// LoadHDF5 succeeds).
func HDF5LibraryPath() string { return hdf5.Library() }

// BroctStorage is storage.BroctStorage.
type BroctStorage struct {
	Object
	s *storage.BroctStorage
}

// NewBroctStorage returns a closed BROCT storage.
func NewBroctStorage() *BroctStorage {
	s := storage.NewBroctStorage()
	return &BroctStorage{Object: Object{obj: s}, s: s}
}

// Open creates the file and writes the header (storage.BroctStorage.Open);
// dx, dy, dz are the header's dimensions and scanType a storage.BroctScan.
func (s *BroctStorage) Open(path string, bscans, ascans, samples int, dx, dy, dz float64, scanType int, notes string,
	buffering bool) error {
	return tag(s.s.Open(storage.BroctStorageConfig{Path: path, Shape: [3]int{bscans, ascans, samples},
		Dimensions: [3]float64{dx, dy, dz}, ScanType: storage.BroctScan(scanType), Notes: notes, Buffering: buffering}))
}

// WriteBscan writes one transposed B-scan at B-scan index (write_bscan).
func (s *BroctStorage) WriteBscan(index, data, n int) error {
	return s.writeMulti("write_bscan", index, data, n)
}

// WriteMultiBscan writes transposed B-scans from B-scan index
// (write_multi_bscan).
func (s *BroctStorage) WriteMultiBscan(index, data, n int) error {
	return s.writeMulti("write_multi_bscan", index, data, n)
}

func (s *BroctStorage) writeMulti(method string, index, data, n int) error {
	return userWrite(s.s.CheckUserCall, method, data, n, func(b []byte) error { return s.s.WriteMultiBscan(index, b) })
}

// WriteVolume writes one volume in BROCT order and moves to the next, as
// vortex's BROCT write_volume does (storage.BroctStorage.WriteBroctVolume).
func (s *BroctStorage) WriteVolume(data, n int) error {
	return userWrite(s.s.CheckUserCall, "write_volume", data, n, s.s.WriteBroctVolume)
}

// AdvanceVolume moves to the next volume (advance_volume).
func (s *BroctStorage) AdvanceVolume(allocate bool) error {
	return userCall(s.s.CheckUserCall, "advance_volume", func() error { return s.s.AdvanceVolume(allocate) })
}

// Seek makes volume the current volume (seek).
func (s *BroctStorage) Seek(volume, bscan int) error {
	return userCall(s.s.CheckUserCall, "seek", func() error { return s.s.Seek(volume, bscan) })
}

// State writes the storage's STACK_STATE record (volumes: those whole in
// the file) as SimpleStack.State does.
func (s *BroctStorage) State(dst, n int) (int, error) { return putStackState(dst, n, s.s.State()) }

// SimpleStream is storage.SimpleStream (SimpleStream{Int8,...}).
type SimpleStream struct {
	Object
	s *storage.SimpleStream
}

// NewSimpleStream returns a closed stream of dtype (a NumPy name).
func NewSimpleStream(dtype string) (*SimpleStream, error) {
	s, err := storage.NewSimpleStreamNamed(dtype)
	return tagged(&SimpleStream{Object: Object{obj: s}, s: s}, err)
}

// Open creates the file (storage.SimpleStream.Open).
func (s *SimpleStream) Open(path string, buffering bool, header int) error {
	return tag(s.s.Open(storage.SimpleStreamConfig{Path: path, Buffering: buffering, Header: header}))
}

// Write appends the caller's n bytes at data, whole elements (write).
func (s *SimpleStream) Write(data, n int) error {
	return userWrite(s.s.CheckUserCall, "write", data, n, s.s.Write)
}

// State writes the stream's STREAM_STATE record as SimpleStack.State does.
func (s *SimpleStream) State(dst, n int) (int, error) { return putStreamState(dst, n, s.s.State()) }

// StreamDump is storage.StreamDump.
type StreamDump struct {
	Object
	d *storage.StreamDump
}

// NewStreamDump returns a closed stream dump.
func NewStreamDump() *StreamDump {
	d := storage.NewStreamDump()
	return &StreamDump{Object: Object{obj: d}, d: d}
}

// Open creates the file (storage.StreamDump.Open).
func (d *StreamDump) Open(path string, stream, divisor int, buffering bool) error {
	return tag(d.d.Open(storage.StreamDumpConfig{Path: path, Stream: stream, Divisor: divisor, Buffering: buffering}))
}

// Write appends one block, the caller's n bytes at data in rows of
// rowBytes bytes, every Divisor-th row kept (write; storage.StreamDump.Dump).
func (d *StreamDump) Write(rowBytes, data, n int) error {
	return userWrite(d.d.CheckUserCall, "write", data, n, func(b []byte) error { return d.d.Dump(b, rowBytes) })
}

// State writes the dump's STREAM_STATE record as SimpleStack.State does.
func (d *StreamDump) State(dst, n int) (int, error) { return putStreamState(dst, n, d.d.State()) }

// MarkerLog is storage.MarkerLog.
type MarkerLog struct {
	Object
	l *storage.MarkerLog
}

// NewMarkerLog returns a closed marker log.
func NewMarkerLog() *MarkerLog {
	l := storage.NewMarkerLog()
	return &MarkerLog{Object: Object{obj: l}, l: l}
}

// Open creates the file (storage.MarkerLog.Open).
func (l *MarkerLog) Open(path string, binary, buffering bool) error {
	return tag(l.l.Open(storage.MarkerLogConfig{Path: path, Binary: binary, Buffering: buffering}))
}

// Write appends the markers of the caller's n int64s at rows
// (python/vortexgo/marker.py's records, 8 a marker) in order (write).
func (l *MarkerLog) Write(rows, n int) error {
	return userCall(l.l.CheckUserCall, "write", func() error {
		rec, err := hostmem.Span[int64](rows, n)
		if err != nil {
			return err
		}
		ms, err := logMarkers(rec)
		if err != nil {
			return err
		}
		return l.l.Write(ms)
	})
}

// State writes the log's STREAM_STATE record as SimpleStack.State does.
func (l *MarkerLog) State(dst, n int) (int, error) { return putStreamState(dst, n, l.l.State()) }

// logMarkers are marker.py's records as markers: kind, sample, sequence,
// index, count hint, id, flags, reversed (0/1) per marker.
func logMarkers(rec []int64) ([]marker.Marker, error) {
	const fields = 8
	if len(rec)%fields != 0 {
		return nil, fmt.Errorf("storage.MarkerLog: %d record values, expected rows of %d: %w", len(rec), fields, backend.ErrInvalid)
	}
	out := make([]marker.Marker, 0, len(rec)/fields)
	for i := 0; i < len(rec); i += fields {
		r := rec[i : i+fields]
		if r[0] < int64(marker.ScanBoundary) || r[0] > int64(marker.Event) {
			return nil, fmt.Errorf("storage.MarkerLog: marker %d kind=%d, expected 1..6: %w", i/fields, r[0], backend.ErrInvalid)
		}
		out = append(out, marker.Marker{Kind: marker.Kind(r[0]), Sample: r[1], Sequence: r[2], Index: r[3],
			CountHint: int(r[4]), ID: uint64(r[5]), Flags: marker.Flags(uint64(r[6])), Reversed: r[7] != 0})
	}
	return out, nil
}
