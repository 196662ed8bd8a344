package io_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/driver/machdsp"
	"github.com/vortexgo/vortexgo/gosrc/engine"
	"github.com/vortexgo/vortexgo/gosrc/internal/machdsptest"
	gio "github.com/vortexgo/vortexgo/gosrc/io"
)

func machdspConfig(port string, block int) gio.MachDSPConfig {
	c := gio.DefaultMachDSPConfig()
	c.Port, c.SamplesPerBlock, c.BlocksToBuffer, c.ReadWriteTimeout = port, block, 2, 300*time.Millisecond
	for j := range c.OutputChannels {
		c.OutputChannels[j].Stream, c.OutputChannels[j].Channel = gio.StreamGalvoTarget, j
	}
	return c
}

func newMachDSP(t *testing.T, opt machdsptest.Options, edit func(*gio.MachDSPConfig)) (*machdsptest.Peer, *gio.MachDSPIO) {
	t.Helper()
	p, err := machdsptest.Start(opt)
	require.NoError(t, err)
	t.Cleanup(p.Close)
	c := machdspConfig(p.Path, 100)
	if edit != nil {
		edit(&c)
	}
	m, err := gio.NewMachDSPIO(c, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = m.Close() })
	return p, m
}

func TestMachDSPConfigDefaultsAndValidate(t *testing.T) {
	c := gio.DefaultMachDSPConfig()
	assert.Equal(t, "COM1", c.Port)
	assert.Equal(t, 12_000_000, c.BaudRate)
	assert.Equal(t, 100, c.SamplesPerBlock)
	assert.Equal(t, gio.MachDSPChannel{LogicalUnitsPerPhysicalUnit: 1, DegreeScale: 15}, c.OutputChannels[1])
	assert.True(t, c.TriggerRisingEdge && c.StopOnError)
	for _, tc := range []struct {
		edit func(*gio.MachDSPConfig)
		msg  string
	}{
		{func(c *gio.MachDSPConfig) { c.BlocksToBuffer = 0 }, "must buffer at least 1 block: 0"},
		{func(c *gio.MachDSPConfig) { c.SampleDivisor = 0 }, "minimum sample divisor is 1: 0"},
		{func(c *gio.MachDSPConfig) { c.AuxDivisor = 0 }, "minimum aux divisor is 1: 0"},
		{func(c *gio.MachDSPConfig) { c.OutputChannels[1].DegreeScale = 0 }, "output channel 1: degree_scale must be positive and finite: 0"},
		{func(c *gio.MachDSPConfig) { c.OutputChannels[0].LogicalUnitsPerPhysicalUnit = 0 }, "output channel 0: logical_units_per_physical_unit must be non-zero: 0"},
	} {
		cc := gio.DefaultMachDSPConfig()
		tc.edit(&cc)
		err := cc.Validate()
		require.ErrorIs(t, err, backend.ErrInvalid)
		assert.EqualError(t, err, tc.msg)
	}
}

// initialize sends vortex's sequence, and the servo's settings follow the
// configuration (one block more than blocks_to_buffer: see configure).
func TestMachDSPIOConfigures(t *testing.T) {
	p, m := newMachDSP(t, machdsptest.Options{}, func(c *gio.MachDSPConfig) {
		c.SampleDivisor, c.AuxDivisor, c.TriggerRisingEdge = 2, 5, false
	})
	M := machdsp.MsgParamsWrite
	assert.Equal(t, []machdsp.MsgType{machdsp.MsgHello, machdsp.MsgParamsRead, machdsp.MsgError, machdsp.MsgStreamStop,
		machdsp.MsgStreamReset, machdsp.MsgParamsReset, M, M, M, M, M, M, M, M}, p.Commands())
	s := p.Settings()
	assert.Equal(t, uint16(3), s.BlockCount)
	assert.Equal(t, uint16(50), s.BlockSamples)
	assert.Equal(t, uint16(2), s.SampleDivisor)
	assert.Equal(t, uint16(5), s.AuxDivisor)
	assert.Equal(t, uint8(machdsp.EdgeFalling), s.TriggerEdge)
	assert.Equal(t, machdsp.UnderflowError, s.UnderflowBehavior)
	assert.Equal(t, machdsp.OverflowError, s.OverflowBehavior)
	assert.Equal(t, uint8(0), s.EnableReceive)
	assert.Equal(t, machdsp.Version{Major: 1, Minor: 2}, m.Info().Version)
}

