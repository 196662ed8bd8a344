package teledyne

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/vortexgo/vortexgo/gosrc/internal/virtualtest"
)

// testLayout is a small structure of every kind the accessors handle.
func testLayout() *Layout {
	l := &Layout{Path: "test.json", Size: 128, APIVersion: Version{9, 1}, Fields: map[string]*Field{
		"a.i8":        {Name: "a.i8", Offset: 0, Size: 1, Kind: "int"},
		"a.u16":       {Name: "a.u16", Offset: 2, Size: 2, Kind: "uint"},
		"a.i32":       {Name: "a.i32", Offset: 4, Size: 4, Kind: "int"},
		"a.ch[].i64":  {Name: "a.ch[].i64", Offset: 8, Size: 8, Kind: "int", Dims: []Dim{{Count: 3, Stride: 16}}},
		"a.ch[].f32":  {Name: "a.ch[].f32", Offset: 16, Size: 4, Kind: "float", Dims: []Dim{{Count: 3, Stride: 16}}},
		"a.f64":       {Name: "a.f64", Offset: 56, Size: 8, Kind: "float"},
		"a.name":      {Name: "a.name", Offset: 64, Size: 8, Kind: "string"},
		"a.buf[][]":   {Name: "a.buf[][]", Offset: 72, Size: 8, Kind: "pointer", Dims: []Dim{{Count: 2, Stride: 24}, {Count: 3, Stride: 8}}},
		fDaisySource:  nil,
		fMetadata:     nil,
		fSkipFactor:   nil,
		fProductName:  nil,
		"a.offlimits": {Name: "a.offlimits", Offset: 124, Size: 8, Kind: "int"},
	}}
	return l
}

func TestParamsAccessors(t *testing.T) {
	buf := make([]byte, 128)
	p := &params{base: unsafe.Pointer(&buf[0]), lay: testLayout()}
	ints := []struct {
		name string
		idx  []int
		v    int64
		err  string
	}{
		{"a.i8", nil, -5, ""},
		{"a.i8", nil, 200, "does not fit field a.i8 (1-byte signed)"},
		{"a.u16", nil, 65535, ""},
		{"a.u16", nil, -1, "does not fit field a.u16 (2-byte unsigned)"},
		{"a.i32", nil, -1, ""},
		{"a.i32", nil, 1 << 31, "does not fit"},
		{"a.ch[].i64", []int{2}, -1 << 40, ""},
		{"a.ch[].i64", []int{3}, 1, "index 3 of field a.ch[].i64 out of range [0, 3)"},
		{"a.ch[].i64", nil, 1, "takes 1 indices, given 0"},
		{fMetadata, nil, 0, ""}, // missing, the "not used" value: no change
		{fDaisySource, nil, 0, "has no ADQParameters field function.daisy_chain.source (layout table test.json): trigger sync"},
		{fSkipFactor, []int{0}, 1, ""},
		{fSkipFactor, []int{0}, 2, "sample skipping is not available"},
		{"a.offlimits", nil, 1, "outside the 128-byte structure"},
	}
	for _, tc := range ints {
		t.Run(tc.name, func(t *testing.T) {
			err := p.setInt(tc.name, tc.v, tc.idx...)
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			if p.has(tc.name) {
				got, err := p.getInt(tc.name, tc.idx...)
				require.NoError(t, err)
				require.Equal(t, tc.v, got)
			}
		})
	}
	require.ErrorContains(t, p.err, "does not fit field a.i8", "the first refusal is kept")
	// the element stride: element 2 of a.ch[].i64 is at 8 + 2*16
	require.Equal(t, int64(-1<<40), int64(*(*int64)(unsafe.Pointer(&buf[40]))))

	require.NoError(t, p.setFloat("a.ch[].f32", 1.5, 1))
	f, err := p.getFloat("a.ch[].f32", 1)
	require.NoError(t, err)
	require.Equal(t, 1.5, f)
	require.Equal(t, float32(1.5), *(*float32)(unsafe.Pointer(&buf[32])))
	require.NoError(t, p.setFloat("a.f64", 2.25))
	f, err = p.getFloat("a.f64")
	require.NoError(t, err)
	require.Equal(t, 2.25, f)

	copy(buf[64:], "ADQ32\x00xx")
	s, err := p.getString("a.name")
	require.NoError(t, err)
	require.Equal(t, "ADQ32", s)
	copy(buf[64:], "12345678") // no NUL: the whole array
	s, _ = p.getString("a.name")
	require.Equal(t, "12345678", s)
	_, err = p.getString(fProductName)
	require.ErrorIs(t, err, ErrLayout)

	x := 7
	*(*unsafe.Pointer)(unsafe.Pointer(&buf[72+24+16])) = unsafe.Pointer(&x)
	ptr, err := p.getPointer("a.buf[][]", 1, 2)
	require.NoError(t, err)
	require.Equal(t, unsafe.Pointer(&x), ptr)
	*(*unsafe.Pointer)(unsafe.Pointer(&buf[72+24+16])) = nil
	_, err = p.getPointer("a.buf[][]", 2, 0)
	require.ErrorContains(t, err, "out of range [0, 2)")

	restore := p.keepErr()
	p.err = nil
	_ = p.setInt(fDaisySource, 1)
	require.Error(t, p.err)
	restore()
	require.ErrorContains(t, p.err, "does not fit field a.i8")
}

