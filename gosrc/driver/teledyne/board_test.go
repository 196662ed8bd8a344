package teledyne_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/vortexgo/vortexgo/gosrc/driver/teledyne"
	"github.com/vortexgo/vortexgo/gosrc/internal/virtualtest"
)

// The board tests run the driver against the virtual digitizer
// (instruments/virtual/teledyne.c); the cases that need another library
// environment (revision, FIFO) run in a child process of this binary.

const child = "VG_TELEDYNE_TEST_CHILD"

func TestMain(m *testing.M) {
	switch os.Getenv(child) {
	case "revision":
		err := teledyne.Load()
		if err == nil {
			os.Exit(3)
		}
		os.Stdout.WriteString(err.Error())
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func require_(t *testing.T) {
	t.Helper()
	lib := virtualtest.Library(t, "libadq.so")
	if _, ok := os.LookupEnv(teledyne.EnvLibrary); !ok {
		t.Setenv(teledyne.EnvLibrary, lib)
	}
}

func configure(t *testing.T, b *teledyne.Board, samples int64, rpb int32, hz float64) {
	t.Helper()
	b.ConfigureSamplingClock(2.5e9, 10e6, teledyne.ClockInternalPLL, teledyne.ReferenceInternal, 0, true)
	require.NoError(t, b.ConfigureTriggerSource(teledyne.TriggerPeriodic, hz, 0, 1))
	b.ConfigureCapture(1, samples, rpb, teledyne.InfiniteAcquisition, false, 1)
	require.NoError(t, b.ConfigureTriggerSync(true))
	require.NoError(t, b.CommitConfiguration())
}

func TestOpenInfo(t *testing.T) {
	require_(t)
	b, err := teledyne.Open(0)
	require.NoError(t, err)
	defer b.Close()
	in := b.Info()
	require.Equal(t, "ADQ32", in.ProductName)
	require.Equal(t, 2, in.ChannelCount)
	require.Equal(t, 16, in.BufferCount)
	require.True(t, in.FWOCT.Detected)
	require.Equal(t, 8, in.FWOCT.Version)
	require.Equal(t, 8192, in.FWOCT.FFTCapacity)
	require.True(t, b.Valid())
	require.NoError(t, b.Close())
	require.False(t, b.Valid())

	devs, err := teledyne.Enumerate()
	require.NoError(t, err)
	require.Len(t, devs, 1)
	require.Equal(t, 0x31, devs[0].ProductID)
}

func TestOpenErrors(t *testing.T) {
	require_(t)
	for _, tc := range []struct {
		index int
		want  string
	}{
		{1, "device index is out of range: 1 >= 1"},
		{-1, "board index -1"},
	} {
		_, err := teledyne.Open(tc.index)
		require.ErrorContains(t, err, tc.want)
	}
}

func TestBadSettings(t *testing.T) {
	require_(t)
	b, err := teledyne.Open(0)
	require.NoError(t, err)
	defer b.Close()
	for _, tc := range []struct {
		name  string
		setup func()
	}{
		{"sample skip 0", func() { b.ConfigureCapture(1, 256, 8, -1, false, 0) }},
		{"no channel", func() { b.ConfigureCapture(0, 256, 8, -1, false, 1) }},
		{"zero length", func() { b.ConfigureCapture(1, 0, 8, -1, false, 1) }},
		{"periodic at 0 Hz", func() {
			require.NoError(t, b.ConfigureTriggerSource(teledyne.TriggerPeriodic, 0, 0, 1))
			b.ConfigureCapture(1, 256, 8, -1, false, 1)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b.ConfigureSamplingClock(2.5e9, 10e6, teledyne.ClockInternalPLL, teledyne.ReferenceInternal, 0, true)
			require.NoError(t, b.ConfigureTriggerSource(teledyne.TriggerPortTrig, 1e4, 0, 1))
			tc.setup()
			require.ErrorIs(t, b.CommitConfiguration(), teledyne.ErrDriver)
		})
	}
	require.ErrorContains(t, b.StartCapture(), "start acquisition failed")
}

func TestCaptureLockUnlock(t *testing.T) {
	require_(t)
	b, err := teledyne.Open(0)
	require.NoError(t, err)
	defer b.Close()
	configure(t, b, 256, 8, 50e3)
	require.Equal(t, 8, b.RecordsPerBuffer())
	require.NoError(t, b.StartCapture())
	require.True(t, b.Running())
	for i := 0; i < 40; i++ {
		idx := i % b.Info().BufferCount
		p, n, err := b.WaitAndLockBuffer(idx, time.Second)
		require.NoError(t, err, "buffer %d", i)
		require.Equal(t, 8, n)
		data := unsafe.Slice((*uint16)(p), 8*256)
		nonzero := 0
		for _, v := range data {
			if v != 0 {
				nonzero++
			}
		}
		require.Greater(t, nonzero, 1000)
		require.NoError(t, b.UnlockBuffer(idx))
	}
	require.NoError(t, b.StopCapture())
	require.False(t, b.Running())
	// the board is ready for another session
	require.NoError(t, b.StartCapture())
	_, _, err = b.WaitAndLockBuffer(0, time.Second)
	require.NoError(t, err)
	require.NoError(t, b.StopCapture())
}

func TestTimeoutAndOverflow(t *testing.T) {
	require_(t)
	b, err := teledyne.Open(0)
	require.NoError(t, err)
	defer b.Close()
	configure(t, b, 256, 8, 1e6)
	// not started: nothing completes
	_, _, err = b.WaitAndLockBuffer(0, 20*time.Millisecond)
	require.ErrorIs(t, err, teledyne.ErrWaitTimeout)
	require.ErrorContains(t, err, "acquisition timeout for buffer 0")
	src, err := b.RawInt(teledyne.FieldTriggerSource, 0)
	require.NoError(t, err)
	require.Equal(t, int64(teledyne.TriggerPeriodic), src, "this header's value is vortex's")
	fn, err := b.RawInt(teledyne.FieldSyncFunction)
	require.NoError(t, err)
	require.Equal(t, int64(9), fn, "this header's ADQ_FUNCTION_DAISY_CHAIN")
	nr, err := b.RawInt(teledyne.FieldNofRecords, 0)
	require.NoError(t, err)
	require.Equal(t, int64(-1), nr)
	// started, never unlocked: the board's 16 buffers fill, then its FIFO
	// (64 MiB = 131072 records at 1 MHz: 0.13 s) overflows
	require.NoError(t, b.StartCapture())
	for i := 0; i < 16; i++ {
		_, _, err := b.WaitAndLockBuffer(i, time.Second)
		require.NoError(t, err)
	}
	time.Sleep(300 * time.Millisecond) // the host falls behind
	for i := 0; i < 16; i++ {
		require.NoError(t, b.UnlockBuffer(i))
	}
	_, _, err = b.WaitAndLockBuffer(0, 200*time.Millisecond)
	require.ErrorIs(t, err, teledyne.ErrOverflow)
	require.ErrorContains(t, err, "hardware buffer overflow at buffer 0")
	require.NoError(t, b.StopCapture())
}

func TestFWOCTRegisters(t *testing.T) {
	require_(t)
	b, err := teledyne.Open(0)
	require.NoError(t, err)
	defer b.Close()
	configure(t, b, 256, 8, 1e4)
	bg := make([]int16, 256)
	win := make([]complex64, 256)
	for i := range win {
		win[i] = 1
	}
	for _, mode := range []teledyne.FFTMode{teledyne.FFTDisabled, teledyne.FFTComplex, teledyne.FFTMagnitude, teledyne.FFTLogMagnitude} {
		require.NoError(t, b.ConfigureFWOCT(256, teledyne.EdgesRising, 0.5, 1, bg, win, mode, 0))
	}
}

func TestRevisionRefused(t *testing.T) {
	lib := virtualtest.Library(t, "libadq.so")
	for _, tc := range []struct {
		version string
		want    string
	}{
		{"1.0", "system ADQAPI version is incompatible with compiled version"},
		{"30311.0", "system ADQAPI version is incompatible"}, // 0x7667 = 30311: same major, older minor (the driver is newer)
	} {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), child+"=revision", teledyne.EnvLibrary+"="+lib, "VGV_ADQAPI_VERSION="+tc.version)
		out, err := cmd.Output()
		require.NoError(t, err, "%s", out)
		require.Contains(t, string(out), tc.want)
	}
}

