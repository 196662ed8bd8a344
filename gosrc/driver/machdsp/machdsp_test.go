package machdsp_test

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/driver/machdsp"
	"github.com/vortexgo/vortexgo/gosrc/internal/machdsptest"
)

func open(t *testing.T, opt machdsptest.Options) (*machdsptest.Peer, *machdsp.MachDSP) {
	t.Helper()
	p, err := machdsptest.Start(opt)
	require.NoError(t, err)
	t.Cleanup(p.Close)
	m, err := machdsp.Open(p.Path, 12_000_000)
	require.NoError(t, err)
	t.Cleanup(func() { _ = m.Close() })
	return p, m
}

func TestHeaderAndPayloadsRoundTrip(t *testing.T) {
	h := machdsp.Header{Cmd: machdsp.MsgParamsWrite, PayloadSize: 7, Params: [4]uint16{3, 2, 100, 0xffff}}
	b := make([]byte, machdsp.HeaderBytes)
	h.Encode(b)
	assert.Equal(t, []byte{2, 0, 7, 0, 3, 0, 2, 0, 100, 0, 0xff, 0xff}, b, "six little-endian uint16")
	assert.Equal(t, h, machdsp.DecodeHeader(b))
	s := machdsp.Settings{UnderflowBehavior: machdsp.UnderflowHold, OverflowBehavior: machdsp.OverflowIgnore,
		BlockCount: 4, BlockSamples: 500, MaxBufferSamples: 8000, EnableReceive: 1, TriggerEdge: 1,
		InternalTrigger: 9, SampleDivisor: 2, MaxSampleDivisor: 10, AuxDivisor: 3, MaxAuxDivisor: 11}
	enc := s.Encode()
	require.Len(t, enc, 20)
	got, err := machdsp.DecodeSettings(enc)
	require.NoError(t, err)
	assert.Equal(t, s, got)
	_, err = machdsp.DecodeSettings(enc[:19])
	assert.EqualError(t, err, "settings buffer is undersized: 19 < 20")
	st := machdsp.StreamStatus{TxBlockIdx: 1, RxBlockIdx: 2, TxBlockValid: 3, RxBlockValid: 4, State: machdsp.StreamAbort}
	gst, err := machdsp.DecodeStreamStatus(st.Encode())
	require.NoError(t, err)
	assert.Equal(t, st, gst)
}

func TestScopedErrorText(t *testing.T) {
	for _, c := range []struct {
		e    machdsp.ScopedError
		want string
	}{
		{machdsp.ScopedError{3, 1}, "SAI Tx (3): underflow (1)"},
		{machdsp.ScopedError{2, 7}, "UART Rx (2): invalid message (7)"},
		{machdsp.ScopedError{8, 5}, "settings (8): payload to large (5)"},
		{machdsp.ScopedError{0, 0}, "OK (0)"},
		{machdsp.ScopedError{3, 0}, "SAI Tx (3)"},
		{machdsp.ScopedError{99, 1}, "unknown (99, 1)"},
		{machdsp.ScopedError{1, 99}, "unknown (1, 99)"},
	} {
		assert.Equal(t, c.want, c.e.String())
	}
}

func TestOpenGreetsAndReadsLimits(t *testing.T) {
	p, m := open(t, machdsptest.Options{MaxBufferSamples: 4096})
	i := m.Info()
	assert.Equal(t, machdsp.Version{Major: 1, Minor: 2}, i.Version)
	assert.Equal(t, 4096, i.MaxBufferSamples)
	assert.Equal(t, 1000, i.MaxSampleDivisor)
	assert.Equal(t, uint16(32768), i.ZeroPoint)
	assert.Equal(t, []machdsp.MsgType{machdsp.MsgHello, machdsp.MsgParamsRead}, p.Commands())
	assert.True(t, m.Valid())
	assert.Equal(t, p.Path, m.Port())
}

func TestCalls(t *testing.T) {
	p, m := open(t, machdsptest.Options{})
	v, err := m.Ping(42)
	require.NoError(t, err)
	assert.Equal(t, uint16(42), v)
	require.NoError(t, m.SetBlocks(3, 250))
	require.NoError(t, m.SetSampleDivisor(2))
	require.NoError(t, m.SetTriggerEdgeRising(false))
	require.NoError(t, m.SetUnderflowBehavior(machdsp.UnderflowLoop))
	require.NoError(t, m.SetEnableReceive(true))
	s, err := m.ReadSettings()
	require.NoError(t, err)
	assert.Equal(t, uint16(3), s.BlockCount)
	assert.Equal(t, uint16(250), s.BlockSamples)
	assert.Equal(t, uint16(2), s.SampleDivisor)
	assert.Equal(t, uint8(machdsp.EdgeFalling), s.TriggerEdge)
	assert.Equal(t, machdsp.UnderflowLoop, s.UnderflowBehavior)
	assert.Equal(t, uint8(1), s.EnableReceive)
	require.NoError(t, m.ResetSettings())
	s, _ = m.ReadSettings()
	assert.Equal(t, uint16(1), s.BlockCount)
	require.NoError(t, m.StreamStart())
	st, err := m.StreamStatus()
	require.NoError(t, err)
	assert.Equal(t, machdsp.StreamContinue, st.State)
	require.NoError(t, m.BlockWrite([]byte{0, 0x80, 0xff, 0xff}))
	assert.Equal(t, []uint16{0x8000, 0xffff}, p.Samples())
	require.NoError(t, m.StreamStop())
	st, _ = m.StreamStatus()
	assert.Equal(t, machdsp.StreamExit, st.State)
	require.NoError(t, m.CheckError())
}

