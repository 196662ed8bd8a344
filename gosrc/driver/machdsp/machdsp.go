package machdsp

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"
)

// DefaultTimeout is how long a read or write waits (vortex's 1 s).
const DefaultTimeout = time.Second

// MachDSP is one servo on its serial port (vortex's machdsp_t). Calls are
// serialized (one request and its reply at a time); Cancel, from any
// goroutine, ends the call in progress, and Close ends it too.
type MachDSP struct {
	mu      sync.Mutex // one transaction at a time
	p       *port
	info    Info
	timeout time.Duration

	// cmu guards the deadlines against Cancel: Cancel moves them to the
	// past while a transaction is in flight.
	cmu      sync.Mutex
	inflight bool
	canceled bool
	// desync: a transaction was cut off (Cancel, a timeout), so its reply
	// may still come: the next transaction drops what was received and
	// skips late replies of the cut-off requests' types (cutoff) that are
	// not its own type. A transaction that completes clears both: the
	// servo answers in order, so the cut-off replies came before its own.
	desync bool
	cutoff map[MsgType]bool
}

// Open opens the servo on port at baudRate and greets it (vortex's
// machdsp_t(port, baud_rate)): MsgHello with the magic, then the settings
// for the limits. A wrong magic is "invalid magic: 0x.... != 0x1234".
func Open(portName string, baudRate int) (*MachDSP, error) {
	p, err := openPort(portName, baudRate)
	if err != nil {
		return nil, err
	}
	m := &MachDSP{p: p, info: DefaultInfo(), timeout: DefaultTimeout}
	h, err := m.sendAndRecv(MsgHello, nil, nil, ProtocolMagic)
	if err == nil && h.Params[0] != ProtocolMagic {
		err = &Error{Msg: fmt.Sprintf("invalid magic: 0x%04x != 0x%04x", h.Params[0], ProtocolMagic), Kind: ErrFraming}
	}
	if err != nil {
		_ = p.close()
		return nil, err
	}
	m.info.Version = Version{h.Params[1], h.Params[2], h.Params[3]}
	s, err := m.ReadSettings()
	if err != nil {
		_ = p.close()
		return nil, err
	}
	m.info.MaxBufferSamples = int(s.MaxBufferSamples)
	m.info.MaxSampleDivisor = int(s.MaxSampleDivisor)
	m.info.MaxAuxDivisor = int(s.MaxAuxDivisor)
	return m, nil
}

// Info is what opening learned.
func (m *MachDSP) Info() Info { return m.info }

// Port is the port's name.
func (m *MachDSP) Port() string {
	if m.p == nil {
		return ""
	}
	return m.p.name
}

// Timeout is how long a read or write waits.
func (m *MachDSP) Timeout() time.Duration {
	m.cmu.Lock()
	defer m.cmu.Unlock()
	return m.timeout
}

// SetTimeout sets it (vortex rounds to whole seconds; this does not).
func (m *MachDSP) SetTimeout(d time.Duration) {
	m.cmu.Lock()
	m.timeout = d
	m.cmu.Unlock()
}

// Valid tells whether the port is open.
func (m *MachDSP) Valid() bool {
	m.cmu.Lock()
	defer m.cmu.Unlock()
	return m.p != nil
}

// Close closes the port; a call in progress ends with "port is not open"
// or the line's error.
func (m *MachDSP) Close() error {
	m.cmu.Lock()
	p := m.p
	m.p = nil
	m.cmu.Unlock()
	if p == nil {
		return nil
	}
	return p.close()
}

// Cancel ends the transaction in progress, if any, with ErrCancelled
// (asio's cancel); later calls work (their replies are told from the
// cut-off one's by type).
func (m *MachDSP) Cancel() {
	m.cmu.Lock()
	defer m.cmu.Unlock()
	if m.inflight && m.p != nil {
		m.canceled = true
		past := time.Unix(1, 0)
		m.p.setReadDeadline(past)
		m.p.setWriteDeadline(past)
	}
}

// begin starts a transaction: the port, with canceled cleared.
func (m *MachDSP) begin() (*port, error) {
	m.cmu.Lock()
	defer m.cmu.Unlock()
	if m.p == nil {
		return nil, &Error{Msg: "port is not open", Kind: ErrNotOpen}
	}
	m.inflight, m.canceled = true, false
	return m.p, nil
}

