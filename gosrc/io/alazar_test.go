package io_test

import (
	"encoding/binary"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/driver/alazar"
	"github.com/vortexgo/vortexgo/gosrc/engine"
	"github.com/vortexgo/vortexgo/gosrc/internal/virtualtest"
	gio "github.com/vortexgo/vortexgo/gosrc/io"
)

// AlazarIO's tests run against the virtual digitizer's galvo DAC
// (instruments/virtual/atsapi.c). Its VGV_DAC_RECORD file is opened once
// per process, so the tests share one folder and read what each appends.

var dacRecordDir string

// virtualDAC points the driver at the virtual digitizer and returns the
// DAC's record file and park file.
func virtualDAC(t *testing.T) (rec, park string) {
	t.Helper()
	if dacRecordDir == "" {
		dir, err := os.MkdirTemp("", "vgdac")
		require.NoError(t, err)
		dacRecordDir = dir
	}
	virtualtest.Require(t, map[string]string{"VGV_DAC_RECORD": dacRecordDir, "VGV_NOISE_LEVEL": "0"})
	dir := os.Getenv("VGV_DAC_RECORD")
	return filepath.Join(dir, "dac1.bin"), filepath.Join(dir, "dac1.park")
}

// recorded is the rows (x, y volts) the DAC record holds from row from on.
func recorded(t *testing.T, path string, from int) [][2]float64 {
	t.Helper()
	raw, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil
	}
	require.NoError(t, err)
	var rows [][2]float64
	for i := from * 16; i+16 <= len(raw); i += 16 {
		rows = append(rows, [2]float64{math.Float64frombits(binary.LittleEndian.Uint64(raw[i:])),
			math.Float64frombits(binary.LittleEndian.Uint64(raw[i+8:]))})
	}
	return rows
}

func rows(t *testing.T, path string) int { return len(recorded(t, path, 0)) }

func dacConfig(block, buffered int) gio.AlazarIOConfig {
	c := gio.DefaultAlazarIOConfig()
	c.SamplesPerBlock, c.BlocksToBuffer = block, buffered
	for i := range c.AnalogOutputChannels {
		ch := &c.AnalogOutputChannels[i]
		ch.Stream, ch.Channel, ch.LogicalUnitsPerPhysicalUnit = gio.StreamGalvoTarget, i, 1.5
	}
	return c
}

// volts is what the DAC plays for stream value v of a channel scaled by
// 1.5 and limited to +-5 V: the code, truncated, back in volts.
func volts(v float64) float64 {
	code := math.Trunc(math.Min(math.Max(v/1.5, -5), 5)/(5.0/32767) + 32768)
	return (code - 32768) * (5.0 / 32767)
}

func TestAlazarIOConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*gio.AlazarIOConfig)
		want string
	}{
		{"defaults", func(*gio.AlazarIOConfig) {}, ""},
		{"no blocks", func(c *gio.AlazarIOConfig) { c.BlocksToBuffer = 0 }, "must buffer at least 1 block: 0"},
		{"divisor", func(c *gio.AlazarIOConfig) { c.Divisor = 0 }, "minimum divisor is 1: 0"},
		{"empty block", func(c *gio.AlazarIOConfig) { c.SamplesPerBlock = 0 }, "samples per block must be positive: 0"},
		{"scale", func(c *gio.AlazarIOConfig) { c.AnalogOutputChannels[1].LogicalUnitsPerPhysicalUnit = 0 },
			"analog output channel 1: logical_units_per_physical_unit=0, expected a non-zero number"},
		{"limits", func(c *gio.AlazarIOConfig) { c.AnalogOutputChannels[0].Min = 6 },
			"analog output channel 0: limits [6, 5], expected min <= max"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := gio.DefaultAlazarIOConfig()
			tc.edit(&c)
			err := c.Validate()
			if tc.want == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, backend.ErrInvalid)
			require.EqualError(t, err, tc.want)
		})
	}
	d := gio.DefaultAlazarIOConfig()
	assert.Equal(t, uint32(1), d.SystemIndex)
	assert.Equal(t, 100, d.SamplesPerBlock)
	assert.True(t, d.StopOnError)
	assert.Equal(t, gio.AlazarAnalogChannel{LogicalUnitsPerPhysicalUnit: 1, Min: -5, Max: 5}, d.AnalogOutputChannels[0])
}

