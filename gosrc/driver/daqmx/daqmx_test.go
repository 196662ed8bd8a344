package daqmx_test

import (
	"encoding/binary"
	"errors"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vortexgo/vortexgo/gosrc/driver/daqmx"
	"github.com/vortexgo/vortexgo/gosrc/internal/virtualtest"
)

// virtual points the loader at the virtual card and loads it.
func virtual(t *testing.T) {
	t.Helper()
	t.Setenv(daqmx.LibraryEnv, virtualtest.Library(t, "libnidaqmx.so"))
	require.NoError(t, daqmx.Load())
}

func newTask(t *testing.T, name string) *daqmx.Task {
	t.Helper()
	task, err := daqmx.NewTask(name)
	require.NoError(t, err)
	t.Cleanup(func() { _ = task.Clear() })
	return task
}

func code(t *testing.T, err error) int32 {
	t.Helper()
	var e *daqmx.Error
	require.ErrorAs(t, err, &e)
	return e.Code
}

// Bad settings are refused with NI-DAQmx's codes and vortex's messages.
func TestBadSettingsRefused(t *testing.T) {
	virtual(t)
	cases := []struct {
		name string
		do   func(*daqmx.Task) error
		code int32
		msg  string
	}{
		{"no such channel", func(k *daqmx.Task) error { return k.CreateAnalogVoltageOutput("Dev1/ao9", -10, 10) },
			-200170, "analog voltage output channel creation failed: (-200170)\n"},
		{"no such device", func(k *daqmx.Task) error { return k.CreateAnalogVoltageOutput("Dev7/ao0", -10, 10) },
			-200220, "analog voltage output channel creation failed: (-200220)\n"},
		{"min not below max", func(k *daqmx.Task) error { return k.CreateAnalogVoltageOutput("Dev1/ao0", 5, -5) },
			-200082, "analog voltage output channel creation failed: (-200082)\n"},
		{"out of range", func(k *daqmx.Task) error { return k.CreateAnalogVoltageInput("Dev1/ai0", -20, 20, daqmx.Referenced) },
			-200077, "analog voltage input channel creation failed: (-200077)\n"},
		{"no such line", func(k *daqmx.Task) error { return k.CreateDigitalOutput("Dev1/port1/line9") },
			-200170, "digital output channel creation failed: (-200170)\n"},
		{"mixed channel types", func(k *daqmx.Task) error {
			require.NoError(t, k.CreateAnalogVoltageOutput("Dev1/ao0", -10, 10))
			return k.CreateDigitalOutput("Dev1/port0")
		}, -200559, "digital output channel creation failed: (-200559) unsupported operation"},
		{"bad clock source", func(k *daqmx.Task) error {
			require.NoError(t, k.CreateAnalogVoltageOutput("Dev1/ao0", -10, 10))
			return k.ConfigureSampleClock("pfi99", daqmx.Continuous, 100000, 100, 1, daqmx.Rising)
		}, -89120, "clock mode 10123 from pfi99 at 100000 samples/second and 100 samples/channel failed: (-89120)\n"},
		{"bad timebase source", func(k *daqmx.Task) error {
			require.NoError(t, k.CreateAnalogVoltageOutput("Dev1/ao0", -10, 10))
			return k.ConfigureSampleClock("rtsi3", daqmx.Continuous, 100000, 100, 2, daqmx.Rising)
		}, -89120, "timebase source from rtsi3 failed: (-89120)\n"},
		{"rate too high", func(k *daqmx.Task) error {
			require.NoError(t, k.CreateAnalogVoltageOutput("Dev1/ao0", -10, 10))
			return k.ConfigureSampleClock("pfi0", daqmx.Continuous, 1e9, 100, 1, daqmx.Rising)
		}, -200077, "failed: (-200077)\n"},
		{"start with an empty buffer", func(k *daqmx.Task) error {
			require.NoError(t, k.CreateAnalogVoltageOutput("Dev1/ao0", -10, 10))
			require.NoError(t, k.ConfigureSampleClock("pfi0", daqmx.Continuous, 100000, 100, 1, daqmx.Rising))
			require.NoError(t, k.SetRegeneration(false))
			return k.Start()
		}, -200462, "start failed: (-200462)\n"},
		{"value beyond the range", func(k *daqmx.Task) error {
			require.NoError(t, k.CreateAnalogVoltageOutput("Dev1/ao0", -1, 1))
			require.NoError(t, k.ConfigureSampleClock("pfi0", daqmx.Continuous, 100000, 100, 1, daqmx.Rising))
			return k.WriteAnalog(1, 1, []float64{2}, time.Second)
		}, -200561, "analog write failed: (-200561)\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.do(newTask(t, "bad-"+c.name))
			require.Error(t, err)
			assert.Equal(t, c.code, code(t, err))
			assert.Contains(t, err.Error(), c.msg)
			var e *daqmx.Error
			require.ErrorAs(t, err, &e)
			assert.NotEmpty(t, e.Detail, "the extended error information names what is at fault")
		})
	}
}