func TestServoErrors(t *testing.T) {
	_, m := open(t, machdsptest.Options{MaxBufferSamples: 1000})
	for _, c := range []struct {
		name string
		call func() error
		want string
	}{
		{"buffer too large", func() error { return m.SetBlocks(10, 200) }, "protocol error: settings (8): buffer too large (3)"},
		{"divisor 0", func() error { return m.SetSampleDivisor(0) }, "protocol error: settings (8): invalid divisor (4)"},
		{"unknown setting", func() error { return m.WriteSetting(99, 1, 0, 0) }, "protocol error: settings (8): invalid setting (6)"},
		{"value beyond 16 bits", func() error { return m.SetAuxDivisor(70000) }, "aux divisor 70000 out of range, expected 0..65535"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := c.call()
			require.EqualError(t, err, c.want)
			// the line stays usable
			_, err = m.Ping(1)
			require.NoError(t, err)
		})
	}
	err := m.SetBlocks(10, 200)
	assert.ErrorIs(t, err, machdsp.ErrProtocol)
	var e *machdsp.Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, machdsp.ScopedError{Subsystem: machdsp.ErrorSettings, Underlying: machdsp.ErrorBufferTooLarge}, e.Servo)
}

// Each fault of the line or the servo, on the first block write, with
// vortex's message. A stray byte (framing) goes unnoticed on the first
// reply, as in vortex (the reply's type is not checked): the second
// misaligned header announces a payload a block write has no room for.
func TestFaults(t *testing.T) {
	for _, c := range []struct {
		fault machdsptest.FaultKind
		kind  error
		want  string
		quiet int // faulty replies taken without an error first
	}{
		{machdsptest.FaultFraming, machdsp.ErrFraming, "received header with payload but destination buffer is null (20 bytes, message 23040)", 1},
		{machdsptest.FaultServoError, machdsp.ErrProtocol, "protocol error: UART Rx (2): invalid message (7)", 0},
		{machdsptest.FaultSilent, machdsp.ErrTimeout, "serial read: timeout", 0},
		{machdsptest.FaultHangup, nil, "serial read: ", 0},
	} {
		t.Run(c.want, func(t *testing.T) {
			_, m := open(t, machdsptest.Options{Fault: c.fault})
			m.SetTimeout(200 * time.Millisecond)
			for range c.quiet {
				require.NoError(t, m.BlockWrite(make([]byte, 400)))
			}
			start := time.Now()
			err := m.BlockWrite(make([]byte, 400))
			require.Error(t, err)
			assert.Less(t, time.Since(start), 2*time.Second)
			if c.kind != nil {
				assert.ErrorIs(t, err, c.kind)
				assert.EqualError(t, err, c.want)
			} else {
				// the master closed: the slave reads end of file or an I/O error
				assert.Regexp(t, `^serial (read|write): (End of file|Input/output error)$`, err.Error())
			}
		})
	}
}

func TestOpenRefusals(t *testing.T) {
	dir := t.TempDir()
	plain := filepath.Join(dir, "plain")
	require.NoError(t, os.WriteFile(plain, nil, 0o600))
	fifo := filepath.Join(dir, "fifo")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	for _, c := range []struct {
		name, port string
		baud       int
		want       string
		is         error
	}{
		{"missing", filepath.Join(dir, "ttyNONE"), 115200, "open " + filepath.Join(dir, "ttyNONE") + ": No such file or directory", os.ErrNotExist},
		{"not a tty", plain, 115200, "open " + plain + ": Inappropriate ioctl for device (not a serial port)", backend.ErrInvalid},
		{"/dev/null", "/dev/null", 115200, "open /dev/null: Inappropriate ioctl for device (not a serial port)", backend.ErrInvalid},
		{"a directory", dir, 115200, "open " + dir + ": Is a directory", syscall.EISDIR},
		{"a fifo without a writer", fifo, 115200, "open " + fifo + ": Inappropriate ioctl for device (not a serial port)", backend.ErrInvalid},
		{"baud 0", plain, 0, "open " + plain + ": baud rate 0, expected > 0", backend.ErrInvalid},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := machdsp.Open(c.port, c.baud)
			require.EqualError(t, err, c.want)
			assert.ErrorIs(t, err, c.is)
		})
	}
	t.Run("bad magic", func(t *testing.T) {
		p, err := machdsptest.Start(machdsptest.Options{Fault: machdsptest.FaultBadMagic})
		require.NoError(t, err)
		defer p.Close()
		_, err = machdsp.Open(p.Path, 115200)
		require.EqualError(t, err, "invalid magic: 0xbeef != 0x1234")
	})
	t.Run("busy", func(t *testing.T) {
		p, m := open(t, machdsptest.Options{})
		_, err := machdsp.Open(p.Path, 115200)
		require.ErrorIs(t, err, backend.ErrInUse)
		assert.Contains(t, err.Error(), "the port is busy")
		require.NoError(t, m.Close())
		m2, err := machdsp.Open(p.Path, 115200)
		require.NoError(t, err, "free again once closed")
		require.NoError(t, m2.Close())
	})
}

