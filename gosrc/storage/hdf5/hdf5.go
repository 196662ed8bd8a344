// Package hdf5 is the part of the HDF5 C library that vortex's
// hdf5_stack_t uses, loaded at run time.
//
// The library is dlopen'ed on first use, the way gosrc/cuda loads libcuda:
// vortexgo builds without HDF5 headers, imports without the library, and
// reports a missing library as an ordinary error naming what to install.
// Candidates, in order: the path in $VORTEXGO_HDF5_LIBRARY, the system's
// libhdf5 (libhdf5.so, Debian's libhdf5_serial.so, their sonames), then the
// paths the caller passes (the Python layer passes the copy bundled in the
// h5py wheel, h5py.libs/libhdf5-*.so*).
//
// The HDF5 library is not thread-safe in its usual builds: every call here
// holds one process-wide mutex. h5py serialises only its own calls, so the
// Python layer passes a private copy of h5py's library (a second instance)
// rather than h5py's file, which dlopen would share with h5py.
package hdf5

/*
#include <stdint.h>
#include <stdlib.h>

typedef int64_t hid_t;
typedef int herr_t;
typedef unsigned long long hsize_t;

typedef struct {
	herr_t (*open)(void);
	herr_t (*eset_auto2)(hid_t, void*, void*);
	hid_t (*pcreate)(hid_t);
	herr_t (*pclose)(hid_t);
	herr_t (*pset_sizes)(hid_t, size_t, size_t);
	herr_t (*pset_userblock)(hid_t, hsize_t);
	herr_t (*pset_chunk)(hid_t, int, const hsize_t*);
	herr_t (*pset_fill_value)(hid_t, hid_t, const void*);
	herr_t (*pset_fill_time)(hid_t, int);
	herr_t (*pset_deflate)(hid_t, unsigned);
	herr_t (*pset_chunk_cache)(hid_t, size_t, size_t, double);
	hid_t (*fcreate)(const char*, unsigned, hid_t, hid_t);
	hid_t (*fopen)(const char*, unsigned, hid_t);
	herr_t (*fclose)(hid_t);
	herr_t (*fflush)(hid_t, int);
	herr_t (*fget_vfd_handle)(hid_t, hid_t, void**);
	hid_t (*screate)(int);
	hid_t (*screate_simple)(int, const hsize_t*, const hsize_t*);
	herr_t (*sselect_hyperslab)(hid_t, int, const hsize_t*, const hsize_t*, const hsize_t*, const hsize_t*);
	herr_t (*sclose)(hid_t);
	hid_t (*dcreate2)(hid_t, const char*, hid_t, hid_t, hid_t, hid_t, hid_t);
	herr_t (*dset_extent)(hid_t, const hsize_t*);
	hid_t (*dget_space)(hid_t);
	herr_t (*dwrite)(hid_t, hid_t, hid_t, hid_t, hid_t, const void*);
	herr_t (*dclose)(hid_t);
	hid_t (*tcopy)(hid_t);
	herr_t (*tset_size)(hid_t, size_t);
	herr_t (*tclose)(hid_t);
	hid_t (*acreate2)(hid_t, const char*, hid_t, hid_t, hid_t, hid_t);
	herr_t (*awrite)(hid_t, hid_t, const void*);
	herr_t (*aclose)(hid_t);
	herr_t (*get_libversion)(unsigned*, unsigned*, unsigned*);
} vg_h5;

static vg_h5 h5;

// vg_table is how Go fills the table: cgo cannot name a static variable.
static vg_h5* vg_table(void) { return &h5; }

static herr_t vg_open(void) { return h5.open(); }
static herr_t vg_quiet(void) { return h5.eset_auto2(0, NULL, NULL); }
static hid_t vg_pcreate(hid_t c) { return h5.pcreate(c); }
static herr_t vg_pclose(hid_t p) { return h5.pclose(p); }
static herr_t vg_pset_sizes(hid_t p, size_t a, size_t b) { return h5.pset_sizes(p, a, b); }
static herr_t vg_pset_userblock(hid_t p, hsize_t n) { return h5.pset_userblock(p, n); }
static herr_t vg_pset_chunk(hid_t p, int n, const hsize_t* d) { return h5.pset_chunk(p, n, d); }
static herr_t vg_pset_fill_value(hid_t p, hid_t t, const void* v) { return h5.pset_fill_value(p, t, v); }
static herr_t vg_pset_fill_time(hid_t p, int t) { return h5.pset_fill_time(p, t); }
static herr_t vg_pset_deflate(hid_t p, unsigned l) { return h5.pset_deflate(p, l); }
static hid_t vg_fcreate(const char* n, unsigned f, hid_t c, hid_t a) { return h5.fcreate(n, f, c, a); }
static hid_t vg_fopen(const char* n, unsigned f, hid_t a) { return h5.fopen(n, f, a); }
static herr_t vg_fclose(hid_t f) { return h5.fclose(f); }
static herr_t vg_fflush(hid_t f) { return h5.fflush(f, 1); } // H5F_SCOPE_GLOBAL
// vg_fd is the sec2 driver's file descriptor (its handle is an int*); -1 if none.
static int vg_fd(hid_t f) {
	void* h = NULL;
	if (h5.fget_vfd_handle(f, 0, &h) < 0 || h == NULL) return -1;
	return *(int*)h;
}
static hid_t vg_screate_scalar(void) { return h5.screate(0); } // H5S_SCALAR
static hid_t vg_screate_simple(int n, const hsize_t* d, const hsize_t* m) { return h5.screate_simple(n, d, m); }
static herr_t vg_sselect(hid_t s, const hsize_t* start, const hsize_t* count) {
	return h5.sselect_hyperslab(s, 0, start, NULL, count, NULL); // H5S_SELECT_SET
}
static herr_t vg_sclose(hid_t s) { return h5.sclose(s); }
static herr_t vg_pset_no_chunk_cache(hid_t p) { return h5.pset_chunk_cache(p, 0, 0, 1.0); }
static hid_t vg_dcreate(hid_t f, const char* n, hid_t t, hid_t s, hid_t dcpl, hid_t dapl) { return h5.dcreate2(f, n, t, s, 0, dcpl, dapl); }
static herr_t vg_dset_extent(hid_t d, const hsize_t* e) { return h5.dset_extent(d, e); }
static hid_t vg_dget_space(hid_t d) { return h5.dget_space(d); }
static herr_t vg_dwrite(hid_t d, hid_t t, hid_t m, hid_t f, const void* b) { return h5.dwrite(d, t, m, f, 0, b); }
static herr_t vg_dclose(hid_t d) { return h5.dclose(d); }
static hid_t vg_tcopy(hid_t t) { return h5.tcopy(t); }
static herr_t vg_tset_size(hid_t t, size_t n) { return h5.tset_size(t, n); }
static herr_t vg_tclose(hid_t t) { return h5.tclose(t); }
static hid_t vg_acreate(hid_t o, const char* n, hid_t t, hid_t s) { return h5.acreate2(o, n, t, s, 0, 0); }
static herr_t vg_awrite_vlstr(hid_t a, hid_t t, const char* s) { return h5.awrite(a, t, &s); }
static herr_t vg_aclose(hid_t a) { return h5.aclose(a); }
static herr_t vg_version(unsigned* a, unsigned* b, unsigned* c) { return h5.get_libversion(a, b, c); }
*/
import "C"

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"unsafe"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/internal/dl"
)

