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
// driver's names (nil: the header has no such field); the values of the
// enumeration constants and macros the driver writes or passes (Constants,
// nil: the header defines no such name; ConstantNames: the header's
// spelling where it is not the key's) and the layouts of the small fixed
// structures passed by pointer (Structures: ADQInfoListEntry, ADQP2pStatus,
// ADQOverflowStatus; nil: the header declares none).
type Layout struct {
	Path          string             `json:"-"`
	Header        string             `json:"header"`
	APIVersion    Version            `json:"api_version"`
	Size          int                `json:"size"`
	Fields        map[string]*Field  `json:"fields"`
	Constants     map[string]*int64  `json:"constants"`
	ConstantNames map[string]string  `json:"constant_names"`
	Structures    map[string]*Struct `json:"structures"`
}

// Struct is the layout of one small fixed structure: the C type the header
// names, its size and the members the driver reads.
type Struct struct {
	Type   string            `json:"type"`
	Size   int               `json:"size"`
	Fields map[string]*Field `json:"fields"`
}

// The fixed structures and their members the driver reads (the
// generator's STRUCTURES), with the kind each must be.
const (
	sInfoList     = "ADQInfoListEntry"
	sP2pStatus    = "ADQP2pStatus"
	sOverflow     = "ADQOverflowStatus"
	mProductID    = "ProductID"
	mDevFile      = "DevFile"
	mNofCompleted = "channel[].nof_completed_buffers"
	mCompleted    = "channel[].completed_buffers[]"
	mOverflow     = "overflow"
)

var structSpecs = map[string]map[string]string{
	sInfoList:  {mProductID: "int", mDevFile: "string"},
	sP2pStatus: {mNofCompleted: "int", mCompleted: "int"},
	sOverflow:  {mOverflow: "int"},
}

// The constants the driver takes from the table (the generator's
// CONSTANTS), each with what needs it (for the refusal when the header
// lacks it). ADQAPI's return codes (ADQ_EOK, ADQ_EAGAIN, ADQ_EINTERRUPTED,
// ADQ_ENOTREADY) are not among them: ADQAPI documents them as stable return
// values, and the driver compiles them in (adq.h).
const (
	cParameterIDTop     = "ADQ_PARAMETER_ID_TOP"
	cStatusIDOverflow   = "ADQ_STATUS_ID_OVERFLOW"
	cUserLogic2         = "ADQ_USER_LOGIC2"
	cLogLevelInfo       = "LOG_LEVEL_INFO"
	cMaxNofBuffers      = "ADQ_MAX_NOF_BUFFERS"
	cInfiniteNofRecords = "ADQ_INFINITE_NOF_RECORDS"
	cEventInvalid       = "ADQ_EVENT_SOURCE_INVALID"
	cEventTrig          = "ADQ_EVENT_SOURCE_TRIG"
	cEventSync          = "ADQ_EVENT_SOURCE_SYNC"
	cEventGPIOA0        = "ADQ_EVENT_SOURCE_GPIOA0"
	cEventPeriodic      = "ADQ_EVENT_SOURCE_PERIODIC"
	cClockInternalPLL   = "ADQ_CLOCK_GENERATOR_INTERNAL_PLL"
	cClockExternal      = "ADQ_CLOCK_GENERATOR_EXTERNAL_CLOCK"
	cRefInternal        = "ADQ_REFERENCE_CLOCK_SOURCE_INTERNAL"
	cRefPortCLK         = "ADQ_REFERENCE_CLOCK_SOURCE_PORT_CLK"
	cRefPXIE10M         = "ADQ_REFERENCE_CLOCK_SOURCE_PXIE_10M"
	cFunctionInvalid    = "ADQ_FUNCTION_INVALID"
	cFunctionPG0        = "ADQ_FUNCTION_PATTERN_GENERATOR0"
	cFunctionDaisyChain = "ADQ_FUNCTION_DAISY_CHAIN"
	cPGOperationEvent   = "ADQ_PATTERN_GENERATOR_OPERATION_EVENT"
	cTestPatternOff     = "ADQ_TEST_PATTERN_SOURCE_DISABLE"
	cTestPatternTri     = "ADQ_TEST_PATTERN_SOURCE_TRIANGLE"
	cMarkerHostManual   = "ADQ_MARKER_MODE_HOST_MANUAL"
	cMemoryOwnerAPI     = "ADQ_MEMORY_OWNER_API"
	cMemoryOwnerUser    = "ADQ_MEMORY_OWNER_USER"
	cDirectionOut       = "ADQ_DIRECTION_OUT"
	cImpedance50        = "ADQ_IMPEDANCE_50_OHM"
	cArmAtStart         = "ADQ_ARM_AT_ACQUISITION_START"
)

