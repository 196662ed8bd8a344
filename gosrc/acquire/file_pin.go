package acquire

import (
	"errors"
	"fmt"
	"io"
	"os"
	"unsafe"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/engine"
)

// PinMode says whether a FileAcquisition in an engine uploads straight from
// the file's pages (engine.Lender): the file is mapped read-only and its
// pages, the page cache's own, are pinned in place with the device, so each
// block's upload is a DMA from them and no host copy is made. Reading each
// block into the engine's pinned buffers instead runs at the host's copy
// bandwidth (20 GB/s with 4 readers on the H100 host of issue 10), a third
// of the upload's.
//
// Pinning locks the file's pages in memory for as long as the engine stays
// prepared, and reads the whole file in (Prepare takes the time a cold
// file takes to read): PinAuto pins files up to a quarter of the host's
// memory.
type PinMode int

const (
	// PinAuto pins the file when the device can (CUDA), the file is
	// little-endian and its data fit a quarter of the host's memory;
	// otherwise blocks are read.
	PinAuto PinMode = iota
	// PinNever always reads blocks (Fill).
	PinNever
	// PinAlways pins the file whatever its size, and fails Prepare when the
	// device cannot (the CPU backend, a big-endian file).
	PinAlways
)

// String returns "auto", "never" or "always".
func (m PinMode) String() string {
	switch m {
	case PinAuto:
		return "auto"
	case PinNever:
		return "never"
	case PinAlways:
		return "always"
	}
	return fmt.Sprintf("PinMode(%d)", int(m))
}

// pinLimit is the largest file PinAuto pins (tests lower it).
var pinLimit = maxPinnedFileBytes

// filePin is a FileAcquisition's file mapped and pinned in place (PinTo).
// Go never reads the mapping: a file truncated under it would fault the
// reader (SIGBUS), while the device's DMA reads the pinned pages, which
// the kernel keeps until they are unpinned. What Go needs of the data (the
// seam) it reads with pread.
type filePin struct {
	mapping []byte         // the read-only mapping of the file up to offset+records*rec bytes, from offset's page
	pinned  backend.Buffer // its registration with the device
	base    uintptr        // address of record 0
	offset  int64          // the data's offset in the file, as mapped
	records int64          // records mapped
	max     int            // PinTo's maxRecords: the longest run Lend hands out
	version fileVersion    // the file's size and mtime when pinned
	// seam holds records seamFrom..records-1 and then the file again from
	// record 0 for max records (Loop only): every run that wraps past the
	// end starts at or after seamFrom and is contiguous there.
	seam     backend.Buffer
	seamFrom int64
}

