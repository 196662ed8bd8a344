package acquire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/vortexgo/vortexgo/gosrc/engine"
	"github.com/vortexgo/vortexgo/gosrc/guard"
	"github.com/vortexgo/vortexgo/gosrc/internal/nowait"
)

// FileConfig configures a FileAcquisition (vortex's FileAcquisitionConfig
// plus Rate and .npy files).
type FileConfig struct {
	// Path names a raw file of little-endian uint16 values, record after
	// record (vortex's format), or a .npy file (detected by its magic
	// bytes, not its name) of dtype uint16 in C order whose last axis is
	// the record (or whose last two are samples and channels).
	Path string
	// SamplesPerRecord is the number of samples of one record. Required for
	// raw files; for .npy files 0 takes it from the shape, and any other
	// value must match it.
	SamplesPerRecord int
	// ChannelsPerSample is the number of interleaved channels per sample;
	// 0 is 1. A record is SamplesPerRecord*ChannelsPerSample values.
	ChannelsPerSample int
	// Loop replays the file from its start instead of ending.
	Loop bool
	// Rate throttles delivery in A-scans per second; 0 is unlimited.
	Rate float64
	// Pin says whether an engine on a GPU uploads straight from the file's
	// pages, pinned in place (see PinMode); the zero value is PinAuto.
	Pin PinMode
	// Offset and Length select the records to replay: bytes [Offset,
	// Offset+Length) of the file, whole records (ours; vortex replays the
	// whole file). Both 0 replay all the data; Length 0 with Offset > 0
	// replays from Offset to the end. In a .npy file the range must lie in
	// the data after the header (which still gives the spectrum length and
	// byte order); any other file is read as raw records from Offset, so the
	// data of a file with another header (MATLAB v5, NRRD, NIfTI) replays
	// too. Only the range is read: the rest of the file may be shorter than
	// a header says or end in a partial record (vortexgo.distributed gives
	// each task one range). A range past the file's end is refused by
	// Prepare naming the file, the range and where the file ends.
	Offset int64
	Length int64
}

// FileAcquisition replays spectra from a file, as vortex's does: Prepare
// checks the file, Start opens it, Stop closes it, and the next Start
// replays from the first record.
//
// In an engine on a GPU it lends the file's own pages (engine.Lender,
// file_pin.go): mapped read-only and pinned in place, they are uploaded
// with no host copy at all (FileConfig.Pin). Otherwise Fill reads straight
// into the caller's buffer (the engine's pinned block: no intermediate
// copy) with positioned reads of readChunk bytes spread over several
// goroutines, so that replaying a file in the page cache is not bound by
// the one core a single read(2) copies with.
type FileAcquisition struct {
	cfg       FileConfig
	samples   int   // samples per record
	values    int   // values per record (samples x channels)
	offset    int64 // first byte of the data
	records   int64 // records in the file
	bigEndian bool  // the data are '>u2'
	readers   int   // goroutines per Fill; 0 picks defaultReaders

	// mu guards the open file and the position: Stop and a standalone Next
	// may come from other goroutines than the engine's Fill. Uncontended
	// it costs tens of nanoseconds per block; Stop waits at most for the
	// read of one block in progress.
	mu  sync.Mutex
	f   *os.File
	pos int64 // next record to read
	// tail is the bytes past the last whole record of a file that ends mid-record
	// (whole-file replays only). vortex reads a file as a stream of values: a
	// looped replay wraps mid-record (spos then counts bytes into the stream of
	// records*rec+tail bytes), and one that does not loop fails at the block
	// that reaches the partial record.
	tail int64
	spos int64
	eof  bool // a short Fill reached the end; the next Fill returns io.EOF
	run  runState
	pin  *filePin // the file pinned in place for an engine (PinTo), or nil

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
	if cfg.ChannelsPerSample < 0 {
		return nil, engine.Invalid("acquire: FileConfig.ChannelsPerSample=%d, expected >= 1", cfg.ChannelsPerSample)
	}
	cfg.ChannelsPerSample = max(cfg.ChannelsPerSample, 1)
	if _, ok := engine.MulSize(cfg.SamplesPerRecord, cfg.ChannelsPerSample, 2); !ok {
		return nil, engine.TooLarge("acquire: FileConfig: SamplesPerRecord=%d x ChannelsPerSample=%d values per record overflow",
			cfg.SamplesPerRecord, cfg.ChannelsPerSample)
	}
	if err := checkRate(cfg.Rate); err != nil {
		return nil, err
	}
	if cfg.Offset < 0 || cfg.Length < 0 {
		return nil, engine.Invalid("acquire: FileConfig.Offset=%d, Length=%d, expected >= 0", cfg.Offset, cfg.Length)
	}
	if cfg.Pin < PinAuto || cfg.Pin > PinAlways {
		return nil, engine.Invalid("acquire: FileConfig.Pin=%d, expected PinAuto, PinNever or PinAlways", int(cfg.Pin))
	}
	a := &FileAcquisition{cfg: cfg}
	a.claim.Name("FileAcquisition")
	return a, nil
}