var constantNeeds = map[string]string{
	cParameterIDTop: "opening a board (ADQ_InitializeParameters)", cStatusIDOverflow: "reading the overflow status",
	cUserLogic2: "the FWOCT registers (user logic 2)", cLogLevelInfo: "the error trace",
	cMaxNofBuffers: "", cInfiniteNofRecords: "an infinite acquisition",
	cEventInvalid: "disabling trigger sync", cEventTrig: "the TRIG port trigger", cEventSync: "the SYNC port trigger",
	cEventGPIOA0: "the GPIO trigger", cEventPeriodic: "the periodic trigger",
	cClockInternalPLL: "the internal PLL clock", cClockExternal: "the external clock",
	cRefInternal: "the internal reference clock", cRefPortCLK: "the CLK port reference clock",
	cRefPXIE10M:      "the PXIe 10 MHz reference clock",
	cFunctionInvalid: "trigger skipping and trigger sync settings", cFunctionPG0: trigSkip, cFunctionDaisyChain: trigSync,
	cPGOperationEvent: trigSkip, cTestPatternOff: nTestPt, cTestPatternTri: nTestPt,
	cMarkerHostManual: "opening a board (the transfer's marker mode)", cMemoryOwnerAPI: "ADQAPI-owned transfer buffers",
	cMemoryOwnerUser: "", cDirectionOut: trigSync, cImpedance50: trigSync, cArmAtStart: trigSync,
}

// fieldSpec is what the driver expects of a field: its kind, whether every
// ADQAPI must have it, and, for one it may lack, the value that means "not
// used" (writing it to a missing field is no change) and what needs it.
type fieldSpec struct {
	kind     string // "int", "float", "string", "pointer"
	required bool
	neutral  float64
	needs    string
	// neutralConst: for a field holding an enumeration, the constant that
	// means "not used" (writing it to a missing field is no change)
	neutralConst string
}