// PinTo maps the file and pins its pages in place with dev, so that Lend
// hands out runs of up to maxRecords records for the engine to upload
// without a host copy (engine.Lender). It declines (an error wrapping
// engine.ErrNoLend: the engine then reads blocks with Fill) when dev cannot
// pin memory it did not allocate (the CPU backend, whose upload is a copy
// anyway), when the values must be byte-swapped, under PinNever, and under
// PinAuto for data larger than a quarter of the host's memory or a pin the
// device refuses. Calling it again keeps the pin when it still fits, and
// replaces it otherwise, refused (backend.ErrInUse) while another engine
// uploads from it.
func (a *FileAcquisition) PinTo(dev backend.Device, maxRecords int) error {
	if dev == nil || maxRecords <= 0 {
		return fmt.Errorf("acquire: FileAcquisition.PinTo: dev=%v maxRecords=%d, expected a device and maxRecords > 0", dev, maxRecords)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.values == 0 {
		return errors.New("acquire: FileAcquisition.PinTo before Prepare")
	}
	always := a.cfg.Pin == PinAlways
	decline := func(why string, args ...any) error {
		if always { // a configuration this device or file cannot honour
			return engine.Invalid("acquire: FileConfig.Pin=always (Python: pin=True): %s; "+
				"pin=None pins only where it can", fmt.Sprintf(why, args...))
		}
		return fmt.Errorf("acquire: FileAcquisition reads blocks: %s: %w", fmt.Sprintf(why, args...), engine.ErrNoLend)
	}
	if p := a.pin; p != nil && p.records == a.records && p.offset == a.offset && p.max >= maxRecords &&
		p.pinned.Device() == dev && (p.seam != nil) == a.cfg.Loop {
		return nil // the pin already serves this engine
	}
	reg, ok := dev.(backend.HostRegistrar)
	switch {
	case a.cfg.Pin == PinNever:
		return decline("FileConfig.Pin=never")
	case !ok:
		return decline("the %s device cannot pin a file in place (its upload is a copy anyway)", dev.Kind())
	case a.tail != 0:
		return decline("%s ends in a partial record: replayed as a stream of values, read block by block", a.cfg.Path)
	case a.bigEndian != nativeBigEndian:
		return decline("%s holds big-endian values, which are swapped as they are read", a.cfg.Path)
	}
	size, ok := engine.MulSize(int(a.records), a.values, 2)
	if !ok || int64(size) > (1<<62)-a.offset {
		return decline("%d records of %d values do not fit an address space", a.records, a.values)
	}
	if limit := pinLimit(); !always && int64(size) > limit {
		return decline("%s of data, more than the %s (a quarter of the host's memory) pinned by default; "+
			"FileConfig.Pin=always pins it anyway", bytesText(int64(size)), bytesText(limit))
	}
	if a.pin != nil {
		if a.claim.Users() > 1 {
			return fmt.Errorf("acquire: FileAcquisition.PinTo: another engine uploads from the pinned file; "+
				"stop it first: %w", backend.ErrInUse)
		}
		if err := a.pin.release(); err != nil {
			return fmt.Errorf("acquire: %s: unpinning the previous pin: %w", a.cfg.Path, err)
		}
		a.pin = nil
	}
	p, err := a.mapAndPin(reg, dev, int64(size), maxRecords)
	if err != nil {
		if always {
			return fmt.Errorf("acquire: FileConfig.Pin=always: %s: %w", a.cfg.Path, err)
		}
		return fmt.Errorf("acquire: FileAcquisition reads blocks: pinning %s failed: %v: %w", a.cfg.Path, err, engine.ErrNoLend)
	}
	a.pin = p
	return nil
}

// bytesText spells a size for a message: bytes below a MiB, MiB above.
func bytesText(n int64) string {
	if n < 1<<20 {
		return fmt.Sprintf("%d bytes", n)
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}

// mapAndPin maps the file's bytes up to offset+size read-only (from offset's page), pins them
// and builds the seam of a looped replay.
func (a *FileAcquisition) mapAndPin(reg backend.HostRegistrar, dev backend.Device, size int64, maxRecords int) (_ *filePin, err error) {
	f, err := os.Open(a.cfg.Path)
	if err != nil {
		return nil, err
	}
	defer f.Close() // the mapping outlives the descriptor
	length := a.offset + size
	v, err := versionOf(f)
	if err != nil {
		return nil, err
	}
	if v.size < length {
		return nil, fmt.Errorf("the file is shorter than when prepared (%d bytes, expected %d): %w", v.size, length, io.ErrUnexpectedEOF)
	}
	// From the page holding the first record: a range late in a large file
	// (FileConfig.Offset) maps and pins only its own pages.
	start := a.offset - a.offset%int64(os.Getpagesize())
	mapping, err := mapFile(f, start, length-start)
	if err != nil {
		return nil, err
	}
	p := &filePin{mapping: mapping, offset: a.offset, records: a.records, max: maxRecords, version: v}
	defer func() {
		if err != nil {
			err = errors.Join(err, p.release())
		}
	}()
	addr := uintptr(unsafe.Pointer(unsafe.SliceData(mapping)))
	// Read-only: the mapping is PROT_READ, whose pages the kernel pins for
	// reading only (a writable pin of it fails).
	if p.pinned, err = reg.RegisterHost(addr, int(length-start), true); err != nil {
		return nil, err
	}
	p.base = addr + uintptr(a.offset-start)
	if !a.cfg.Loop {
		return p, nil
	}
	rec := int64(a.values) * 2
	p.seamFrom = max(0, a.records-int64(maxRecords-1))
	seamRecords := a.records - p.seamFrom + int64(maxRecords)
	if p.seam, err = dev.AllocPinned(int(seamRecords * rec)); err != nil {
		return nil, fmt.Errorf("the seam of a looped replay (%d records): %w", seamRecords, err)
	}
	seam := unsafe.Slice((*byte)(ptrOf(p.seam.Ptr())), seamRecords*rec)
	pread := func(b []byte, off int64) error { _, err := f.ReadAt(b, off); return shrunk(err) }
	if _, err := a.readRecords(pread, seam, p.seamFrom, seamRecords); err != nil {
		return nil, err
	}
	return p, nil
}

// release unpins and unmaps; the engine's uploads from it must be over.
func (p *filePin) release() error {
	var errs []error
	if p.seam != nil {
		errs = append(errs, p.seam.Free())
		p.seam = nil
	}
	if p.pinned != nil {
		errs = append(errs, p.pinned.Free())
		p.pinned = nil
	}
	if p.mapping != nil {
		errs = append(errs, unmapFile(p.mapping))
		p.mapping = nil
	}
	return errors.Join(errs...)
}

// Pinned reports whether the file is pinned in place for an engine to
// upload from (PinTo succeeded): blocks are then lent, not read.
func (a *FileAcquisition) Pinned() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.pin != nil
}

// Lend returns the address of the next records records in the pinned file
// (engine.Lender), with Fill's end of file, loop, rate limit and stop
// semantics. A run that wraps past the end of a looped file comes from
// the seam. The pinned pages are never written, so a lent run stays valid
// while the pin lives: until Close, or a PinTo that replaces it (refused
// while another engine uses it).
func (a *FileAcquisition) Lend(records int) (uintptr, int, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	p := a.pin
	if p == nil {
		return 0, 0, errors.New("acquire: FileAcquisition.Lend before PinTo")
	}
	if records <= 0 || records > p.max {
		return 0, 0, fmt.Errorf("acquire: Lend: records=%d, expected 1..%d (PinTo's maxRecords)", records, p.max)
	}
	if p.records != a.records || p.offset != a.offset {
		return 0, 0, fmt.Errorf("acquire: %s changed since the engine was prepared (%d records, now %d): "+
			"prepare the engine again", a.cfg.Path, p.records, a.records)
	}
	want, err := a.take(records)
	if err != nil {
		return 0, 0, err
	}
	// The pinned pages are the file's as it was when pinned: the kernel
	// keeps them while pinned even when the file is truncated or rewritten,
	// where Fill would read the new bytes or fail. A file that changed is
	// therefore an error, not stale data in silence.
	if v, err := versionOf(a.f); err != nil {
		return 0, 0, fmt.Errorf("acquire: %s: %w", a.cfg.Path, err)
	} else if v != p.version {
		if v.size < p.version.size {
			return 0, 0, fmt.Errorf("acquire: %s: %w", a.cfg.Path, shrunk(io.EOF))
		}
		return 0, 0, fmt.Errorf("acquire: %s changed since the engine pinned it (size or modification time): "+
			"prepare the engine again to replay the new data", a.cfg.Path)
	}
	rec := uintptr(a.values) * 2
	src := p.base + uintptr(a.pos)*rec
	if a.pos+want > a.records { // only when looping
		src = p.seam.Ptr() + uintptr(a.pos-p.seamFrom)*rec
	}
	a.advance(want)
	if want < int64(records) {
		a.eof = true
	}
	return src, int(want), nil
}