// Claims reports the claim an engine takes while it uses the source
// (engine.Claimer): Close is refused until that engine's run ends.
func (a *FileAcquisition) Claims() []*engine.Claim { return []*engine.Claim{&a.claim} }

// Close closes the file if a run left it open and unpins it; Prepare and
// an engine's Prepare fail after it (backend.ErrClosed), and it refuses
// with backend.ErrInUse while an engine uses the source. Closing twice is a
// no-op.
func (a *FileAcquisition) Close() error {
	return a.claim.Close(func() error {
		a.mu.Lock()
		defer a.mu.Unlock()
		err := a.closeFile()
		if a.pin != nil {
			err = errors.Join(err, a.pin.release())
			a.pin = nil
		}
		return err
	})
}

func (a *FileAcquisition) closeFile() error {
	a.pos, a.eof = 0, false
	if a.f == nil {
		return nil
	}
	err := a.f.Close()
	a.f = nil
	return err
}

// SamplesPerRecord returns the values of one record, SamplesPerRecord x
// ChannelsPerSample (what the engine sizes its blocks by), known once
// Prepare has read the header of a .npy file.
func (a *FileAcquisition) SamplesPerRecord() int { return a.values }

// Records returns the number of records in the file (after Prepare).
func (a *FileAcquisition) Records() int64 { return a.records }

// Prepare reads the header and checks that the file holds whole records;
// like vortex's, it also ends a replay in progress (the next Start replays
// from the first record). Its errors are bad configurations
// (backend.ErrInvalid naming the field): a file that ends in the middle of
// a record is one, found here before any data flows (vortex finds it at the
// block that reaches the end). backend.ErrClosed once the source is closed.
func (a *FileAcquisition) Prepare() error {
	if err := a.claim.Err("acquire: FileAcquisition.Prepare"); err != nil {
		return err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if err := a.closeFile(); err != nil {
		return fmt.Errorf("acquire: %s: closing the previous replay: %w", a.cfg.Path, err)
	}
	return a.prepare()
}

// prepare is Prepare under a.mu, the file closed.
func (a *FileAcquisition) prepare() error {
	f, err := openRegular(a.cfg.Path)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return engine.Invalid("acquire: FileConfig.Path: %v", err)
	}
	chans := a.cfg.ChannelsPerSample
	a.samples, a.offset, a.bigEndian = a.cfg.SamplesPerRecord, 0, false
	var magic [6]byte
	if _, err := io.ReadFull(f, magic[:]); err == nil && string(magic[:]) == npyMagic {
		h, err := readNPYHeader(f)
		if err != nil {
			return engine.Invalid("acquire: %s: %v", a.cfg.Path, err)
		}
		s, err := npySamples(h.shape, a.samples, chans)
		if err != nil {
			return engine.Invalid("acquire: %s: %v", a.cfg.Path, err)
		}
		a.samples, a.offset, a.bigEndian = s, h.offset, h.bigEndian
	} else if a.samples == 0 {
		return engine.Invalid("acquire: FileConfig.SamplesPerRecord=0, expected >= 1 for the raw file %s", a.cfg.Path)
	}
	if a.samples < 1 {
		return engine.Invalid("acquire: %s: spectrum length %d, expected >= 1", a.cfg.Path, a.samples)
	}
	a.values = a.samples * chans
	data := st.Size() - a.offset
	rec := int64(a.values) * 2
	if a.cfg.Offset != 0 || a.cfg.Length != 0 {
		return a.prepareRange(st.Size(), rec)
	}
	if data < 2 {
		return engine.Invalid("acquire: %s: no data, expected at least one uint16 value (a record is %d bytes)", a.cfg.Path, rec)
	}
	if data%2 != 0 {
		return engine.Invalid("acquire: %s: %d data bytes, expected uint16 values (an even number of bytes)", a.cfg.Path, data)
	}
	a.records, a.tail = data/rec, data%rec
	return nil
}