// Blocks handed to AlazarIO reach the DAC as codes, in order, wrapping at
// the ring's end, across two sessions; the park position is set.
func TestAlazarIOWritesBlocks(t *testing.T) {
	rec, park := virtualDAC(t)
	const block = 100
	c := dacConfig(block, 2)
	c.AnalogOutputChannels[0].Park, c.AnalogOutputChannels[1].Park = 3, -30 // -30 clips to -5 V
	d, err := gio.NewAlazarIO(c, nil)
	require.NoError(t, err)
	defer func() { require.NoError(t, d.Close()) }()
	assert.Equal(t, 3*block, d.RingSamples()) // one block more than vortex's
	assert.Equal(t, 1, d.Slot())              // the first slot that holds it (8 Ki words)
	raw, err := os.ReadFile(park)
	require.NoError(t, err)
	assert.Equal(t, []uint16{45874, 1}, // 2 V: 2/(5/32767) + 32768, truncated
		[]uint16{binary.LittleEndian.Uint16(raw), binary.LittleEndian.Uint16(raw[2:])})

	require.NoError(t, d.Prepare(engine.IOInfo{RecordsPerBlock: block, OutputChannels: 2}))
	for session := range 2 {
		before := rows(t, rec)
		var want [][2]float64
		for b := range 5 { // 5 blocks through a ring of 3: wraps
			target := make([]float64, 2*block)
			for i := range target {
				target[i] = float64((session+1)*(b*2*block+i)) / 37 // up to ~54 units: clipped
			}
			for i := range block {
				want = append(want, [2]float64{volts(target[2*i]), volts(target[2*i+1])})
			}
			require.NoError(t, d.Next(&engine.IOBlock{ID: int64(b), Records: block, GalvoTarget: target}))
			if b == 1 {
				require.NoError(t, d.Start())
				assert.True(t, d.Running())
			}
		}
		got := recorded(t, rec, before)
		require.Len(t, got, len(want))
		for i := range want {
			require.InDelta(t, want[i][0], got[i][0], 1e-12, "session %d sample %d x", session, i)
			require.InDelta(t, want[i][1], got[i][1], 1e-12, "session %d sample %d y", session, i)
		}
		require.NoError(t, d.Stop())
		assert.False(t, d.Running())
	}
}

// The divisor keeps every n-th sample; a short block is fine.
func TestAlazarIODivisor(t *testing.T) {
	rec, _ := virtualDAC(t)
	c := dacConfig(8, 1)
	c.Divisor = 4
	d, err := gio.NewAlazarIO(c, nil)
	require.NoError(t, err)
	defer d.Close()
	require.NoError(t, d.Prepare(engine.IOInfo{RecordsPerBlock: 8, OutputChannels: 2}))
	before := rows(t, rec)
	target := []float64{0, 0, 1, 1, 2, 2, 3, 3, 4, -4, 5, 5, 6, 6, 7, 7}
	require.NoError(t, d.Next(&engine.IOBlock{ID: 0, Records: 8, GalvoTarget: target}))
	got := recorded(t, rec, before)
	require.Len(t, got, 2)
	assert.InDelta(t, volts(4), got[1][0], 1e-12)
	assert.InDelta(t, volts(-4), got[1][1], 1e-12)
}