func TestMissingLibrary(t *testing.T) {
	if os.Getenv(child) != "" {
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestMissingLibraryChild$")
	cmd.Env = append(os.Environ(), child+"=missing", teledyne.EnvLibrary+"=/nonexistent/libadq.so")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
}

func TestMissingLibraryChild(t *testing.T) {
	if os.Getenv(child) != "missing" {
		t.Skip("run by TestMissingLibrary")
	}
	_, err := teledyne.Open(0)
	require.ErrorIs(t, err, teledyne.ErrNoLibrary)
	require.ErrorContains(t, err, "VORTEXGO_ADQ_LIBRARY")
}

// The layout cases: each in a child process, as the library and its layout
// table are loaded once per process.

func TestLayoutCases(t *testing.T) {
	if os.Getenv(child) != "" {
		return
	}
	lib := virtualtest.Library(t, "libadq.so")
	lib9 := virtualtest.Library(t, "adqapi9/libadq.so")
	table := filepath.Join(filepath.Dir(lib), teledyne.LayoutFile)
	// a table one word larger than the library's structure
	wrong := filepath.Join(t.TempDir(), "wrong.json")
	var m map[string]any
	data, err := os.ReadFile(table)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &m))
	m["size"] = m["size"].(float64) + 8
	data, err = json.Marshal(m)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(wrong, data, 0o644))
	// the library's own table with its constants edited: one absent, one
	// another value than the board's
	edited := filepath.Join(t.TempDir(), "edited.json")
	data, err = os.ReadFile(table)
	require.NoError(t, err)
	m = nil
	require.NoError(t, json.Unmarshal(data, &m))
	consts := m["constants"].(map[string]any)
	consts["ADQ_FUNCTION_DAISY_CHAIN"] = nil
	consts["ADQ_EVENT_SOURCE_PERIODIC"] = 5.0
	data, err = json.Marshal(m)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(edited, data, 0o644))
	// a real-looking library: no table beside it, no variable
	bare := t.TempDir()
	for _, f := range []string{"libadq.so", "libvgvirtual.so"} {
		data, err := os.ReadFile(filepath.Join(filepath.Dir(lib), f))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(bare, f), data, 0o755))
	}
	for _, tc := range []struct {
		name string
		env  []string
	}{
		{"Layout9", []string{teledyne.EnvLibrary + "=" + lib9}},
		{"WrongSize", []string{teledyne.EnvLibrary + "=" + lib, teledyne.EnvLayout + "=" + wrong}},
		{"EditedConstants", []string{teledyne.EnvLibrary + "=" + lib, teledyne.EnvLayout + "=" + edited}},
		{"OtherRevisionTable", []string{teledyne.EnvLibrary + "=" + lib9, teledyne.EnvLayout + "=" + table}},
		{"NoTable", []string{teledyne.EnvLibrary + "=" + filepath.Join(bare, "libadq.so")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestChild"+tc.name+"$", "-test.v")
			cmd.Env = append(os.Environ(), append(tc.env, child+"="+tc.name)...)
			out, err := cmd.CombinedOutput()
			require.NoError(t, err, "%s", out)
			require.Contains(t, string(out), "--- PASS: TestChild"+tc.name)
		})
	}
}

