package acquire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
	"unsafe"

	"github.com/vortexgo/vortexgo/gosrc/engine"
)

// FileConfig configures a FileAcquisition.
type FileConfig struct {
	// Path names a raw file of little-endian uint16 spectra, record after
	// record, or a .npy file (detected by its magic bytes, not its name) of
	// dtype uint16 in C order whose last axis is the spectrum.
	Path string
	// SamplesPerRecord is the spectrum length. Required for raw files; for
	// .npy files 0 takes it from the shape, and any other value must match.
	SamplesPerRecord int
	// Loop replays the file from its start instead of returning io.EOF.
	Loop bool
	// Rate throttles delivery in A-scans per second; 0 is unlimited.
	Rate float64
}

// FileAcquisition replays spectra from a file. The file is opened by Start
// and closed by Stop; replay resumes where Stop left it.
type FileAcquisition struct {
	cfg       FileConfig
	samples   int
	offset    int64 // first byte of the data
	records   int64 // records in the file
	bigEndian bool  // the data are '>u2'

	f   *os.File
	pos int64 // next record to read
	eof bool  // a short Fill reached the end; the next Fill returns io.EOF
	run runState

	claim engine.Claim // refuses Close while an engine reads the file
}

// NewFileAcquisition validates cfg and returns the source. The file is read
// by Prepare.
func NewFileAcquisition(cfg FileConfig) (*FileAcquisition, error) {
	if cfg.Path == "" {
		return nil, engine.Invalid(`acquire: FileConfig.Path="", expected a file name`)
	}
	if cfg.SamplesPerRecord < 0 {
		return nil, engine.Invalid("acquire: FileConfig.SamplesPerRecord=%d, expected >= 1 (or 0 for a .npy file)", cfg.SamplesPerRecord)
	}
	if err := checkRate(cfg.Rate); err != nil {
		return nil, err
	}
	a := &FileAcquisition{cfg: cfg}
	a.claim.Name("FileAcquisition")
	return a, nil
}

// Claims reports the claim an engine takes while it uses the source
// (engine.Claimer): Close is refused until that engine's run ends.
func (a *FileAcquisition) Claims() []*engine.Claim { return []*engine.Claim{&a.claim} }

// Close closes the file if a run left it open; Prepare and an engine's
// Prepare fail after it (backend.ErrClosed), and it refuses with
// backend.ErrInUse while an engine uses the source. Closing twice is a
// no-op.
func (a *FileAcquisition) Close() error {
	return a.claim.Close(func() error {
		if a.f == nil {
			return nil
		}
		err := a.f.Close()
		a.f = nil
		return err
	})
}

// SamplesPerRecord returns the spectrum length, known once Prepare has read
// the header of a .npy file.
func (a *FileAcquisition) SamplesPerRecord() int { return a.samples }

// Records returns the number of records in the file (after Prepare).
func (a *FileAcquisition) Records() int64 { return a.records }