func req(kind string) fieldSpec { return fieldSpec{kind: kind, required: true} }
func opt(kind string, neutral float64, needs string) fieldSpec {
	return fieldSpec{kind: kind, neutral: neutral, needs: needs}
}
func optEnum(neutral, needs string) fieldSpec {
	return fieldSpec{kind: "int", neutral: math.NaN(), neutralConst: neutral, needs: needs}
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
	fTriggerBlocking: optEnum(cFunctionInvalid, trigSkip),
	fDCOffset:        opt("float", 0, "a DC offset"), fSkipFactor: opt("int", 1, nSampleSkip), fTestPattern: optEnum(cTestPatternOff, nTestPt),
	fPGNofInstructions: opt("int", 0, trigSkip), fPGCount: opt("int", 0, trigSkip), fPGOp: opt("int", 0, trigSkip),
	fPGSource: opt("int", 0, trigSkip), fPGOutput: opt("int", 0, trigSkip), fPGOutputTransition: opt("int", 0, trigSkip),
	fDaisySource: optEnum(cEventInvalid, trigSync), fDaisyArm: opt("int", 0, trigSync), fDaisyResync: opt("int", 0, trigSync),
	fDaisyPosition: opt("int", 0, trigSync), fSyncDirection: opt("int", 0, trigSync), fSyncFunction: optEnum(cFunctionInvalid, trigSync),
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
	if l.Constants == nil || l.Structures == nil {
		return bad("no constants or no structures: a table of an older generator; make it again (%s)", layoutHowTo)
	}
	if err := checkExtents(l.Fields, l.Size, ""); err != nil {
		return bad("%v", err)
	}
	for name := range constantNeeds {
		if _, ok := l.Constants[name]; !ok {
			return bad("the table lists no constant %s: not a table of this generator's (%s)", name, layoutHowTo)
		}
	}
	for sname, members := range structSpecs {
		st := l.Structures[sname]
		if st == nil {
			if sname == sOverflow {
				continue // only the overflow report needs it
			}
			return bad("the header declares no %s, which the driver needs", sname)
		}
		if st.Size <= 0 {
			return bad("structure %s has no size", sname)
		}
		if err := checkExtents(st.Fields, st.Size, sname+"."); err != nil {
			return bad("%v", err)
		}
		for m, kind := range members {
			f := st.Fields[m]
			if f == nil {
				return bad("the header's %s has no member %s, which the driver needs", sname, m)
			}
			ok := f.Kind == kind || (kind == "int" && f.Kind == "uint")
			if kind == "int" {
				ok = ok && (f.Size == 1 || f.Size == 2 || f.Size == 4 || f.Size == 8)
			}
			if !ok {
				return bad("member %s.%s is a %d-byte %s, the driver expects a %s", sname, m, f.Size, f.Kind, kind)
			}
		}
	}
	if p := l.Structures[sP2pStatus]; p != nil && len(p.Fields[mCompleted].Dims) != 2 {
		return bad("member %s.%s is not an array of arrays", sP2pStatus, mCompleted)
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

// checkExtents checks that every field lies within a size-byte structure.
func checkExtents(fields map[string]*Field, size int, prefix string) error {
	for name, f := range fields {
		if f == nil {
			continue
		}
		end := f.Offset + f.Size
		for _, d := range f.Dims {
			if d.Count <= 0 || d.Stride < f.Size {
				return fmt.Errorf("field %s%s: array of %d elements %d bytes apart", prefix, name, d.Count, d.Stride)
			}
			end += (d.Count - 1) * d.Stride
		}
		if f.Offset < 0 || f.Size <= 0 || end > size {
			return fmt.Errorf("field %s%s (bytes %d..%d) lies outside the %d-byte structure", prefix, name, f.Offset, end, size)
		}
	}
	return nil
}

// Constant is the value the header gives name (one of the generator's
// CONSTANTS); an error wrapping ErrLayout when the header defines none.
func (l *Layout) Constant(name string) (int64, error) {
	if v := l.Constants[name]; v != nil {
		return *v, nil
	}
	needs := constantNeeds[name]
	if needs == "" {
		needs = "this setting"
	}
	return 0, fmt.Errorf("%w: the installed ADQAPI %d.%d's header defines no %s (layout table %s): %s is not available",
		ErrLayout, l.APIVersion.Major, l.APIVersion.Minor, name, l.Path, needs)
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
	return decodeInt(p.bytes()[off:off+f.Size], f, name)
}

// decodeInt reads an integer member of f's size and kind from b.
func decodeInt(b []byte, f *Field, name string) (int64, error) {
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

// setEnum writes the header's value of constant cname to an enumeration
// field. Writing the field's "not used" constant to a field the ADQAPI
// lacks is no change; a constant the header lacks is refused (ErrLayout).
func (p *params) setEnum(name, cname string, idx ...int) error {
	if !p.has(name) {
		if s, ok := specs[name]; ok && !s.required && s.neutralConst == cname {
			return nil
		}
		return p.note(p.missing(name))
	}
	v, err := p.lay.Constant(cname)
	if err != nil {
		return p.note(err)
	}
	return p.setInt(name, v, idx...)
}

// enumName is cname, or, when v has no ADQAPI name (""), a refusal kept
// for CommitConfiguration and a name no table holds.
func (p *params) enumName(cname, what string, v int64) string {
	if cname == "" {
		_ = p.note(fmt.Errorf("%w: %s %d has no ADQAPI name", ErrInvalid, what, v))
		return "(none)"
	}
	return cname
}

// view is one of the small fixed structures (Layout.Structures) in C
// memory, read through its table offsets.
type view struct {
	base unsafe.Pointer
	st   *Struct
	name string
}

// at is the offset of member m's element idx, bounds-checked.
func (v view) at(m string, idx ...int) (*Field, int, error) {
	f := v.st.Fields[m]
	if f == nil || len(idx) != len(f.Dims) {
		return nil, 0, fmt.Errorf("%w: %s has no member %s of %d indices", ErrLayout, v.name, m, len(idx))
	}
	off := f.Offset
	for i, d := range f.Dims {
		if idx[i] < 0 || idx[i] >= d.Count {
			return nil, 0, fmt.Errorf("%w: index %d of %s.%s out of range [0, %d)", ErrInvalid, idx[i], v.name, m, d.Count)
		}
		off += idx[i] * d.Stride
	}
	return f, off, nil
}

func (v view) getInt(m string, idx ...int) (int64, error) {
	f, off, err := v.at(m, idx...)
	if err != nil {
		return 0, err
	}
	return decodeInt(unsafe.Slice((*byte)(unsafe.Add(v.base, off)), f.Size), f, v.name+"."+m)
}

func (v view) getString(m string) (string, error) {
	f, off, err := v.at(m)
	if err != nil {
		return "", err
	}
	b := unsafe.Slice((*byte)(unsafe.Add(v.base, off)), f.Size)
	if i := strings.IndexByte(string(b), 0); i >= 0 {
		b = b[:i]
	}
	return string(b), nil
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