func TestAlazarIOErrors(t *testing.T) {
	virtualDAC(t)
	info := engine.IOInfo{RecordsPerBlock: 64, OutputChannels: 2}
	for _, tc := range []struct {
		name    string
		edit    func(*gio.AlazarIOConfig)
		info    engine.IOInfo
		block   *engine.IOBlock
		initErr string
		prepErr string
		nextErr string
	}{
		{name: "no slot holds the ring", edit: func(c *gio.AlazarIOConfig) { c.SamplesPerBlock, c.BlocksToBuffer = 400_000, 2 },
			initErr: "could not find DAC slot with capacity for 1200000 samples"},
		{name: "wrong stream", edit: func(c *gio.AlazarIOConfig) { c.AnalogOutputChannels[1].Stream = gio.StreamCounter },
			info: info, prepErr: "AlazarIO: analog output channel 1 reads stream Counter, expected GalvoTarget (1)"},
		{name: "channel beyond the stream", edit: func(c *gio.AlazarIOConfig) { c.AnalogOutputChannels[1].Channel = 2 },
			info: info, prepErr: "stream is incorrectly sized: [64,2] vs [:64,2] (AlazarIO, analog output channel 1)"},
		{name: "engine blocks too large", edit: func(c *gio.AlazarIOConfig) {},
			info: engine.IOInfo{RecordsPerBlock: 65, OutputChannels: 2}, prepErr: "block is larger than maximum configured size: 65 > 64"},
		{name: "block too large", edit: func(c *gio.AlazarIOConfig) {}, info: info,
			block: &engine.IOBlock{Records: 65, GalvoTarget: make([]float64, 130)}, nextErr: "block is larger than maximum configured size: 65 > 64"},
		{name: "divisor", edit: func(c *gio.AlazarIOConfig) { c.Divisor = 4 }, info: info,
			block: &engine.IOBlock{Records: 30, GalvoTarget: make([]float64, 60)}, nextErr: "block size (30) is not evenly divisible by divisor (4): 2 != 0"},
		{name: "short stream", edit: func(c *gio.AlazarIOConfig) {}, info: info,
			block: &engine.IOBlock{Records: 30, GalvoTarget: make([]float64, 59)}, nextErr: "stream is incorrectly sized: [29 x 2] vs [:30,0] (AlazarIO analog output channel 0, stream GalvoTarget)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := dacConfig(64, 2)
			tc.edit(&c)
			d, err := gio.NewAlazarIO(c, nil)
			if tc.initErr != "" {
				require.EqualError(t, err, tc.initErr)
				return
			}
			require.NoError(t, err)
			defer d.Close()
			err = d.Prepare(tc.info)
			if tc.prepErr != "" {
				require.ErrorIs(t, err, backend.ErrInvalid)
				require.ErrorContains(t, err, tc.prepErr)
				return
			}
			require.NoError(t, err)
			require.NoError(t, d.Start())
			err = d.Next(tc.block)
			require.ErrorIs(t, err, backend.ErrInvalid)
			require.EqualError(t, err, tc.nextErr)
			assert.False(t, d.Running(), "stop_on_error stopped the DAC")
		})
	}
}

// Without stop_on_error a failed block leaves the DAC playing.
func TestAlazarIOKeepsPlayingWithoutStopOnError(t *testing.T) {
	virtualDAC(t)
	c := dacConfig(64, 2)
	c.StopOnError = false
	d, err := gio.NewAlazarIO(c, nil)
	require.NoError(t, err)
	defer d.Close()
	require.NoError(t, d.Prepare(engine.IOInfo{RecordsPerBlock: 64, OutputChannels: 2}))
	require.NoError(t, d.Start())
	require.Error(t, d.Next(&engine.IOBlock{Records: 65}))
	assert.True(t, d.Running())
}

