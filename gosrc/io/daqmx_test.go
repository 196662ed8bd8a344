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

// vortex's standalone next: the card records every ClockDivisor-th
// sample of the stream's column, scaled to volts and clipped, and the
// strobes; both before and after start.
func TestDAQmxIOStandaloneWrites(t *testing.T) {
	rec := virtualDAQmx(t)
	c := galvoConfig("solo", 100)
	c.ClockDivisor, c.SamplesPerSecond = 2, 20000
	c.Channels[1].Stream = gio.StreamSampleTarget // ao1 from another stream's column 1
	d, err := gio.NewDAQmxIO(c, nil)
	require.NoError(t, err)
	defer d.Close()
	sc := gio.DefaultDAQmxConfig()
	sc.Name, sc.SamplesPerBlock, sc.BlocksToBuffer = "solo-strobe", 100, 4
	sc.Channels = []gio.DAQmxChannel{{Kind: gio.DigitalOutput, Name: "Dev1/port0", Stream: gio.StreamStrobes}}
	ds, err := gio.NewDAQmxIO(sc, nil)
	require.NoError(t, err)
	defer ds.Close()
	require.NoError(t, d.PrepareStandalone())
	var want []float64
	var words []uint32
	for b := range 3 {
		count := 100 - 20*b // shorter blocks are fine
		s := streams2D(count, 2)
		for i := range count {
			s.GalvoTarget.Data[2*i] = float64(b*1000+i) / 10
			s.SampleTarget.Data[2*i+1] = -float64(i) / 100
			s.Strobes.Data[i] = uint32(i % 7)
		}
		for i := 0; i < count; i += 2 {
			want = append(want, math.Min(s.GalvoTarget.Data[2*i]/1.5, 10), s.SampleTarget.Data[2*i+1]/1.5)
		}
		words = append(words, s.Strobes.Data...)
		n, err := d.NextStandalone(int64(b), count, s)
		require.NoError(t, err)
		assert.Equal(t, count, n)
		n, err = ds.NextStandalone(int64(b), count, s)
		require.NoError(t, err)
		assert.Equal(t, count, n)
		if b == 1 {
			require.NoError(t, d.Start())
		}
	}
	require.NoError(t, d.Stop())
	assert.Equal(t, want, readF64(t, filepath.Join(rec, "solo.ao")))
	raw, err := os.ReadFile(filepath.Join(rec, "solo-strobe.do"))
	require.NoError(t, err)
	require.Len(t, raw, 4*len(words))
	for i, w := range words {
		require.Equal(t, w, binary.LittleEndian.Uint32(raw[4*i:]), "word %d", i)
	}
}

// The inputs read back into their streams: ai0 measures what ao0 wrote
// (the virtual card's galvo timeline), each card sample repeated
// ClockDivisor times and scaled by logical_units_per_physical_unit.
func TestDAQmxIOStandaloneReads(t *testing.T) {
	virtualDAQmx(t)
	t.Setenv("VGV_IO_DELAY", "0")
	out, err := gio.NewDAQmxIO(galvoConfig("src", 100), nil)
	require.NoError(t, err)
	defer out.Close()
	s := streams2D(100, 2)
	for i := range 100 {
		s.GalvoTarget.Data[2*i] = 1.5 * float64(i) / 20 // ao0: i/20 V
	}
	_, err = out.NextStandalone(0, 100, s)
	require.NoError(t, err)
	c := gio.DefaultDAQmxConfig()
	c.Name, c.SamplesPerBlock, c.ClockDivisor, c.SamplesPerSecond, c.BlocksToBuffer = "sense", 100, 4, 4000, 4
	c.Channels = []gio.DAQmxChannel{{Kind: gio.AnalogVoltageInput, Name: "Dev1/ai0", Stream: gio.StreamGalvoActual,
		Channel: 1, LogicalUnitsPerPhysicalUnit: 2, Min: -10, Max: 10, Terminal: daqmx.Referenced}}
	in, err := gio.NewDAQmxIO(c, nil)
	require.NoError(t, err)
	defer in.Close()
	require.NoError(t, in.Start())
	got := streams2D(100, 2)
	n, err := in.NextStandalone(0, 100, got)
	require.NoError(t, err)
	assert.Equal(t, 100, n)
	for r := range 100 {
		require.InDelta(t, 2*float64(r/4)/20, got.GalvoActual.Data[2*r+1], 1e-12, "row %d", r)
		require.Zero(t, got.GalvoActual.Data[2*r], "column 0 untouched")
	}
}

