// Package machdsptest is a MachDSP servo on a pseudo-terminal for tests:
// the peer speaks the servo's side of the protocol (driver/machdsp's doc)
// on the pty's master while the driver opens its slave as a serial port,
// and it can fail as the line and the servo do (Fault).
package machdsptest

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/vortexgo/vortexgo/gosrc/driver/machdsp"
)

// FaultKind is how the peer fails.
type FaultKind int

// The faults, each from the reply to block write number At (0-based) on.
const (
	FaultNone FaultKind = iota
	// FaultFraming: a stray byte before the reply (a glitch on the line):
	// the host's next header is misaligned.
	FaultFraming
	// FaultServoError: the servo replies MsgError (UART Rx, invalid
	// message), what its firmware answers to a corrupted request.
	FaultServoError
	// FaultSilent: the servo stops replying (the host times out).
	FaultSilent
	// FaultHangup: the peer closes the pty (a cable pulled, a USB port
	// gone).
	FaultHangup
	// FaultBadMagic: the greeting's reply has the wrong magic.
	FaultBadMagic
)

// Options configure a Peer.
type Options struct {
	Fault FaultKind
	// At is the block write whose reply fails (0: the first).
	At int
	// Rate is the servo's sample clock once streaming (samples per
	// second): block writes wait for room in its buffer, and a buffer run
	// dry is an underflow. 0: the servo takes every block at once.
	Rate float64
	// MaxBufferSamples is the settings' limit (default 16384).
	MaxBufferSamples int
	// AckType, when not 0, is the type of every reply that is not
	// MsgError (a firmware that does not echo the request's type; vortex's
	// driver does not look at it).
	AckType machdsp.MsgType
}

// Peer is the servo.
type Peer struct {
	opt    Options
	master *os.File
	// Path is the serial port the driver opens (the pty's slave).
	Path string

	mu       sync.Mutex
	settings machdsp.Settings
	cmds     []machdsp.MsgType
	samples  []uint16 // x, y codes of every sample written since the last stream reset
	blocks   int
	started  time.Time // the stream's start; zero when not streaming
	latched  machdsp.ScopedError
	done     chan struct{}
	closed   bool
}

// Start opens a pty and serves on it until Close.
func Start(opt Options) (*Peer, error) {
	fd, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		_ = unix.Close(fd)
		return nil, err
	}
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
	if err != nil {
		_ = unix.Close(fd)
		return nil, err
	}
	if opt.MaxBufferSamples == 0 {
		opt.MaxBufferSamples = 16384
	}
	p := &Peer{opt: opt, master: os.NewFile(uintptr(fd), "ptmx"), Path: fmt.Sprintf("/dev/pts/%d", n),
		done: make(chan struct{})}
	p.resetSettings()
	go p.serve()
	return p, nil
}

func (p *Peer) resetSettings() {
	p.settings = machdsp.Settings{UnderflowBehavior: machdsp.UnderflowError, OverflowBehavior: machdsp.OverflowError,
		BlockCount: 1, BlockSamples: 100, MaxBufferSamples: uint16(p.opt.MaxBufferSamples), TriggerEdge: 0,
		SampleDivisor: 1, MaxSampleDivisor: 1000, AuxDivisor: 1, MaxAuxDivisor: 1000}
}

// Close stops serving and closes the pty.
func (p *Peer) Close() {
	p.mu.Lock()
	already := p.closed
	p.closed = true
	p.mu.Unlock()
	if !already {
		_ = p.master.Close()
	}
	<-p.done
}

// Commands are the request types received so far, in order.
func (p *Peer) Commands() []machdsp.MsgType {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]machdsp.MsgType(nil), p.cmds...)
}

// Samples are the codes written since the last stream reset: x, y per
// sample.
func (p *Peer) Samples() []uint16 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]uint16(nil), p.samples...)
}

// Settings are the servo's settings now.
func (p *Peer) Settings() machdsp.Settings {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.settings
}

// Streaming tells whether the stream runs.
func (p *Peer) Streaming() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return !p.started.IsZero()
}

// read fills b from the master; a slave not (or no longer) open reads EIO
// on Linux: the peer waits for the next open then.
func (p *Peer) read(b []byte) error {
	for off := 0; off < len(b); {
		n, err := p.master.Read(b[off:])
		off += n
		if err != nil {
			if errors.Is(err, unix.EIO) || errors.Is(err, io.EOF) {
				p.mu.Lock()
				closed := p.closed
				p.mu.Unlock()
				if closed {
					return err
				}
				time.Sleep(5 * time.Millisecond)
				continue
			}
			return err
		}
	}
	return nil
}

