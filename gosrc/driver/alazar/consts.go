package alazar

import (
	"errors"
	"fmt"
	"strings"
)

// ReturnCode is the SDK's RETURN_CODE (AlazarError.h).
type ReturnCode int

// The return codes the driver distinguishes (AlazarError.h).
const (
	ApiSuccess                       ReturnCode = 512
	ApiFailed                        ReturnCode = 513
	ApiDmaInProgress                 ReturnCode = 518
	ApiUnsupportedFunction           ReturnCode = 533
	ApiNotInitialized                ReturnCode = 556
	ApiNotSupportThisChannel         ReturnCode = 561
	ApiInvalidHandle                 ReturnCode = 572
	ApiBufferNotReady                ReturnCode = 573
	ApiInvalidData                   ReturnCode = 574
	ApiWaitTimeout                   ReturnCode = 579
	ApiWaitCanceled                  ReturnCode = 580
	ApiBufferOverflow                ReturnCode = 582
	ApiOCTIgnoreBadClockNotSupported ReturnCode = 602
)

// Error is a failed SDK call: vortex's message for what failed, the
// SDK's code and AlazarErrorToText's text for it.
type Error struct {
	// Msg says what failed, as vortex words it ("failed to start capture").
	Msg string
	// Code is the SDK's RETURN_CODE.
	Code ReturnCode
	// Text is AlazarErrorToText(Code).
	Text string
}

func newError(msg string, rc ReturnCode) *Error {
	return &Error{Msg: msg, Code: rc, Text: errorText(rc)}
}

// Error is vortex's format: "msg: (code) text".
func (e *Error) Error() string { return fmt.Sprintf("%s: (%d) %s", e.Msg, e.Code, e.Text) }

// Is classifies the code as vortex's exception types do: ErrBufferOverflow,
// ErrWaitTimeout, ErrUnsupported, ErrBufferNotReady.
func (e *Error) Is(target error) bool {
	switch target {
	case ErrBufferOverflow:
		return e.Code == ApiBufferOverflow
	case ErrWaitTimeout:
		return e.Code == ApiWaitTimeout
	case ErrUnsupported:
		return e.Code == ApiUnsupportedFunction || e.Code == ApiOCTIgnoreBadClockNotSupported
	case ErrBufferNotReady:
		return e.Code == ApiBufferNotReady
	}
	return false
}

// The classes of SDK errors (vortex's alazar::buffer_overflow,
// wait_timeout, unsupported_operation, buffer_not_ready): match with
// errors.Is.
var (
	ErrBufferOverflow = errors.New("alazar: buffer overflow")
	ErrWaitTimeout    = errors.New("alazar: wait timeout")
	ErrUnsupported    = errors.New("alazar: unsupported operation")
	ErrBufferNotReady = errors.New("alazar: buffer not ready")
)

// check turns a return code into nil or an *Error with msg (formatted).
func check(rc ReturnCode, format string, args ...any) error {
	if rc == ApiSuccess {
		return nil
	}
	return newError(fmt.Sprintf(format, args...), rc)
}

// Channel is an input channel, or a mask of several (AlazarCmd.h
// CHANNEL_A ... CHANNEL_P).
type Channel uint32

// The channels.
const (
	ChannelA Channel = 1 << iota
	ChannelB
	ChannelC
	ChannelD
	ChannelE
	ChannelF
	ChannelG
	ChannelH
	ChannelI
	ChannelJ
	ChannelK
	ChannelL
	ChannelM
	ChannelN
	ChannelO
	ChannelP
)

// AllChannels lists the channels in order (the first GET_CHANNELS_PER_BOARD
// of them are a board's).
var AllChannels = [16]Channel{ChannelA, ChannelB, ChannelC, ChannelD, ChannelE, ChannelF, ChannelG, ChannelH,
	ChannelI, ChannelJ, ChannelK, ChannelL, ChannelM, ChannelN, ChannelO, ChannelP}

// String names a channel ("B") or a mask ("A+B"; "None" when empty).
func (c Channel) String() string {
	var parts []string
	for i := range 16 {
		if c&(1<<i) != 0 {
			parts = append(parts, string(rune('A'+i)))
		}
	}
	if c>>16 != 0 {
		parts = append(parts, fmt.Sprintf("0x%x", uint32(c>>16)<<16))
	}
	if len(parts) == 0 {
		return "None"
	}
	return strings.Join(parts, "+")
}

// Coupling is AC or DC coupling (AlazarCmd.h).
type Coupling uint32

// The couplings.
const (
	CouplingAC Coupling = 1
	CouplingDC Coupling = 2
)

func (c Coupling) String() string {
	switch c {
	case CouplingAC:
		return "AC"
	case CouplingDC:
		return "DC"
	}
	return fmt.Sprintf("Coupling(%d)", uint32(c))
}

// ClockEdge is the sampling edge of an external clock (AlazarCmd.h).
type ClockEdge uint32

// The clock edges.
const (
	ClockEdgeRising  ClockEdge = 0
	ClockEdgeFalling ClockEdge = 1
)

// TriggerSlope is the slope a trigger engine fires on (AlazarCmd.h).
type TriggerSlope uint32

// The trigger slopes.
const (
	TriggerSlopePositive TriggerSlope = 1
	TriggerSlopeNegative TriggerSlope = 2
)

// TriggerRangeTTL is the external trigger range that selects TTL
// (vortex's trigger_range_TTL).
const TriggerRangeTTL = 0

// InfiniteAcquisition is the records per acquisition of a run that goes on
// until aborted (vortex's infinite_acquisition).
const InfiniteAcquisition = 0x7fffffff

// SDK constants (AlazarCmd.h, AlazarApi.h).
const (
	capSerialNumber        = 0x10000024
	capLatestCalDate       = 0x10000026
	capBoardType           = 0x1000002B
	capPCIeLinkSpeed       = 0x10000030
	capPCIeLinkWidth       = 0x10000031
	capBoardOptionsLow     = 0x10000037
	capMaxPretrigger       = 0x10000046
	parRecordLength        = 0x10000003
	parRecordsCaptured     = 0x10000045
	parSetADCMode          = 0x10000047
	parAsyncBuffersPending = 0x10000050
	parChannelsPerBoard    = 0x10000070
	parPackMode            = 0x10000072
	packDefault            = 0
	pack12Bits             = 2
	adcModeDefault         = 0
	adcModeDES             = 1
	optionDualPortMemory   = 1 << 2
	optionDualEdge         = 1 << 9

	internalClock     = 0x1
	externalClockAC   = 0x5
	externalClockDC   = 0x6
	sampleRateUserDef = 0x40
	trigEngineOpJ     = 0x0
	trigEngineOpJOrK  = 0x2
	trigEngineJ       = 0x0
	trigEngineK       = 0x1
	trigExternal      = 0x2
	trigDisable       = 0x3
	auxOutTrigger     = 0
	auxOutPacer       = 2
	auxOutClock       = 6
	ssmDisable        = 0
	ssmEnable         = 1
	admaExternalStart = 0x1
	admaNPT           = 0x200
	admaFIFOOnly      = 0x800
	admaInterleave    = 0x1000
)
