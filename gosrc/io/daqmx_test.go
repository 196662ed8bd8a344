package io_test

import (
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/driver/daqmx"
	"github.com/vortexgo/vortexgo/gosrc/engine"
	"github.com/vortexgo/vortexgo/gosrc/internal/virtualtest"
	gio "github.com/vortexgo/vortexgo/gosrc/io"
)

func virtualDAQmx(t *testing.T) string {
	t.Helper()
	t.Setenv(daqmx.LibraryEnv, virtualtest.Library(t, "libnidaqmx.so"))
	rec := t.TempDir()
	t.Setenv("VGV_TRIGGER", "free")
	t.Setenv("VGV_DAQMX_RECORD", rec)
	return rec
}

func galvoConfig(name string, block int) gio.DAQmxConfig {
	c := gio.DefaultDAQmxConfig()
	c.Name, c.SamplesPerBlock, c.BlocksToBuffer = name, block, 4
	c.Channels = []gio.DAQmxChannel{
		{Kind: gio.AnalogVoltageOutput, Name: "Dev1/ao0", Stream: gio.StreamGalvoTarget, Channel: 0, LogicalUnitsPerPhysicalUnit: 1.5, Min: -10, Max: 10},
		{Kind: gio.AnalogVoltageOutput, Name: "Dev1/ao1", Stream: gio.StreamGalvoTarget, Channel: 1, LogicalUnitsPerPhysicalUnit: 1.5, Min: -10, Max: 10},
	}
	return c
}

func readF64(t *testing.T, path string) []float64 {
	t.Helper()
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	v := make([]float64, len(raw)/8)
	for i := range v {
		v[i] = math.Float64frombits(binary.LittleEndian.Uint64(raw[8*i:]))
	}
	return v
}

// Blocks handed to DAQmxIO reach the card scaled to volts and clipped,
// in order, across two sessions of a persistent task.
func TestDAQmxIOWritesBlocks(t *testing.T) {
	rec := virtualDAQmx(t)
	const block = 200
	d, err := gio.NewDAQmxIO(galvoConfig("galvo", block), nil)
	require.NoError(t, err)
	defer d.Close()
	require.NoError(t, d.Prepare(engine.IOInfo{RecordsPerBlock: block, OutputChannels: 2, InputChannels: 1}))
	var want []float64
	session := func(blocks int) {
		for b := range blocks {
			target := make([]float64, 2*block)
			for i := range target {
				target[i] = float64(b*2*block+i) / 100 // up to 24 units: clipped at 10 V after /1.5
			}
			for i := range block {
				for c := range 2 {
					want = append(want, math.Min(target[2*i+c]/1.5, 10))
				}
			}
			require.NoError(t, d.Next(&engine.IOBlock{ID: int64(b), Records: block, GalvoTarget: target,
				GalvoActual: make([]float64, block)}))
			if b == 1 {
				require.NoError(t, d.Start()) // two blocks preloaded
				assert.True(t, d.Running())
			}
		}
		require.NoError(t, d.Stop())
		assert.False(t, d.Running())
	}
	session(6)
	session(3)
	assert.Equal(t, want, readF64(t, filepath.Join(rec, "galvo.ao")))
}

func TestDAQmxIOStrobes(t *testing.T) {
	rec := virtualDAQmx(t)
	c := gio.DefaultDAQmxConfig()
	c.Name, c.SamplesPerBlock, c.BlocksToBuffer, c.PersistentTask = "strobe", 8, 2, false
	c.Channels = []gio.DAQmxChannel{{Kind: gio.DigitalOutput, Name: "Dev1/port0", Stream: gio.StreamStrobes}}
	d, err := gio.NewDAQmxIO(c, nil)
	require.NoError(t, err)
	defer d.Close()
	require.NoError(t, d.Prepare(engine.IOInfo{RecordsPerBlock: 8, OutputChannels: 2, InputChannels: 1}))
	words := []uint32{1, 0, 0, 1, 2, 0, 3, 0}
	require.NoError(t, d.Next(&engine.IOBlock{ID: 0, Records: 8, GalvoTarget: make([]float64, 16), Strobes: words}))
	require.NoError(t, d.Start())
	require.NoError(t, d.Stop())
	raw, err := os.ReadFile(filepath.Join(rec, "strobe.do"))
	require.NoError(t, err)
	require.Len(t, raw, 32)
	for i, w := range words {
		assert.Equal(t, w, binary.LittleEndian.Uint32(raw[4*i:]))
	}
}