func TestLoadLayoutRefuses(t *testing.T) {
	lib := virtualtest.Library(t, "libadq.so")
	good, err := os.ReadFile(filepath.Join(filepath.Dir(lib), LayoutFile))
	require.NoError(t, err)
	for _, tc := range []struct {
		name string
		edit func(m map[string]any)
		want string
	}{
		{"ok", func(map[string]any) {}, ""},
		{"no size", func(m map[string]any) { delete(m, "size") }, "no structure size"},
		{"required field missing", func(m map[string]any) { m["fields"].(map[string]any)[fRecordLength] = nil },
			"has no ADQParameters field acquisition.channel[].record_length, which the driver needs"},
		{"beyond the structure", func(m map[string]any) { m["size"] = 100.0 }, "outside the 100-byte structure"},
		{"wrong kind", func(m map[string]any) {
			m["fields"].(map[string]any)[fSamplingFrequency].(map[string]any)["kind"] = "int"
		}, "field constant.clock_system.sampling_frequency is a 8-byte int, the driver expects a float"},
		{"no buffer owner", func(m map[string]any) { m["fields"].(map[string]any)[fMemoryOwner] = nil },
			"has neither transfer.common.record_buffer_memory_owner"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var m map[string]any
			require.NoError(t, json.Unmarshal(good, &m))
			tc.edit(m)
			data, err := json.Marshal(m)
			require.NoError(t, err)
			path := filepath.Join(t.TempDir(), "l.json")
			require.NoError(t, os.WriteFile(path, data, 0o644))
			l, err := LoadLayout(path)
			if tc.want == "" {
				require.NoError(t, err)
				require.Equal(t, Version{0x7667, 1}, l.APIVersion)
				return
			}
			require.ErrorIs(t, err, ErrLayout)
			require.ErrorContains(t, err, tc.want)
			require.ErrorContains(t, err, path)
		})
	}
	_, err = LoadLayout(filepath.Join(t.TempDir(), "none.json"))
	require.ErrorContains(t, err, "python -m vortexgo adq-layout")
}

// TestGeneratedLayouts checks the generator's tables of the two virtual
// headers (make virtual): sizes, revisions, element strides, the
// alternative names and the fields an older header lacks.
func TestGeneratedLayouts(t *testing.T) {
	lib := virtualtest.Library(t, "libadq.so")
	for _, tc := range []struct {
		dir                  string
		version              Version
		size                 int
		infinite, owner      string
		missing              []string
		skipSize, chanStride int
		recordBufferDims     []Dim
	}{
		{".", Version{0x7667, 1}, 4928, "transfer.channel[].infinite_record_length_enabled", fMemoryOwner,
			[]string{fRecordsToHost}, 8, 160, []Dim{{8, 160}, {16, 8}}},
		{"adqapi9", Version{9, 2}, 3360, "transfer.channel[].record_length_infinite_enabled", fRecordsToHost,
			[]string{fMemoryOwner, fDaisySource, fDaisyArm, fDaisyResync, fDaisyPosition}, 4, 168, []Dim{{8, 168}, {16, 8}}},
	} {
		t.Run(tc.dir, func(t *testing.T) {
			l, err := LoadLayout(filepath.Join(filepath.Dir(lib), tc.dir, LayoutFile))
			require.NoError(t, err)
			require.Equal(t, tc.version, l.APIVersion)
			require.Equal(t, tc.size, l.Size)
			require.Equal(t, tc.infinite, l.Fields[fInfiniteLength].Name)
			require.NotNil(t, l.Fields[tc.owner])
			for _, name := range tc.missing {
				require.Contains(t, l.Fields, name)
				require.Nil(t, l.Fields[name], name)
			}
			for name := range specs {
				require.Contains(t, l.Fields, name, "the generator lists every field the driver uses")
			}
			require.Equal(t, tc.skipSize, l.Fields[fSkipFactor].Size)
			require.Equal(t, tc.chanStride, l.Fields[fRecordSize].Dims[0].Stride)
			require.Equal(t, tc.recordBufferDims, l.Fields[fRecordBuffer].Dims)
			require.Equal(t, []Dim{{2, 392}, {16, 24}}, l.Fields[fPGCount].Dims)
		})
	}
}

