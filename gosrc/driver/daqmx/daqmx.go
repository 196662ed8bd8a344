package daqmx

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

// Edge is a clock or trigger edge (vortex's daqmx::edge_t; NI's
// DAQmx_Val_Rising and DAQmx_Val_Falling).
type Edge int32

// The edges.
const (
	Rising  Edge = 10280
	Falling Edge = 10171
)

// Terminal is an analog input's terminal configuration (vortex's
// daqmx::terminal_t; NI's DAQmx_Val_RSE, NRSE, Diff, PseudoDiff).
type Terminal int32

// The terminal configurations.
const (
	Referenced         Terminal = 10083
	Unreferenced       Terminal = 10078
	Differential       Terminal = 10106
	Pseudodifferential Terminal = 12529
)

// SampleMode is a sample clock's mode (vortex's daqmx::sample_mode_t;
// NI's DAQmx_Val_FiniteSamps, ContSamps, HWTimedSinglePoint).
type SampleMode int32

// The sample modes.
const (
	Finite     SampleMode = 10178
	Continuous SampleMode = 10123
	Hardware   SampleMode = 12522
)

// NI's regeneration modes (DAQmx_Val_AllowRegen, DAQmx_Val_DoNotAllowRegen).
const (
	valAllowRegen     = 10097
	valDontAllowRegen = 10158
)

// NI-DAQmx error codes vortex's driver singles out (DAQmxError*, as
// nidaqmx/error_codes.py lists them).
const (
	CodeTimeoutExceeded           = -200221
	CodeSamplesNoLongerAvailable  = -200279
	CodeGenStoppedToPreventRegen  = -200290
	CodeSamplesNotYetAvailable    = -200284
	CodeMultiChanTypesInTask      = -200559
	CodeSamplesCanNotYetBeWritten = -200292
	CodeOperationAborted          = -201452
)

// The kinds of failure vortex's driver raises as their own exception
// classes (wait_timeout, buffer_overflow, buffer_underflow,
// unsupported_operation); an *Error wraps the one its code means.
var (
	ErrTimeout     = errors.New("daqmx: timeout")
	ErrOverflow    = errors.New("daqmx: buffer overflow")
	ErrUnderflow   = errors.New("daqmx: buffer underflow")
	ErrUnsupported = errors.New("daqmx: unsupported operation")
	// ErrIncomplete is a write or read that moved fewer samples than asked.
	ErrIncomplete = errors.New("daqmx: incomplete operation")
	// ErrCleared is the use of a Task after Clear.
	ErrCleared = errors.New("daqmx: task cleared")
)

// Error is a failed NI-DAQmx call. Its text is vortex's: the operation,
// the code in parentheses, then " buffer overflow" / " buffer underflow" /
// " unsupported operation" for those codes, or NI's description of any
// other code on the next line.
type Error struct {
	// Op is what failed, in vortex's words ("analog write failed").
	Op string
	// Code is NI-DAQmx's status code (negative).
	Code int32
	// Description is NI's text for the code (DAQmxGetErrorString).
	Description string
	// Detail is NI's extended error information of the failed call
	// (DAQmxGetExtendedErrorInfo): the channel, task or value at fault.
	Detail string
}

// Error formats the error as vortex does.
func (e *Error) Error() string {
	s := fmt.Sprintf("%s: (%d)", e.Op, e.Code)
	switch kind(e.Code) {
	case ErrOverflow:
		return s + " buffer overflow"
	case ErrUnderflow:
		return s + " buffer underflow"
	case ErrUnsupported:
		return s + " unsupported operation"
	case ErrTimeout:
		return s
	}
	return s + "\n" + e.Description
}

// Unwrap is the kind of failure the code means (nil for other codes).
func (e *Error) Unwrap() error { return kind(e.Code) }

func kind(code int32) error {
	switch code {
	case CodeTimeoutExceeded:
		return ErrTimeout
	case CodeSamplesNoLongerAvailable:
		return ErrOverflow
	case CodeGenStoppedToPreventRegen, CodeSamplesNotYetAvailable:
		return ErrUnderflow
	case CodeMultiChanTypesInTask:
		return ErrUnsupported
	}
	return nil
}