// ErrNoLibrary is wrapped by every error that comes from the library not
// being found: install it (pip install h5py, or the system's libhdf5).
var ErrNoLibrary = errors.New("hdf5: no HDF5 library, expected one of: pip install h5py (vortexgo uses the library " +
	"bundled in its wheel), the system's libhdf5 (apt install libhdf5-dev; dnf install hdf5), or " +
	"VORTEXGO_HDF5_LIBRARY=/path/to/libhdf5.so")

// mu serialises every call into the library (not thread-safe; see the
// package doc). Writes of a volume are one call each, so holding it for
// the call's length is what keeps them correct, not a hot-path cost.
var mu sync.Mutex

var (
	loaded  *dl.Library
	version string
	ids     struct{ fileCreate, datasetCreate, datasetAccess, cS1 C.hid_t }
	types   = map[string]C.hid_t{}
)

// systemNames are the sonames a distribution's libhdf5 goes by.
var systemNames = []string{"libhdf5.so", "libhdf5_serial.so", "libhdf5.so.320", "libhdf5.so.310", "libhdf5.so.200",
	"libhdf5.so.103", "libhdf5_serial.so.310", "libhdf5_serial.so.103", "libhdf5_serial.so.100"}

// Load opens the library if it is not open yet, trying
// $VORTEXGO_HDF5_LIBRARY, the system's names and then extra (paths), and
// returns its version. A failure wraps ErrNoLibrary and keeps each
// candidate's dlopen message; a later Load tries again.
func Load(extra ...string) (string, error) {
	mu.Lock()
	defer mu.Unlock()
	if loaded != nil {
		return version, nil
	}
	// The live environment: a path a notebook put in os.environ counts
	// (Go's os.Getenv would not see it).
	asked, _ := dl.Getenv("VORTEXGO_HDF5_LIBRARY")
	names := append([]string{asked}, systemNames...)
	names = append(names, extra...)
	lib, err := dl.Open(names...)
	if err != nil {
		return "", fmt.Errorf("%w (%v)", ErrNoLibrary, err)
	}
	if err := bind(lib); err != nil {
		return "", fmt.Errorf("hdf5: %s: %w", lib.Name(), err)
	}
	loaded = lib
	return version, nil
}

