package machdsp

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// ProtocolMagic is MsgHello's first parameter, echoed by the servo
// (vortex's PROTOCOL_MAGIC).
const ProtocolMagic uint16 = 0x1234

// MsgType is a message's type (vortex's msg_type_t).
type MsgType uint16

// The message types.
const (
	MsgHello          MsgType = 0
	MsgParamsRead     MsgType = 1
	MsgParamsWrite    MsgType = 2
	MsgParamsReset    MsgType = 3
	MsgStreamStart    MsgType = 10
	MsgStreamStop     MsgType = 12
	MsgStreamReset    MsgType = 13
	MsgStreamStatus   MsgType = 14
	MsgBlockWrite     MsgType = 20
	MsgBlockRead      MsgType = 21
	MsgBlockReadWrite MsgType = 22
	MsgPing           MsgType = 30
	MsgError          MsgType = 40
	MsgHardReset      MsgType = 41
)

// SettingsEntry is a setting MsgParamsWrite changes (vortex's
// settings_entry_t).
type SettingsEntry uint16

// The settings.
const (
	SettingsUnderflow       SettingsEntry = 1
	SettingsOverflow        SettingsEntry = 2
	SettingsBlocks          SettingsEntry = 3
	SettingsEnableReceive   SettingsEntry = 4
	SettingsTriggerEdge     SettingsEntry = 5
	SettingsTriggerInternal SettingsEntry = 6
	SettingsSampleDivisor   SettingsEntry = 7
	SettingsAuxDivisor      SettingsEntry = 8
)

// StreamState is the stream's state in a StreamStatus (vortex's
// stream_state_t).
type StreamState uint8

// The stream states.
const (
	StreamContinue StreamState = 0
	StreamExit     StreamState = 1
	StreamAbort    StreamState = 2
)

// Underflow is what the servo does when its output buffer runs dry
// (vortex's underflow_t).
type Underflow uint8

// The underflow behaviours.
const (
	UnderflowError  Underflow = 1 // report an error and stop streaming
	UnderflowLoop   Underflow = 2 // repeat the buffer
	UnderflowHold   Underflow = 3 // repeat the last block
	UnderflowIgnore Underflow = 4 // keep writing
)

// Overflow is what the servo does when its input buffer fills (vortex's
// overflow_t).
type Overflow uint8

// The overflow behaviours.
const (
	OverflowError  Overflow = 1 // report an error and stop streaming
	OverflowIgnore Overflow = 2 // keep reading
)

// The servo's error subsystems and errors (vortex's MACHDSP_ERROR_*), the
// parameters of a MsgError reply.
const (
	ErrorOK           = 0
	ErrorUARTTransmit = 1
	ErrorUARTReceive  = 2
	ErrorSAITransmit  = 3
	ErrorSAIReceive   = 4
	ErrorSAIGeneral   = 5
	ErrorTrigger      = 6
	ErrorAux          = 7
	ErrorSettings     = 8

	ErrorUnderflow       = 1
	ErrorOverflow        = 2
	ErrorBufferTooLarge  = 3
	ErrorInvalidDivisor  = 4
	ErrorPayloadTooLarge = 5
	ErrorInvalidSetting  = 6
	ErrorInvalidMessage  = 7
)

// The trigger edges of SettingsTriggerEdge (vortex's MACHDSP_EDGE_*).
const (
	EdgeRising  = 0
	EdgeFalling = 1
)

var subsystems = map[uint16]string{ErrorOK: "OK", ErrorUARTTransmit: "UART Tx", ErrorUARTReceive: "UART Rx",
	ErrorSAITransmit: "SAI Tx", ErrorSAIReceive: "SAI Rx", ErrorSAIGeneral: "SAI General", ErrorTrigger: "trigger",
	ErrorAux: "aux", ErrorSettings: "settings"}

// vortex's table spells "payload to large"; its text is kept.
var underlyings = map[uint16]string{ErrorOK: "OK", ErrorUnderflow: "underflow", ErrorOverflow: "overflow",
	ErrorBufferTooLarge: "buffer too large", ErrorInvalidDivisor: "invalid divisor",
	ErrorPayloadTooLarge: "payload to large", ErrorInvalidSetting: "invalid setting",
	ErrorInvalidMessage: "invalid message"}