// check turns a status into an *Error (nil for success and warnings, as
// NI's DAQmxFailed: only negative codes fail). It reads the extended
// information on the thread of the failed call: NI keeps it per thread,
// so the caller must have locked its OS thread (call does).
func check(code C.int32_t, op string, args ...any) error {
	if code >= 0 {
		return nil
	}
	e := &Error{Op: fmt.Sprintf(op, args...), Code: int32(code)}
	var buf [2048]C.char
	if C.vgd_error_string(code, &buf[0], C.uint32_t(len(buf))) >= 0 {
		e.Description = C.GoString(&buf[0])
	}
	if C.vgd_extended_error(&buf[0], C.uint32_t(len(buf))) >= 0 {
		e.Detail = C.GoString(&buf[0])
	}
	return e
}

// ErrorString is NI's description of code (vortex's daqmx::to_string).
func ErrorString(code int32) (string, error) {
	if err := Load(); err != nil {
		return "", err
	}
	n := C.vgd_error_string(C.int32_t(code), nil, 0)
	if n <= 0 {
		return "", nil
	}
	buf := make([]C.char, n)
	C.vgd_error_string(C.int32_t(code), &buf[0], C.uint32_t(n))
	return C.GoString(&buf[0]), nil
}

// Task is one NI-DAQmx task (vortex's daqmx_t). Its methods may be called
// from several goroutines: a write blocked waiting for buffer space
// returns once another goroutine stops or clears the task.
type Task struct {
	name string

	mu      sync.Mutex // guards handle and started against Clear
	handle  C.uintptr_t
	started bool
}

// NewTask loads the library if needed and creates a task named name
// (vortex's daqmx_t(task_name)).
func NewTask(name string) (*Task, error) {
	if err := Load(); err != nil {
		return nil, err
	}
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	var h C.uintptr_t
	if err := call(func() error { return check(C.vgd_create_task(cname, &h), "task creation failed") }); err != nil {
		return nil, err
	}
	return &Task{name: name, handle: h}, nil
}

// call runs f on a locked OS thread, so the extended error information
// NI keeps per thread is read on the thread that failed.
func call(f func() error) error {
	runtimeLock()
	defer runtimeUnlock()
	return f()
}

// Name is the task's name.
func (t *Task) Name() string { return t.name }

// Valid tells whether the task exists (not cleared).
func (t *Task) Valid() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.handle != 0
}

// Running tells whether the task was started and not stopped since.
func (t *Task) Running() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.started
}

// h is the task's handle, or ErrCleared.
func (t *Task) h() (C.uintptr_t, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.handle == 0 {
		return 0, fmt.Errorf("%w: task %q, expected a task not cleared", ErrCleared, t.name)
	}
	return t.handle, nil
}

// do runs one configuration call with the task's handle.
func (t *Task) do(f func(h C.uintptr_t) error) error {
	h, err := t.h()
	if err != nil {
		return err
	}
	return call(func() error { return f(h) })
}

// withC runs f with s as a C string.
func withC(s string, f func(*C.char) error) error {
	cs := C.CString(s)
	defer C.free(unsafe.Pointer(cs))
	return f(cs)
}

// CreateDigitalOutput adds a digital output channel of lines
// ("Dev1/port0", "Dev1/port0/line0:3"), one channel for all its lines.
func (t *Task) CreateDigitalOutput(lines string) error {
	return t.do(func(h C.uintptr_t) error {
		return withC(lines, func(c *C.char) error {
			return check(C.vgd_create_do(h, c), "digital output channel creation failed")
		})
	})
}

// CreateDigitalInput adds a digital input channel of lines. (vortex's
// driver creates a DO channel here, a bug; vortexgo creates the DI
// channel its name promises.)
func (t *Task) CreateDigitalInput(lines string) error {
	return t.do(func(h C.uintptr_t) error {
		return withC(lines, func(c *C.char) error {
			return check(C.vgd_create_di(h, c), "digital input channel creation failed")
		})
	})
}

// CreateAnalogVoltageOutput adds an analog voltage output channel
// ("Dev1/ao0") spanning [min, max] volts.
func (t *Task) CreateAnalogVoltageOutput(port string, min, max float64) error {
	return t.do(func(h C.uintptr_t) error {
		return withC(port, func(c *C.char) error {
			return check(C.vgd_create_ao_voltage(h, c, C.double(min), C.double(max)),
				"analog voltage output channel creation failed")
		})
	})
}

// CreateAnalogVoltageInput adds an analog voltage input channel
// ("Dev1/ai0") spanning [min, max] volts with the terminal configuration.
func (t *Task) CreateAnalogVoltageInput(port string, min, max float64, terminal Terminal) error {
	return t.do(func(h C.uintptr_t) error {
		return withC(port, func(c *C.char) error {
			return check(C.vgd_create_ai_voltage(h, c, C.int32_t(terminal), C.double(min), C.double(max)),
				"analog voltage input channel creation failed")
		})
	})
}

