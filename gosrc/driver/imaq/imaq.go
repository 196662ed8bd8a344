package imaq

/*
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"time"
	"unsafe"
)

// Signal is a trigger line's kind (NI-IMAQ's IMG_SIGNAL_TYPE; vortex's
// imaq::signal_t).
type Signal uint32

// The signals (niimaq.h's IMG_SIGNAL_* values).
const (
	SignalNone            Signal = 0xFFFFFFFF
	SignalExternal        Signal = 0
	SignalRTSI            Signal = 1
	SignalIsoIn           Signal = 2
	SignalIsoOut          Signal = 3
	SignalStatus          Signal = 4
	SignalScaledEncoder   Signal = 5
	SignalSoftwareTrigger Signal = 6
)

// Polarity is a trigger's active level (IMG_TRIG_POLAR_ACTIVEH/L).
type Polarity uint32

// The polarities.
const (
	PolarityHigh Polarity = 0
	PolarityLow  Polarity = 1
)

// Source is what drives a trigger output (IMG_TRIG_DRIVE_*; vortex's
// imaq::source_t).
type Source uint32

// The trigger output sources.
const (
	SourceDisabled Source = iota
	SourceAcquisitionInProgress
	SourceAcquisitionDone
	SourcePixelClock
	SourceUnasserted
	SourceAsserted
	SourceHsync
	SourceVsync
	SourceFrameStart
	SourceFrameDone
	SourceScaledEncoder
)

// CurrentFrame asks LockFrame for the newest frame (IMG_CURRENT_BUFFER);
// InfiniteTimeout waits forever (IMG_TIMEOUT_INFINITE).
const (
	CurrentFrame    uint32 = 0xFFFFFFFC
	InfiniteTimeout uint32 = 0xFFFFFFFF
)

// NI-IMAQ's codes the driver singles out (niimaq_errors.h).
const (
	CodeBadUserRect = -1074397161 // IMG_ERR_BAD_USER_RECT
	CodeTimeout     = -1074397150 // IMG_ERR_TIMEOUT
	CodeDeviceInUse = -1074396995 // IMG_ERR_DEVICE_IN_USE
	CodeAcqStopped  = -1074397018 // IMG_ERR_ACQ_STOPPED
)

const (
	attrInterfaceType   = 0x3FF60000 + 0x0001
	attrHorzResolution  = 0x3FF60000 + 0x0009
	attrVertResolution  = 0x3FF60000 + 0x000A
	attrLineScan        = 0x3FF60000 + 0x000C
	attrBitsPerPixel    = 0x3FF60000 + 0x0066
	attrBytesPerPixel   = 0x3FF60000 + 0x0067
	attrAcqWindowLeft   = 0x3FF60000 + 0x0068
	attrAcqWindowTop    = 0x3FF60000 + 0x0069
	attrAcqWindowWidth  = 0x3FF60000 + 0x006A
	attrAcqWindowHeight = 0x3FF60000 + 0x006B
	attrFrameWaitMsec   = 0x3FF60000 + 0x007D
	attrLostFrames      = 0x3FF60000 + 0x0088
	attrGetSerial       = 0x3FF60000 + 0x00C0
	attrRowPixels       = 0x3FF60000 + 0x00C1
	attrCalibrationDate = 0x3FF60000 + 0x00D7

	roiFitLarger     = 0 // IMG_ROI_FIT_LARGER
	trigActionBuffer = 3 // IMG_TRIG_ACTION_BUFFER
	minTextBuffer    = 256
)

// The kinds of failure vortex singles out (vortex's imaq::device_in_use,
// incompatible_region, timeout, buffer_overflow); *Error wraps the first
// three by code.
var (
	ErrDeviceInUse        = errors.New("imaq: device in use")
	ErrIncompatibleRegion = errors.New("imaq: incompatible region")
	ErrTimeout            = errors.New("imaq: timeout")
	ErrBufferOverflow     = errors.New("imaq: buffer overflow")
	// ErrStopped is a wait ended by a stop of the acquisition.
	ErrStopped = errors.New("imaq: acquisition stopped")
	// ErrClosed is the use of a Session after Close.
	ErrClosed = errors.New("imaq: session closed")
)

// Error is a failed NI-IMAQ call, its text vortex's ("start failed:
// (-1074397151)" then NI's description).
type Error struct {
	// Op is what failed, in vortex's words.
	Op string
	// Code is NI-IMAQ's IMG_ERR (negative).
	Code int32
	// Description is imgShowError's text for the code.
	Description string
}

func (e *Error) Error() string {
	s := fmt.Sprintf("%s: (%d)", e.Op, e.Code)
	switch e.Code {
	case CodeDeviceInUse:
		return s + " device in use"
	case CodeBadUserRect:
		return s + " incompatible ROI (check alignment and size)"
	case CodeTimeout:
		return s + " timeout"
	}
	return s + "\n" + e.Description
}

// Unwrap is the kind of failure the code means (nil for other codes).
func (e *Error) Unwrap() error {
	switch e.Code {
	case CodeDeviceInUse:
		return ErrDeviceInUse
	case CodeBadUserRect:
		return ErrIncompatibleRegion
	case CodeTimeout:
		return ErrTimeout
	case CodeAcqStopped:
		return ErrStopped
	}
	return nil
}

func check(code C.int32_t, format string, args ...any) error {
	if code == 0 {
		return nil
	}
	var buf [minTextBuffer]C.char
	desc := "unknown error"
	if C.vgi_show_error(code, &buf[0]) == 0 {
		desc = C.GoString(&buf[0])
	}
	return &Error{Op: fmt.Sprintf(format, args...), Code: int32(code), Description: desc}
}

// ROI is a region of interest (vortex's imaq_t::roi_t): PixelsPerRow 0
// means Width.
type ROI struct {
	Top, Left, Height, Width uint32
	PixelsPerRow             uint32
}

// Resolution is the camera's sensor size.
type Resolution struct{ Horizontal, Vertical uint32 }

// Info is what a session reports when opened (vortex's imaq_t::info_t).
type Info struct {
	Device, Serial uint32
	// Calibration is the board's calibration date (zero when uncalibrated).
	Calibration       time.Time
	Resolution        Resolution
	AcquisitionWindow ROI
	LineScan          bool
	BitsPerPixel      uint32
	BytesPerPixel     uint32
}

// Session is an open interface and its session (vortex's imaq_t): one
// camera on one frame grabber. Its methods are safe for concurrent use,
// except that a locked frame must be released before the next is locked.
type Session struct {
	mu      sync.Mutex
	name    string
	iface   uint32
	session uint32
	info    Info
	started bool
}

// Enumerate lists the interface names ("img0", ...) NI-IMAQ knows.
func Enumerate() ([]string, error) {
	if err := Load(); err != nil {
		return nil, err
	}
	var names []string
	for i := uint32(0); i < 1<<16; i++ {
		var buf [minTextBuffer]C.char
		if C.vgi_query_names(C.uint32_t(i), &buf[0]) != 0 {
			break
		}
		names = append(names, C.GoString(&buf[0]))
	}
	return names, nil
}

// Open opens interface name and a session on it and reads its Info.
func Open(name string) (*Session, error) {
	if err := Load(); err != nil {
		return nil, err
	}
	cs := C.CString(name)
	defer C.free(unsafe.Pointer(cs))
	s := &Session{name: name}
	var id C.uint32_t
	if err := check(C.vgi_interface_open(cs, &id), "interface %q open failed", name); err != nil {
		return nil, err
	}
	s.iface = uint32(id)
	var sid C.uint32_t
	if err := check(C.vgi_session_open(id, &sid), "session open failed"); err != nil {
		C.vgi_close(id, 0)
		return nil, err
	}
	s.session = uint32(sid)
	get := func(attr uint32) uint32 {
		var v C.uint32_t
		C.vgi_get_attribute(sid, C.uint32_t(attr), &v) // as vortex: unreadable attributes read 0
		return uint32(v)
	}
	in := &s.info
	in.Device, in.Serial = get(attrInterfaceType), get(attrGetSerial)
	if c := get(attrCalibrationDate); c > 0 {
		in.Calibration = time.Unix(int64(c), 0).UTC()
	}
	in.Resolution = Resolution{get(attrHorzResolution), get(attrVertResolution)}
	in.LineScan = get(attrLineScan) != 0
	w := &in.AcquisitionWindow
	w.Left, w.Top, w.Width, w.Height = get(attrAcqWindowLeft), get(attrAcqWindowTop), get(attrAcqWindowWidth), get(attrAcqWindowHeight)
	w.PixelsPerRow = w.Width
	in.BitsPerPixel, in.BytesPerPixel = get(attrBitsPerPixel), get(attrBytesPerPixel)
	return s, nil
}

// Name is the interface's name.
func (s *Session) Name() string { return s.name }

// Info is what the session reported when opened.
func (s *Session) Info() Info { return s.info }

// Valid reports whether the session is open.
func (s *Session) Valid() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.iface != 0
}

// Handle is NI-IMAQ's interface id (0 once closed).
func (s *Session) Handle() uint32 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.iface
}

// Running reports whether a capture was started and not stopped.
func (s *Session) Running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.started
}

func (s *Session) sid() (C.uint32_t, error) {
	if s.iface == 0 {
		return 0, ErrClosed
	}
	return C.uint32_t(s.session), nil
}

// RequiredBufferSize is the bytes of one ring buffer for the configured
// region.
func (s *Session) RequiredBufferSize() (uint32, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sid, err := s.sid()
	if err != nil {
		return 0, err
	}
	var n C.uint32_t
	return uint32(n), check(C.vgi_buffer_size(sid, &n), "get buffer size failed")
}

// FitRegion is the region NI-IMAQ would acquire for roi, widened to the
// board's alignment (IMG_ROI_FIT_LARGER).
func (s *Session) FitRegion(roi ROI) (ROI, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sid, err := s.sid()
	if err != nil {
		return ROI{}, err
	}
	var out [4]C.uint32_t
	if err := check(C.vgi_fit_roi(sid, roiFitLarger, C.uint32_t(roi.Top), C.uint32_t(roi.Left), C.uint32_t(roi.Height),
		C.uint32_t(roi.Width), &out[0]), "fitting ROI failed (t=%d, l=%d) and shape [h=%d x w=%d] failed",
		roi.Top, roi.Left, roi.Height, roi.Width); err != nil {
		return ROI{}, err
	}
	return ROI{Top: uint32(out[0]), Left: uint32(out[1]), Height: uint32(out[2]), Width: uint32(out[3])}, nil
}

// ConfigureRegion sets the acquired region and the buffers' row stride.
func (s *Session) ConfigureRegion(roi ROI) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	sid, err := s.sid()
	if err != nil {
		return err
	}
	if err := check(C.vgi_configure_roi(sid, C.uint32_t(roi.Top), C.uint32_t(roi.Left), C.uint32_t(roi.Height), C.uint32_t(roi.Width)),
		"setting ROI offset (t=%d, l=%d) and shape [h=%d x w=%d] failed", roi.Top, roi.Left, roi.Height, roi.Width); err != nil {
		return err
	}
	ppr := roi.PixelsPerRow
	if ppr == 0 {
		ppr = roi.Width
	}
	return check(C.vgi_set_attribute(sid, attrRowPixels, C.uint32_t(ppr)), "setting pixels per row to %d failed", ppr)
}

// QueryRegion reads the configured region back.
func (s *Session) QueryRegion() (ROI, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sid, err := s.sid()
	if err != nil {
		return ROI{}, err
	}
	var out [4]C.uint32_t
	if err := check(C.vgi_get_roi(sid, &out[0]), "retrieving ROI failed"); err != nil {
		return ROI{}, err
	}
	var ppr C.uint32_t
	if err := check(C.vgi_get_attribute(sid, attrRowPixels, &ppr), "retrieving pixels per row failed"); err != nil {
		return ROI{}, err
	}
	return ROI{Top: uint32(out[0]), Left: uint32(out[1]), Height: uint32(out[2]), Width: uint32(out[3]), PixelsPerRow: uint32(ppr)}, nil
}

// LostFrames is the frames the ring lost since the capture started.
func (s *Session) LostFrames() (uint32, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sid, err := s.sid()
	if err != nil {
		return 0, err
	}
	var v C.uint32_t
	return uint32(v), check(C.vgi_get_attribute(sid, attrLostFrames, &v), "retrieving lost frames failed")
}

// ConfigureRing gives NI-IMAQ the ring's buffers: each at least
// RequiredBufferSize bytes of memory outside the Go heap that stays valid
// until the ring is replaced or the session closed.
func (s *Session) ConfigureRing(buffers []uintptr, skip uint32) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	sid, err := s.sid()
	if err != nil {
		return err
	}
	if len(buffers) == 0 || len(buffers) > math.MaxUint32 {
		return check(C.vgi_ring_setup(sid, 0, nil, C.uint32_t(skip), 0), "ring buffer setup of size %d failed", len(buffers))
	}
	list := (*C.uintptr_t)(C.malloc(C.size_t(len(buffers)) * C.size_t(unsafe.Sizeof(uintptr(0)))))
	defer C.free(unsafe.Pointer(list))
	copy(unsafe.Slice((*uintptr)(unsafe.Pointer(list)), len(buffers)), buffers)
	return check(C.vgi_ring_setup(sid, C.uint32_t(len(buffers)), list, C.uint32_t(skip), 0), "ring buffer setup of size %d failed", len(buffers))
}

// ConfigureLineTrigger sets the line trigger input.
func (s *Session) ConfigureLineTrigger(line, skip uint32, polarity Polarity, signal Signal) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	sid, err := s.sid()
	if err != nil {
		return err
	}
	return check(C.vgi_line_trigger(sid, C.uint32_t(signal), C.uint32_t(line), C.uint32_t(polarity), C.uint32_t(skip)),
		"external line trigger on line %d failed", line)
}

// ConfigureFrameTrigger sets the frame trigger input: one trigger a buffer,
// waited for up to timeoutMs (InfiniteTimeout: forever).
func (s *Session) ConfigureFrameTrigger(line, timeoutMs uint32, polarity Polarity, signal Signal) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	sid, err := s.sid()
	if err != nil {
		return err
	}
	return check(C.vgi_frame_trigger(sid, C.uint32_t(signal), C.uint32_t(line), C.uint32_t(polarity), C.uint32_t(timeoutMs), trigActionBuffer),
		"external frame trigger on line %d failed", line)
}

// ConfigureTriggerOutput drives trigger line from source.
func (s *Session) ConfigureTriggerOutput(line uint32, source Source, polarity Polarity, signal Signal) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	sid, err := s.sid()
	if err != nil {
		return err
	}
	return check(C.vgi_trigger_drive(sid, C.uint32_t(signal), C.uint32_t(line), C.uint32_t(polarity), C.uint32_t(source)),
		"drive trigger on line %d from %d failed", line, source)
}

// ConfigureFrameTimeout bounds the wait for one frame.
func (s *Session) ConfigureFrameTimeout(d time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	sid, err := s.sid()
	if err != nil {
		return err
	}
	ms := d.Milliseconds()
	if ms < 0 || ms >= int64(InfiniteTimeout) {
		return fmt.Errorf("set frame timeout of %d msec: expected 0 <= timeout < %d ms", ms, InfiniteTimeout)
	}
	return check(C.vgi_set_attribute(sid, attrFrameWaitMsec, C.uint32_t(ms)), "set frame timeout of %d msec", ms)
}

// StartCapture starts the ring acquisition (nothing when started).
func (s *Session) StartCapture() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	sid, err := s.sid()
	if err != nil {
		return err
	}
	if s.started {
		return nil
	}
	if err := check(C.vgi_start(sid), "start failed"); err != nil {
		return err
	}
	s.started = true
	return nil
}

// StopCapture stops the acquisition (nothing when not started); a LockFrame
// waiting returns ErrStopped.
func (s *Session) StopCapture() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stopLocked()
}

func (s *Session) stopLocked() error {
	if !s.started || s.iface == 0 {
		return nil
	}
	s.started = false // before the error: the session is stopped either way
	return check(C.vgi_stop(C.uint32_t(s.session)), "stop failed")
}

// Frame is a locked ring buffer (vortex's locked_frame_t).
type Frame struct {
	// Target is the frame asked for, Actual the one NI-IMAQ returned.
	Target, Actual uint32
	// Addr is the buffer's address.
	Addr uintptr
}

// LockFrame waits for frame index (counted from the capture's start, or
// CurrentFrame) and locks its buffer; ReleaseFrame unlocks it. When
// requestedOnly and the ring has overwritten the frame, it releases the
// buffer and fails with vortex's message, wrapping ErrBufferOverflow.
// The wait does not hold the session's lock: a StopCapture ends it.
func (s *Session) LockFrame(index uint32, requestedOnly bool) (Frame, error) {
	s.mu.Lock()
	sid, err := s.sid()
	s.mu.Unlock()
	if err != nil {
		return Frame{}, err
	}
	f := Frame{Target: index}
	var actual C.uint32_t
	var addr C.uintptr_t
	if err := check(C.vgi_examine(sid, C.uint32_t(index), &actual, &addr), "locking frame %d", index); err != nil {
		return Frame{}, err
	}
	f.Actual, f.Addr = uint32(actual), uintptr(addr)
	if requestedOnly && index != CurrentFrame && f.Actual != index {
		_ = s.ReleaseFrame()
		return Frame{}, &OverwrittenError{Frame: index, Actual: f.Actual}
	}
	return f, nil
}

// OverwrittenError is a frame the ring overwrote before it was locked
// (vortex's buffer_overflow); it wraps ErrBufferOverflow.
type OverwrittenError struct {
	// Frame is the frame asked for, Actual the newer one NI-IMAQ had.
	Frame, Actual uint32
}

func (e *OverwrittenError) Error() string {
	return fmt.Sprintf("frame %d has been overwritten", e.Frame)
}

// Unwrap is ErrBufferOverflow.
func (e *OverwrittenError) Unwrap() error { return ErrBufferOverflow }

// ReleaseFrame unlocks the locked buffer.
func (s *Session) ReleaseFrame() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	sid, err := s.sid()
	if err != nil {
		return err
	}
	return check(C.vgi_release(sid), "unlocking frame")
}

// Close stops a capture and closes the interface (and its session).
func (s *Session) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.iface == 0 {
		return nil
	}
	_ = s.stopLocked()
	C.vgi_close(C.uint32_t(s.iface), 1) // as vortex: a close's error is ignored
	s.iface, s.session = 0, 0
	return nil
}