// The IO and an acquisition share the board: the IO's board never aborts
// the capture, closing it leaves the acquisition's capture running, and
// after Close the IO refuses blocks.
func TestAlazarIOSharesTheBoard(t *testing.T) {
	virtualDAC(t)
	acq, err := alazar.Open(1, 1)
	require.NoError(t, err)
	defer acq.Close()
	require.NoError(t, acq.ConfigureClockInternal(800_000_000, 0))
	require.NoError(t, acq.ConfigureInput(alazar.ChannelB, alazar.CouplingDC, 400, 50))
	require.NoError(t, acq.ConfigureCapture(alazar.ChannelB, 256, 16, alazar.InfiniteAcquisition, 0))
	d, err := gio.NewAlazarIO(dacConfig(64, 2), nil)
	require.NoError(t, err)
	require.NoError(t, d.Prepare(engine.IOInfo{RecordsPerBlock: 64, OutputChannels: 2}))
	require.NoError(t, d.Next(&engine.IOBlock{Records: 64, GalvoTarget: make([]float64, 128)}))
	require.NoError(t, d.Start())
	require.NoError(t, acq.StartCapture())
	require.NoError(t, d.Close())
	assert.True(t, acq.Running(), "the IO's Close left the capture to its owner")
	require.NoError(t, acq.StopCapture())
	require.ErrorIs(t, d.Next(&engine.IOBlock{Records: 64, GalvoTarget: make([]float64, 128)}), engine.ErrStopped)
	require.ErrorIs(t, d.Start(), engine.ErrStopped)
	require.NoError(t, d.Close()) // twice is fine
}

func TestAlazarIOMissingLibrary(t *testing.T) {
	virtualtest.Require(t, nil)
	if os.Getenv("VGV_CHILD") != t.Name() {
		cmd := exec.Command(os.Args[0], "-test.run=^"+t.Name()+"$", "-test.count=1")
		cmd.Env = append(os.Environ(), alazar.EnvLibrary+"=/nonexistent/libATSApi.so", "VGV_CHILD="+t.Name())
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
		require.Contains(t, string(out), "PASS")
		return
	}
	_, err := gio.NewAlazarIO(dacConfig(64, 2), nil)
	require.ErrorIs(t, err, alazar.ErrNoLibrary)
	require.ErrorContains(t, err, alazar.EnvLibrary)
}

// vortex's standalone next: the DAC records every Divisor-th sample of
// each output's column of its stream (y from another stream than x), as
// codes, wrapping through the ring, before and after start; prepare
// rewinds.
func TestAlazarIOStandaloneWrites(t *testing.T) {
	rec, _ := virtualDAC(t)
	c := dacConfig(100, 1) // a ring of 200 words
	c.Divisor = 2
	c.AnalogOutputChannels[1].Stream, c.AnalogOutputChannels[1].Channel = gio.StreamSampleActual, 2
	d, err := gio.NewAlazarIO(c, nil)
	require.NoError(t, err)
	defer d.Close()
	require.NoError(t, d.PrepareStandalone())
	before := rows(t, rec)
	var want [][2]float64
	for b := range 6 { // 6 x 50 words through a ring of 200
		count := 100 - 20*(b%2) // shorter blocks are fine
		s := streams2D(count, 3)
		for i := range count {
			s.GalvoTarget.Data[3*i] = float64(b*1000+i) / 37
			s.SampleActual.Data[3*i+2] = -float64(i) / 9
		}
		for i := 0; i < count; i += 2 {
			want = append(want, [2]float64{volts(s.GalvoTarget.Data[3*i]), volts(s.SampleActual.Data[3*i+2])})
		}
		n, err := d.NextStandalone(int64(b), count, s)
		require.NoError(t, err)
		assert.Equal(t, count, n)
		if b == 1 {
			require.NoError(t, d.Start())
		}
	}
	assert.True(t, d.Running())
	require.NoError(t, d.Stop())
	got := recorded(t, rec, before)
	require.Len(t, got, len(want))
	for i := range want {
		require.InDelta(t, want[i][0], got[i][0], 1e-12, "sample %d x", i)
		require.InDelta(t, want[i][1], got[i][1], 1e-12, "sample %d y", i)
	}
	require.NoError(t, d.PrepareStandalone()) // rewinds: a block of the whole ring needs no wrap
	n, err := d.NextStandalone(0, 100, streams2D(100, 3))
	require.NoError(t, err)
	assert.Equal(t, 100, n)
}

