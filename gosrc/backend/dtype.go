package backend

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// DType is an element type of arrays and tensors. The names match NumPy's
// so they cross the Python boundary as strings ("float32", "uint16", ...).
type DType int

// The element types vortexgo kernels understand.
const (
	Int8 DType = iota
	Uint8
	Int16
	Uint16
	Int32
	Uint32
	Float32
	Float64
	Complex64
)

var dtypeInfo = [...]struct {
	name string
	size int
	typ  string // __array_interface__ typestr
}{
	Int8:      {"int8", 1, "|i1"},
	Uint8:     {"uint8", 1, "|u1"},
	Int16:     {"int16", 2, "<i2"},
	Uint16:    {"uint16", 2, "<u2"},
	Int32:     {"int32", 4, "<i4"},
	Uint32:    {"uint32", 4, "<u4"},
	Float32:   {"float32", 4, "<f4"},
	Float64:   {"float64", 8, "<f8"},
	Complex64: {"complex64", 8, "<c8"},
}

// String returns the NumPy name of the type.
func (d DType) String() string {
	if d < 0 || int(d) >= len(dtypeInfo) {
		return fmt.Sprintf("DType(%d)", int(d))
	}
	return dtypeInfo[d].name
}

// Size returns the element size in bytes.
func (d DType) Size() int { return dtypeInfo[d].size }

// TypeStr returns the array-interface type string ("<f4").
func (d DType) TypeStr() string { return dtypeInfo[d].typ }

// Valid reports whether d is one of the defined types.
func (d DType) Valid() bool { return d >= 0 && int(d) < len(dtypeInfo) }

// ParseDType maps a NumPy name to a DType.
func ParseDType(name string) (DType, error) {
	for i, info := range dtypeInfo {
		if info.name == name {
			return DType(i), nil
		}
	}
	return 0, fmt.Errorf("dtype: unsupported %q (expected one of int8, uint8, int16, uint16, int32, uint32, float32, float64, complex64): %w", name, ErrInvalid)
}

// MaxBytes bounds every allocation and every byte size computed from a
// shape: 2^51 bytes (2 PiB), far above any device and far below int64
// overflow. A larger request fails with ErrTooLarge before anything is
// allocated, so Go never dies of an impossible request. The Python layer's
// bound (2^48 elements of at most 8 bytes) is the same.
const MaxBytes = 1 << 51

// MaxDims bounds the number of dimensions of a shape (NumPy's limit).
const MaxDims = 64

// ByteSize is the size in bytes of shape elements of d: ErrInvalid for a
// negative dimension or an unknown dtype, ErrTooLarge beyond MaxBytes
// (checked dimension by dimension, so the product never overflows).
func ByteSize(shape []int, d DType) (int, error) {
	if !d.Valid() {
		return 0, fmt.Errorf("dtype=%s, expected one of the backend.DType constants: %w", d, ErrInvalid)
	}
	n := d.Size()
	for i, dim := range shape {
		if dim < 0 {
			return 0, fmt.Errorf("shape[%d]=%d, expected a size >= 0: %w", i, dim, ErrInvalid)
		}
		if dim > 0 && n > MaxBytes/dim {
			return 0, fmt.Errorf("shape %v of %s is over %d bytes: %w", shape, d, MaxBytes, ErrTooLarge)
		}
		n *= dim
	}
	return n, nil
}

// ParseShape reads the comma-separated shape the Python layer sends
// ("3,4,5"; "" is the 0-d shape) and bounds it with ByteSize for one-byte
// elements, so that any error names the shape.
func ParseShape(s string) ([]int, error) {
	if s == "" {
		return []int{}, nil
	}
	parts := strings.Split(s, ",")
	if len(parts) > MaxDims {
		return nil, fmt.Errorf("shape has %d dimensions, expected at most %d: %w", len(parts), MaxDims, ErrInvalid)
	}
	out := make([]int, len(parts))
	for i, p := range parts {
		v, err := strconv.Atoi(strings.TrimSpace(p))
		if errors.Is(err, strconv.ErrRange) {
			return nil, fmt.Errorf("shape=%q: dimension %d is beyond int64: %w", s, i, ErrTooLarge)
		}
		if err != nil || v < 0 {
			return nil, fmt.Errorf("shape=%q, expected comma-separated ints >= 0: %w", s, ErrInvalid)
		}
		out[i] = v
	}
	if _, err := ByteSize(out, Uint8); err != nil {
		return nil, fmt.Errorf("shape=%q: %w", s, err)
	}
	return out, nil
}

// ParseShapeDType parses a shape (ParseShape) and a dtype name (ParseDType)
// and bounds their byte size (ByteSize).
func ParseShapeDType(shape, dtype string) ([]int, DType, error) {
	sh, err := ParseShape(shape)
	if err != nil {
		return nil, 0, err
	}
	dt, err := ParseDType(dtype)
	if err == nil {
		_, err = ByteSize(sh, dt)
	}
	return sh, dt, err
}

// FormatShape writes shape as ParseShape reads it.
func FormatShape(shape []int) string {
	parts := make([]string, len(shape))
	for i, v := range shape {
		parts[i] = strconv.Itoa(v)
	}
	return strings.Join(parts, ",")
}

// CheckValue refuses a fill value that d cannot hold: NaN or infinity or a
// value outside the range of an integer type (ErrInvalid). Kernels saturate
// such values; a fill is a user's literal, and NumPy refuses it there.
func (d DType) CheckValue(v float64) error {
	lo, hi, integer := d.intRange()
	switch {
	case !integer:
		return nil
	case math.IsNaN(v) || math.IsInf(v, 0):
		return fmt.Errorf("value=%v, expected a finite number for %s: %w", v, d, ErrInvalid)
	case v < lo || v > hi:
		return fmt.Errorf("value=%v is out of range for %s, expected %v..%v: %w", v, d, lo, hi, ErrInvalid)
	}
	return nil
}

// intRange is the range of an integer type, and whether d is one.
func (d DType) intRange() (lo, hi float64, integer bool) {
	switch d {
	case Int8:
		return math.MinInt8, math.MaxInt8, true
	case Uint8:
		return 0, math.MaxUint8, true
	case Int16:
		return math.MinInt16, math.MaxInt16, true
	case Uint16:
		return 0, math.MaxUint16, true
	case Int32:
		return math.MinInt32, math.MaxInt32, true
	case Uint32:
		return 0, math.MaxUint32, true
	}
	return 0, 0, false
}