func (p *Peer) reply(cmd machdsp.MsgType, payload []byte, params ...uint16) error {
	if p.opt.AckType != 0 && cmd != machdsp.MsgError {
		cmd = p.opt.AckType
	}
	h := machdsp.Header{Cmd: cmd, PayloadSize: uint16(len(payload))}
	copy(h.Params[:], params)
	b := make([]byte, machdsp.HeaderBytes+len(payload))
	h.Encode(b)
	copy(b[machdsp.HeaderBytes:], payload)
	_, err := p.master.Write(b)
	return err
}

func (p *Peer) serve() {
	defer close(p.done)
	for {
		var hb [machdsp.HeaderBytes]byte
		if err := p.read(hb[:]); err != nil {
			return
		}
		h := machdsp.DecodeHeader(hb[:])
		payload := make([]byte, h.PayloadSize)
		if err := p.read(payload); err != nil {
			return
		}
		if !p.handle(h, payload) {
			return
		}
	}
}

// consumed is the samples the servo's clock has taken since the start.
func (p *Peer) consumed() int {
	if p.started.IsZero() || p.opt.Rate <= 0 {
		return 0
	}
	return int(time.Since(p.started).Seconds() * p.opt.Rate)
}

// handle answers one request; false ends serving.
func (p *Peer) handle(h machdsp.Header, payload []byte) bool {
	p.mu.Lock()
	p.cmds = append(p.cmds, h.Cmd)
	p.mu.Unlock()
	var err error
	switch h.Cmd {
	case machdsp.MsgHello:
		magic := h.Params[0]
		if p.opt.Fault == FaultBadMagic {
			magic = 0xbeef
		}
		err = p.reply(h.Cmd, nil, magic, 1, 2, 0)
	case machdsp.MsgParamsRead:
		p.mu.Lock()
		s := p.settings
		p.mu.Unlock()
		err = p.reply(h.Cmd, s.Encode())
	case machdsp.MsgParamsWrite:
		err = p.write(h)
	case machdsp.MsgParamsReset:
		p.mu.Lock()
		p.resetSettings()
		p.mu.Unlock()
		err = p.reply(h.Cmd, nil)
	case machdsp.MsgStreamStart:
		p.mu.Lock()
		p.started = time.Now()
		p.mu.Unlock()
		err = p.reply(h.Cmd, nil)
	case machdsp.MsgStreamStop:
		p.mu.Lock()
		p.started = time.Time{}
		p.mu.Unlock()
		err = p.reply(h.Cmd, nil)
	case machdsp.MsgStreamReset:
		p.mu.Lock()
		p.started, p.samples, p.latched = time.Time{}, nil, machdsp.ScopedError{}
		p.mu.Unlock()
		err = p.reply(h.Cmd, nil)
	case machdsp.MsgStreamStatus:
		p.mu.Lock()
		st := machdsp.StreamStatus{State: machdsp.StreamExit}
		if !p.started.IsZero() {
			st.State = machdsp.StreamContinue
		}
		p.mu.Unlock()
		err = p.reply(h.Cmd, st.Encode())
	case machdsp.MsgBlockWrite:
		return p.blockWrite(h, payload)
	case machdsp.MsgPing:
		err = p.reply(h.Cmd, nil, h.Params[0])
	case machdsp.MsgError:
		p.mu.Lock()
		e := p.latched
		p.latched = machdsp.ScopedError{}
		p.mu.Unlock()
		err = p.reply(machdsp.MsgError, nil, e.Subsystem, e.Underlying)
	case machdsp.MsgHardReset:
		p.mu.Lock()
		p.resetSettings()
		p.started, p.samples = time.Time{}, nil
		p.mu.Unlock()
	default:
		err = p.reply(machdsp.MsgError, nil, machdsp.ErrorUARTReceive, machdsp.ErrorInvalidMessage)
	}
	return err == nil
}