// Library is the path of the loaded library ("" before Load succeeds).
func Library() string {
	mu.Lock()
	defer mu.Unlock()
	if loaded == nil {
		return ""
	}
	return loaded.Name()
}

func bind(lib *dl.Library) error {
	tab := C.vg_table()
	fns := []struct {
		name string
		dst  *unsafe.Pointer
	}{
		{"H5open", (*unsafe.Pointer)(unsafe.Pointer(&tab.open))},
		{"H5Eset_auto2", (*unsafe.Pointer)(unsafe.Pointer(&tab.eset_auto2))},
		{"H5Pcreate", (*unsafe.Pointer)(unsafe.Pointer(&tab.pcreate))},
		{"H5Pclose", (*unsafe.Pointer)(unsafe.Pointer(&tab.pclose))},
		{"H5Pset_sizes", (*unsafe.Pointer)(unsafe.Pointer(&tab.pset_sizes))},
		{"H5Pset_userblock", (*unsafe.Pointer)(unsafe.Pointer(&tab.pset_userblock))},
		{"H5Pset_chunk", (*unsafe.Pointer)(unsafe.Pointer(&tab.pset_chunk))},
		{"H5Pset_fill_value", (*unsafe.Pointer)(unsafe.Pointer(&tab.pset_fill_value))},
		{"H5Pset_fill_time", (*unsafe.Pointer)(unsafe.Pointer(&tab.pset_fill_time))},
		{"H5Pset_deflate", (*unsafe.Pointer)(unsafe.Pointer(&tab.pset_deflate))},
		{"H5Pset_chunk_cache", (*unsafe.Pointer)(unsafe.Pointer(&tab.pset_chunk_cache))},
		{"H5Fcreate", (*unsafe.Pointer)(unsafe.Pointer(&tab.fcreate))},
		{"H5Fopen", (*unsafe.Pointer)(unsafe.Pointer(&tab.fopen))},
		{"H5Fclose", (*unsafe.Pointer)(unsafe.Pointer(&tab.fclose))},
		{"H5Fflush", (*unsafe.Pointer)(unsafe.Pointer(&tab.fflush))},
		{"H5Fget_vfd_handle", (*unsafe.Pointer)(unsafe.Pointer(&tab.fget_vfd_handle))},
		{"H5Screate", (*unsafe.Pointer)(unsafe.Pointer(&tab.screate))},
		{"H5Screate_simple", (*unsafe.Pointer)(unsafe.Pointer(&tab.screate_simple))},
		{"H5Sselect_hyperslab", (*unsafe.Pointer)(unsafe.Pointer(&tab.sselect_hyperslab))},
		{"H5Sclose", (*unsafe.Pointer)(unsafe.Pointer(&tab.sclose))},
		{"H5Dcreate2", (*unsafe.Pointer)(unsafe.Pointer(&tab.dcreate2))},
		{"H5Dset_extent", (*unsafe.Pointer)(unsafe.Pointer(&tab.dset_extent))},
		{"H5Dget_space", (*unsafe.Pointer)(unsafe.Pointer(&tab.dget_space))},
		{"H5Dwrite", (*unsafe.Pointer)(unsafe.Pointer(&tab.dwrite))},
		{"H5Dclose", (*unsafe.Pointer)(unsafe.Pointer(&tab.dclose))},
		{"H5Tcopy", (*unsafe.Pointer)(unsafe.Pointer(&tab.tcopy))},
		{"H5Tset_size", (*unsafe.Pointer)(unsafe.Pointer(&tab.tset_size))},
		{"H5Tclose", (*unsafe.Pointer)(unsafe.Pointer(&tab.tclose))},
		{"H5Acreate2", (*unsafe.Pointer)(unsafe.Pointer(&tab.acreate2))},
		{"H5Awrite", (*unsafe.Pointer)(unsafe.Pointer(&tab.awrite))},
		{"H5Aclose", (*unsafe.Pointer)(unsafe.Pointer(&tab.aclose))},
		{"H5get_libversion", (*unsafe.Pointer)(unsafe.Pointer(&tab.get_libversion))},
	}
	for _, f := range fns {
		p, err := lib.Sym(f.name)
		if err != nil {
			return err
		}
		*f.dst = p
	}
	// The predefined ids are globals that H5open initialises.
	if C.vg_open() < 0 {
		return errors.New("H5open failed")
	}
	// Errors come back as Go errors naming the call; the library's own
	// stack printing would only write to the process's stderr.
	C.vg_quiet()
	global := func(name string) (C.hid_t, error) {
		p, err := lib.Sym(name)
		if err != nil {
			return 0, err
		}
		return *(*C.hid_t)(p), nil
	}
	var err error
	for _, g := range []struct {
		name string
		dst  *C.hid_t
	}{{"H5P_CLS_FILE_CREATE_ID_g", &ids.fileCreate}, {"H5P_CLS_DATASET_CREATE_ID_g", &ids.datasetCreate},
		{"H5P_CLS_DATASET_ACCESS_ID_g", &ids.datasetAccess}, {"H5T_C_S1_g", &ids.cS1}} {
		if *g.dst, err = global(g.name); err != nil {
			return err
		}
	}
	for dtype, name := range map[string]string{"int8": "H5T_STD_I8LE_g", "uint16": "H5T_STD_U16LE_g", "uint32": "H5T_STD_U32LE_g", "uint64": "H5T_STD_U64LE_g",
		"float32": "H5T_IEEE_F32LE_g", "float64": "H5T_IEEE_F64LE_g"} {
		if types[dtype], err = global(name); err != nil {
			return err
		}
	}
	var a, b, c C.uint
	C.vg_version(&a, &b, &c)
	version = fmt.Sprintf("%d.%d.%d", a, b, c)
	return nil
}