// ScopedError is the servo's error: the subsystem that failed and how
// (vortex's scoped_error_t).
type ScopedError struct {
	Subsystem, Underlying uint16
}

// Failed tells whether the error is one (Underlying is not ErrorOK).
func (e ScopedError) Failed() bool { return e.Underlying != ErrorOK }

// String is vortex's to_string(scoped_error_t): "SAI Tx (3): underflow (1)".
func (e ScopedError) String() string {
	s, okS := subsystems[e.Subsystem]
	u, okU := underlyings[e.Underlying]
	if !okS || (e.Failed() && !okU) {
		return fmt.Sprintf("unknown (%d, %d)", e.Subsystem, e.Underlying)
	}
	msg := fmt.Sprintf("%s (%d)", s, e.Subsystem)
	if e.Failed() {
		msg += fmt.Sprintf(": %s (%d)", u, e.Underlying)
	}
	return msg
}

// Errors. Every error of the driver is an *Error (vortex's
// machdsp::exception); errors.Is tells its kind.
var (
	// ErrTimeout: a read or write did not complete within Timeout
	// (vortex's machdsp::timeout).
	ErrTimeout = errors.New("timeout")
	// ErrProtocol: the servo replied MsgError with an error.
	ErrProtocol = errors.New("protocol error")
	// ErrFraming: a reply that does not fit the request (a payload longer
	// than expected, a settings or status reply too short, a bad magic).
	ErrFraming = errors.New("framing error")
	// ErrCancelled: Cancel ended the call (asio's cancel).
	ErrCancelled = errors.New("operation canceled")
	// ErrNotOpen: the port is closed (vortex's "port is not open").
	ErrNotOpen = errors.New("port is not open")
)

// Error is a failure of the servo or of the line, with vortex's text.
type Error struct {
	// Msg is vortex's message ("serial read: timeout", "protocol error:
	// SAI Tx (3): underflow (1)").
	Msg string
	// Kind is ErrTimeout, ErrProtocol, ErrFraming, ErrCancelled,
	// ErrNotOpen, or nil (the line failed: Err says how).
	Kind error
	// Servo is the servo's error of an ErrProtocol.
	Servo ScopedError
	// Err is the system's error, when one caused it (ENOENT, EIO).
	Err error
}

func (e *Error) Error() string { return e.Msg }

// Unwrap gives the kind and the system's error.
func (e *Error) Unwrap() []error {
	var out []error
	if e.Kind != nil {
		out = append(out, e.Kind)
	}
	if e.Err != nil {
		out = append(out, e.Err)
	}
	return out
}

// HeaderBytes is the length of a message header.
const HeaderBytes = 12

// Header is a message's header (vortex's msg_header_t).
type Header struct {
	Cmd         MsgType
	PayloadSize uint16
	Params      [4]uint16
}

// Encode writes h into b (HeaderBytes long), little-endian.
func (h Header) Encode(b []byte) {
	binary.LittleEndian.PutUint16(b[0:], uint16(h.Cmd))
	binary.LittleEndian.PutUint16(b[2:], h.PayloadSize)
	for i, p := range h.Params {
		binary.LittleEndian.PutUint16(b[4+2*i:], p)
	}
}

// DecodeHeader reads a header from b (at least HeaderBytes long).
func DecodeHeader(b []byte) Header {
	h := Header{Cmd: MsgType(binary.LittleEndian.Uint16(b[0:])), PayloadSize: binary.LittleEndian.Uint16(b[2:])}
	for i := range h.Params {
		h.Params[i] = binary.LittleEndian.Uint16(b[4+2*i:])
	}
	return h
}

// SettingsBytes is the length of a Settings payload (vortex's
// settings_t::BUFFER_BYTES).
const SettingsBytes = 8*2 + 4

// Settings are the servo's settings (vortex's settings_t).
type Settings struct {
	UnderflowBehavior Underflow
	OverflowBehavior  Overflow
	BlockCount        uint16
	BlockSamples      uint16
	MaxBufferSamples  uint16
	EnableReceive     uint8
	TriggerEdge       uint8
	InternalTrigger   uint16
	SampleDivisor     uint16
	MaxSampleDivisor  uint16
	AuxDivisor        uint16
	MaxAuxDivisor     uint16
}