// prepareRange is Prepare's check of FileConfig.Offset and Length against
// a file of size bytes (under a.mu): the range must lie in the file's data
// and hold whole records of rec bytes; the replay is then that range.
func (a *FileAcquisition) prepareRange(size, rec int64) error {
	off, length := a.cfg.Offset, a.cfg.Length
	if off == 0 {
		off = a.offset
	}
	if off < a.offset {
		return engine.Invalid("acquire: %s: FileConfig.Offset=%d, expected >= %d (the .npy data start after the header)",
			a.cfg.Path, off, a.offset)
	}
	if length == 0 {
		length = size - off
	}
	end := off + length
	if end > size || length <= 0 {
		return engine.Invalid("acquire: %s: bytes [%d, %d): the file ends at byte %d (truncated?), expected the range inside it",
			a.cfg.Path, off, end, size)
	}
	if length%rec != 0 {
		return engine.Invalid("acquire: %s: bytes [%d, %d): %d bytes end in a partial record, expected a multiple of the record, "+
			"%d bytes (SamplesPerRecord=%d x ChannelsPerSample=%d uint16 values)",
			a.cfg.Path, off, end, length, rec, a.samples, a.cfg.ChannelsPerSample)
	}
	a.offset, a.records, a.tail = off, length/rec, 0
	return nil
}

// npySamples checks a .npy shape against the configured samples (0: take
// them from the shape) and channels: the last axis is samples x channels,
// or the last two are (samples, channels).
func npySamples(shape []int, samples, chans int) (int, error) {
	last := shape[len(shape)-1]
	// The last two axes are (samples, channels) when the last is the
	// channels: with one channel, the trailing 1 of a SimpleStack's
	// (volumes, bscans, ascans, samples, channels) file.
	two := len(shape) >= 2 && last == chans && (chans > 1 || shape[len(shape)-2] > 1)
	switch {
	case samples == 0 && two:
		return shape[len(shape)-2], nil
	case samples == 0 && last%chans == 0:
		return last / chans, nil
	case samples == 0:
		return 0, fmt.Errorf("shape %v: last axis %d, expected a multiple of ChannelsPerSample=%d", shape, last, chans)
	case last == samples*chans || two && shape[len(shape)-2] == samples:
		return samples, nil
	}
	return 0, fmt.Errorf("FileConfig.SamplesPerRecord=%d x ChannelsPerSample=%d, expected the shape %v to end in %d values "+
		"per record (SamplesPerRecord=0 takes it from the shape)", samples, chans, shape, samples*chans)
}

// Start opens the file and arms the source; after a Stop (or a Prepare)
// the replay starts again from the first record. Before any Prepare it
// prepares first, as vortex's start opens the file itself (Prepare's
// errors, then, are Start's).
func (a *FileAcquisition) Start() error {
	closed := a.claim.Err("acquire: FileAcquisition.Start") // before a.mu: Close holds the claim, then a.mu
	a.mu.Lock()
	defer a.mu.Unlock()
	if closed != nil {
		return closed // a closed source never reopens its file
	}
	if a.values == 0 {
		if err := a.prepare(); err != nil {
			return err
		}
	}
	if a.f == nil {
		f, err := openRegular(a.cfg.Path)
		if err != nil {
			return err
		}
		a.f, a.pos, a.spos, a.eof = f, 0, 0, false
	}
	a.run.start(a.cfg.Rate)
	return nil
}

// Stop disarms the source and closes the file, after the read of a Fill in
// progress (a Fill waiting for its rate limiter returns io.EOF at once).
func (a *FileAcquisition) Stop() error {
	a.run.halt()
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.closeFile()
}