// vortex's refusals, with its messages; none of them stops the task.
func TestDAQmxIOStandaloneRefuses(t *testing.T) {
	virtualDAQmx(t)
	c := galvoConfig("misuse", 100)
	c.ClockDivisor = 2
	d, err := gio.NewDAQmxIO(c, nil)
	require.NoError(t, err)
	defer d.Close()
	cases := []struct {
		name  string
		count int
		edit  func(*gio.BlockStreams)
		ch    *gio.DAQmxChannel
		msg   string
	}{
		{"too long", 102, nil, nil, "block is larger than maximum configured size: 102 > 100"},
		{"divisor", 51, nil, nil, "block size (51) is not evenly divisible by clock divisor (2): 1 != 0"},
		{"1-D", 100, func(s *gio.BlockStreams) { s.GalvoTarget.Dims = 1 }, nil, "stream of dimension 2 is required: 1"},
		{"short", 100, func(s *gio.BlockStreams) { s.GalvoTarget.Rows = 50 }, nil, "stream is incorrectly sized: [50 x 2] vs [:100,0]"},
		{"narrow", 100, func(s *gio.BlockStreams) { s.GalvoTarget.Cols = 1 }, nil, "stream is incorrectly sized: [100 x 1] vs [:100,1]"},
		{"counter", 100, nil, &gio.DAQmxChannel{Kind: gio.AnalogVoltageOutput, Name: "Dev1/ao0", Stream: gio.StreamCounter},
			"tuple condition failed to match at target index"},
		{"bounds", 100, nil, &gio.DAQmxChannel{Kind: gio.AnalogVoltageOutput, Name: "Dev1/ao0", Stream: 6},
			"tuple index out of bounds"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dd := d
			if tc.ch != nil {
				cc := gio.DefaultDAQmxConfig()
				cc.Name, cc.PersistentTask = "misuse-"+tc.name, false
				ch := *tc.ch
				ch.Min, ch.Max, ch.LogicalUnitsPerPhysicalUnit = -10, 10, 1
				cc.Channels = []gio.DAQmxChannel{ch}
				var err error
				dd, err = gio.NewDAQmxIO(cc, nil)
				require.NoError(t, err)
				defer dd.Close()
				require.NoError(t, dd.PrepareStandalone())
			}
			requireNextRefused(t, dd.NextStandalone, tc.count, tc.edit, tc.msg)
		})
	}
	// a non-persistent task before prepare, in use and closed
	cc := galvoConfig("unprepared", 100)
	cc.PersistentTask = false
	u, err := gio.NewDAQmxIO(cc, nil)
	require.NoError(t, err)
	requireStandaloneLifecycle(t, u)
}

// Close ends a next blocked in NI-DAQmx (a write waiting for buffer
// space) with ErrClosed, and an engine's claim refuses both.
func TestDAQmxIOStandaloneCloseUnblocks(t *testing.T) {
	virtualDAQmx(t)
	c := galvoConfig("blocked", 100)
	c.BlocksToBuffer, c.ReadWriteTimeout = 1, -1 // wait forever
	d, err := gio.NewDAQmxIO(c, nil)
	require.NoError(t, err)
	s := streams2D(100, 2)
	for range 2 { // the buffer: blocks_to_buffer + 1 blocks
		_, err = d.NextStandalone(0, 100, s)
		require.NoError(t, err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := d.NextStandalone(2, 100, s)
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("the third block was not blocked: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	require.NoError(t, d.Close())
	select {
	case err := <-done:
		require.ErrorIs(t, err, backend.ErrClosed)
	case <-time.After(5 * time.Second):
		t.Fatal("Close left the blocked next blocked")
	}

	e, err := gio.NewDAQmxIO(galvoConfig("claimed", 100), nil)
	require.NoError(t, err)
	require.NoError(t, e.Claims()[0].Take())
	_, err = e.NextStandalone(0, 100, s)
	require.ErrorIs(t, err, backend.ErrInUse)
	require.ErrorIs(t, e.Close(), backend.ErrInUse)
	e.Claims()[0].Drop()
	require.NoError(t, e.Close())
}