func i64(v int64) *int64 { return &v }

// TestSetEnum: an enumeration field gets the header's value of the
// constant; a constant the header lacks and a field it lacks are refused,
// except the field's "not used" constant to a missing field.
func TestSetEnum(t *testing.T) {
	buf := make([]byte, 128)
	l := testLayout()
	l.Fields[fTriggerSource] = &Field{Name: fTriggerSource, Offset: 4, Size: 4, Kind: "int", Dims: []Dim{{Count: 2, Stride: 16}}}
	l.Constants = map[string]*int64{cEventPeriodic: i64(14), cEventTrig: i64(2), cEventSync: nil, cEventInvalid: nil}
	for _, tc := range []struct {
		name, field, constant string
		want                  int64
		err                   string
	}{
		{"present", fTriggerSource, cEventTrig, 2, ""},
		{"different from vortex's", fTriggerSource, cEventPeriodic, 14, ""},
		{"absent constant", fTriggerSource, cEventSync, 0,
			"the installed ADQAPI 9.1's header defines no ADQ_EVENT_SOURCE_SYNC (layout table test.json): the SYNC port trigger is not available"},
		{"missing field, its not-used constant", fDaisySource, cEventInvalid, 0, ""},
		{"missing field, another constant", fDaisySource, cEventTrig, 0, "has no ADQParameters field function.daisy_chain.source"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &params{base: unsafe.Pointer(&buf[0]), lay: l}
			idx := []int{}
			if p.has(tc.field) {
				idx = []int{1}
			}
			err := p.setEnum(tc.field, tc.constant, idx...)
			if tc.err != "" {
				require.ErrorIs(t, err, ErrLayout)
				require.ErrorContains(t, err, tc.err)
				require.Equal(t, err, p.err, "kept for CommitConfiguration")
				return
			}
			require.NoError(t, err)
			require.NoError(t, p.err)
			if p.has(tc.field) {
				got, err := p.getInt(tc.field, 1)
				require.NoError(t, err)
				require.Equal(t, tc.want, got)
			}
		})
	}
}

// TestEnumerationNames: each of the driver's exported values names an
// ADQAPI constant the generator probes, and keeps vortex's value (the one
// the public headers give that name, as the virtual board's header does).
func TestEnumerationNames(t *testing.T) {
	lib := virtualtest.Library(t, "libadq.so")
	l, err := LoadLayout(filepath.Join(filepath.Dir(lib), LayoutFile))
	require.NoError(t, err)
	check := func(v int64, name string) {
		require.Contains(t, constantNeeds, name)
		got, err := l.Constant(name)
		require.NoError(t, err, name)
		require.Equal(t, got, v, name)
	}
	for v, name := range triggerNames {
		require.Equal(t, name, HeaderName(v))
		check(int64(v), name)
	}
	for v, name := range clockNames {
		check(int64(v), name)
	}
	for v, name := range referenceNames {
		check(int64(v), name)
	}
	check(InfiniteAcquisition, cInfiniteNofRecords)
	require.Equal(t, "", HeaderName(TriggerSource(77)))
}