func TestCancelAndCloseEndACall(t *testing.T) {
	for _, c := range []struct {
		name string
		end  func(m *machdsp.MachDSP)
		kind error
	}{
		{"cancel", (*machdsp.MachDSP).Cancel, machdsp.ErrCancelled},
		{"close", func(m *machdsp.MachDSP) { _ = m.Close() }, machdsp.ErrNotOpen},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, m := open(t, machdsptest.Options{Fault: machdsptest.FaultSilent})
			m.SetTimeout(10 * time.Second)
			done := make(chan error, 1)
			go func() { done <- m.BlockWrite(make([]byte, 8)) }()
			time.Sleep(100 * time.Millisecond)
			c.end(m)
			select {
			case err := <-done:
				assert.ErrorIs(t, err, c.kind)
			case <-time.After(3 * time.Second):
				t.Fatal("the call did not end")
			}
		})
	}
}

// A block write cut off by Cancel while the servo holds its reply (a full
// buffer): the next call skips the late reply and gets its own.
func TestResyncAfterCancel(t *testing.T) {
	p, m := open(t, machdsptest.Options{Rate: 1000})
	require.NoError(t, m.SetBlocks(1, 100))
	require.NoError(t, m.SetUnderflowBehavior(machdsp.UnderflowIgnore))
	require.NoError(t, m.StreamStart())
	block := make([]byte, 400)
	require.NoError(t, m.BlockWrite(block))
	done := make(chan error, 1)
	go func() { done <- m.BlockWrite(block) }() // waits ~100 ms for room
	time.Sleep(20 * time.Millisecond)
	m.Cancel()
	require.ErrorIs(t, <-done, machdsp.ErrCancelled)
	require.NoError(t, m.StreamStop())
	v, err := m.Ping(7)
	require.NoError(t, err)
	assert.Equal(t, uint16(7), v)
	assert.False(t, p.Streaming())
}

// A servo that acknowledges every request with a type of its own (not
// the request's): vortex's driver does not look at a reply's type, and
// neither does this one.
func TestRepliesOfAnotherType(t *testing.T) {
	p, m := open(t, machdsptest.Options{AckType: 0x55})
	v, err := m.Ping(9)
	require.NoError(t, err)
	assert.Equal(t, uint16(9), v)
	require.NoError(t, m.SetBlocks(2, 100))
	s, err := m.ReadSettings()
	require.NoError(t, err)
	assert.Equal(t, uint16(2), s.BlockCount)
	require.NoError(t, m.StreamStart())
	require.NoError(t, m.BlockWrite(make([]byte, 400)))
	st, err := m.StreamStatus()
	require.NoError(t, err)
	assert.Equal(t, machdsp.StreamContinue, st.State)
	require.NoError(t, m.StreamStop())
	assert.Len(t, p.Samples(), 200)
	// the servo's errors still fail (MsgError is the one type that matters)
	err = m.SetBlocks(1000, 1000)
	assert.ErrorIs(t, err, machdsp.ErrProtocol)
}

// Close releases the port's lock and exclusive mode even while another
// descriptor of the same open port lives (a child of fork() holds one):
// the port opens again at once.
func TestCloseReleasesTheLockOfASharedPort(t *testing.T) {
	p, m := open(t, machdsptest.Options{})
	_, err := machdsp.Open(p.Path, 115200)
	require.ErrorIs(t, err, backend.ErrInUse)
	dup := machdsp.DupForTest(m) // what fork() gives the child
	defer func() { _ = syscall.Close(dup) }()
	require.NoError(t, m.Close())
	m2, err := machdsp.Open(p.Path, 115200)
	require.NoError(t, err, "the port stayed locked by the child's copy")
	require.NoError(t, m2.Close())
}
