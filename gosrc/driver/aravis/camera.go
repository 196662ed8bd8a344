package aravis

/*
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
	"unsafe"
)

// errCap bounds the GError text kept per call.
const errCap = 1024

// Error is a failed Aravis call: the operation and GError's message.
type Error struct {
	Op  string
	Msg string
}

func (e *Error) Error() string { return "aravis: " + e.Op + ": " + e.Msg }

// ErrClosed is returned by calls on a closed camera or stream.
var ErrClosed = errors.New("aravis: the camera is closed")

// call runs one shim call that reports a GError into a buffer.
func call(op string, f func(err *C.char, cap C.size_t) C.int) error {
	var buf [errCap]C.char
	if f(&buf[0], errCap) != 0 {
		return &Error{Op: op, Msg: C.GoString(&buf[0])}
	}
	return nil
}

// EnableInterface enables one of Aravis's interfaces by name ("Fake": the
// in-process simulated camera "Fake_1"; GigEVision, USB3Vision are on by
// default).
func EnableInterface(name string) error {
	if err := Load(); err != nil {
		return err
	}
	cs := C.CString(name)
	defer C.free(unsafe.Pointer(cs))
	C.vga_enable_interface(cs)
	return nil
}

// SetFakeGenICam makes the Fake interface's camera use the GenICam XML at
// path ("" restores Aravis's own); it applies to fake cameras opened after.
func SetFakeGenICam(path string) error {
	if err := Load(); err != nil {
		return err
	}
	var cs *C.char
	if path != "" {
		cs = C.CString(path)
		defer C.free(unsafe.Pointer(cs))
	}
	C.vga_set_fake_genicam(cs)
	return nil
}

// DeviceIDs rescans the enabled interfaces and lists the cameras' ids.
func DeviceIDs() ([]string, error) {
	if err := Load(); err != nil {
		return nil, err
	}
	buf := make([]C.char, 1<<16)
	C.vga_device_ids(&buf[0], C.size_t(len(buf)))
	s := strings.TrimSuffix(C.GoString(&buf[0]), "\n")
	if s == "" {
		return nil, nil
	}
	return strings.Split(s, "\n"), nil
}

// Camera is an open GenICam camera (an ArvCamera). Its methods are safe
// for concurrent use.
type Camera struct {
	mu   sync.Mutex
	h    C.uintptr_t
	lost C.uintptr_t // the control-lost flag

	ID, Vendor, Model string
	// GigEVision is true for a GigE Vision camera.
	GigEVision bool
}

// Open opens the camera whose Aravis id is id ("" opens the first found;
// an id is "Vendor-Model-Serial", a GigE Vision camera's IP address, or
// "Fake_1"). A camera id of the Fake interface enables that interface.
func Open(id string) (*Camera, error) {
	if err := Load(); err != nil {
		return nil, err
	}
	if strings.HasPrefix(id, "Fake_") {
		_ = EnableInterface("Fake")
	}
	var cs *C.char
	if id != "" {
		cs = C.CString(id)
		defer C.free(unsafe.Pointer(cs))
	}
	c := &Camera{}
	err := call("arv_camera_new("+quote(id)+")", func(e *C.char, n C.size_t) C.int { return C.vga_camera_new(cs, &c.h, e, n) })
	if err != nil {
		C.vga_unref(c.h)
		return nil, fmt.Errorf("%w (the ids found: %s)", err, foundIDs())
	}
	var v, m, d [256]C.char
	if err := call("camera names", func(e *C.char, n C.size_t) C.int {
		return C.vga_camera_names(c.h, &v[0], &m[0], &d[0], 256, e, n)
	}); err != nil {
		C.vga_unref(c.h)
		return nil, err
	}
	c.Vendor, c.Model, c.ID = C.GoString(&v[0]), C.GoString(&m[0]), C.GoString(&d[0])
	if id != "" {
		c.ID = id // the name it was opened by (a fake's DeviceID is "1")
	}
	c.GigEVision = C.vga_is_gv(c.h) != 0
	C.vga_watch_lost(c.h, &c.lost)
	return c, nil
}

func quote(id string) string {
	if id == "" {
		return "NULL"
	}
	return fmt.Sprintf("%q", id)
}

func foundIDs() string {
	ids, err := DeviceIDs()
	if err != nil || len(ids) == 0 {
		return "none"
	}
	return strings.Join(ids, ", ")
}

// Close releases the camera (a stream it made must be closed first).
func (c *Camera) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.h == 0 {
		return nil
	}
	C.vga_unref(c.h)
	c.h = 0
	C.vga_free_flag(c.lost)
	c.lost = 0
	return nil
}

// Lost reports whether the camera's control channel was lost (the
// device's "control-lost" signal: a GigE Vision camera stopped answering
// its heartbeat, a USB camera was unplugged).
func (c *Camera) Lost() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return C.vga_lost(c.lost) != 0
}

// with runs f on the open camera's handle.
func (c *Camera) with(f func(h C.uintptr_t) error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.h == 0 {
		return ErrClosed
	}
	return f(c.h)
}

func (c *Camera) feature(op, name string, f func(h C.uintptr_t, name *C.char, e *C.char, n C.size_t) C.int) error {
	return c.with(func(h C.uintptr_t) error {
		cs := C.CString(name)
		defer C.free(unsafe.Pointer(cs))
		return call(op+"("+name+")", func(e *C.char, n C.size_t) C.int { return f(h, cs, e, n) })
	})
}

// Available reports whether the camera has the feature name.
func (c *Camera) Available(name string) (bool, error) {
	var a C.int
	err := c.feature("is_feature_available", name, func(h C.uintptr_t, s *C.char, e *C.char, n C.size_t) C.int {
		return C.vga_feature_available(h, s, &a, e, n)
	})
	return a != 0, err
}

// SetInteger sets an integer feature.
func (c *Camera) SetInteger(name string, v int64) error {
	return c.feature("set_integer", name, func(h C.uintptr_t, s *C.char, e *C.char, n C.size_t) C.int {
		return C.vga_set_integer(h, s, C.int64_t(v), e, n)
	})
}

// Integer reads an integer feature.
func (c *Camera) Integer(name string) (int64, error) {
	var v C.int64_t
	err := c.feature("get_integer", name, func(h C.uintptr_t, s *C.char, e *C.char, n C.size_t) C.int {
		return C.vga_get_integer(h, s, &v, e, n)
	})
	return int64(v), err
}

// SetFloat sets a float feature.
func (c *Camera) SetFloat(name string, v float64) error {
	return c.feature("set_float", name, func(h C.uintptr_t, s *C.char, e *C.char, n C.size_t) C.int {
		return C.vga_set_float(h, s, C.double(v), e, n)
	})
}

// Float reads a float feature.
func (c *Camera) Float(name string) (float64, error) {
	var v C.double
	err := c.feature("get_float", name, func(h C.uintptr_t, s *C.char, e *C.char, n C.size_t) C.int {
		return C.vga_get_float(h, s, &v, e, n)
	})
	return float64(v), err
}

// SetString sets an enumeration or string feature by its text.
func (c *Camera) SetString(name, v string) error {
	cv := C.CString(v)
	defer C.free(unsafe.Pointer(cv))
	return c.feature("set_string", name+"="+v, func(h C.uintptr_t, _ *C.char, e *C.char, n C.size_t) C.int {
		cs := C.CString(name)
		defer C.free(unsafe.Pointer(cs))
		return C.vga_set_string(h, cs, cv, e, n)
	})
}

// String reads an enumeration or string feature as text.
func (c *Camera) String(name string) (string, error) {
	var out [256]C.char
	err := c.feature("get_string", name, func(h C.uintptr_t, s *C.char, e *C.char, n C.size_t) C.int {
		return C.vga_get_string(h, s, &out[0], 256, e, n)
	})
	return C.GoString(&out[0]), err
}

// SetPixelFormat sets PixelFormat by its GenICam name ("Mono12p").
func (c *Camera) SetPixelFormat(name string) error {
	return c.feature("set_pixel_format_from_string", name, func(h C.uintptr_t, s *C.char, e *C.char, n C.size_t) C.int {
		return C.vga_set_pixel_format(h, s, e, n)
	})
}

// Payload is the bytes of one frame the camera sends (PayloadSize).
func (c *Camera) Payload() (int, error) {
	var v C.uint32_t
	err := c.with(func(h C.uintptr_t) error {
		return call("get_payload", func(e *C.char, n C.size_t) C.int { return C.vga_payload(h, &v, e, n) })
	})
	return int(v), err
}

// SetExposureTime sets the exposure in microseconds (Aravis picks
// ExposureTime or ExposureTimeAbs, whichever the camera has).
func (c *Camera) SetExposureTime(us float64) error {
	return c.with(func(h C.uintptr_t) error {
		return call("set_exposure_time", func(e *C.char, n C.size_t) C.int { return C.vga_set_exposure(h, C.double(us), e, n) })
	})
}

// ExposureTime reads the exposure in microseconds.
func (c *Camera) ExposureTime() (float64, error) {
	var v C.double
	err := c.with(func(h C.uintptr_t) error {
		return call("get_exposure_time", func(e *C.char, n C.size_t) C.int { return C.vga_get_exposure(h, &v, e, n) })
	})
	return float64(v), err
}

// SetFrameRate sets the frame rate in Hz (AcquisitionFrameRate, with the
// vendor variants Aravis knows).
func (c *Camera) SetFrameRate(hz float64) error {
	return c.with(func(h C.uintptr_t) error {
		return call("set_frame_rate", func(e *C.char, n C.size_t) C.int { return C.vga_set_frame_rate(h, C.double(hz), e, n) })
	})
}

// FrameRate reads the frame rate in Hz.
func (c *Camera) FrameRate() (float64, error) {
	var v C.double
	err := c.with(func(h C.uintptr_t) error {
		return call("get_frame_rate", func(e *C.char, n C.size_t) C.int { return C.vga_get_frame_rate(h, &v, e, n) })
	})
	return float64(v), err
}

// SetContinuous sets AcquisitionMode=Continuous.
func (c *Camera) SetContinuous() error {
	return c.with(func(h C.uintptr_t) error {
		return call("AcquisitionMode=Continuous", func(e *C.char, n C.size_t) C.int { return C.vga_set_continuous(h, e, n) })
	})
}

// StartAcquisition starts the camera (AcquisitionStart).
func (c *Camera) StartAcquisition() error {
	return c.with(func(h C.uintptr_t) error {
		return call("start_acquisition", func(e *C.char, n C.size_t) C.int { return C.vga_start(h, e, n) })
	})
}

// StopAcquisition stops the camera (AcquisitionStop).
func (c *Camera) StopAcquisition() error {
	return c.with(func(h C.uintptr_t) error {
		return call("stop_acquisition", func(e *C.char, n C.size_t) C.int { return C.vga_stop(h, e, n) })
	})
}

// Stream is the camera's stream of frames (an ArvStream) into buffers of
// the caller's memory. Push and Pop may run on different goroutines.
type Stream struct {
	mu sync.Mutex
	h  C.uintptr_t
}

// CreateStream creates the camera's stream. resendNever turns a GigE
// Vision stream's packet resend requests off (a missing packet then makes
// its frame incomplete at once).
func (c *Camera) CreateStream(resendNever bool) (*Stream, error) {
	s := &Stream{}
	r := C.int(0)
	if resendNever {
		r = 1
	}
	err := c.with(func(h C.uintptr_t) error {
		return call("create_stream", func(e *C.char, n C.size_t) C.int { return C.vga_create_stream(h, r, &s.h, e, n) })
	})
	if err != nil {
		C.vga_unref(s.h)
		return nil, err
	}
	return s, nil
}

// Close stops the stream's thread (no buffer is written after it returns)
// and releases the stream and the buffers still queued (their memory is
// the caller's and stays).
func (s *Stream) Close() {
	s.mu.Lock()
	h := s.h
	s.h = 0
	s.mu.Unlock()
	C.vga_stream_close(h)
}

// Push queues size bytes at p (the caller's memory, which must stay valid
// until its frame is popped or the stream is closed) for a frame.
func (s *Stream) Push(p uintptr, size int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.h == 0 {
		return ErrClosed
	}
	if C.vga_push(s.h, C.uintptr_t(p), C.size_t(size)) != 0 { // p is C (pinned) memory, never Go heap
		return &Error{Op: "arv_buffer_new_full", Msg: "no buffer"}
	}
	return nil
}

// Frame is one popped buffer.
type Frame struct {
	// Data is the buffer's memory (as pushed).
	Data uintptr
	// Status is Aravis's ArvBufferStatus.
	Status BufferStatus
	// ID is the camera's frame id (16 bits on GigE Vision 1.x, wrapping
	// from 65535 to 1).
	ID uint64
	// Width, Height and PixelFormat are the image's (0 unless Status is
	// BufferSuccess).
	Width, Height int
	PixelFormat   uint32
}

// Pop waits up to timeout for the next frame; ok is false on a timeout.
func (s *Stream) Pop(timeout time.Duration) (f Frame, ok bool) {
	s.mu.Lock()
	h := s.h
	s.mu.Unlock()
	if h == 0 {
		return f, false
	}
	var data C.uintptr_t
	var status, w, ht C.int32_t
	var id C.uint64_t
	var pf C.uint32_t
	// The wait runs outside s.mu: Push proceeds meanwhile (Aravis's queues
	// are thread safe); Close may not run under it (the engine stops the
	// source only after its Fill returned or from its own goroutine, and
	// Close is called after Stop).
	if C.vga_pop(h, C.uint64_t(max(timeout, 0)/time.Microsecond), &data, &status, &id, &w, &ht, &pf) == 0 {
		return f, false
	}
	return Frame{Data: uintptr(data), Status: BufferStatus(status), ID: uint64(id), Width: int(w), Height: int(ht),
		PixelFormat: uint32(pf)}, true
}

// Statistics are the stream's counters: frames completed, failed
// (incomplete) and underruns (frames the camera sent with no buffer queued:
// dropped).
func (s *Stream) Statistics() (completed, failures, underruns uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.h == 0 {
		return 0, 0, 0
	}
	var a, b, c C.uint64_t
	C.vga_statistics(s.h, &a, &b, &c)
	return uint64(a), uint64(b), uint64(c)
}

// BufferStatus is Aravis's ArvBufferStatus (arvbuffer.h).
type BufferStatus int32

// The statuses.
const (
	BufferUnknown        BufferStatus = -1
	BufferSuccess        BufferStatus = 0
	BufferCleared        BufferStatus = 1
	BufferTimeout        BufferStatus = 2
	BufferMissingPackets BufferStatus = 3
	BufferWrongPacketID  BufferStatus = 4
	BufferSizeMismatch   BufferStatus = 5
	BufferFilling        BufferStatus = 6
	BufferAborted        BufferStatus = 7
)

func (s BufferStatus) String() string {
	switch s {
	case BufferUnknown:
		return "unknown"
	case BufferSuccess:
		return "success"
	case BufferCleared:
		return "cleared"
	case BufferTimeout:
		return "timeout (not every packet arrived in time)"
	case BufferMissingPackets:
		return "missing packets"
	case BufferWrongPacketID:
		return "wrong packet id"
	case BufferSizeMismatch:
		return "size mismatch (the image did not fit the buffer)"
	case BufferFilling:
		return "filling"
	case BufferAborted:
		return "aborted"
	}
	return fmt.Sprintf("status %d", int32(s))
}