func (m *MachDSP) end(cmd MsgType, err error) {
	m.cmu.Lock()
	m.inflight = false
	var e *Error
	if errors.As(err, &e) && (errors.Is(err, ErrTimeout) || errors.Is(err, ErrCancelled)) {
		m.desync = true
		if m.cutoff == nil {
			m.cutoff = map[MsgType]bool{}
		}
		m.cutoff[cmd] = true
	}
	m.cmu.Unlock()
}

// arm sets the deadline of the next read (write: false) or write; a
// canceled transaction fails instead.
func (m *MachDSP) arm(p *port, write bool, prefix string) error {
	m.cmu.Lock()
	defer m.cmu.Unlock()
	if m.canceled {
		return &Error{Msg: prefix + ": Operation canceled", Kind: ErrCancelled}
	}
	t := time.Time{}
	if m.timeout > 0 {
		t = time.Now().Add(m.timeout)
	}
	if write {
		p.setWriteDeadline(t)
	} else {
		p.setReadDeadline(t)
	}
	return nil
}

// lineError is vortex's _check_error: a timeout, a cancel, or the
// system's error ("serial read: End of file").
func (m *MachDSP) lineError(prefix string, err error) error {
	m.cmu.Lock()
	canceled, closed := m.canceled, m.p == nil
	m.cmu.Unlock()
	switch {
	case closed || errors.Is(err, os.ErrClosed):
		return &Error{Msg: prefix + ": port is not open", Kind: ErrNotOpen, Err: err}
	case canceled:
		return &Error{Msg: prefix + ": Operation canceled", Kind: ErrCancelled, Err: err}
	case errors.Is(err, os.ErrDeadlineExceeded):
		return &Error{Msg: prefix + ": timeout", Kind: ErrTimeout}
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return &Error{Msg: prefix + ": End of file", Err: io.EOF}
	}
	var pe *os.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return &Error{Msg: prefix + ": " + sysText(err), Err: err}
}

// sysText is the system's error as strerror spells it ("No such file or
// directory"; Go's texts are the same, lower-cased).
func sysText(err error) string {
	s := err.Error()
	r, n := utf8.DecodeRuneInString(s)
	return string(unicode.ToUpper(r)) + s[n:]
}

// transact sends a request and reads its replies (one, or two for a
// MsgBlockReadWrite: the read's with payload in, then the write's). It
// returns the first reply's header.
func (m *MachDSP) transact(cmd MsgType, out []byte, in []byte, replies int, params ...uint16) (Header, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p, err := m.begin()
	if err != nil {
		return Header{}, err
	}
	h, err := m.exchange(p, cmd, out, in, replies, params)
	m.end(cmd, err)
	return h, err
}

func (m *MachDSP) exchange(p *port, cmd MsgType, out, in []byte, replies int, params []uint16) (Header, error) {
	m.cmu.Lock()
	var late map[MsgType]bool
	if m.desync {
		late = m.cutoff
	}
	m.cmu.Unlock()
	if late != nil {
		p.flushInput()
	}
	if err := m.send(p, cmd, out, params); err != nil {
		return Header{}, err
	}
	var first Header
	for i := 0; i < replies; i++ {
		buf := in
		if i > 0 {
			buf = nil
		}
		h, err := m.recv(p, buf, cmd, late)
		if err != nil {
			return h, err
		}
		if i == 0 {
			first = h
		}
	}
	m.cmu.Lock()
	m.desync, m.cutoff = false, nil
	m.cmu.Unlock()
	return first, nil
}

func (m *MachDSP) sendAndRecv(cmd MsgType, out, in []byte, params ...uint16) (Header, error) {
	return m.transact(cmd, out, in, 1, params...)
}

// send writes the header and payload (vortex's _send).
func (m *MachDSP) send(p *port, cmd MsgType, payload []byte, params []uint16) error {
	if len(payload) > 0xffff {
		return &Error{Msg: fmt.Sprintf("payload of %d bytes, expected at most 65535", len(payload)), Kind: ErrFraming}
	}
	h := Header{Cmd: cmd, PayloadSize: uint16(len(payload))}
	copy(h.Params[:], params)
	b := make([]byte, HeaderBytes+len(payload))
	h.Encode(b)
	copy(b[HeaderBytes:], payload)
	if err := m.arm(p, true, "serial write"); err != nil {
		return err
	}
	if _, err := p.f.Write(b); err != nil {
		return m.lineError("serial write", err)
	}
	return nil
}