// Blocks reach the servo as vortex's codes, every divisor-th sample,
// clipped at degree_scale, across two sessions.
func TestMachDSPIOWritesBlocks(t *testing.T) {
	p, m := newMachDSP(t, machdsptest.Options{}, func(c *gio.MachDSPConfig) {
		c.SampleDivisor = 2
		c.OutputChannels[0].LogicalUnitsPerPhysicalUnit = 0.5
		c.OutputChannels[1].Channel, c.OutputChannels[1].DegreeScale = 0, 10
	})
	require.NoError(t, m.Prepare(engine.IOInfo{RecordsPerBlock: 100, OutputChannels: 2, InputChannels: 2}))
	code := func(v, scale float64) uint16 {
		v = max(min(v, scale), -scale)
		return uint16(v/(scale/32767) + 32768)
	}
	session := func(blocks int) []uint16 {
		var want []uint16
		for b := range blocks {
			target := make([]float64, 200)
			for i := range target {
				target[i] = float64(b*200+i)/50 - 9 // -9 .. up to 15: clipped
			}
			for i := 0; i < 100; i += 2 {
				want = append(want, code(target[2*i]/0.5, 15), code(target[2*i], 10))
			}
			require.NoError(t, m.Next(&engine.IOBlock{ID: int64(b), Records: 100, GalvoTarget: target}))
			if b == 1 {
				require.NoError(t, m.Start())
				assert.True(t, m.Running())
			}
		}
		require.NoError(t, m.Stop())
		assert.False(t, m.Running())
		return want
	}
	session(4)
	want := session(3) // the stream is reset by the next session's first block
	assert.Equal(t, want, p.Samples())
}

func TestMachDSPIOPrepareRefuses(t *testing.T) {
	_, m := newMachDSP(t, machdsptest.Options{}, nil)
	info := engine.IOInfo{RecordsPerBlock: 100, OutputChannels: 2, InputChannels: 2}
	bad := info
	bad.RecordsPerBlock = 50
	assert.ErrorContains(t, m.Prepare(bad), "block is not exactly equal to the configured size: 50 != 100")
	bad = info
	bad.OutputChannels = 1
	assert.ErrorContains(t, m.Prepare(bad), "stream is incorrectly sized")
	_, m2 := newMachDSP(t, machdsptest.Options{}, func(c *gio.MachDSPConfig) { c.OutputChannels[0].Stream = gio.StreamCounter })
	assert.ErrorContains(t, m2.Prepare(info), "output channel 0 reads stream Counter (0), expected GalvoTarget (1)")
}

// Each fault stops the stream (stop_on_error) with vortex's error.
func TestMachDSPIOFaults(t *testing.T) {
	for _, tc := range []struct {
		name  string
		opt   machdsptest.Options
		is    error
		msg   string
		after int // blocks that succeed first
	}{
		// the first misaligned reply passes unnoticed, as in vortex (driver/machdsp's TestFaults)
		{"framing", machdsptest.Options{Fault: machdsptest.FaultFraming, At: 2}, machdsp.ErrFraming, "received header with payload but destination buffer is null", 3},
		{"servo error", machdsptest.Options{Fault: machdsptest.FaultServoError, At: 1}, machdsp.ErrProtocol, "protocol error: UART Rx (2): invalid message (7)", 1},
		{"silent", machdsptest.Options{Fault: machdsptest.FaultSilent, At: 3}, machdsp.ErrTimeout, "serial read: timeout", 3},
		{"hangup", machdsptest.Options{Fault: machdsptest.FaultHangup, At: 1}, nil, "serial ", 1},
		{"underflow", machdsptest.Options{Rate: 20000}, machdsp.ErrProtocol, "protocol error: SAI Tx (3): underflow (1)", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, m := newMachDSP(t, tc.opt, nil)
			require.NoError(t, m.Prepare(engine.IOInfo{RecordsPerBlock: 100, OutputChannels: 2, InputChannels: 2}))
			blk := func(id int) *engine.IOBlock {
				return &engine.IOBlock{ID: int64(id), Records: 100, GalvoTarget: make([]float64, 200)}
			}
			for i := range tc.after {
				require.NoError(t, m.Next(blk(i)))
			}
			require.NoError(t, m.Start())
			if tc.name == "underflow" {
				time.Sleep(50 * time.Millisecond) // 1000 samples due, 200 written
			}
			err := m.Next(blk(tc.after))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.msg)
			assert.Contains(t, err.Error(), fmt.Sprintf("MachDSPIO %q: ", p.Path), "the port is named")
			if tc.is != nil {
				assert.ErrorIs(t, err, tc.is)
			}
			if tc.name != "hangup" { // the servo is gone
				assert.False(t, p.Streaming(), "stopped on error")
			}
			assert.ErrorIs(t, m.Next(blk(tc.after+1)), engine.ErrStopped)
		})
	}
}