func TestDuplicateTaskName(t *testing.T) {
	virtual(t)
	newTask(t, "twice")
	_, err := daqmx.NewTask("twice")
	assert.Equal(t, int32(-200089), code(t, err))
	assert.Contains(t, err.Error(), "task creation failed: (-200089)")
}

func TestClearedTaskRefused(t *testing.T) {
	virtual(t)
	k := newTask(t, "cleared")
	require.NoError(t, k.Clear())
	require.NoError(t, k.Clear(), "a second Clear is a no-op")
	assert.False(t, k.Valid())
	assert.ErrorIs(t, k.CreateDigitalOutput("Dev1/port0"), daqmx.ErrCleared)
}

func TestErrorString(t *testing.T) {
	virtual(t)
	s, err := daqmx.ErrorString(daqmx.CodeGenStoppedToPreventRegen)
	require.NoError(t, err)
	assert.Contains(t, s, "regenerate")
}

// output is an AO task on x/y with vortex's settings: regeneration off,
// buffer of buffer samples, clocked from pfi0.
func output(t *testing.T, name string, rate, buffer int) *daqmx.Task {
	t.Helper()
	k := newTask(t, name)
	require.NoError(t, k.CreateAnalogVoltageOutput("Dev1/ao0", -10, 10))
	require.NoError(t, k.CreateAnalogVoltageOutput("Dev1/ao1", -10, 10))
	require.NoError(t, k.ConfigureSampleClock("pfi0", daqmx.Continuous, rate, buffer, 1, daqmx.Rising))
	require.NoError(t, k.SetRegeneration(false))
	require.NoError(t, k.SetOutputBufferSize(buffer))
	return k
}

func ramp(first, n int) []float64 {
	buf := make([]float64, 2*n)
	for i := range n {
		s := float64(first + i)
		buf[2*i], buf[2*i+1] = math.Mod(s/1000, 10), -math.Mod(s/2000, 10)
	}
	return buf
}

// What the card generated comes back: through its analog inputs (which
// measure the galvo timeline the outputs drive) and its recording.
func TestWriteReadBack(t *testing.T) {
	virtual(t)
	rec := t.TempDir()
	t.Setenv("VGV_TRIGGER", "free")
	t.Setenv("VGV_DAQMX_RECORD", rec)
	const block, blocks = 500, 12
	ao := output(t, "readback-out", 100000, 2*block)
	ai := newTask(t, "readback-in")
	require.NoError(t, ai.CreateAnalogVoltageInput("Dev1/ai0", -10, 10, daqmx.Referenced))
	require.NoError(t, ai.CreateAnalogVoltageInput("Dev1/ai1", -10, 10, daqmx.Differential))
	require.NoError(t, ai.ConfigureSampleClock("pfi0", daqmx.Continuous, 100000, 4*block, 1, daqmx.Rising))
	require.NoError(t, ai.SetInputBufferSize(4*blocks*block))

	// preload two blocks, start, then stream the rest: backpressure paces the writes
	require.NoError(t, ao.WriteAnalog(block, 2, ramp(0, block), time.Second))
	require.NoError(t, ao.WriteAnalog(block, 2, ramp(block, block), time.Second))
	require.NoError(t, ao.Start())
	assert.True(t, ao.Running())
	require.NoError(t, ai.Start())
	for b := 2; b < blocks; b++ {
		require.NoError(t, ao.WriteAnalog(block, 2, ramp(b*block, block), time.Second))
	}
	got := make([]float64, 2*blocks*block)
	require.NoError(t, ai.ReadAnalog(blocks*block, 2, got, 2*time.Second))
	assert.Equal(t, ramp(0, blocks*block), got, "ai0/ai1 measure what ao0/ao1 generated")
	require.NoError(t, ao.Stop())
	require.NoError(t, ai.Stop())

	raw, err := os.ReadFile(filepath.Join(rec, "readback-out.ao"))
	require.NoError(t, err)
	recorded := make([]float64, len(raw)/8)
	for i := range recorded {
		recorded[i] = math.Float64frombits(binary.LittleEndian.Uint64(raw[8*i:]))
	}
	assert.Equal(t, ramp(0, blocks*block), recorded)
}