// vortex's refusals, with its messages (each stops the DAC, as vortex's
// _dispatch_block does); not prepared, closed and in use are refused
// before the block and stop nothing.
func TestAlazarIOStandaloneRefuses(t *testing.T) {
	virtualDAC(t)
	cases := []struct {
		name  string
		count int
		edit  func(*gio.BlockStreams)
		cfg   func(*gio.AlazarIOConfig)
		msg   string
	}{
		{"too long", 102, nil, nil, "block is larger than maximum configured size: 102 > 100"},
		{"divisor", 51, nil, nil, "block size (51) is not evenly divisible by divisor (2): 1 != 0"},
		{"negative", -2, nil, nil, "count=-2, expected samples >= 0"},
		{"1-D", 100, func(s *gio.BlockStreams) { s.GalvoTarget.Dims = 1 }, nil,
			"stream of dimension 2 is required: 1 (AlazarIO analog output channel 0, stream GalvoTarget)"},
		{"short", 100, func(s *gio.BlockStreams) { s.GalvoTarget.Rows = 50 }, nil,
			"stream is incorrectly sized: [50 x 2] vs [:100,0] (AlazarIO analog output channel 0, stream GalvoTarget)"},
		{"narrow", 100, func(s *gio.BlockStreams) { s.GalvoTarget.Cols = 1 }, nil,
			"stream is incorrectly sized: [100 x 1] vs [:100,1] (AlazarIO analog output channel 1, stream GalvoTarget)"},
		{"counter", 100, nil, func(c *gio.AlazarIOConfig) { c.AnalogOutputChannels[1].Stream = gio.StreamCounter },
			"tuple condition failed to match at target index: AlazarIO analog output channel 1 reads stream Counter (0)"},
		{"strobes", 100, nil, func(c *gio.AlazarIOConfig) { c.AnalogOutputChannels[0].Stream = gio.StreamStrobes },
			"tuple condition failed to match at target index: AlazarIO analog output channel 0 reads stream Strobes (5)"},
		{"bounds", 100, nil, func(c *gio.AlazarIOConfig) { c.AnalogOutputChannels[0].Stream = 6 },
			"tuple index out of bounds: AlazarIO analog output channel 0 reads stream 6"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := dacConfig(100, 1)
			c.Divisor = 2
			if tc.cfg != nil {
				tc.cfg(&c)
			}
			d, err := gio.NewAlazarIO(c, nil)
			require.NoError(t, err)
			defer d.Close()
			require.NoError(t, d.PrepareStandalone())
			require.NoError(t, d.Start())
			requireNextRefused(t, d.NextStandalone, tc.count, tc.edit, tc.msg)
			assert.False(t, d.Running(), "stop_on_error stopped the DAC")
		})
	}

	d, err := gio.NewAlazarIO(dacConfig(100, 1), nil)
	require.NoError(t, err)
	require.NoError(t, d.Start())
	requireStandaloneLifecycle(t, d)
}

// A refusal (not prepared, in use) leaves the DAC playing.
func TestAlazarIOStandaloneRefusalStopsNothing(t *testing.T) {
	virtualDAC(t)
	d, err := gio.NewAlazarIO(dacConfig(100, 1), nil)
	require.NoError(t, err)
	defer d.Close()
	require.NoError(t, d.Start())
	_, err = d.NextStandalone(0, 100, streams2D(100, 2))
	require.Error(t, err)
	require.NoError(t, d.Claims()[0].Take())
	_, err = d.NextStandalone(0, 100, streams2D(100, 2))
	require.ErrorIs(t, err, backend.ErrInUse)
	d.Claims()[0].Drop()
	assert.True(t, d.Running())
}