// ConfigureSampleClock clocks the task from source (a terminal such as
// "pfi0") at samplesPerSecond, with a buffer hint of samplesPerChannel, and
// triggers its start on the same terminal (vortex's
// configure_sample_clock). With divisor > 1 the source is the timebase,
// divided down by the onboard clock.
func (t *Task) ConfigureSampleClock(source string, mode SampleMode, samplesPerSecond, samplesPerChannel, divisor int,
	edge Edge) error {
	if divisor < 1 {
		divisor = 1
	}
	return t.do(func(h C.uintptr_t) error {
		return withC(source, func(src *C.char) error {
			if divisor > 1 {
				if err := check(C.vgd_set_timebase_src(h, src), "timebase source from %s failed", source); err != nil {
					return err
				}
				if err := check(C.vgd_set_timebase_rate(h, C.double(samplesPerSecond)),
					"timebase rate set to %d samples/second failed", samplesPerSecond); err != nil {
					return err
				}
				if err := check(C.vgd_set_timebase_div(h, C.uint32_t(divisor)), "timebase divisor set to %d failed",
					divisor); err != nil {
					return err
				}
				// a NULL source: the onboard clock, driven by the timebase set above
				rate, per := samplesPerSecond/divisor, samplesPerChannel/divisor
				if err := check(C.vgd_cfg_samp_clk_timing(h, nil, C.double(rate), C.int32_t(edge), C.int32_t(mode),
					C.uint64_t(per)), "clock mode %d from %s at %d samples/second and %d samples/channel failed",
					mode, source, rate, per); err != nil {
					return err
				}
			} else if err := check(C.vgd_cfg_samp_clk_timing(h, src, C.double(samplesPerSecond), C.int32_t(edge),
				C.int32_t(mode), C.uint64_t(samplesPerChannel)),
				"clock mode %d from %s at %d samples/second and %d samples/channel failed", mode, source,
				samplesPerSecond, samplesPerChannel); err != nil {
				return err
			}
			return check(C.vgd_cfg_dig_edge_start_trig(h, src, C.int32_t(edge)), "trigger from %s failed", source)
		})
	})
}

// SetOutputBufferSize sizes the output buffer, in samples per channel.
func (t *Task) SetOutputBufferSize(samplesPerChannel int) error {
	return t.do(func(h C.uintptr_t) error {
		return check(C.vgd_cfg_output_buffer(h, C.uint32_t(samplesPerChannel)),
			"set output buffer to %d samples/channel failed", samplesPerChannel)
	})
}

// SetInputBufferSize sizes the input buffer, in samples per channel.
func (t *Task) SetInputBufferSize(samplesPerChannel int) error {
	return t.do(func(h C.uintptr_t) error {
		return check(C.vgd_cfg_input_buffer(h, C.uint32_t(samplesPerChannel)),
			"set input buffer to %d samples/channel failed", samplesPerChannel)
	})
}

// SetRegeneration allows or forbids regenerating old samples; vortex
// streams with it off, so a late write underflows instead of repeating.
func (t *Task) SetRegeneration(enable bool) error {
	mode, word := C.int32_t(valDontAllowRegen), "off"
	if enable {
		mode, word = valAllowRegen, "on"
	}
	return t.do(func(h C.uintptr_t) error {
		return check(C.vgd_set_write_regen_mode(h, mode), "set regeneration %s failed", word)
	})
}

func seconds(d time.Duration) C.double {
	if d < 0 {
		return -1 // DAQmx_Val_WaitInfinitely
	}
	return C.double(d.Seconds())
}

// rows checks that buf holds samples rows of channels values.
func rows(op string, samples, channels, have int) error {
	if samples < 0 || channels <= 0 || have < samples*channels {
		return fmt.Errorf("%s: %d samples of %d channels in a buffer of %d values, expected samples*channels <= %d",
			op, samples, channels, have, have)
	}
	return nil
}

// WriteAnalog writes samplesPerChannel rows of channels volts from buf
// (row-major, one value per channel per sample), waiting up to timeout for
// buffer space (a negative timeout waits forever).
func (t *Task) WriteAnalog(samplesPerChannel, channels int, buf []float64, timeout time.Duration) error {
	if err := rows("analog write", samplesPerChannel, channels, len(buf)); err != nil {
		return err
	}
	if samplesPerChannel == 0 {
		return nil
	}
	var n C.int32_t
	err := t.do(func(h C.uintptr_t) error {
		return check(C.vgd_write_analog(h, C.int32_t(samplesPerChannel), seconds(timeout),
			(*C.double)(unsafe.Pointer(&buf[0])), &n), "analog write failed")
	})
	if err == nil && int(n) != samplesPerChannel {
		err = fmt.Errorf("%w: partial analog write: %d != %d", ErrIncomplete, n, samplesPerChannel)
	}
	return err
}