// Prepare reads the header and checks that the file holds whole records.
// Its errors are bad configurations (backend.ErrInvalid naming the field),
// or backend.ErrClosed once the source is closed.
func (a *FileAcquisition) Prepare() error {
	if err := a.claim.Err("acquire: FileAcquisition.Prepare"); err != nil {
		return err
	}
	f, err := os.Open(a.cfg.Path)
	if err != nil {
		return engine.Invalid("acquire: FileConfig.Path: %v", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return engine.Invalid("acquire: FileConfig.Path: %v", err)
	}
	a.samples, a.offset, a.bigEndian = a.cfg.SamplesPerRecord, 0, false
	var magic [6]byte
	if _, err := io.ReadFull(f, magic[:]); err == nil && string(magic[:]) == npyMagic {
		h, err := readNPYHeader(f)
		if err != nil {
			return engine.Invalid("acquire: %s: %v", a.cfg.Path, err)
		}
		last := h.shape[len(h.shape)-1]
		if a.samples != 0 && a.samples != last {
			return engine.Invalid("acquire: FileConfig.SamplesPerRecord=%d, expected %d (the last axis of %s's shape %v)",
				a.samples, last, a.cfg.Path, h.shape)
		}
		a.samples, a.offset, a.bigEndian = last, h.offset, h.bigEndian
	} else if a.samples == 0 {
		return engine.Invalid("acquire: FileConfig.SamplesPerRecord=0, expected >= 1 for the raw file %s", a.cfg.Path)
	}
	if a.samples < 1 {
		return engine.Invalid("acquire: %s: spectrum length %d, expected >= 1", a.cfg.Path, a.samples)
	}
	data := st.Size() - a.offset
	rec := int64(a.samples) * 2
	if data%rec != 0 || data == 0 {
		return engine.Invalid("acquire: %s: %d data bytes, expected a non-zero multiple of %d (SamplesPerRecord=%d uint16 values)",
			a.cfg.Path, data, rec, a.samples)
	}
	a.records = data / rec
	return nil
}

// Start opens the file and arms the source.
func (a *FileAcquisition) Start() error {
	if a.records == 0 {
		return errors.New("acquire: FileAcquisition.Start before Prepare")
	}
	if a.f == nil {
		f, err := os.Open(a.cfg.Path)
		if err != nil {
			return fmt.Errorf("acquire: FileConfig.Path: %w", err)
		}
		if _, err := f.Seek(a.offset+a.pos*int64(a.samples)*2, io.SeekStart); err != nil {
			f.Close()
			return fmt.Errorf("acquire: %s: %w", a.cfg.Path, err)
		}
		a.f = f
	}
	a.run.start(a.cfg.Rate)
	return nil
}

// Stop disarms the source and closes the file.
func (a *FileAcquisition) Stop() error {
	a.run.halt()
	// Fill runs on the engine's goroutine; by contract the engine calls Stop
	// once that goroutine is done with Fill, so the file can be closed here.
	if a.f == nil {
		return nil
	}
	err := a.f.Close()
	a.f = nil
	return err
}

// Fill reads the next records spectra into dst.
func (a *FileAcquisition) Fill(dst []uint16, records int) (int, error) {
	if err := checkFill(dst, records, a.samples); err != nil {
		return 0, err
	}
	if a.eof {
		return 0, io.EOF
	}
	want := int64(records)
	if !a.cfg.Loop {
		want = min(want, a.records-a.pos)
		if want == 0 && records > 0 {
			return 0, io.EOF
		}
	}
	if err := a.run.admit(int(want)); err != nil {
		return 0, err
	}
	if a.f == nil {
		return 0, io.EOF
	}
	n := int64(a.samples)
	buf := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(dst))), len(dst)*2)
	for done := int64(0); done < want; {
		if a.pos == a.records { // only when looping
			if _, err := a.f.Seek(a.offset, io.SeekStart); err != nil {
				return int(done), fmt.Errorf("acquire: %s: %w", a.cfg.Path, err)
			}
			a.pos = 0
		}
		c := min(want-done, a.records-a.pos)
		if _, err := io.ReadFull(a.f, buf[done*n*2:(done+c)*n*2]); err != nil {
			return int(done), fmt.Errorf("acquire: %s: record %d: %w", a.cfg.Path, a.pos, err)
		}
		done += c
		a.pos += c
	}
	if a.bigEndian != nativeBigEndian {
		for i, v := range dst[:want*n] {
			dst[i] = v<<8 | v>>8
		}
	}
	if want < int64(records) {
		a.eof = true
	}
	return int(want), nil
}

const npyMagic = "\x93NUMPY"

var nativeBigEndian = func() bool {
	x := uint16(1)
	return *(*byte)(unsafe.Pointer(&x)) == 0
}()

type npyHeader struct {
	offset    int64
	shape     []int
	bigEndian bool
}

var (
	npyDescr   = regexp.MustCompile(`'descr'\s*:\s*'([^']*)'`)
	npyFortran = regexp.MustCompile(`'fortran_order'\s*:\s*(True|False)`)
	npyShape   = regexp.MustCompile(`'shape'\s*:\s*\(([^)]*)\)`)
)