// Fill reads the next records spectra into dst.
func (a *FileAcquisition) Fill(dst []uint16, records int) (int, error) {
	if err := checkFill(dst, records, a.values); err != nil {
		return 0, err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.fill(dst, records)
}

// fill is Fill under a.mu.
func (a *FileAcquisition) fill(dst []uint16, records int) (int, error) {
	want, err := a.take(records)
	if err != nil {
		return 0, err
	}
	buf := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(dst))), len(dst)*2)
	var done int64
	if a.tail != 0 && a.cfg.Loop {
		done, err = a.readStream(buf, want)
	} else {
		done, err = a.readRecords(a.readAt, buf, a.pos, want)
		a.advance(done)
	}
	if err != nil {
		return int(done), err
	}
	if a.bigEndian != nativeBigEndian {
		for i, v := range dst[:want*int64(a.values)] {
			dst[i] = v<<8 | v>>8
		}
	}
	if want < int64(records) {
		a.eof = true
	}
	return int(want), nil
}

// take begins a Fill or a Lend of up to records records (under a.mu): how
// many the file delivers, fewer at the end of a replay that does not loop,
// once the rate limiter admits them; io.EOF after the end or once stopped.
func (a *FileAcquisition) take(records int) (int64, error) {
	if a.eof {
		return 0, io.EOF
	}
	want := int64(records)
	if !a.cfg.Loop {
		if left := a.records - a.pos; want > left && a.tail != 0 {
			// vortex's: the block that reaches the partial record fails (vortex's offline
			// test_file_acquire); the whole records before it are not delivered.
			a.eof = true
			return 0, fmt.Errorf("acquire: %s: the file ends in a partial record (%d bytes past record %d), "+
				"expected whole records of %d uint16 values", a.cfg.Path, a.tail, a.records, a.values)
		}
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
	return want, nil
}

// advance moves the replay past n records delivered, back to the first
// record where a looped replay reaches the end.
func (a *FileAcquisition) advance(n int64) {
	a.pos += n
	if a.cfg.Loop {
		a.pos %= a.records
	}
}

// readRecords reads n records from record from on into buf with read
// (a.readAt, or a plain positioned read), going on from the first record
// where it reaches the end of the file (a looped replay). It returns how
// many it read, all of them unless read fails.
func (a *FileAcquisition) readRecords(read func([]byte, int64) error, buf []byte, from, n int64) (int64, error) {
	rec := int64(a.values) * 2
	done := int64(0)
	for pos := from; done < n; {
		c := min(n-done, a.records-pos)
		if err := read(buf[done*rec:(done+c)*rec], a.offset+pos*rec); err != nil {
			return done, fmt.Errorf("acquire: %s: records %d..%d: %w", a.cfg.Path, pos, pos+c, err)
		}
		done, pos = done+c, (pos+c)%a.records
	}
	return done, nil
}

// readStream reads n records' worth of bytes into buf from the looped stream of
// a file that ends mid-record (a.tail != 0): the stream is the file's data
// repeated, so records straddle its end as vortex's do.
func (a *FileAcquisition) readStream(buf []byte, n int64) (int64, error) {
	rec := int64(a.values) * 2
	period := a.records*rec + a.tail
	want, done := n*rec, int64(0)
	for done < want {
		c := min(want-done, period-a.spos)
		if err := a.readAt(buf[done:done+c], a.offset+a.spos); err != nil {
			return done / rec, fmt.Errorf("acquire: %s: bytes %d..%d: %w", a.cfg.Path, a.offset+a.spos, a.offset+a.spos+c, err)
		}
		done, a.spos = done+c, (a.spos+c)%period
	}
	return n, nil
}

// Next is vortex's standalone next: it reads the next records records into
// dst and returns how many it read, fewer at the end of the file and 0
// after it. The file must be open (Start).
func (a *FileAcquisition) Next(dst []uint16, records int) (int, error) {
	if err := checkFill(dst, records, a.values); err != nil {
		return 0, err
	}
	if err := a.standalone("FileAcquisition.next"); err != nil {
		return 0, err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.f == nil {
		return 0, errors.New("acquire: FileAcquisition.next: the file is not open, expected start() first")
	}
	n, err := a.fill(dst, records)
	if errors.Is(err, io.EOF) {
		return n, nil
	}
	return n, err
}

// readChunk is the size of one positioned read: large enough for the
// kernel to stream it, small enough to spread a block over the readers.
const readChunk = 1 << 20

// defaultReaders is how many goroutines read one block. A page-cache copy
// runs at 6-7 GB/s per core, and the host's memory, not its core count,
// ends the scaling: on the 16-core H100 host of issue 10,
// BenchmarkBlockHostCost (a 384 MiB file, larger than the host's cache)
// read 16 MiB blocks at 6.4 / 11.8 / 20.2 / 17.6 / 18.1 GB/s with 1 / 2 /
// 4 / 8 / 16 readers, and a plain parallel memcpy peaked at 17 GB/s. More
// readers only add contention with the upload, which reads the same
// host memory.
func defaultReaders() int { return min(runtime.GOMAXPROCS(0), 4) }

// readAt fills buf from the file at off with positioned reads (pread(2),
// safe to run concurrently on one file), in readChunk pieces over up to
// a.readers goroutines. The goroutines end before it returns: nothing
// writes into buf afterwards.
func (a *FileAcquisition) readAt(buf []byte, off int64) error {
	workers := a.readers
	if workers <= 0 {
		workers = defaultReaders()
	}
	chunks := (len(buf) + readChunk - 1) / readChunk
	workers = min(workers, chunks)
	if workers <= 1 {
		_, err := a.f.ReadAt(buf, off)
		return shrunk(err)
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make([]error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// A panic is this reader's error (Fill's), not the process's end.
			defer guard.Recover(&errs[w], "acquire: FileAcquisition reader")
			for {
				c := int(next.Add(1) - 1)
				if c >= chunks {
					return
				}
				lo := c * readChunk
				hi := min(lo+readChunk, len(buf))
				if _, err := a.f.ReadAt(buf[lo:hi], off+int64(lo)); err != nil {
					errs[w] = err
					return
				}
			}
		}()
	}
	wg.Wait()
	return shrunk(errors.Join(errs...))
}

// shrunk turns the io.EOF of a read inside the records Prepare counted (the
// file shrank since) into io.ErrUnexpectedEOF: an engine takes io.EOF for
// the source's normal end and would drop the failure without a word.
func shrunk(err error) error {
	if errors.Is(err, io.EOF) {
		return fmt.Errorf("the file is shorter than when prepared: %w", io.ErrUnexpectedEOF)
	}
	return err
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
	// Every spelling numpy.load reads as uint16: vortex's and
	// SimpleStackUInt16's files say 'uint16', NumPy's own '<u2'.
	switch m[1] {
	case "<u2", "<H":
	case ">u2", ">H":
		h.bigEndian = true
	case "=u2", "|u2", "u2", "=H", "H", "uint16":
		h.bigEndian = nativeBigEndian
	default:
		return npyHeader{}, fmt.Errorf("npy: dtype %q, expected uint16 ('<u2', '>u2' or 'uint16'); FileAcquisition replays raw uint16 spectra, "+
			"as SpectraStackEndpoint records them in a SimpleStackUInt16", m[1])
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

// openRegular opens path for reading, refusing anything but a regular
// file with an error naming FileConfig.Path. The open does not block: a
// FIFO without a writer would otherwise hang it (and the Python call,
// beyond Ctrl-C's reach) until another process opened the pipe, and a
// replay needs a file it can measure, map and read again from its start.
func openRegular(path string) (*os.File, error) {
	f, err := nowait.Open(path, os.O_RDONLY, 0) // a FIFO without a writer would block prepare()
	if err != nil {
		return nil, engine.Invalid("acquire: FileConfig.Path: %v", err)
	}
	st, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return nil, engine.Invalid("acquire: FileConfig.Path: %v", err)
	}
	if !st.Mode().IsRegular() {
		_ = f.Close()
		kind := "not a regular file"
		switch m := st.Mode(); {
		case m&os.ModeNamedPipe != 0:
			kind = "a FIFO (named pipe)"
		case m&os.ModeSocket != 0:
			kind = "a socket"
		case m&os.ModeDir != 0:
			kind = "a directory"
		case m&os.ModeDevice != 0:
			kind = "a device"
		}
		return nil, engine.Invalid("acquire: FileConfig.Path=%q is %s, expected a regular file: a replay measures the file, "+
			"maps it and reads it again from its start (save a stream to a file first)", path, kind)
	}
	return f, nil
}