func (p *Peer) write(h machdsp.Header) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := &p.settings
	v := h.Params[1]
	bad := false
	switch machdsp.SettingsEntry(h.Params[0]) {
	case machdsp.SettingsUnderflow:
		s.UnderflowBehavior = machdsp.Underflow(v)
	case machdsp.SettingsOverflow:
		s.OverflowBehavior = machdsp.Overflow(v)
	case machdsp.SettingsBlocks:
		if int(v)*int(h.Params[2]) > int(s.MaxBufferSamples) {
			p.mu.Unlock()
			err := p.reply(machdsp.MsgError, nil, machdsp.ErrorSettings, machdsp.ErrorBufferTooLarge)
			p.mu.Lock()
			return err
		}
		s.BlockCount, s.BlockSamples = v, h.Params[2]
	case machdsp.SettingsEnableReceive:
		s.EnableReceive = uint8(v)
	case machdsp.SettingsTriggerEdge:
		s.TriggerEdge = uint8(v)
	case machdsp.SettingsTriggerInternal:
		s.InternalTrigger = v
	case machdsp.SettingsSampleDivisor:
		bad = v == 0 || v > s.MaxSampleDivisor
		if !bad {
			s.SampleDivisor = v
		}
	case machdsp.SettingsAuxDivisor:
		bad = v == 0 || v > s.MaxAuxDivisor
		if !bad {
			s.AuxDivisor = v
		}
	default:
		p.mu.Unlock()
		err := p.reply(machdsp.MsgError, nil, machdsp.ErrorSettings, machdsp.ErrorInvalidSetting)
		p.mu.Lock()
		return err
	}
	p.mu.Unlock()
	var err error
	if bad {
		err = p.reply(machdsp.MsgError, nil, machdsp.ErrorSettings, machdsp.ErrorInvalidDivisor)
	} else {
		err = p.reply(machdsp.MsgParamsWrite, nil)
	}
	p.mu.Lock()
	return err
}

// blockWrite takes a block once the buffer has room (the stream's clock
// frees it), or reports the latched underflow.
func (p *Peer) blockWrite(h machdsp.Header, payload []byte) bool {
	p.mu.Lock()
	idx := p.blocks
	p.blocks++
	p.mu.Unlock()
	if p.opt.Fault != FaultNone && idx >= p.opt.At {
		switch p.opt.Fault {
		case FaultFraming:
			_, _ = p.master.Write([]byte{0x5a})
			return p.reply(machdsp.MsgBlockWrite, nil) == nil
		case FaultServoError:
			return p.reply(machdsp.MsgError, nil, machdsp.ErrorUARTReceive, machdsp.ErrorInvalidMessage) == nil
		case FaultSilent:
			return true
		case FaultHangup:
			p.mu.Lock()
			p.closed = true
			p.mu.Unlock()
			_ = p.master.Close()
			return false
		}
	}
	n := len(payload) / 4
	codes := make([]uint16, 2*n)
	for i := range codes {
		codes[i] = binary.LittleEndian.Uint16(payload[2*i:])
	}
	for {
		p.mu.Lock()
		capacity := int(p.settings.BlockCount) * int(p.settings.BlockSamples)
		written, used := len(p.samples)/2, p.consumed()
		underflow := !p.started.IsZero() && p.opt.Rate > 0 && used > written &&
			p.settings.UnderflowBehavior == machdsp.UnderflowError
		room := written+n-used <= capacity || p.opt.Rate <= 0
		if underflow {
			p.started = time.Time{}
			p.latched = machdsp.ScopedError{Subsystem: machdsp.ErrorSAITransmit, Underlying: machdsp.ErrorUnderflow}
			p.mu.Unlock()
			return p.reply(machdsp.MsgError, nil, machdsp.ErrorSAITransmit, machdsp.ErrorUnderflow) == nil
		}
		if room {
			p.samples = append(p.samples, codes...)
			p.mu.Unlock()
			return p.reply(machdsp.MsgBlockWrite, nil) == nil
		}
		streaming := !p.started.IsZero()
		p.mu.Unlock()
		if !streaming || p.pending() {
			// no clock frees room, or the host moved on (a stop): take it
			p.mu.Lock()
			p.samples = append(p.samples, codes...)
			p.mu.Unlock()
			return p.reply(machdsp.MsgBlockWrite, nil) == nil
		}
		time.Sleep(200 * time.Microsecond)
	}
}

// pending tells whether another request waits (the host cut this one
// off): the servo then acknowledges the block at once.
func (p *Peer) pending() bool {
	c, err := p.master.SyscallConn()
	if err != nil {
		return false
	}
	var n int
	_ = c.Control(func(fd uintptr) { n, _ = unix.IoctlGetInt(int(fd), unix.TIOCINQ) })
	return n > 0
}