func childOnly(t *testing.T, name string) {
	if os.Getenv(child) != name {
		t.Skip("run by TestLayoutCases")
	}
}

// TestChildLayout9: the board over the second structure (another order and
// types, ADQAPI < 10 names, no daisy chain) works through its table, and
// trigger sync, which needs the daisy chain, is refused.
func TestChildLayout9(t *testing.T) {
	childOnly(t, "Layout9")
	b, err := teledyne.Open(0)
	require.NoError(t, err)
	defer b.Close()
	major, minor := teledyne.APIVersion()
	require.Equal(t, [2]int{9, 2}, [2]int{major, minor})
	lay := teledyne.LoadedLayout()
	require.Nil(t, lay.Fields["function.daisy_chain.source"])
	require.Equal(t, "transfer.channel[].record_length_infinite_enabled", lay.Fields["transfer.channel[].infinite_record_length_enabled"].Name)
	in := b.Info()
	require.Equal(t, "ADQ32", in.ProductName)
	require.Equal(t, "VG00001", in.SerialNumber)
	require.Equal(t, 2, in.ChannelCount)
	require.Equal(t, 16, in.BufferCount)

	devs, err := teledyne.Enumerate()
	require.NoError(t, err)
	require.Equal(t, []teledyne.DeviceInfo{{ProductID: 0x31, DevFile: "/dev/vgadq0"}}, devs)

	b.ConfigureSamplingClock(2.5e9, 10e6, teledyne.ClockInternalPLL, teledyne.ReferencePXIE10M, 0, true)
	require.NoError(t, b.ConfigureTriggerSource(teledyne.TriggerPeriodic, 50e3, 0, 1))
	b.ConfigureCapture(1, 256, 8, teledyne.InfiniteAcquisition, false, 1)
	// the header's values, not the driver's: ADQ_EVENT_SOURCE_PERIODIC is 14
	// in this header (vortex's TriggerPeriodic is 4, no event source here)
	src, err := b.RawInt(teledyne.FieldTriggerSource, 0)
	require.NoError(t, err)
	require.Equal(t, int64(14), src)
	require.Equal(t, teledyne.TriggerSource(4), teledyne.TriggerPeriodic)
	ref, err := b.RawInt(teledyne.FieldReference)
	require.NoError(t, err)
	require.Equal(t, int64(3), ref, "ADQ_CLOCK_REFERENCE_SOURCE_PXIE_10M, this header's spelling")
	err = b.ConfigureTriggerSync(true)
	require.ErrorIs(t, err, teledyne.ErrLayout)
	require.ErrorContains(t, err, "has no ADQParameters field function.daisy_chain.source")
	require.ErrorContains(t, err, "trigger sync")
	require.NoError(t, b.ConfigureTriggerSync(false))
	require.NoError(t, b.CommitConfiguration())
	require.Equal(t, 8, b.RecordsPerBuffer())
	require.NoError(t, b.StartCapture())
	for i := 0; i < 20; i++ {
		idx := i % b.Info().BufferCount
		p, n, err := b.WaitAndLockBuffer(idx, time.Second)
		require.NoError(t, err, "buffer %d", i)
		require.Equal(t, 8, n)
		nonzero := 0
		for _, v := range unsafe.Slice((*uint16)(p), 8*256) {
			if v != 0 {
				nonzero++
			}
		}
		require.Greater(t, nonzero, 1000)
		require.NoError(t, b.UnlockBuffer(idx))
	}
	require.NoError(t, b.StopCapture())
	// the overflow status through this header's struct ADQOverflowStatus
	// (overflow at byte 12) and the P2P status (another member order)
	configure9 := func(hz float64) {
		require.NoError(t, b.ConfigureTriggerSource(teledyne.TriggerPeriodic, hz, 0, 1))
		b.ConfigureCapture(1, 256, 8, teledyne.InfiniteAcquisition, false, 1)
		require.NoError(t, b.CommitConfiguration())
	}
	configure9(1e6)
	require.NoError(t, b.StartCapture())
	for i := 0; i < 16; i++ {
		_, _, err := b.WaitAndLockBuffer(i, time.Second)
		require.NoError(t, err)
	}
	time.Sleep(300 * time.Millisecond) // the host falls behind
	for i := 0; i < 16; i++ {
		require.NoError(t, b.UnlockBuffer(i))
	}
	_, _, err = b.WaitAndLockBuffer(0, 200*time.Millisecond)
	require.ErrorIs(t, err, teledyne.ErrOverflow)
	require.NoError(t, b.StopCapture())
	// sample skipping through the 4-byte skip factor: a bad one reaches the board
	b.ConfigureCapture(1, 256, 8, teledyne.InfiniteAcquisition, false, 0)
	require.ErrorIs(t, b.CommitConfiguration(), teledyne.ErrDriver)
}