// WriteDigital writes samplesPerChannel rows of channels digital words
// from buf, as WriteAnalog.
func (t *Task) WriteDigital(samplesPerChannel, channels int, buf []uint32, timeout time.Duration) error {
	if err := rows("digital write", samplesPerChannel, channels, len(buf)); err != nil {
		return err
	}
	if samplesPerChannel == 0 {
		return nil
	}
	var n C.int32_t
	err := t.do(func(h C.uintptr_t) error {
		return check(C.vgd_write_digital(h, C.int32_t(samplesPerChannel), seconds(timeout),
			(*C.uint32_t)(unsafe.Pointer(&buf[0])), &n), "digital write failed")
	})
	if err == nil && int(n) != samplesPerChannel {
		err = fmt.Errorf("%w: partial digital write: %d != %d", ErrIncomplete, n, samplesPerChannel)
	}
	return err
}

// ReadAnalog reads samplesPerChannel rows of channels volts into buf,
// waiting up to timeout for the samples.
func (t *Task) ReadAnalog(samplesPerChannel, channels int, buf []float64, timeout time.Duration) error {
	if err := rows("analog read", samplesPerChannel, channels, len(buf)); err != nil {
		return err
	}
	if samplesPerChannel == 0 {
		return nil
	}
	var n C.int32_t
	err := t.do(func(h C.uintptr_t) error {
		return check(C.vgd_read_analog(h, C.int32_t(samplesPerChannel), seconds(timeout),
			(*C.double)(unsafe.Pointer(&buf[0])), C.uint32_t(len(buf)), &n), "analog read failed")
	})
	if err == nil && int(n) != samplesPerChannel {
		err = fmt.Errorf("%w: partial analog read: %d != %d", ErrIncomplete, n, samplesPerChannel)
	}
	return err
}

// ReadDigital reads samplesPerChannel rows of channels digital words into
// buf, as ReadAnalog.
func (t *Task) ReadDigital(samplesPerChannel, channels int, buf []uint32, timeout time.Duration) error {
	if err := rows("digital read", samplesPerChannel, channels, len(buf)); err != nil {
		return err
	}
	if samplesPerChannel == 0 {
		return nil
	}
	var n C.int32_t
	err := t.do(func(h C.uintptr_t) error {
		return check(C.vgd_read_digital(h, C.int32_t(samplesPerChannel), seconds(timeout),
			(*C.uint32_t)(unsafe.Pointer(&buf[0])), C.uint32_t(len(buf)), &n), "digital read failed")
	})
	if err == nil && int(n) != samplesPerChannel {
		err = fmt.Errorf("%w: partial digital read: %d != %d", ErrIncomplete, n, samplesPerChannel)
	}
	return err
}

// Start starts the task (a no-op when it runs).
func (t *Task) Start() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.handle == 0 {
		return fmt.Errorf("%w: task %q, expected a task not cleared", ErrCleared, t.name)
	}
	if t.started {
		return nil
	}
	h := t.handle
	if err := call(func() error { return check(C.vgd_start_task(h), "start failed") }); err != nil {
		return err
	}
	t.started = true
	return nil
}

// Stop stops the task; the task is stopped even when NI reports an error.
// It calls DAQmxStopTask also when Start was never called or failed: the
// samples written before a start (the engine's preload) are in the task's
// buffer until it is stopped, and a start that failed (another task held
// the channel) would otherwise leave them there, filling the buffer of the
// next session (found by tests_py/test_instrument_misuse.py). NI-DAQmx
// accepts stopping a task that is not running.
func (t *Task) Stop() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.handle == 0 {
		return nil
	}
	t.started = false
	h := t.handle
	return call(func() error { return check(C.vgd_stop_task(h), "stop task") })
}

// Clear releases the task (a no-op when it is cleared already); the
// Task is unusable after, even when NI reports an error.
func (t *Task) Clear() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.handle == 0 {
		return nil
	}
	h := t.handle
	t.handle, t.started = 0, false
	return call(func() error { return check(C.vgd_clear_task(h), "clear task") })
}

// Close is Clear (io.Closer).
func (t *Task) Close() error { return t.Clear() }

// String names the task.
func (t *Task) String() string {
	return "daqmx.Task(" + strings.TrimSpace(t.name) + ")"
}
