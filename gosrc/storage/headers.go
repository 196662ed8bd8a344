package storage

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/vortexgo/vortexgo/gosrc/backend"
)

// elem describes one element type of a stack as each header names it
// (vortex's detail::{numpy,matlab,nrrd,nifti} tables).
type elem struct {
	name  string        // NumPy's name, also the .npy descr (vortex writes 'int8', not '|i1')
	size  int           // bytes
	dtype backend.DType // -1 where backend has no such type (uint64)
	mx    uint8         // MATLAB array class (mxINT8_CLASS, ...)
	mi    uint32        // MATLAB data type of the elements (miINT8, ...)
	nrrd  string
	nifti int16
}

// elems are the element types of vortex's SimpleStack{Int8,UInt16,UInt64,
// Float32,Float64}, and uint32, the engine's digital (strobe) words, which
// vortex's headers describe but its Python module binds no storage of.
var elems = []elem{
	{"int8", 1, backend.Int8, 8, 1, "int8", 256},
	{"uint16", 2, backend.Uint16, 11, 4, "uint16", 512},
	{"uint32", 4, backend.Uint32, 13, 6, "uint32", 768},
	{"uint64", 8, -1, 15, 13, "uint64", 1280},
	{"float32", 4, backend.Float32, 7, 7, "float", 16},
	{"float64", 8, backend.Float64, 6, 9, "double", 64},
}

func elemNamed(name string) (elem, bool) {
	for _, e := range elems {
		if e.name == name {
			return e, true
		}
	}
	return elem{}, false
}

func joinInts(shape []int, sep string) string {
	parts := make([]string, len(shape))
	for i, n := range shape {
		parts[i] = strconv.Itoa(n)
	}
	return strings.Join(parts, sep)
}

// npyHeader is vortex's .npy header (format 2.0): the dict padded with
// spaces to at least 256 characters, then to a 64-byte boundary, ending
// in a newline.
func npyHeader(e elem, shape []int) []byte {
	dict := "{ 'descr': '" + e.name + "', 'fortran_order': False, 'shape': (" + joinInts(shape, ", ")
	if len(shape) == 1 {
		dict += ","
	}
	dict += ") } "
	if len(dict) < 256 {
		dict += strings.Repeat(" ", 256-len(dict))
	}
	const pre = 8 + 4
	total := (pre + len(dict) + 63) / 64 * 64
	dict += strings.Repeat(" ", total-pre-len(dict))
	h := []byte(dict)
	h[len(h)-1] = '\n'
	b := make([]byte, 0, total)
	b = append(b, "\x93NUMPY\x02\x00"...)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(h)))
	return append(b, h...)
}

// matHeader is vortex's MATLAB v5 header: a 128-byte preamble, then one
// miMATRIX element named "data" whose data sub-element holds the volumes.
//
// One deliberate difference from vortex 0.5.1: the data sub-element's type
// is the MATLAB data type of the elements (miINT8, miUINT16, ...). vortex
// writes the array class code there (mxINT8_CLASS = 8, ...), which only
// coincides for float32; scipy.io.loadmat crashes the interpreter on
// vortex's int8 files and reads its float64 files as uint32.
//
// Two more, for readers that follow the element sizes (scipy.io.loadmat
// does): the miMATRIX element's size counts the data's padding to 8 bytes
// (vortex's omits it, so data of 54 bytes, uint16 (3, 3, 3), left
// readers 2 bytes short of the next element), and it spans at least span
// bytes after the data tag. An open stack's provisional header spans the
// volume being written, so a reader skips its bytes (they follow the
// counted volumes after a crash or a full disk) as the rest of this
// element instead of reading them as a broken next one.
func matHeader(e elem, shape []int, span int64) ([]byte, error) {
	count := uint64(e.size)
	for _, n := range shape {
		if uint64(n) > math.MaxUint32 {
			return nil, fmt.Errorf("storage: MATLAB dimension %d, expected at most %d: %w", n, uint64(math.MaxUint32), backend.ErrInvalid)
		}
		count *= uint64(n)
	}
	const body = 72 // flags (16) + dims (8+24 for 5 dims) + name (16) + data tag (8)
	spanned := max((count+7)/8*8, uint64(max(span, 0)))
	if spanned+body > math.MaxUint32-7 {
		return nil, fmt.Errorf("storage: MATLAB data of %d bytes, expected at most %d (a v5 .mat element is limited to 4 GiB): %w",
			spanned, uint64(math.MaxUint32-7-body), backend.ErrTooLarge)
	}
	var b bytes.Buffer
	w := func(v any) { _ = binary.Write(&b, binary.LittleEndian, v) }
	b.WriteString("MATLAB" + strings.Repeat(" ", 116-6))
	b.Write(make([]byte, 8))
	w(uint16(0x0100))
	w(uint16(0x4d49))
	dims := make([]uint32, 0, len(shape)+1)
	for i := len(shape) - 1; i >= 0; i-- { // column-major
		dims = append(dims, uint32(shape[i]))
	}
	if len(dims) < 2 {
		dims = append(dims, 1)
	}
	pad := func(n int) int { return (n + 7) / 8 * 8 }
	bodyLen := 16 + 8 + pad(4*len(dims)) + 16 + 8
	w(uint32(14)) // miMATRIX
	w(uint32(uint64(bodyLen) + (spanned+7)/8*8))
	w(uint32(6)) // miUINT32: array flags (vortex writes the one word vortex needs)
	w(uint32(4))
	w(uint32(e.mx))
	w(uint32(0))
	w(uint32(5)) // miINT32: dimensions
	w(uint32(4 * len(dims)))
	w(dims)
	b.Write(make([]byte, pad(4*len(dims))-4*len(dims)))
	w(uint32(1)) // miINT8: name
	w(uint32(4))
	b.WriteString("data\x00\x00\x00\x00")
	w(e.mi)
	w(uint32(count))
	return b.Bytes(), nil
}