func TestDigitalWrite(t *testing.T) {
	virtual(t)
	rec := t.TempDir()
	t.Setenv("VGV_TRIGGER", "free")
	t.Setenv("VGV_DAQMX_RECORD", rec)
	k := newTask(t, "strobes")
	require.NoError(t, k.CreateDigitalOutput("Dev1/port0"))
	require.NoError(t, k.ConfigureSampleClock("pfi0", daqmx.Continuous, 100000, 100, 1, daqmx.Rising))
	require.NoError(t, k.SetRegeneration(false))
	words := []uint32{1, 0, 1, 3, 0xffffffff}
	require.NoError(t, k.WriteDigital(len(words), 1, words, time.Second))
	raw, err := os.ReadFile(filepath.Join(rec, "strobes.do"))
	require.NoError(t, err)
	require.Len(t, raw, 4*len(words))
	for i, w := range words {
		assert.Equal(t, w, binary.LittleEndian.Uint32(raw[4*i:]))
	}

	// a word with lines outside the channel's is refused
	k8 := newTask(t, "strobes8")
	require.NoError(t, k8.CreateDigitalOutput("Dev1/port1/line0:3"))
	require.NoError(t, k8.ConfigureSampleClock("pfi0", daqmx.Continuous, 100000, 100, 1, daqmx.Rising))
	assert.Equal(t, int32(-200562), code(t, k8.WriteDigital(1, 1, []uint32{0x10}, time.Second)))
}

// A host that falls behind the clock underflows: vortex's message, and
// every later write fails too until the task stops.
func TestUnderflow(t *testing.T) {
	virtual(t)
	t.Setenv("VGV_TRIGGER", "free")
	k := output(t, "underflow", 4000000, 100)
	require.NoError(t, k.WriteAnalog(100, 2, ramp(0, 100), time.Second))
	require.NoError(t, k.Start())
	time.Sleep(5 * time.Millisecond) // 20,000 samples clocked, 100 written
	err := k.WriteAnalog(100, 2, ramp(100, 100), time.Second)
	require.ErrorIs(t, err, daqmx.ErrUnderflow)
	assert.Equal(t, "analog write failed: (-200290) buffer underflow", err.Error())
	assert.ErrorIs(t, k.WriteAnalog(100, 2, ramp(100, 100), time.Second), daqmx.ErrUnderflow)

	// stop and start again: a fresh generation
	require.NoError(t, k.Stop())
	require.NoError(t, k.WriteAnalog(100, 2, ramp(0, 100), time.Second))
}

// A write that finds no space within its timeout (the clock not running:
// no trigger) fails with NI's code and description.
func TestWriteTimeout(t *testing.T) {
	virtual(t)
	t.Setenv("VGV_TRIGGER", "")
	k := output(t, "stalled", 100000, 100)
	require.NoError(t, k.WriteAnalog(100, 2, ramp(0, 100), time.Second))
	require.NoError(t, k.Start())
	start := time.Now()
	err := k.WriteAnalog(10, 2, ramp(100, 10), 50*time.Millisecond)
	assert.GreaterOrEqual(t, time.Since(start), 50*time.Millisecond)
	assert.Equal(t, int32(daqmx.CodeSamplesCanNotYetBeWritten), code(t, err))
	assert.True(t, strings.HasPrefix(err.Error(), "analog write failed: (-200292)\n"), err.Error())
}