// TestChildEditedConstants: the virtual board (its header's
// ADQ_EVENT_SOURCE_PERIODIC is 4) with a table saying 5 and lacking
// ADQ_FUNCTION_DAISY_CHAIN: the driver writes the table's value, which the
// board refuses, and refuses trigger sync itself, naming the constant.
func TestChildEditedConstants(t *testing.T) {
	childOnly(t, "EditedConstants")
	b, err := teledyne.Open(0)
	require.NoError(t, err)
	defer b.Close()
	b.ConfigureSamplingClock(2.5e9, 10e6, teledyne.ClockInternalPLL, teledyne.ReferenceInternal, 0, true)
	require.NoError(t, b.ConfigureTriggerSource(teledyne.TriggerPeriodic, 50e3, 0, 1))
	b.ConfigureCapture(1, 256, 8, teledyne.InfiniteAcquisition, false, 1)
	src, err := b.RawInt(teledyne.FieldTriggerSource, 0)
	require.NoError(t, err)
	require.Equal(t, int64(5), src)
	err = b.ConfigureTriggerSync(true)
	require.ErrorIs(t, err, teledyne.ErrLayout)
	require.ErrorContains(t, err, "header defines no ADQ_FUNCTION_DAISY_CHAIN")
	require.ErrorContains(t, err, "trigger sync")
	require.NoError(t, b.ConfigureTriggerSync(false))
	require.ErrorIs(t, b.CommitConfiguration(), teledyne.ErrDriver, "5 is no event source of the board's")
	// the board's own value, through the TRIG port constant the table keeps
	require.NoError(t, b.ConfigureTriggerSource(teledyne.TriggerPortTrig, 50e3, 0, 1))
	require.NoError(t, b.CommitConfiguration())
	// a value without an ADQAPI name
	err = b.ConfigureTriggerSource(teledyne.TriggerSource(77), 50e3, 0, 1)
	require.ErrorIs(t, err, teledyne.ErrInvalid)
	b.ConfigureSamplingClock(2.5e9, 10e6, teledyne.ClockGenerator(7), teledyne.ReferenceInternal, 0, true)
	require.ErrorContains(t, b.CommitConfiguration(), "clock generator 7 has no ADQAPI name")
}