// A host that falls behind the clock gets vortex's underflow error, and
// the task stops (stop_on_error).
func TestDAQmxIOUnderflow(t *testing.T) {
	virtualDAQmx(t)
	c := galvoConfig("late", 100)
	c.SamplesPerSecond, c.BlocksToBuffer = 4000000, 1
	d, err := gio.NewDAQmxIO(c, nil)
	require.NoError(t, err)
	defer d.Close()
	require.NoError(t, d.Prepare(engine.IOInfo{RecordsPerBlock: 100, OutputChannels: 2, InputChannels: 1}))
	blk := func(id int64) *engine.IOBlock {
		return &engine.IOBlock{ID: id, Records: 100, GalvoTarget: make([]float64, 200)}
	}
	require.NoError(t, d.Next(blk(0)))
	require.NoError(t, d.Start())
	time.Sleep(5 * time.Millisecond)
	err = d.Next(blk(1))
	require.ErrorIs(t, err, daqmx.ErrUnderflow)
	assert.Equal(t, "analog write failed: (-200290) buffer underflow", err.Error())
	assert.False(t, d.Running(), "stop_on_error stopped the task")
}

func TestDAQmxConfigValidate(t *testing.T) {
	cases := []struct {
		edit func(*gio.DAQmxConfig)
		msg  string
	}{
		{func(c *gio.DAQmxConfig) { c.BlocksToBuffer = 0 }, "must buffer at least 1 block: 0"},
		{func(c *gio.DAQmxConfig) { c.ClockDivisor = 0 }, "minimum clock divisor is 1: 0"},
		{func(c *gio.DAQmxConfig) { c.ClockDivisor = 3 }, "samples per block (100) must be evenly divisible by clock divisor (3): 1 != 0"},
		{func(c *gio.DAQmxConfig) { c.ClockDivisor, c.SamplesPerSecond = 4, 1001 },
			"samples per second (1001) must be evenly divisible by clock divisor (4): 1 != 0"},
		{func(c *gio.DAQmxConfig) {
			c.Channels = []gio.DAQmxChannel{{Kind: gio.AnalogVoltageOutput, Name: "Dev1/ao0:1", Min: -1, Max: 1}}
		}, "analog inputs/outputs must map to a single DAQmx channel: Dev1/ao0:1"},
	}
	for _, c := range cases {
		cfg := gio.DefaultDAQmxConfig()
		c.edit(&cfg)
		err := cfg.Validate()
		require.ErrorIs(t, err, backend.ErrInvalid)
		assert.Contains(t, err.Error(), c.msg)
	}
}

// Prepare refuses what the engine's blocks cannot feed.
func TestDAQmxIOPrepareRefuses(t *testing.T) {
	virtualDAQmx(t)
	info := engine.IOInfo{RecordsPerBlock: 100, OutputChannels: 2, InputChannels: 1}
	cases := []struct {
		ch  gio.DAQmxChannel
		msg string
	}{
		{gio.DAQmxChannel{Kind: gio.AnalogVoltageOutput, Name: "Dev1/ao0", Stream: gio.StreamSampleTarget, Min: -1, Max: 1, LogicalUnitsPerPhysicalUnit: 1},
			"reads stream SampleTarget, expected GalvoTarget"},
		{gio.DAQmxChannel{Kind: gio.AnalogVoltageOutput, Name: "Dev1/ao0", Stream: gio.StreamGalvoTarget, Channel: 2, Min: -1, Max: 1, LogicalUnitsPerPhysicalUnit: 1},
			"stream is incorrectly sized"},
		{gio.DAQmxChannel{Kind: gio.AnalogVoltageInput, Name: "Dev1/ai0", Stream: gio.StreamGalvoActual, Min: -1, Max: 1, LogicalUnitsPerPhysicalUnit: 1},
			"does not stream inputs yet"},
	}
	for i, c := range cases {
		cfg := gio.DefaultDAQmxConfig()
		cfg.Name, cfg.PersistentTask = "refuse"+string(rune('a'+i)), false
		cfg.Channels = []gio.DAQmxChannel{c.ch}
		d, err := gio.NewDAQmxIO(cfg, nil)
		require.NoError(t, err)
		err = d.Prepare(info)
		require.ErrorIs(t, err, backend.ErrInvalid)
		assert.Contains(t, err.Error(), c.msg)
	}
	cfg := galvoConfig("small", 50)
	d, err := gio.NewDAQmxIO(cfg, nil)
	require.NoError(t, err)
	defer d.Close()
	assert.ErrorContains(t, d.Prepare(info), "block is larger than maximum configured size: 100 > 50")
}
