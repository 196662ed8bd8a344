package teledyne

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"unsafe"

	"github.com/vortexgo/vortexgo/gosrc/internal/dl"
)

// ADQAPI's parameter structure (struct ADQParameters, ADQ_PARAMETER_ID_TOP)
// changes between ADQAPI releases, and its header ships only with
// Teledyne's SDK: the driver declares no such structure. It keeps the
// parameters as an opaque buffer in C memory of the size a layout table
// gives, and reads and writes each field at the table's offset, with the
// table's size. The table is generated from the installed
// ADQAPI_definitions.h by python/vortexgo/adq_layout.py (`python -m vortexgo
// adq-layout INCLUDE -o FILE`, `make adq-layout ADQAPI_INCLUDE=...`); the
// virtual digitizer's is written by `make virtual` beside its library.

// EnvLayout names the environment variable pointing at the layout table
// (the JSON file the generator writes).
const EnvLayout = "VORTEXGO_ADQ_LAYOUT"

// LayoutFile is the table's name beside a library loaded by path (the
// virtual digitizer's build/virtual/adq_layout.json).
const LayoutFile = "adq_layout.json"

// ErrLayout is wrapped by every error about the layout table: none found,
// unreadable, lacking a field the driver needs, or a setting that needs a
// field the installed ADQAPI lacks.
var ErrLayout = errors.New("teledyne: ADQParameters layout table")

// layoutHowTo is what a user with Teledyne's SDK runs to make a table.
const layoutHowTo = "generate one from the ADQAPI SDK headers installed with the library: " +
	"`python -m vortexgo adq-layout /path/to/ADQAPI/include -o adq_layout.json` (or, in a checkout, " +
	"`make adq-layout ADQAPI_INCLUDE=/path/to/ADQAPI/include`), then set " + EnvLayout + "=/path/to/adq_layout.json " +
	"(docs/hardware.md, Teledyne)"

// Dim is one array on a field's path: its element count and the bytes
// between consecutive elements.
type Dim struct {
	Count  int `json:"count"`
	Stride int `json:"stride"`
}

// Field is one member of struct ADQParameters: the name the header gives it
// (an alternative of the driver's name in some ADQAPI releases), the offset
// and size of its element 0, its kind ("int", "uint", "float", "string",
// "pointer") and the arrays on its path, outermost first.
type Field struct {
	Name   string `json:"name"`
	Offset int    `json:"offset"`
	Size   int    `json:"size"`
	Kind   string `json:"kind"`
	Dims   []Dim  `json:"dims"`
}

// Version is an ADQAPI revision.
type Version struct {
	Major int `json:"major"`
	Minor int `json:"minor"`
}

// Layout is the layout table of struct ADQParameters: its size, the ADQAPI
// revision the header declares, and the fields the driver uses, under the
// driver's names (nil: the header has no such field).
type Layout struct {
	Path       string            `json:"-"`
	Header     string            `json:"header"`
	APIVersion Version           `json:"api_version"`
	Size       int               `json:"size"`
	Fields     map[string]*Field `json:"fields"`
}

// fieldSpec is what the driver expects of a field: its kind, whether every
// ADQAPI must have it, and, for one it may lack, the value that means "not
// used" (writing it to a missing field is no change) and what needs it.
type fieldSpec struct {
	kind     string // "int", "float", "string", "pointer"
	required bool
	neutral  float64
	needs    string
}

func req(kind string) fieldSpec { return fieldSpec{kind: kind, required: true} }
func opt(kind string, neutral float64, needs string) fieldSpec {
	return fieldSpec{kind: kind, neutral: neutral, needs: needs}
}