// nrrdHeader is vortex's NRRD0005 header: fields, then '#' padding to 256
// bytes whose last two are the blank line ending the header.
func nrrdHeader(e elem, shape []int) []byte {
	rev := make([]int, len(shape))
	for i, n := range shape {
		rev[len(shape)-1-i] = n
	}
	h := "NRRD0005\ntype: " + e.nrrd + "\ndimension: " + strconv.Itoa(len(shape)) + "\nsizes: " + joinInts(rev, " ") +
		"\nendian: little\nencoding: raw\n##"
	if len(h) < 256 {
		h += strings.Repeat("#", 256-len(h))
	}
	b := []byte(h)
	b[len(b)-2], b[len(b)-1] = '\n', '\n'
	return b
}

// niftiHeader is vortex's NIfTI-2 header (540 bytes and 4 bytes of
// padding). vortex writes dim[1..] in the order (volumes, bscans, ascans,
// samples, channels) over C-ordered data; NIfTI readers take dim[1] as the
// fastest axis, so nibabel's array is the file's data in Fortran order of
// that shape. vortexgo lays it out the same way.
func niftiHeader(e elem, shape []int) ([]byte, error) {
	if len(shape) > 7 {
		return nil, fmt.Errorf("storage: NIfTI shape of %d dimensions, expected at most 7: %w", len(shape), backend.ErrInvalid)
	}
	var b bytes.Buffer
	w := func(v any) { _ = binary.Write(&b, binary.LittleEndian, v) }
	w(int32(540))
	b.WriteString("n+2\x00\x0d\x0a\x1a\x0a")
	w(e.nifti)
	w(int16(e.size * 8))
	w(int64(len(shape)))
	for i := range 7 {
		v := int64(0)
		if i < len(shape) {
			v = int64(shape[i])
		}
		w(v)
	}
	w([3]float64{})                                    // intents
	w([8]float64{1, 1, 1, 1, 1, 1, 1, 1})              // pixdim
	w(int64(544))                                      // vox_offset
	w([6]float64{1})                                   // scl_slope, scl_inter, cal_max, cal_min, slice_duration, toffset
	w([2]int64{})                                      // slice_start, slice_end
	b.Write(make([]byte, 80+24))                       // descrip, aux_file
	w([2]int32{1, 1})                                  // qform_code, sform_code
	w([6]float64{})                                    // quaternion, offsets
	w([12]float64{1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0}) // srow_x, srow_y, srow_z
	w([3]int32{})                                      // slice_code, xyzt_units, intent_code
	b.Write(make([]byte, 16+1+15+4))                   // intent_name, dim_info, unused, padding
	return b.Bytes(), nil
}

// header renders the header h for volumes of the stack's shape; span is
// matHeader's (ignored by the other headers).
func header(h Header, e elem, shape []int, span int64) ([]byte, error) {
	switch h {
	case HeaderEmpty:
		return nil, nil
	case HeaderNumPy:
		return npyHeader(e, shape), nil
	case HeaderMATLAB:
		return matHeader(e, shape, span)
	case HeaderNRRD:
		return nrrdHeader(e, shape), nil
	case HeaderNIfTI:
		return niftiHeader(e, shape)
	}
	return nil, fmt.Errorf("storage: header %d: %w", int(h), backend.ErrInvalid)
}