// TestLoadLayoutRefusesTables: constants and structures the table must hold.
func TestLoadLayoutRefusesTables(t *testing.T) {
	lib := virtualtest.Library(t, "libadq.so")
	good, err := os.ReadFile(filepath.Join(filepath.Dir(lib), LayoutFile))
	require.NoError(t, err)
	st := func(m map[string]any, name string) map[string]any {
		return m["structures"].(map[string]any)[name].(map[string]any)
	}
	for _, tc := range []struct {
		name string
		edit func(m map[string]any)
		want string
	}{
		{"absent constants are fine", func(m map[string]any) { m["constants"].(map[string]any)[cEventPeriodic] = nil }, ""},
		{"no overflow status is fine", func(m map[string]any) { m["structures"].(map[string]any)[sOverflow] = nil }, ""},
		{"an older generator's table", func(m map[string]any) { delete(m, "constants") }, "a table of an older generator"},
		{"a constant unlisted", func(m map[string]any) { delete(m["constants"].(map[string]any), cArmAtStart) },
			"lists no constant ADQ_ARM_AT_ACQUISITION_START"},
		{"no P2P status", func(m map[string]any) { m["structures"].(map[string]any)[sP2pStatus] = nil },
			"declares no ADQP2pStatus, which the driver needs"},
		{"a member missing", func(m map[string]any) { st(m, sInfoList)["fields"].(map[string]any)[mDevFile] = nil },
			"ADQInfoListEntry has no member DevFile"},
		{"a member outside", func(m map[string]any) { st(m, sOverflow)["size"] = 2.0 },
			"field ADQOverflowStatus.overflow (bytes 0..4) lies outside the 2-byte structure"},
		{"a member of another kind", func(m map[string]any) {
			st(m, sP2pStatus)["fields"].(map[string]any)[mNofCompleted].(map[string]any)["kind"] = "float"
		}, "member ADQP2pStatus.channel[].nof_completed_buffers is a 4-byte float, the driver expects a int"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var m map[string]any
			require.NoError(t, json.Unmarshal(good, &m))
			tc.edit(m)
			data, err := json.Marshal(m)
			require.NoError(t, err)
			path := filepath.Join(t.TempDir(), "l.json")
			require.NoError(t, os.WriteFile(path, data, 0o644))
			_, err = LoadLayout(path)
			if tc.want == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, ErrLayout)
			require.ErrorContains(t, err, tc.want)
		})
	}
}

// TestGeneratedConstants checks the generator's constants and fixed
// structures of the two virtual headers: present, absent, different.
func TestGeneratedConstants(t *testing.T) {
	lib := virtualtest.Library(t, "libadq.so")
	for _, tc := range []struct {
		dir        string
		values     map[string]int64
		absent     []string
		aliases    map[string]string
		p2pSize    int
		nofKind    Field
		overflowAt int
	}{
		{".", map[string]int64{cEventPeriodic: 4, cFunctionDaisyChain: 9, cArmAtStart: 1, cMemoryOwnerAPI: 0, cUserLogic2: 2,
			cInfiniteNofRecords: -1, cMaxNofBuffers: 16, cParameterIDTop: 19, cRefPXIE10M: 3},
			nil, nil, 8*40 + 8, Field{Name: mNofCompleted, Offset: 4, Size: 4, Kind: "int", Dims: []Dim{{8, 40}}}, 0},
		{"adqapi9", map[string]int64{cEventPeriodic: 14, cUserLogic2: 2, cRefPXIE10M: 3, cMarkerHostManual: 1},
			[]string{cFunctionDaisyChain, cArmAtStart, cMemoryOwnerAPI, cMemoryOwnerUser},
			map[string]string{cUserLogic2: "USER_LOGIC_2", cRefInternal: "ADQ_CLOCK_REFERENCE_SOURCE_INTERNAL"},
			8 + 8*48, Field{Name: mNofCompleted, Offset: 40, Size: 8, Kind: "int", Dims: []Dim{{8, 48}}}, 12},
	} {
		t.Run(tc.dir, func(t *testing.T) {
			l, err := LoadLayout(filepath.Join(filepath.Dir(lib), tc.dir, LayoutFile))
			require.NoError(t, err)
			for name := range constantNeeds {
				require.Contains(t, l.Constants, name, "the generator lists every constant the driver uses")
			}
			for name, v := range tc.values {
				got, err := l.Constant(name)
				require.NoError(t, err, name)
				require.Equal(t, v, got, name)
			}
			for _, name := range tc.absent {
				_, err := l.Constant(name)
				require.ErrorIs(t, err, ErrLayout, name)
				require.ErrorContains(t, err, "defines no "+name)
			}
			for k, v := range tc.aliases {
				require.Equal(t, v, l.ConstantNames[k])
			}
			require.Equal(t, tc.p2pSize, l.Structures[sP2pStatus].Size)
			require.Equal(t, tc.nofKind, *l.Structures[sP2pStatus].Fields[mNofCompleted])
			require.Equal(t, 16, l.Structures[sP2pStatus].Fields[mCompleted].Dims[1].Count)
			require.Equal(t, tc.overflowAt, l.Structures[sOverflow].Fields[mOverflow].Offset)
			require.Equal(t, "ADQInfoListEntry", l.Structures[sInfoList].Type)
			require.Equal(t, Field{Name: mDevFile, Offset: 20, Size: 64, Kind: "string", Dims: []Dim{}}, *l.Structures[sInfoList].Fields[mDevFile])
		})
	}
}