// The fields the driver reads and writes (board.go), under the generator's
// names (python/vortexgo/adq_layout.py FIELDS).
const (
	fNofChannels         = "constant.nof_channels"
	fNofPatternGens      = "constant.nof_pattern_generators"
	fSerialNumber        = "constant.serial_number"
	fProductName         = "constant.product_name"
	fProductOptions      = "constant.product_options"
	fFirmwareName        = "constant.firmware_name"
	fClockGenerator      = "constant.clock_system.clock_generator"
	fReferenceSource     = "constant.clock_system.reference_source"
	fSamplingFrequency   = "constant.clock_system.sampling_frequency"
	fReferenceFrequency  = "constant.clock_system.reference_frequency"
	fDelayAdjustment     = "constant.clock_system.delay_adjustment"
	fDelayAdjustmentOn   = "constant.clock_system.delay_adjustment_enabled"
	fLowJitter           = "constant.clock_system.low_jitter_mode_enabled"
	fPeriodicFrequency   = "event_source.periodic.frequency"
	fHorizontalOffset    = "acquisition.channel[].horizontal_offset"
	fRecordLength        = "acquisition.channel[].record_length"
	fNofRecords          = "acquisition.channel[].nof_records"
	fTriggerSource       = "acquisition.channel[].trigger_source"
	fTriggerBlocking     = "acquisition.channel[].trigger_blocking_source"
	fDCOffset            = "afe.channel[].dc_offset"
	fSkipFactor          = "signal_processing.sample_skip.channel[].skip_factor"
	fTestPattern         = "test_pattern.channel[].source"
	fPGNofInstructions   = "function.pattern_generator[].nof_instructions"
	fPGCount             = "function.pattern_generator[].instruction[].count"
	fPGOp                = "function.pattern_generator[].instruction[].op"
	fPGSource            = "function.pattern_generator[].instruction[].source"
	fPGOutput            = "function.pattern_generator[].instruction[].output_value"
	fPGOutputTransition  = "function.pattern_generator[].instruction[].output_value_transition"
	fDaisySource         = "function.daisy_chain.source"
	fDaisyArm            = "function.daisy_chain.arm"
	fDaisyResync         = "function.daisy_chain.resynchronization_enabled"
	fDaisyPosition       = "function.daisy_chain.position"
	fSyncDirection       = "port[ADQ_PORT_SYNC].pin[0].direction"
	fSyncFunction        = "port[ADQ_PORT_SYNC].pin[0].function"
	fSyncInvert          = "port[ADQ_PORT_SYNC].pin[0].invert_output"
	fSyncImpedance       = "port[ADQ_PORT_SYNC].pin[0].input_impedance"
	fMemoryOwner         = "transfer.common.record_buffer_memory_owner"
	fRecordsToHost       = "transfer.common.transfer_records_to_host_enabled"
	fPacked              = "transfer.common.packed_buffers_enabled"
	fWriteLock           = "transfer.common.write_lock_enabled"
	fMarkerMode          = "transfer.common.marker_mode"
	fRecordSize          = "transfer.channel[].record_size"
	fRecordBufferSize    = "transfer.channel[].record_buffer_size"
	fNofBuffers          = "transfer.channel[].nof_buffers"
	fMetadata            = "transfer.channel[].metadata_enabled"
	fInfiniteLength      = "transfer.channel[].infinite_record_length_enabled"
	fRecordBuffer        = "transfer.channel[].record_buffer[]"
	trigSkip, trigSync   = "trigger skipping (a pattern generator)", "trigger sync (daisy chain to the SYNC port)"
	nSampleSkip, nTestPt = "sample skipping", "the test pattern"
)