// recv reads one reply into payload (vortex's _recv): its header, then
// its payload, which must fit; a MsgError reply with an error fails.
//
// The reply's type is not checked, as vortex does not: vortex's driver
// takes whatever header comes as the reply (only MsgError means
// something), so a servo whose firmware acknowledges with a type of its
// own works with vortex, and must work here. (vortexgo once refused a
// reply of another type than the request's as a framing error: that
// assumed the servo echoes the type, which vortex's reference nowhere
// says.) A byte lost or gained on the line therefore shows as vortex
// shows it: a payload size that does not fit ("received header with
// payload but destination buffer is null", "header payload size exceeds
// buffer size"), or not at all.
//
// After a cut-off transaction (late: the cut-off requests' types), a
// reply of one of those types that is not cmd's is the cut-off request's
// late reply and is skipped; any other is taken, as vortex would.
func (m *MachDSP) recv(p *port, payload []byte, cmd MsgType, late map[MsgType]bool) (Header, error) {
	for {
		var hb [HeaderBytes]byte
		if err := m.read(p, hb[:]); err != nil {
			return Header{}, err
		}
		h := DecodeHeader(hb[:])
		skip := h.Cmd != cmd && late[h.Cmd]
		if !skip && int(h.PayloadSize) > len(payload) {
			if len(payload) == 0 {
				return h, &Error{Msg: fmt.Sprintf("received header with payload but destination buffer is null "+
					"(%d bytes, message %d)", h.PayloadSize, h.Cmd), Kind: ErrFraming}
			}
			return h, &Error{Msg: fmt.Sprintf("header payload size exceeds buffer size: %d > %d", h.PayloadSize,
				len(payload)), Kind: ErrFraming}
		}
		body := payload
		if skip {
			body = make([]byte, h.PayloadSize)
		}
		if h.PayloadSize > 0 {
			if err := m.read(p, body[:h.PayloadSize]); err != nil {
				return h, err
			}
		}
		if skip {
			continue
		}
		if h.Cmd == MsgError {
			if e := (ScopedError{h.Params[0], h.Params[1]}); e.Failed() {
				return h, &Error{Msg: "protocol error: " + e.String(), Kind: ErrProtocol, Servo: e}
			}
		}
		return h, nil
	}
}

func (m *MachDSP) read(p *port, b []byte) error {
	if err := m.arm(p, false, "serial read"); err != nil {
		return err
	}
	if _, err := io.ReadFull(p.f, b); err != nil {
		return m.lineError("serial read", err)
	}
	return nil
}

// Ping sends MsgPing with index and returns the servo's first parameter.
func (m *MachDSP) Ping(index uint16) (uint16, error) {
	h, err := m.sendAndRecv(MsgPing, nil, nil, index)
	return h.Params[0], err
}

// StreamStart starts streaming.
func (m *MachDSP) StreamStart() error { return m.simple(MsgStreamStart) }

// StreamStop stops streaming.
func (m *MachDSP) StreamStop() error { return m.simple(MsgStreamStop) }

// StreamReset resets the stream (its buffers and positions).
func (m *MachDSP) StreamReset() error { return m.simple(MsgStreamReset) }

func (m *MachDSP) simple(cmd MsgType, params ...uint16) error {
	_, err := m.sendAndRecv(cmd, nil, nil, params...)
	return err
}

// StreamStatus reads the stream's progress.
func (m *MachDSP) StreamStatus() (StreamStatus, error) {
	buf := make([]byte, StreamStatusBytes)
	h, err := m.sendAndRecv(MsgStreamStatus, nil, buf)
	if err != nil {
		return StreamStatus{}, err
	}
	return DecodeStreamStatus(buf[:h.PayloadSize])
}

// BlockWrite sends one block of output samples (each two uint16 codes,
// as bytes) and waits for the servo's reply, which it sends once it took
// the block.
func (m *MachDSP) BlockWrite(data []byte) error {
	_, err := m.sendAndRecv(MsgBlockWrite, data, nil)
	return err
}

// BlockRead reads one block of input samples into data; it returns the
// bytes read.
func (m *MachDSP) BlockRead(data []byte) (int, error) {
	h, err := m.sendAndRecv(MsgBlockRead, nil, data)
	return int(h.PayloadSize), err
}

// BlockReadWrite writes out and reads into in at once (two replies); it
// returns the bytes read.
func (m *MachDSP) BlockReadWrite(out, in []byte) (int, error) {
	h, err := m.transact(MsgBlockReadWrite, out, in, 2)
	return int(h.PayloadSize), err
}