// Stop ends a block waiting for the servo's room (the A-line trigger
// stopped): the engine's stop does not wait for the timeout.
func TestMachDSPIOStopEndsAWaitingBlock(t *testing.T) {
	p, m := newMachDSP(t, machdsptest.Options{Rate: 10}, func(c *gio.MachDSPConfig) {
		c.ReadWriteTimeout = 10 * time.Second
	})
	require.NoError(t, m.Prepare(engine.IOInfo{RecordsPerBlock: 100, OutputChannels: 2, InputChannels: 2}))
	blk := func(id int) *engine.IOBlock {
		return &engine.IOBlock{ID: int64(id), Records: 100, GalvoTarget: make([]float64, 200)}
	}
	for i := range 3 { // the servo's buffer: blocks_to_buffer + 1
		require.NoError(t, m.Next(blk(i)))
	}
	require.NoError(t, m.Start())
	done := make(chan error, 1)
	go func() { done <- m.Next(blk(3)) }()
	time.Sleep(50 * time.Millisecond)
	start := time.Now()
	require.NoError(t, m.Stop())
	select {
	case err := <-done:
		assert.ErrorIs(t, err, engine.ErrStopped)
	case <-time.After(3 * time.Second):
		t.Fatal("Stop left the block waiting")
	}
	assert.Less(t, time.Since(start), 2*time.Second)
	assert.False(t, p.Streaming())
	// the next session works on the same port
	require.NoError(t, m.Next(blk(0)))
	require.NoError(t, m.Start())
	require.NoError(t, m.Stop())
}

func TestMachDSPIOStandalone(t *testing.T) {
	p, m := newMachDSP(t, machdsptest.Options{}, nil)
	require.NoError(t, m.PrepareStandalone())
	s := streams2D(100, 2)
	s.GalvoTarget.Data[0], s.GalvoTarget.Data[1] = 15, -15
	n, err := m.NextStandalone(0, 100, s)
	require.NoError(t, err)
	assert.Equal(t, 100, n)
	got := p.Samples()
	require.Len(t, got, 200)
	assert.Equal(t, []uint16{65535, 1, 32768, 32768}, got[:4])
	requireNextRefused(t, m.NextStandalone, 50, nil, "block is not exactly equal to the configured size: 50 != 100")
	requireNextRefused(t, m.NextStandalone, 100, func(s *gio.BlockStreams) { s.GalvoTarget.Dims = 1 }, "stream of dimension 2 is required: 1")
	requireNextRefused(t, m.NextStandalone, 100, func(s *gio.BlockStreams) { s.GalvoTarget.Cols = 1 }, "stream is incorrectly sized")
	require.NoError(t, m.Claims()[0].Take())
	_, err = m.NextStandalone(0, 100, s)
	require.ErrorIs(t, err, backend.ErrInUse)
	require.ErrorIs(t, m.Close(), backend.ErrInUse)
	m.Claims()[0].Drop()
	require.NoError(t, m.Close())
	_, err = m.NextStandalone(0, 100, s)
	require.ErrorIs(t, err, backend.ErrClosed)
}

func TestMachDSPIOOpenRefusals(t *testing.T) {
	p, err := machdsptest.Start(machdsptest.Options{MaxBufferSamples: 150})
	require.NoError(t, err)
	defer p.Close()
	c := machdspConfig(p.Path, 100)
	_, err = gio.NewMachDSPIO(c, nil)
	require.EqualError(t, err, fmt.Sprintf("MachDSPIO %q: protocol error: settings (8): buffer too large (3)", p.Path))
	c.BlocksToBuffer = 0
	_, err = gio.NewMachDSPIO(c, nil)
	require.ErrorIs(t, err, backend.ErrInvalid)
	c = machdspConfig("/dev/nonexistent-tty", 100)
	_, err = gio.NewMachDSPIO(c, nil)
	require.EqualError(t, err, "open /dev/nonexistent-tty: No such file or directory")
}