var specs = map[string]fieldSpec{
	fNofChannels: req("int"), fNofPatternGens: req("int"),
	fSerialNumber: req("string"), fProductName: req("string"), fProductOptions: req("string"), fFirmwareName: req("string"),
	fClockGenerator: req("int"), fReferenceSource: req("int"), fSamplingFrequency: req("float"),
	fReferenceFrequency: req("float"), fDelayAdjustment: req("float"), fDelayAdjustmentOn: req("int"), fLowJitter: req("int"),
	fPeriodicFrequency: req("float"),
	fHorizontalOffset:  req("int"), fRecordLength: req("int"), fNofRecords: req("int"), fTriggerSource: req("int"),
	fTriggerBlocking: opt("int", 0, trigSkip),
	fDCOffset:        opt("float", 0, "a DC offset"), fSkipFactor: opt("int", 1, nSampleSkip), fTestPattern: opt("int", 0, nTestPt),
	fPGNofInstructions: opt("int", 0, trigSkip), fPGCount: opt("int", 0, trigSkip), fPGOp: opt("int", 0, trigSkip),
	fPGSource: opt("int", 0, trigSkip), fPGOutput: opt("int", 0, trigSkip), fPGOutputTransition: opt("int", 0, trigSkip),
	fDaisySource: opt("int", 0, trigSync), fDaisyArm: opt("int", 0, trigSync), fDaisyResync: opt("int", 0, trigSync),
	fDaisyPosition: opt("int", 0, trigSync), fSyncDirection: opt("int", 0, trigSync), fSyncFunction: opt("int", 0, trigSync),
	fSyncInvert: opt("int", 0, trigSync), fSyncImpedance: opt("int", 0, trigSync),
	fMemoryOwner: opt("int", 0, "ADQAPI-owned transfer buffers"), fRecordsToHost: opt("int", 0, "ADQAPI-owned transfer buffers"),
	fPacked: req("int"), fWriteLock: req("int"), fMarkerMode: req("int"),
	fRecordSize: req("int"), fRecordBufferSize: req("int"), fNofBuffers: req("int"), fMetadata: opt("int", 0, "record metadata"),
	fInfiniteLength: opt("int", 0, "infinite record lengths"), fRecordBuffer: req("pointer"),
}

// LoadLayout reads and checks a layout table: every extent within the
// structure, each field of the kind the driver expects, and every field the
// driver cannot do without present.
func LoadLayout(path string) (*Layout, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %v (%s)", ErrLayout, err, layoutHowTo)
	}
	var l Layout
	if err := json.Unmarshal(data, &l); err != nil {
		return nil, fmt.Errorf("%w: %s is not a layout table: %v (%s)", ErrLayout, path, err, layoutHowTo)
	}
	l.Path = path
	if err := l.check(); err != nil {
		return nil, err
	}
	return &l, nil
}

func (l *Layout) check() error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s: %s", ErrLayout, l.Path, fmt.Sprintf(format, a...))
	}
	if l.Size <= 0 || l.Fields == nil {
		return bad("no structure size or no fields: not a table of the generator's (%s)", layoutHowTo)
	}
	for name, f := range l.Fields {
		if f == nil {
			continue
		}
		end := f.Offset + f.Size
		for _, d := range f.Dims {
			if d.Count <= 0 || d.Stride < f.Size {
				return bad("field %s: array of %d elements %d bytes apart", name, d.Count, d.Stride)
			}
			end += (d.Count - 1) * d.Stride
		}
		if f.Offset < 0 || f.Size <= 0 || end > l.Size {
			return bad("field %s (bytes %d..%d) lies outside the %d-byte structure", name, f.Offset, end, l.Size)
		}
	}
	for name, s := range specs {
		f := l.Fields[name]
		if f == nil {
			if s.required {
				return bad("the header has no ADQParameters field %s, which the driver needs", name)
			}
			continue
		}
		ok := false
		switch s.kind {
		case "int":
			ok = (f.Kind == "int" || f.Kind == "uint") && (f.Size == 1 || f.Size == 2 || f.Size == 4 || f.Size == 8)
		case "float":
			ok = f.Kind == "float" && (f.Size == 4 || f.Size == 8)
		case "string":
			ok = f.Kind == "string"
		case "pointer":
			ok = f.Kind == "pointer" && f.Size == int(unsafe.Sizeof(uintptr(0)))
		}
		if !ok {
			return bad("field %s is a %d-byte %s, the driver expects a %s", name, f.Size, f.Kind, s.kind)
		}
	}
	if l.Fields[fMemoryOwner] == nil && l.Fields[fRecordsToHost] == nil {
		return bad("the header has neither %s (ADQAPI >= 10) nor %s (< 10)", fMemoryOwner, fRecordsToHost)
	}
	return nil
}