// WriteSetting writes one setting.
func (m *MachDSP) WriteSetting(s SettingsEntry, v0, v1, v2 uint16) error {
	return m.simple(MsgParamsWrite, uint16(s), v0, v1, v2)
}

// ReadSettings reads the settings.
func (m *MachDSP) ReadSettings() (Settings, error) {
	buf := make([]byte, SettingsBytes)
	h, err := m.sendAndRecv(MsgParamsRead, nil, buf)
	if err != nil {
		return Settings{}, err
	}
	return DecodeSettings(buf[:h.PayloadSize])
}

// ResetSettings restores the servo's default settings.
func (m *MachDSP) ResetSettings() error { return m.simple(MsgParamsReset) }

// u16 is v as a setting's value, refused beyond 16 bits (vortex's
// implicit narrowing would wrap it).
func u16(what string, v int) (uint16, error) {
	if v < 0 || v > 0xffff {
		return 0, &Error{Msg: fmt.Sprintf("%s %d out of range, expected 0..65535", what, v), Kind: ErrFraming}
	}
	return uint16(v), nil
}

// SetTriggerEdgeRising selects the external trigger's edge.
func (m *MachDSP) SetTriggerEdgeRising(rising bool) error {
	e := uint16(EdgeFalling)
	if rising {
		e = EdgeRising
	}
	return m.WriteSetting(SettingsTriggerEdge, e, 0, 0)
}

func (m *MachDSP) setOne(s SettingsEntry, what string, v int) error {
	u, err := u16(what, v)
	if err != nil {
		return err
	}
	return m.WriteSetting(s, u, 0, 0)
}

// SetInternalTrigger sets the internal trigger's divisor (0: external).
func (m *MachDSP) SetInternalTrigger(divisor int) error {
	return m.setOne(SettingsTriggerInternal, "internal trigger divisor", divisor)
}

// SetSampleDivisor sets the external trigger's divisor.
func (m *MachDSP) SetSampleDivisor(divisor int) error {
	return m.setOne(SettingsSampleDivisor, "sample divisor", divisor)
}

// SetAuxDivisor sets the auxiliary I/O's divisor.
func (m *MachDSP) SetAuxDivisor(divisor int) error {
	return m.setOne(SettingsAuxDivisor, "aux divisor", divisor)
}

// SetBlocks sets the stream's buffer: blockCount blocks of blockSamples.
func (m *MachDSP) SetBlocks(blockCount, blockSamples int) error {
	c, err := u16("block count", blockCount)
	if err != nil {
		return err
	}
	s, err := u16("block samples", blockSamples)
	if err != nil {
		return err
	}
	return m.WriteSetting(SettingsBlocks, c, s, 0)
}

// SetEnableReceive turns the input stream on or off.
func (m *MachDSP) SetEnableReceive(enable bool) error {
	v := uint16(0)
	if enable {
		v = 1
	}
	return m.WriteSetting(SettingsEnableReceive, v, 0, 0)
}

// SetOverflowBehavior sets what an input overflow does.
func (m *MachDSP) SetOverflowBehavior(b Overflow) error {
	return m.WriteSetting(SettingsOverflow, uint16(b), 0, 0)
}

// SetUnderflowBehavior sets what an output underflow does.
func (m *MachDSP) SetUnderflowBehavior(b Underflow) error {
	return m.WriteSetting(SettingsUnderflow, uint16(b), 0, 0)
}

// CheckError asks the servo for its latched error and fails with it.
func (m *MachDSP) CheckError() error { return m.simple(MsgError) }

// ClearError is CheckError with the servo's error ignored (reading it
// clears it); the line's errors are not ignored.
func (m *MachDSP) ClearError() error {
	err := m.CheckError()
	if errors.Is(err, ErrProtocol) {
		return nil
	}
	return err
}

// HardReset reboots the servo; it does not reply.
func (m *MachDSP) HardReset() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	p, err := m.begin()
	if err != nil {
		return err
	}
	err = m.send(p, MsgHardReset, nil, nil)
	m.end(MsgHardReset, err)
	return err
}

// String names the servo.
func (m *MachDSP) String() string {
	v := m.info.Version
	return strings.TrimSpace(fmt.Sprintf("MachDSP %s v%d.%d", m.Port(), v.Major, v.Minor))
}