// ErrCall wraps a failed library call (a full disk, a file the library
// cannot create): it is an OSError in Python.
var ErrCall = errors.New("hdf5 call failed")

// failed is a failed call on path as an *os.PathError (Python's OSError)
// wrapping ErrCall.
func failed(path, call, what string) error {
	return &os.PathError{Op: "hdf5 " + call + " (" + what + ")", Path: path, Err: ErrCall}
}

// Stack is one open file with vortex's "data" dataset of (volumes,
// bscans, ascans, samples, channels), growable along volumes.
type Stack struct {
	file, dataset, dtype C.hid_t
	path                 string
	shape                [4]int
	volumes              int // the dataset's first dimension
}

// StackConfig is what Create needs: the file, the element type (NumPy's
// name), one volume's shape, the deflate level (0: none), and the MATLAB
// userblock with its preamble and class attribute.
type StackConfig struct {
	Path             string
	DType            string
	Shape            [4]int
	CompressionLevel int
	MATLAB           bool
	// Preamble is written to the first bytes of the 512-byte userblock
	// (MATLAB's 128-byte v7.3 header) when MATLAB is set.
	Preamble []byte
	// MATLABClass is the dataset's MATLAB_class attribute.
	MATLABClass string
}

// Create truncates path and creates the dataset as vortex's
// hdf5_stack_t::open does: 8-byte offsets and lengths, chunks of one
// A-scan, zero fill written at allocation, deflate at the given level;
// beyond vortex, without a chunk cache.
func Create(c StackConfig) (_ *Stack, err error) {
	mu.Lock()
	defer mu.Unlock()
	if loaded == nil {
		return nil, ErrNoLibrary
	}
	t, ok := types[c.DType]
	if !ok {
		return nil, fmt.Errorf("hdf5: dtype=%q, expected int8, uint16, uint32, uint64, float32 or float64: %w", c.DType, backend.ErrInvalid)
	}
	cpath := C.CString(c.Path)
	defer C.free(unsafe.Pointer(cpath))
	fcpl := C.vg_pcreate(ids.fileCreate)
	if fcpl < 0 {
		return nil, failed(c.Path, "H5Pcreate", "file creation properties")
	}
	defer C.vg_pclose(fcpl)
	if C.vg_pset_sizes(fcpl, 8, 8) < 0 {
		return nil, failed(c.Path, "H5Pset_sizes", "8-byte offsets")
	}
	if c.MATLAB && C.vg_pset_userblock(fcpl, 512) < 0 {
		return nil, failed(c.Path, "H5Pset_userblock", "512 bytes")
	}
	const accTrunc, accRDWR = 2, 1
	s := &Stack{dtype: t, path: c.Path, shape: c.Shape, file: -1, dataset: -1}
	defer func() {
		if err != nil {
			_ = s.closeLocked() // the error returned says why
		}
	}()
	if s.file = C.vg_fcreate(cpath, accTrunc, fcpl, 0); s.file < 0 {
		return nil, failed(c.Path, "H5Fcreate", fmt.Sprintf("path=%q cannot be created", c.Path))
	}
	if c.MATLAB {
		// vortex closes the file, writes MATLAB's preamble into the
		// userblock and reopens it; so does this.
		C.vg_fclose(s.file)
		s.file = -1
		if err := writePreamble(c.Path, c.Preamble); err != nil {
			return nil, err
		}
		if s.file = C.vg_fopen(cpath, accRDWR, 0); s.file < 0 {
			return nil, failed(c.Path, "H5Fopen", fmt.Sprintf("path=%q", c.Path))
		}
	}
	dims := [5]C.hsize_t{}
	maxDims := [5]C.hsize_t{^C.hsize_t(0)}
	chunk := [5]C.hsize_t{1, 1, 1, C.hsize_t(c.Shape[2]), C.hsize_t(c.Shape[3])}
	for i, n := range c.Shape {
		maxDims[i+1] = C.hsize_t(n)
	}
	space := C.vg_screate_simple(5, &dims[0], &maxDims[0])
	if space < 0 {
		return nil, failed(c.Path, "H5Screate_simple", fmt.Sprintf("shape (0, %v)", c.Shape))
	}
	defer C.vg_sclose(space)
	dcpl := C.vg_pcreate(ids.datasetCreate)
	if dcpl < 0 {
		return nil, failed(c.Path, "H5Pcreate", "dataset creation properties")
	}
	defer C.vg_pclose(dcpl)
	var zero [8]byte
	const fillTimeAlloc = 0
	switch {
	case C.vg_pset_chunk(dcpl, 5, &chunk[0]) < 0:
		return nil, failed(c.Path, "H5Pset_chunk", "one A-scan")
	case C.vg_pset_fill_value(dcpl, t, unsafe.Pointer(&zero[0])) < 0:
		return nil, failed(c.Path, "H5Pset_fill_value", "zero")
	case C.vg_pset_fill_time(dcpl, fillTimeAlloc) < 0:
		return nil, failed(c.Path, "H5Pset_fill_time", "at allocation")
	case C.vg_pset_deflate(dcpl, C.uint(c.CompressionLevel)) < 0:
		return nil, failed(c.Path, "H5Pset_deflate", fmt.Sprintf("compression_level=%d", c.CompressionLevel))
	}
	// No chunk cache: each chunk (one A-scan, written whole) reaches the
	// file in H5Dwrite, so a full disk fails the write that hit it rather
	// than the flush, which would by then have written metadata pointing
	// past the file's end (the storage package freezes the file there).
	dapl := C.vg_pcreate(ids.datasetAccess)
	if dapl < 0 {
		return nil, failed(c.Path, "H5Pcreate", "dataset access properties")
	}
	defer C.vg_pclose(dapl)
	if C.vg_pset_no_chunk_cache(dapl) < 0 {
		return nil, failed(c.Path, "H5Pset_chunk_cache", "none")
	}
	name := C.CString("data")
	defer C.free(unsafe.Pointer(name))
	if s.dataset = C.vg_dcreate(s.file, name, t, space, dcpl, dapl); s.dataset < 0 {
		return nil, failed(c.Path, "H5Dcreate2", "dataset data")
	}
	if c.MATLAB {
		if err := s.matlabClass(c.MATLABClass); err != nil {
			return nil, err
		}
	}
	return s, nil
}