// DecodeSettings reads a MsgParamsRead payload, in vortex's field order
// (packed, little-endian).
func DecodeSettings(b []byte) (Settings, error) {
	if len(b) < SettingsBytes {
		return Settings{}, &Error{Msg: fmt.Sprintf("settings buffer is undersized: %d < %d", len(b), SettingsBytes),
			Kind: ErrFraming}
	}
	u := func(i int) uint16 { return binary.LittleEndian.Uint16(b[i:]) }
	return Settings{UnderflowBehavior: Underflow(b[0]), OverflowBehavior: Overflow(b[1]), BlockCount: u(2),
		BlockSamples: u(4), MaxBufferSamples: u(6), EnableReceive: b[8], TriggerEdge: b[9], InternalTrigger: u(10),
		SampleDivisor: u(12), MaxSampleDivisor: u(14), AuxDivisor: u(16), MaxAuxDivisor: u(18)}, nil
}

// Encode is DecodeSettings's inverse (a servo's reply; the test peer's).
func (s Settings) Encode() []byte {
	b := make([]byte, SettingsBytes)
	p := func(i int, v uint16) { binary.LittleEndian.PutUint16(b[i:], v) }
	b[0], b[1] = byte(s.UnderflowBehavior), byte(s.OverflowBehavior)
	p(2, s.BlockCount)
	p(4, s.BlockSamples)
	p(6, s.MaxBufferSamples)
	b[8], b[9] = s.EnableReceive, s.TriggerEdge
	p(10, s.InternalTrigger)
	p(12, s.SampleDivisor)
	p(14, s.MaxSampleDivisor)
	p(16, s.AuxDivisor)
	p(18, s.MaxAuxDivisor)
	return b
}

// StreamStatusBytes is the length of a StreamStatus payload (vortex's
// stream_status_t::BUFFER_BYTES: a padding byte after the state).
const StreamStatusBytes = 4*2 + 1 + 1

// StreamStatus is the stream's progress (vortex's stream_status_t).
type StreamStatus struct {
	TxBlockIdx, RxBlockIdx     uint16
	TxBlockValid, RxBlockValid uint16
	State                      StreamState
}

// DecodeStreamStatus reads a MsgStreamStatus payload.
func DecodeStreamStatus(b []byte) (StreamStatus, error) {
	if len(b) < StreamStatusBytes {
		return StreamStatus{}, &Error{Msg: fmt.Sprintf("stream status buffer is undersized: %d < %d", len(b),
			StreamStatusBytes), Kind: ErrFraming}
	}
	u := func(i int) uint16 { return binary.LittleEndian.Uint16(b[i:]) }
	return StreamStatus{TxBlockIdx: u(0), RxBlockIdx: u(2), TxBlockValid: u(4), RxBlockValid: u(6),
		State: StreamState(b[8])}, nil
}

// Encode is DecodeStreamStatus's inverse.
func (s StreamStatus) Encode() []byte {
	b := make([]byte, StreamStatusBytes)
	binary.LittleEndian.PutUint16(b[0:], s.TxBlockIdx)
	binary.LittleEndian.PutUint16(b[2:], s.RxBlockIdx)
	binary.LittleEndian.PutUint16(b[4:], s.TxBlockValid)
	binary.LittleEndian.PutUint16(b[6:], s.RxBlockValid)
	b[8] = byte(s.State)
	return b
}

// Version is the firmware's version (vortex's info_t::version_t).
type Version struct {
	Major, Minor, Features uint16
}

// Info is what opening learned (vortex's info_t): the firmware's version,
// the output codes' scale and the settings' limits.
type Info struct {
	Version   Version
	ZeroPoint uint16
	PerLSB    float64
	// MaxBufferSamples, MaxSampleDivisor and MaxAuxDivisor are the
	// settings' limits the servo reported.
	MaxBufferSamples, MaxSampleDivisor, MaxAuxDivisor int
}

// DefaultInfo is vortex's info_t{} (zero point 32768, 1/32767 per code).
func DefaultInfo() Info { return Info{ZeroPoint: 32768, PerLSB: 1.0 / 32767} }