func TestChildWrongSize(t *testing.T) {
	childOnly(t, "WrongSize")
	_, err := teledyne.Open(0)
	require.ErrorIs(t, err, teledyne.ErrIncompatible)
	require.ErrorContains(t, err, "ADQ_InitializeParameters reports a 4928-byte struct ADQParameters")
	require.ErrorContains(t, err, "wrong.json")
	require.ErrorContains(t, err, "a 4936-byte one")
}

func TestChildOtherRevisionTable(t *testing.T) {
	childOnly(t, "OtherRevisionTable")
	err := teledyne.Load()
	require.ErrorIs(t, err, teledyne.ErrIncompatible)
	require.ErrorContains(t, err, "system ADQAPI version is incompatible with compiled version 30311.1")
}

func TestChildNoTable(t *testing.T) {
	childOnly(t, "NoTable")
	_, err := teledyne.Open(0)
	require.ErrorIs(t, err, teledyne.ErrLayout)
	for _, want := range []string{"python -m vortexgo adq-layout", "make adq-layout ADQAPI_INCLUDE=", teledyne.EnvLayout, "ADQAPI_definitions.h"} {
		require.ErrorContains(t, err, want)
	}
	_, err = teledyne.Enumerate()
	require.ErrorIs(t, err, teledyne.ErrLayout)
}