// Count is the element count of the dim-th array on field name's path (0
// when the header lacks the field).
func (l *Layout) Count(name string, dim int) int {
	f := l.Fields[name]
	if f == nil || dim >= len(f.Dims) {
		return 0
	}
	return f.Dims[dim].Count
}

// findLayout is the table for the library loaded under name:
// $VORTEXGO_ADQ_LAYOUT, else adq_layout.json beside a library loaded by
// path (the virtual digitizer's), else an error saying how to make one.
func findLayout(name string) (*Layout, error) {
	if p, _ := dl.Getenv(EnvLayout); p != "" {
		return LoadLayout(p)
	}
	if strings.ContainsRune(name, os.PathSeparator) {
		p := filepath.Join(filepath.Dir(name), LayoutFile)
		if _, err := os.Stat(p); err == nil {
			return LoadLayout(p)
		}
	}
	return nil, fmt.Errorf("%w: none for %s: the driver reads ADQAPI's struct ADQParameters through a table made from "+
		"the ADQAPI_definitions.h that came with the library (%s unset, no %s beside the library); %s",
		ErrLayout, name, EnvLayout, LayoutFile, layoutHowTo)
}

// params is ADQParameters as an opaque buffer (C memory, so that a
// pointer to it may be handed to libadq, which writes the transfer buffers'
// C addresses into it) read and written through a layout table. The first
// write refused because the installed ADQAPI lacks a field is kept (err)
// for the methods that return no error; CommitConfiguration returns it.
type params struct {
	base unsafe.Pointer
	lay  *Layout
	err  error
}

func (p *params) bytes() []byte { return unsafe.Slice((*byte)(p.base), p.lay.Size) }

// has tells whether the installed ADQAPI has field name.
func (p *params) has(name string) bool { return p.lay.Fields[name] != nil }

// at is the offset of field name's element idx, bounds-checked.
func (p *params) at(name string, idx []int) (*Field, int, error) {
	f := p.lay.Fields[name]
	if f == nil {
		return nil, 0, p.missing(name)
	}
	if len(idx) != len(f.Dims) {
		return nil, 0, fmt.Errorf("%w: field %s takes %d indices, given %d", ErrInvalid, name, len(f.Dims), len(idx))
	}
	off := f.Offset
	for i, d := range f.Dims {
		if idx[i] < 0 || idx[i] >= d.Count {
			return nil, 0, fmt.Errorf("%w: index %d of field %s out of range [0, %d)", ErrInvalid, idx[i], name, d.Count)
		}
		off += idx[i] * d.Stride
	}
	if off < 0 || off+f.Size > p.lay.Size {
		return nil, 0, fmt.Errorf("%w: field %s at bytes %d..%d outside the %d-byte structure", ErrLayout, name, off, off+f.Size, p.lay.Size)
	}
	return f, off, nil
}

func (p *params) missing(name string) error {
	needs := "this setting"
	if s, ok := specs[name]; ok && s.needs != "" {
		needs = s.needs
	}
	return fmt.Errorf("%w: the installed ADQAPI %d.%d has no ADQParameters field %s (layout table %s): %s is not available",
		ErrLayout, p.lay.APIVersion.Major, p.lay.APIVersion.Minor, name, p.lay.Path, needs)
}

// note keeps err as the first refused write and returns it.
func (p *params) note(err error) error {
	if err != nil && p.err == nil {
		p.err = err
	}
	return err
}

// keepErr saves the kept refusal and returns what restores it: a method
// that returns its refusals itself leaves none for CommitConfiguration.
func (p *params) keepErr() func() {
	prev := p.err
	return func() { p.err = prev }
}