// readNPYHeader parses a .npy header (format versions 1-3) from r, which is
// positioned just after the magic string.
func readNPYHeader(r io.Reader) (npyHeader, error) {
	var ver [2]byte
	if _, err := io.ReadFull(r, ver[:]); err != nil {
		return npyHeader{}, fmt.Errorf("npy: reading version: %w", err)
	}
	var hlen, off int64
	switch ver[0] {
	case 1:
		var l uint16
		if err := binary.Read(r, binary.LittleEndian, &l); err != nil {
			return npyHeader{}, fmt.Errorf("npy: reading header length: %w", err)
		}
		hlen, off = int64(l), 10
	case 2, 3:
		var l uint32
		if err := binary.Read(r, binary.LittleEndian, &l); err != nil {
			return npyHeader{}, fmt.Errorf("npy: reading header length: %w", err)
		}
		hlen, off = int64(l), 12
	default:
		return npyHeader{}, fmt.Errorf("npy: version %d.%d, expected 1.x, 2.x or 3.x", ver[0], ver[1])
	}
	if hlen > 1<<20 {
		return npyHeader{}, fmt.Errorf("npy: header length %d, expected < 1 MiB", hlen)
	}
	raw := make([]byte, hlen)
	if _, err := io.ReadFull(r, raw); err != nil {
		return npyHeader{}, fmt.Errorf("npy: reading header: %w", err)
	}
	h := npyHeader{offset: off + hlen}
	text := string(bytes.TrimSpace(raw))

	m := npyDescr.FindStringSubmatch(text)
	if m == nil {
		return npyHeader{}, fmt.Errorf("npy: header %q has no descr", text)
	}
	switch m[1] {
	case "<u2":
	case ">u2":
		h.bigEndian = true
	case "=u2", "|u2":
		h.bigEndian = nativeBigEndian
	default:
		return npyHeader{}, fmt.Errorf("npy: dtype %q, expected uint16 ('<u2' or '>u2')", m[1])
	}
	if m := npyFortran.FindStringSubmatch(text); m == nil || m[1] != "False" {
		return npyHeader{}, fmt.Errorf("npy: header %q, expected 'fortran_order': False (C order)", text)
	}
	m = npyShape.FindStringSubmatch(text)
	if m == nil {
		return npyHeader{}, fmt.Errorf("npy: header %q has no shape", text)
	}
	for _, f := range strings.Split(m[1], ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		d, err := strconv.Atoi(f)
		if err != nil || d < 0 {
			return npyHeader{}, fmt.Errorf("npy: shape (%s), expected non-negative integers", m[1])
		}
		h.shape = append(h.shape, d)
	}
	if len(h.shape) == 0 {
		return npyHeader{}, errors.New("npy: shape (), expected at least one axis (the spectrum)")
	}
	return h, nil
}

// WriteNPY writes spectra as a .npy file of dtype '<u2' and the given shape
// (whose product must equal len(data)): the format FileAcquisition reads
// and numpy.load understands.
func WriteNPY(path string, data []uint16, shape ...int) error {
	total := 1
	for _, d := range shape {
		if d < 0 {
			return fmt.Errorf("acquire: WriteNPY: shape %v, expected non-negative axes", shape)
		}
		total *= d
	}
	if len(shape) == 0 || total != len(data) {
		return fmt.Errorf("acquire: WriteNPY: shape %v holds %d values, expected len(data)=%d", shape, total, len(data))
	}
	dims := make([]string, len(shape))
	for i, d := range shape {
		dims[i] = strconv.Itoa(d)
	}
	tuple := strings.Join(dims, ", ")
	if len(shape) == 1 {
		tuple += ","
	}
	header := fmt.Sprintf("{'descr': '<u2', 'fortran_order': False, 'shape': (%s), }", tuple)
	// Pad with spaces so the data start on a 64-byte boundary, ending in \n.
	pad := 64 - (10+len(header)+1)%64
	header += strings.Repeat(" ", pad%64) + "\n"
	var b bytes.Buffer
	b.WriteString(npyMagic)
	b.Write([]byte{1, 0})
	if err := binary.Write(&b, binary.LittleEndian, uint16(len(header))); err != nil {
		return err
	}
	b.WriteString(header)
	if err := binary.Write(&b, binary.LittleEndian, data); err != nil {
		return err
	}
	return os.WriteFile(path, b.Bytes(), 0o644)
}
