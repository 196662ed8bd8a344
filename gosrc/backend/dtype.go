package backend

import "fmt"

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
	return 0, fmt.Errorf("dtype: unsupported %q (expected one of int8, uint8, int16, uint16, int32, uint32, float32, float64, complex64)", name)
}