// setInt writes v to an integer field, with the field's size. Writing a
// field the ADQAPI lacks is no change when v is the field's "not used"
// value, else an error.
func (p *params) setInt(name string, v int64, idx ...int) error {
	if !p.has(name) {
		if s, ok := specs[name]; ok && !s.required && float64(v) == s.neutral {
			return nil
		}
		return p.note(p.missing(name))
	}
	f, off, err := p.at(name, idx)
	if err != nil {
		return p.note(err)
	}
	b := p.bytes()[off : off+f.Size]
	bits := 8 * f.Size
	if f.Kind == "uint" {
		if v < 0 || (bits < 64 && v >= 1<<bits) {
			return p.note(fmt.Errorf("%w: %d does not fit field %s (%d-byte unsigned)", ErrInvalid, v, name, f.Size))
		}
	} else if bits < 64 && (v < -(1<<(bits-1)) || v >= 1<<(bits-1)) {
		return p.note(fmt.Errorf("%w: %d does not fit field %s (%d-byte signed)", ErrInvalid, v, name, f.Size))
	}
	switch f.Size {
	case 1:
		b[0] = byte(v)
	case 2:
		binary.NativeEndian.PutUint16(b, uint16(v))
	case 4:
		binary.NativeEndian.PutUint32(b, uint32(v))
	case 8:
		binary.NativeEndian.PutUint64(b, uint64(v))
	}
	return nil
}

// getInt reads an integer field (sign-extended for a signed one).
func (p *params) getInt(name string, idx ...int) (int64, error) {
	f, off, err := p.at(name, idx)
	if err != nil {
		return 0, err
	}
	b := p.bytes()[off : off+f.Size]
	var u uint64
	switch f.Size {
	case 1:
		u = uint64(b[0])
	case 2:
		u = uint64(binary.NativeEndian.Uint16(b))
	case 4:
		u = uint64(binary.NativeEndian.Uint32(b))
	case 8:
		u = binary.NativeEndian.Uint64(b)
	default:
		return 0, fmt.Errorf("%w: field %s is %d bytes, not an integer", ErrLayout, name, f.Size)
	}
	if f.Kind != "uint" && f.Size < 8 {
		shift := 64 - 8*f.Size
		return int64(u<<shift) >> shift, nil
	}
	return int64(u), nil
}

// setFloat writes a float or double field.
func (p *params) setFloat(name string, v float64, idx ...int) error {
	if !p.has(name) {
		if s, ok := specs[name]; ok && !s.required && v == s.neutral {
			return nil
		}
		return p.note(p.missing(name))
	}
	f, off, err := p.at(name, idx)
	if err != nil {
		return p.note(err)
	}
	b := p.bytes()[off : off+f.Size]
	switch f.Size {
	case 4:
		binary.NativeEndian.PutUint32(b, math.Float32bits(float32(v)))
	case 8:
		binary.NativeEndian.PutUint64(b, math.Float64bits(v))
	default:
		return p.note(fmt.Errorf("%w: field %s is %d bytes, not a float", ErrLayout, name, f.Size))
	}
	return nil
}

// getFloat reads a float or double field.
func (p *params) getFloat(name string, idx ...int) (float64, error) {
	f, off, err := p.at(name, idx)
	if err != nil {
		return 0, err
	}
	b := p.bytes()[off : off+f.Size]
	switch f.Size {
	case 4:
		return float64(math.Float32frombits(binary.NativeEndian.Uint32(b))), nil
	case 8:
		return math.Float64frombits(binary.NativeEndian.Uint64(b)), nil
	}
	return 0, fmt.Errorf("%w: field %s is %d bytes, not a float", ErrLayout, name, f.Size)
}

// getString reads a char array field up to its first NUL.
func (p *params) getString(name string, idx ...int) (string, error) {
	f, off, err := p.at(name, idx)
	if err != nil {
		return "", err
	}
	b := p.bytes()[off : off+f.Size]
	if i := strings.IndexByte(string(b), 0); i >= 0 {
		b = b[:i]
	}
	return string(b), nil
}

// getPointer reads a pointer field: a C address libadq wrote.
func (p *params) getPointer(name string, idx ...int) (unsafe.Pointer, error) {
	f, off, err := p.at(name, idx)
	if err != nil {
		return nil, err
	}
	if f.Size != int(unsafe.Sizeof(uintptr(0))) || off%f.Size != 0 {
		return nil, fmt.Errorf("%w: field %s is not an aligned pointer", ErrLayout, name)
	}
	return *(*unsafe.Pointer)(unsafe.Add(p.base, off)), nil
}