// Stop from another goroutine releases a write blocked for buffer space.
func TestStopReleasesBlockedWrite(t *testing.T) {
	virtual(t)
	t.Setenv("VGV_TRIGGER", "")
	k := output(t, "blocked", 100000, 100)
	require.NoError(t, k.WriteAnalog(100, 2, ramp(0, 100), time.Second))
	require.NoError(t, k.Start())
	done := make(chan error, 1)
	go func() { done <- k.WriteAnalog(10, 2, ramp(100, 10), -1) }()
	time.Sleep(20 * time.Millisecond)
	require.NoError(t, k.Stop())
	select {
	case err := <-done:
		assert.Equal(t, int32(daqmx.CodeOperationAborted), code(t, err))
	case <-time.After(5 * time.Second):
		t.Fatal("the blocked write did not return after Stop")
	}
}

// Without the library, a clear error names it and the variable.
func TestMissingLibrary(t *testing.T) {
	if os.Getenv("VG_DAQMX_CHILD") == "1" {
		err := daqmx.Load()
		if err == nil {
			os.Exit(3)
		}
		_, terr := daqmx.NewTask("x")
		if !errors.Is(terr, daqmx.ErrNoLibrary) {
			os.Exit(4)
		}
		os.Stdout.WriteString(err.Error())
		os.Exit(0)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestMissingLibrary$")
	cmd.Env = append(os.Environ(), "VG_DAQMX_CHILD=1", daqmx.LibraryEnv+"=/nonexistent/libnidaqmx.so")
	out, err := cmd.Output()
	require.NoError(t, err, "%s", out)
	assert.Contains(t, string(out), "libnidaqmx.so")
	assert.Contains(t, string(out), daqmx.LibraryEnv)
	assert.Contains(t, string(out), "/nonexistent/libnidaqmx.so")
}

// The virtual card reports its NI-DAQmx version as the real driver does.
func TestVersion(t *testing.T) {
	virtual(t)
	assert.Equal(t, "23.5.0", daqmx.Version())
}

// A library that loads but lacks a function the driver calls (an old
// NI-DAQmx, or another library under that name) is refused at load, naming
// the function, and nothing of it is called.
func TestUnsupportedLibrary(t *testing.T) {
	if os.Getenv("VG_DAQMX_CHILD") == "2" {
		err := daqmx.Load()
		if err == nil {
			os.Exit(3)
		}
		if !errors.Is(err, daqmx.ErrUnsupportedLibrary) || !errors.Is(err, daqmx.ErrNoLibrary) {
			os.Exit(4)
		}
		if _, terr := daqmx.NewTask("x"); !errors.Is(terr, daqmx.ErrNoLibrary) {
			os.Exit(5)
		}
		os.Stdout.WriteString(err.Error())
		os.Exit(0)
	}
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		t.Skip("no gcc to build an old library with")
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "old.c")
	lib := filepath.Join(dir, "libnidaqmx.so")
	// Two of the functions, as a library from before the others would have.
	require.NoError(t, os.WriteFile(src, []byte("int DAQmxCreateTask(const char* n, void** h) { *h = 0; return 0; }\n"+
		"int DAQmxClearTask(void* h) { return 0; }\n"), 0o644))
	out, err := exec.Command(gcc, "-shared", "-fPIC", "-o", lib, src).CombinedOutput()
	require.NoError(t, err, "%s", out)
	cmd := exec.Command(os.Args[0], "-test.run=^TestUnsupportedLibrary$")
	cmd.Env = append(os.Environ(), "VG_DAQMX_CHILD=2", daqmx.LibraryEnv+"="+lib)
	out, err = cmd.Output()
	require.NoError(t, err, "%s", out)
	assert.Contains(t, string(out), "lacks DAQmxStartTask")
	assert.Contains(t, string(out), lib)
	assert.Contains(t, string(out), "update NI-DAQmx")
}