func writePreamble(path string, preamble []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("hdf5: writing the MATLAB preamble of path=%q: %w", path, err)
	}
	_, err = f.WriteAt(preamble, 0)
	return errors.Join(err, f.Close())
}

func (s *Stack) matlabClass(class string) error {
	t := C.vg_tcopy(ids.cS1)
	if t < 0 {
		return failed(s.path, "H5Tcopy", "string type")
	}
	defer C.vg_tclose(t)
	if C.vg_tset_size(t, ^C.size_t(0)) < 0 { // H5T_VARIABLE
		return failed(s.path, "H5Tset_size", "variable length")
	}
	space := C.vg_screate_scalar()
	if space < 0 {
		return failed(s.path, "H5Screate", "scalar")
	}
	defer C.vg_sclose(space)
	name := C.CString("MATLAB_class")
	defer C.free(unsafe.Pointer(name))
	a := C.vg_acreate(s.dataset, name, t, space)
	if a < 0 {
		return failed(s.path, "H5Acreate2", "MATLAB_class")
	}
	defer C.vg_aclose(a)
	v := C.CString(class)
	defer C.free(unsafe.Pointer(v))
	if C.vg_awrite_vlstr(a, t, v) < 0 {
		return failed(s.path, "H5Awrite", "MATLAB_class")
	}
	return nil
}

// Extend grows the dataset to volumes volumes (never shrinks it).
func (s *Stack) Extend(volumes int) error {
	mu.Lock()
	defer mu.Unlock()
	if s.file < 0 {
		return fmt.Errorf("hdf5: Extend on a closed file: %w", backend.ErrClosed)
	}
	if volumes <= s.volumes {
		return nil
	}
	dims := [5]C.hsize_t{C.hsize_t(volumes)}
	for i, n := range s.shape {
		dims[i+1] = C.hsize_t(n)
	}
	if C.vg_dset_extent(s.dataset, &dims[0]) < 0 {
		return failed(s.path, "H5Dset_extent", fmt.Sprintf("%d volumes", volumes))
	}
	s.volumes = volumes
	return nil
}

// Write writes data (count elements of the dataset's type in C order) to
// the block of the dataset at start with extent count.
func (s *Stack) Write(start, count [5]int, data []byte) error {
	mu.Lock()
	defer mu.Unlock()
	if s.file < 0 {
		return fmt.Errorf("hdf5: Write on a closed file: %w", backend.ErrClosed)
	}
	if len(data) == 0 {
		return nil
	}
	var st, ct [5]C.hsize_t
	for i := range 5 {
		st[i], ct[i] = C.hsize_t(start[i]), C.hsize_t(count[i])
	}
	fspace := C.vg_dget_space(s.dataset)
	if fspace < 0 {
		return failed(s.path, "H5Dget_space", "data")
	}
	defer C.vg_sclose(fspace)
	if C.vg_sselect(fspace, &st[0], &ct[0]) < 0 {
		return failed(s.path, "H5Sselect_hyperslab", fmt.Sprintf("start %v count %v", start, count))
	}
	mspace := C.vg_screate_simple(5, &ct[0], nil)
	if mspace < 0 {
		return failed(s.path, "H5Screate_simple", fmt.Sprintf("count %v", count))
	}
	defer C.vg_sclose(mspace)
	if C.vg_dwrite(s.dataset, s.dtype, mspace, fspace, unsafe.Pointer(&data[0])) < 0 {
		return failed(s.path, "H5Dwrite", fmt.Sprintf("start %v count %v", start, count))
	}
	return nil
}

// Flush writes the library's buffers and metadata to the file, so that a
// crash after it leaves a file readers open with what was written.
func (s *Stack) Flush() error {
	mu.Lock()
	defer mu.Unlock()
	if s.file < 0 {
		return nil
	}
	if C.vg_fflush(s.file) < 0 {
		return failed(s.path, "H5Fflush", "data")
	}
	return nil
}

// FD is the file descriptor through which the library writes the file
// (its default sec2 driver's; H5Fget_vfd_handle), or -1 when it has none
// (another driver, a closed stack). The caller may fstat it, or replace
// it with dup2 to keep the library from writing (storage's freeze), but
// must not close it: the library does at Close.
func (s *Stack) FD() int {
	mu.Lock()
	defer mu.Unlock()
	if s.file < 0 {
		return -1
	}
	return int(C.vg_fd(s.file))
}

// Close closes the dataset and the file (a closed stack is left as is).
func (s *Stack) Close() error {
	mu.Lock()
	defer mu.Unlock()
	return s.closeLocked()
}

func (s *Stack) closeLocked() error {
	var errs []string
	if s.dataset >= 0 {
		if C.vg_dclose(s.dataset) < 0 {
			errs = append(errs, "H5Dclose")
		}
		s.dataset = -1
	}
	if s.file >= 0 {
		if C.vg_fclose(s.file) < 0 {
			errs = append(errs, "H5Fclose")
		}
		s.file = -1
	}
	if len(errs) > 0 {
		return failed(s.path, strings.Join(errs, ", "), "closing")
	}
	return nil
}
