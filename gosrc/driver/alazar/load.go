// Package alazar is vortexgo's driver for AlazarTech digitizers: the part
// of the ATS-SDK's C API (libATSApi) that vortex's driver uses for an
// acquisition, loaded at run time, and a typed Board over it (vortex's
// vortex::alazar::board_t: clock, trigger, inputs, AUX I/O, asynchronous
// DMA into posted buffers).
//
// # Loading
//
// The library is dlopen'ed on first use (Load, or any Board call), the way
// gosrc/cuda loads libcuda: vortexgo builds without the ATS-SDK, imports
// without it, and a missing library is an ordinary error (ErrNoLibrary)
// naming the library and VORTEXGO_ATSAPI_LIBRARY, the environment variable
// that points at it. Candidates, in order: $VORTEXGO_ATSAPI_LIBRARY, then
// libATSApi.so and libATSApi.so.0 on the loader's path.
//
// The project's virtual digitizer (instruments/virtual, `make virtual`)
// is a libATSApi.so with the SDK's symbols: set
// VORTEXGO_ATSAPI_LIBRARY=build/virtual/libATSApi.so to run everything
// here without a board.
//
// # Sources
//
// Function names, signatures, constants and return codes are from the
// ATS-SDK's public headers AlazarApi.h, AlazarCmd.h and AlazarError.h
// (copies in public repositories, e.g. github.com/mgliewe/qrnds,
// thrd-party/ats/include) and the ATS-SDK guide (docs.alazartech.com).
// Board behaviour, names and messages follow vortex's driver
// (src/vortex/driver/alazar). No code of either is copied.
package alazar

/*
#include <stdint.h>
#include <stddef.h>

typedef uint8_t U8;
typedef uint16_t U16;
typedef uint32_t U32;
typedef void* HANDLE;
typedef int RC;

typedef struct {
	RC (*sdk_version)(U8*, U8*, U8*);
	U32 (*num_systems)(void);
	U32 (*boards_in_system)(U32);
	HANDLE (*board_by_id)(U32, U32);
	RC (*query_capability)(HANDLE, U32, U32, U32*);
	RC (*channel_info)(HANDLE, U32*, U8*);
	RC (*get_parameter)(HANDLE, U8, U32, long*);
	RC (*get_parameter_ul)(HANDLE, U8, U32, U32*);
	RC (*set_parameter_ul)(HANDLE, U8, U32, U32);
	RC (*set_capture_clock)(HANDLE, U32, U32, U32, U32);
	RC (*set_external_clock_level)(HANDLE, float);
	RC (*input_control_ex)(HANDLE, U32, U32, U32, U32);
	RC (*set_trigger_operation)(HANDLE, U32, U32, U32, U32, U32, U32, U32, U32, U32);
	RC (*set_external_trigger)(HANDLE, U32, U32);
	RC (*set_trigger_delay)(HANDLE, U32);
	RC (*configure_aux_io)(HANDLE, U32, U32);
	RC (*set_record_size)(HANDLE, U32, U32);
	RC (*before_async_read)(HANDLE, U32, long, U32, U32, U32, U32);
	RC (*start_capture)(HANDLE);
	RC (*abort_async_read)(HANDLE);
	RC (*post_async_buffer)(HANDLE, void*, U32);
	RC (*wait_async_buffer_complete)(HANDLE, void*, U32);
	const char* (*error_to_text)(RC);
	RC (*configure_sample_skipping)(HANDLE, U32, U32, U16*);
	RC (*oct_ignore_bad_clock)(HANDLE, U32, double, double, double*, double*);
	RC (*dsp_get_modules)(HANDLE, U32, void**, U32*);
	// The on-FPGA FFT module (AlazarDSP.h) and the galvo DAC (AlazarGalvo.h): optional.
	RC (*dsp_get_info)(void*, U32*, U16*, U16*, U32*, U32*, U32*);
	RC (*dsp_get_parameter_u32)(void*, U32, U32*);
	RC (*fft_max_trigger_rate)(void*, U32, double*);
	RC (*fft_set_window)(void*, U32, float*, float*);
	RC (*fft_bg_set_record)(void*, const int16_t*, U32);
	RC (*fft_bg_set_enabled)(void*, int);
	RC (*fft_setup)(void*, U16, U32, U32, U32, U32, U32, U32*);
	RC (*dsp_get_buffer)(HANDLE, void*, U32);
	RC (*dsp_abort_capture)(HANDLE);
	RC (*galvo_sequence_count)(HANDLE, int32_t*);
	RC (*galvo_slot_size)(HANDLE, int, int32_t*);
	RC (*galvo_playback_start)(HANDLE);
	RC (*galvo_playback_stop)(HANDLE);
	RC (*galvo_alines_per_bscan)(HANDLE, int, int32_t);
	RC (*galvo_bscan_mode)(HANDLE, int);
	RC (*galvo_sequence_write)(HANDLE, int32_t, int, int32_t, int32_t, int32_t, int32_t, int32_t, _Bool, _Bool, _Bool);
	RC (*galvo_slot_write)(HANDLE, int, const uint32_t*, int32_t, int32_t);
	RC (*galvo_set_park)(HANDLE, uint16_t, uint16_t);
} vg_ats;

static vg_ats ats;

// vg_ats_table is how Go fills the table: cgo cannot name a static variable.
static vg_ats* vg_ats_table(void) { return &ats; }

// Handles and buffers cross as integers and become pointers here: a board
// handle is the SDK's, a buffer is pinned memory outside the Go heap.
#define H(h) ((HANDLE)(uintptr_t)(h))
// ApiUnsupportedFunction, for an optional function the library lacks.
#define UNSUPPORTED 533

static RC vg_sdk_version(U8* a, U8* b, U8* c) { return ats.sdk_version(a, b, c); }
static U32 vg_num_systems(void) { return ats.num_systems(); }
static U32 vg_boards_in_system(U32 s) { return ats.boards_in_system(s); }
static uintptr_t vg_board_by_id(U32 s, U32 b) { return (uintptr_t)ats.board_by_id(s, b); }
static RC vg_query_capability(uintptr_t h, U32 cap, U32* v) { return ats.query_capability(H(h), cap, 0, v); }
static RC vg_channel_info(uintptr_t h, U32* mem, U8* bits) { return ats.channel_info(H(h), mem, bits); }
static RC vg_get_parameter(uintptr_t h, U8 ch, U32 p, long* v) { return ats.get_parameter(H(h), ch, p, v); }
static RC vg_get_parameter_ul(uintptr_t h, U8 ch, U32 p, U32* v) { return ats.get_parameter_ul(H(h), ch, p, v); }
static RC vg_set_parameter_ul(uintptr_t h, U8 ch, U32 p, U32 v) { return ats.set_parameter_ul(H(h), ch, p, v); }
static RC vg_set_capture_clock(uintptr_t h, U32 src, U32 rate, U32 edge, U32 dec) {
	return ats.set_capture_clock(H(h), src, rate, edge, dec);
}
static RC vg_set_external_clock_level(uintptr_t h, float level) {
	return ats.set_external_clock_level ? ats.set_external_clock_level(H(h), level) : UNSUPPORTED;
}
static RC vg_input_control_ex(uintptr_t h, U32 ch, U32 coupling, U32 range, U32 imp) {
	return ats.input_control_ex(H(h), ch, coupling, range, imp);
}
static RC vg_set_trigger_operation(uintptr_t h, U32 op, U32 e1, U32 s1, U32 sl1, U32 l1, U32 e2, U32 s2, U32 sl2, U32 l2) {
	return ats.set_trigger_operation(H(h), op, e1, s1, sl1, l1, e2, s2, sl2, l2);
}
static RC vg_set_external_trigger(uintptr_t h, U32 coupling, U32 range) { return ats.set_external_trigger(H(h), coupling, range); }
static RC vg_set_trigger_delay(uintptr_t h, U32 d) { return ats.set_trigger_delay(H(h), d); }
static RC vg_configure_aux_io(uintptr_t h, U32 mode, U32 p) { return ats.configure_aux_io(H(h), mode, p); }
static RC vg_set_record_size(uintptr_t h, U32 pre, U32 post) { return ats.set_record_size(H(h), pre, post); }
static RC vg_before_async_read(uintptr_t h, U32 ch, long off, U32 len, U32 rpb, U32 rpa, U32 flags) {
	return ats.before_async_read(H(h), ch, off, len, rpb, rpa, flags);
}
static RC vg_start_capture(uintptr_t h) { return ats.start_capture(H(h)); }
static RC vg_abort_async_read(uintptr_t h) { return ats.abort_async_read(H(h)); }
static RC vg_post_async_buffer(uintptr_t h, uintptr_t buf, U32 bytes) {
	return ats.post_async_buffer(H(h), (void*)buf, bytes);
}
static RC vg_wait_async_buffer_complete(uintptr_t h, uintptr_t buf, U32 ms) {
	return ats.wait_async_buffer_complete(H(h), (void*)buf, ms);
}
static const char* vg_error_to_text(RC rc) { return ats.error_to_text(rc); }
static RC vg_configure_sample_skipping(uintptr_t h, U32 mode, U32 clocks, U16* bitmap) {
	return ats.configure_sample_skipping ? ats.configure_sample_skipping(H(h), mode, clocks, bitmap) : UNSUPPORTED;
}
static RC vg_oct_ignore_bad_clock(uintptr_t h, U32 enable, double good, double bad) {
	double cycle = 0, width = 0;
	return ats.oct_ignore_bad_clock ? ats.oct_ignore_bad_clock(H(h), enable, good, bad, &cycle, &width) : UNSUPPORTED;
}
// A missing optional function answers ApiUnsupportedFunction.
#define OPT(f, ...) (ats.f ? ats.f(__VA_ARGS__) : UNSUPPORTED)
#define D(d) ((void*)(uintptr_t)(d))
static RC vg_dsp_get_modules(uintptr_t h, U32 n, uintptr_t* out) {
	if (!ats.dsp_get_modules) return UNSUPPORTED;
	return ats.dsp_get_modules(H(h), n, (void**)out, NULL);
}
static RC vg_dsp_get_info(uintptr_t d, U32* type, U16* major, U16* minor, U32* max_len, U32* channels) {
	return OPT(dsp_get_info, D(d), type, major, minor, max_len, channels, NULL);
}
static RC vg_dsp_get_parameter_u32(uintptr_t d, U32 p, U32* v) { return OPT(dsp_get_parameter_u32, D(d), p, v); }
static RC vg_fft_max_trigger_rate(uintptr_t d, U32 n, double* r) { return OPT(fft_max_trigger_rate, D(d), n, r); }
static RC vg_fft_set_window(uintptr_t d, U32 n, float* re, float* im) { return OPT(fft_set_window, D(d), n, re, im); }
static RC vg_fft_bg_set_record(uintptr_t d, const int16_t* r, U32 n) { return OPT(fft_bg_set_record, D(d), r, n); }
static RC vg_fft_bg_set_enabled(uintptr_t d, int e) { return OPT(fft_bg_set_enabled, D(d), e); }
static RC vg_fft_setup(uintptr_t d, U16 ch, U32 rec, U32 fft, U32 fmt, U32* bytes) {
	return OPT(fft_setup, D(d), ch, rec, fft, fmt, 0, 0, bytes);
}
static RC vg_dsp_get_buffer(uintptr_t h, uintptr_t buf, U32 ms) { return OPT(dsp_get_buffer, H(h), (void*)buf, ms); }
static RC vg_dsp_abort_capture(uintptr_t h) { return OPT(dsp_abort_capture, H(h)); }
static RC vg_galvo_sequence_count(uintptr_t h, int32_t* n) { return OPT(galvo_sequence_count, H(h), n); }
static RC vg_galvo_slot_size(uintptr_t h, int slot, int32_t* n) { return OPT(galvo_slot_size, H(h), slot, n); }
static RC vg_galvo_playback_start(uintptr_t h) { return OPT(galvo_playback_start, H(h)); }
static RC vg_galvo_playback_stop(uintptr_t h) { return OPT(galvo_playback_stop, H(h)); }
static RC vg_galvo_alines_per_bscan(uintptr_t h, int mode, int32_t n) { return OPT(galvo_alines_per_bscan, H(h), mode, n); }
static RC vg_galvo_bscan_mode(uintptr_t h, int mode) { return OPT(galvo_bscan_mode, H(h), mode); }
static RC vg_galvo_sequence_write(uintptr_t h, int32_t seq, int slot, int32_t reps, int32_t start, int32_t end) {
	return OPT(galvo_sequence_write, H(h), seq, slot, reps, start, start, end, 0, 0, 0, 0);
}
static RC vg_galvo_slot_write(uintptr_t h, int slot, const uint32_t* data, int32_t n, int32_t off) {
	return OPT(galvo_slot_write, H(h), slot, data, n, off);
}
static RC vg_galvo_set_park(uintptr_t h, uint16_t x, uint16_t y) { return OPT(galvo_set_park, H(h), x, y); }
static RC vg_dsp_module_count(uintptr_t h, U32* n) {
	if (!ats.dsp_get_modules) { *n = 0; return 512; }
	return ats.dsp_get_modules(H(h), 0, NULL, n);
}
*/
import "C"

import (
	"errors"
	"fmt"
	"unsafe"

	"github.com/vortexgo/vortexgo/gosrc/driver/instrument"
	"github.com/vortexgo/vortexgo/gosrc/internal/dl"
)

// EnvLibrary names the environment variable that points the loader at a
// libATSApi (a path, or a name on the loader's path).
const EnvLibrary = "VORTEXGO_ATSAPI_LIBRARY"

// ErrNoLibrary is wrapped by every error that comes from the library not
// being loadable.
var ErrNoLibrary = errors.New("alazar: no AlazarTech ATS-SDK library (libATSApi.so), expected the ATS-SDK and " +
	"AlazarTech's driver installed, or " + EnvLibrary + "=/path/to/libATSApi.so (vortexgo's virtual digitizer: " +
	"`make virtual`, then " + EnvLibrary + "=build/virtual/libATSApi.so, or " + instrument.EnvInstruments + "=virtual)")

// ErrUnsupportedVersion is wrapped when the library's ATS-SDK version is
// older than MinSDKMajor.
var ErrUnsupportedVersion = errors.New("alazar: unsupported ATS-SDK version")

// MinSDKMajor is the oldest ATS-SDK major version the driver accepts:
// AlazarBeforeAsyncRead's NPT mode with ADMA_INTERLEAVE_SAMPLES and
// AlazarInputControlEx are 7.x functions.
const MinSDKMajor = 7

// libraryNames are the candidates after $VORTEXGO_ATSAPI_LIBRARY.
var libraryNames = []string{"libATSApi.so", "libATSApi.so.0"}

// ats is the shim's function table (the C preamble above).
var ats = C.vg_ats_table()

// loader declares the library: its candidates, the functions the shim
// calls (the optional ones answer ApiUnsupportedFunction when absent) and
// the version check.
var loader = &dl.Loader{
	Env:     EnvLibrary,
	Virtual: "libATSApi.so",
	Names:   libraryNames,
	Err:     ErrNoLibrary,
	Check:   checkVersion,
	Symbols: []dl.Symbol{
		{Name: "AlazarGetSDKVersion", Dst: dl.Func(&ats.sdk_version)},
		{Name: "AlazarNumOfSystems", Dst: dl.Func(&ats.num_systems)},
		{Name: "AlazarBoardsInSystemBySystemID", Dst: dl.Func(&ats.boards_in_system)},
		{Name: "AlazarGetBoardBySystemID", Dst: dl.Func(&ats.board_by_id)},
		{Name: "AlazarQueryCapability", Dst: dl.Func(&ats.query_capability)},
		{Name: "AlazarGetChannelInfo", Dst: dl.Func(&ats.channel_info)},
		{Name: "AlazarGetParameter", Dst: dl.Func(&ats.get_parameter)},
		{Name: "AlazarGetParameterUL", Dst: dl.Func(&ats.get_parameter_ul)},
		{Name: "AlazarSetParameterUL", Dst: dl.Func(&ats.set_parameter_ul)},
		{Name: "AlazarSetCaptureClock", Dst: dl.Func(&ats.set_capture_clock)},
		{Name: "AlazarSetExternalClockLevel", Optional: true, Dst: dl.Func(&ats.set_external_clock_level)},
		{Name: "AlazarInputControlEx", Dst: dl.Func(&ats.input_control_ex)},
		{Name: "AlazarSetTriggerOperation", Dst: dl.Func(&ats.set_trigger_operation)},
		{Name: "AlazarSetExternalTrigger", Dst: dl.Func(&ats.set_external_trigger)},
		{Name: "AlazarSetTriggerDelay", Dst: dl.Func(&ats.set_trigger_delay)},
		{Name: "AlazarConfigureAuxIO", Dst: dl.Func(&ats.configure_aux_io)},
		{Name: "AlazarSetRecordSize", Dst: dl.Func(&ats.set_record_size)},
		{Name: "AlazarBeforeAsyncRead", Dst: dl.Func(&ats.before_async_read)},
		{Name: "AlazarStartCapture", Dst: dl.Func(&ats.start_capture)},
		{Name: "AlazarAbortAsyncRead", Dst: dl.Func(&ats.abort_async_read)},
		{Name: "AlazarPostAsyncBuffer", Dst: dl.Func(&ats.post_async_buffer)},
		{Name: "AlazarWaitAsyncBufferComplete", Dst: dl.Func(&ats.wait_async_buffer_complete)},
		{Name: "AlazarErrorToText", Dst: dl.Func(&ats.error_to_text)},
		{Name: "AlazarConfigureSampleSkipping", Optional: true, Dst: dl.Func(&ats.configure_sample_skipping)},
		{Name: "AlazarOCTIgnoreBadClock", Optional: true, Dst: dl.Func(&ats.oct_ignore_bad_clock)},
		{Name: "AlazarDSPGetModules", Optional: true, Dst: dl.Func(&ats.dsp_get_modules)},
		{Name: "AlazarDSPGetInfo", Optional: true, Dst: dl.Func(&ats.dsp_get_info)},
		{Name: "AlazarDSPGetParameterU32", Optional: true, Dst: dl.Func(&ats.dsp_get_parameter_u32)},
		{Name: "AlazarFFTGetMaxTriggerRepeatRate", Optional: true, Dst: dl.Func(&ats.fft_max_trigger_rate)},
		{Name: "AlazarFFTSetWindowFunction", Optional: true, Dst: dl.Func(&ats.fft_set_window)},
		{Name: "AlazarFFTBackgroundSubtractionSetRecordS16", Optional: true, Dst: dl.Func(&ats.fft_bg_set_record)},
		{Name: "AlazarFFTBackgroundSubtractionSetEnabled", Optional: true, Dst: dl.Func(&ats.fft_bg_set_enabled)},
		{Name: "AlazarFFTSetup", Optional: true, Dst: dl.Func(&ats.fft_setup)},
		{Name: "AlazarDSPGetBuffer", Optional: true, Dst: dl.Func(&ats.dsp_get_buffer)},
		{Name: "AlazarDSPAbortCapture", Optional: true, Dst: dl.Func(&ats.dsp_abort_capture)},
		{Name: "AlazarGalvoSequenceGetCount", Optional: true, Dst: dl.Func(&ats.galvo_sequence_count)},
		{Name: "AlazarGalvoSlotGetSize", Optional: true, Dst: dl.Func(&ats.galvo_slot_size)},
		{Name: "AlazarGalvoPlaybackStart", Optional: true, Dst: dl.Func(&ats.galvo_playback_start)},
		{Name: "AlazarGalvoPlaybackStop", Optional: true, Dst: dl.Func(&ats.galvo_playback_stop)},
		{Name: "AlazarGalvoAlinesPerBscanSet", Optional: true, Dst: dl.Func(&ats.galvo_alines_per_bscan)},
		{Name: "AlazarGalvoBscanModeSet", Optional: true, Dst: dl.Func(&ats.galvo_bscan_mode)},
		{Name: "AlazarGalvoSequenceWrite", Optional: true, Dst: dl.Func(&ats.galvo_sequence_write)},
		{Name: "AlazarGalvoPatternSlotWrite", Optional: true, Dst: dl.Func(&ats.galvo_slot_write)},
		{Name: "AlazarGalvoSetParkPosition", Optional: true, Dst: dl.Func(&ats.galvo_set_park)},
	},
}

// version is the loaded library's ATS-SDK version, set once by
// checkVersion under the loader's lock, before the library is kept.
var version string

// Load opens the library if it is not open yet and returns its ATS-SDK
// version ("7.5.0"). A failure wraps ErrNoLibrary (keeping each
// candidate's dlopen message) or ErrUnsupportedVersion; a later Load
// tries again.
func Load() (string, error) {
	if _, err := loader.Load(); err != nil {
		return "", err
	}
	return version, nil
}

// checkVersion refuses an ATS-SDK older than MinSDKMajor.
func checkVersion(lib *dl.Library) error {
	var major, minor, rev C.U8
	if rc := C.vg_sdk_version(&major, &minor, &rev); rc != C.RC(ApiSuccess) {
		// Not newError: its errorText asks Library, whose lock Load holds;
		// the table is published, so AlazarErrorToText is callable.
		e := &Error{Msg: "AlazarGetSDKVersion", Code: ReturnCode(rc), Text: C.GoString(C.vg_error_to_text(rc))}
		return fmt.Errorf("alazar: %s: AlazarGetSDKVersion: %w", lib.Name(), e)
	}
	v := fmt.Sprintf("%d.%d.%d", major, minor, rev)
	if int(major) < MinSDKMajor {
		return fmt.Errorf("%w: %s is ATS-SDK %s, expected %d.0 or newer (install a newer ATS-SDK from AlazarTech)", ErrUnsupportedVersion, lib.Name(), v, MinSDKMajor)
	}
	version = v
	return nil
}

// Library is the name the library was loaded under ("" before Load
// succeeds).
func Library() string { return loader.Name() }

// errorText is AlazarErrorToText's text for rc ("" before Load).
func errorText(rc ReturnCode) string {
	if Library() == "" {
		return ""
	}
	return C.GoString(C.vg_error_to_text(C.RC(rc)))
}

// The calls below are the shim's, one per SDK function, returning the
// SDK's code; Board turns them into errors with vortex's messages.

func numSystems() uint32             { return uint32(C.vg_num_systems()) }
func boardsInSystem(s uint32) uint32 { return uint32(C.vg_boards_in_system(C.U32(s))) }
func boardByID(s, b uint32) uintptr {
	return uintptr(C.vg_board_by_id(C.U32(s), C.U32(b)))
}

func queryCapability(h uintptr, capability uint32) (uint32, ReturnCode) {
	var v C.U32
	rc := C.vg_query_capability(C.uintptr_t(h), C.U32(capability), &v)
	return uint32(v), ReturnCode(rc)
}

func channelInfo(h uintptr) (memory uint32, bits uint8, rc ReturnCode) {
	var m C.U32
	var b C.U8
	rc = ReturnCode(C.vg_channel_info(C.uintptr_t(h), &m, &b))
	return uint32(m), uint8(b), rc
}

func getParameter(h uintptr, channel uint8, parameter uint32) (int64, ReturnCode) {
	var v C.long
	rc := C.vg_get_parameter(C.uintptr_t(h), C.U8(channel), C.U32(parameter), &v)
	return int64(v), ReturnCode(rc)
}

func getParameterUL(h uintptr, channel uint8, parameter uint32) (uint32, ReturnCode) {
	var v C.U32
	rc := C.vg_get_parameter_ul(C.uintptr_t(h), C.U8(channel), C.U32(parameter), &v)
	return uint32(v), ReturnCode(rc)
}

func setParameterUL(h uintptr, channel uint8, parameter, value uint32) ReturnCode {
	return ReturnCode(C.vg_set_parameter_ul(C.uintptr_t(h), C.U8(channel), C.U32(parameter), C.U32(value)))
}

func setCaptureClock(h uintptr, source, rate, edge, decimation uint32) ReturnCode {
	return ReturnCode(C.vg_set_capture_clock(C.uintptr_t(h), C.U32(source), C.U32(rate), C.U32(edge), C.U32(decimation)))
}

func setExternalClockLevel(h uintptr, percent float32) ReturnCode {
	return ReturnCode(C.vg_set_external_clock_level(C.uintptr_t(h), C.float(percent)))
}

func inputControlEx(h uintptr, channel, coupling, rangeID, impedanceID uint32) ReturnCode {
	return ReturnCode(C.vg_input_control_ex(C.uintptr_t(h), C.U32(channel), C.U32(coupling), C.U32(rangeID), C.U32(impedanceID)))
}

func setTriggerOperation(h uintptr, op, e1, s1, sl1, l1, e2, s2, sl2, l2 uint32) ReturnCode {
	return ReturnCode(C.vg_set_trigger_operation(C.uintptr_t(h), C.U32(op), C.U32(e1), C.U32(s1), C.U32(sl1), C.U32(l1),
		C.U32(e2), C.U32(s2), C.U32(sl2), C.U32(l2)))
}

func setExternalTrigger(h uintptr, coupling, rangeID uint32) ReturnCode {
	return ReturnCode(C.vg_set_external_trigger(C.uintptr_t(h), C.U32(coupling), C.U32(rangeID)))
}

func setTriggerDelay(h uintptr, delay uint32) ReturnCode {
	return ReturnCode(C.vg_set_trigger_delay(C.uintptr_t(h), C.U32(delay)))
}

func configureAuxIO(h uintptr, mode, parameter uint32) ReturnCode {
	return ReturnCode(C.vg_configure_aux_io(C.uintptr_t(h), C.U32(mode), C.U32(parameter)))
}

func setRecordSize(h uintptr, pre, post uint32) ReturnCode {
	return ReturnCode(C.vg_set_record_size(C.uintptr_t(h), C.U32(pre), C.U32(post)))
}

func beforeAsyncRead(h uintptr, channels uint32, offset int64, length, rpb, rpa, flags uint32) ReturnCode {
	return ReturnCode(C.vg_before_async_read(C.uintptr_t(h), C.U32(channels), C.long(offset), C.U32(length), C.U32(rpb),
		C.U32(rpa), C.U32(flags)))
}

func startCapture(h uintptr) ReturnCode   { return ReturnCode(C.vg_start_capture(C.uintptr_t(h))) }
func abortAsyncRead(h uintptr) ReturnCode { return ReturnCode(C.vg_abort_async_read(C.uintptr_t(h))) }

func postAsyncBuffer(h, buf uintptr, bytes uint32) ReturnCode {
	return ReturnCode(C.vg_post_async_buffer(C.uintptr_t(h), C.uintptr_t(buf), C.U32(bytes)))
}

func waitAsyncBufferComplete(h, buf uintptr, ms uint32) ReturnCode {
	return ReturnCode(C.vg_wait_async_buffer_complete(C.uintptr_t(h), C.uintptr_t(buf), C.U32(ms)))
}

func configureSampleSkipping(h uintptr, mode, clocks uint32, bitmap []uint16) ReturnCode {
	var p *C.U16
	if len(bitmap) > 0 {
		p = (*C.U16)(unsafe.Pointer(&bitmap[0]))
	}
	return ReturnCode(C.vg_configure_sample_skipping(C.uintptr_t(h), C.U32(mode), C.U32(clocks), p))
}

func octIgnoreBadClock(h uintptr, enable bool, good, bad float64) ReturnCode {
	e := C.U32(0)
	if enable {
		e = 1
	}
	return ReturnCode(C.vg_oct_ignore_bad_clock(C.uintptr_t(h), e, C.double(good), C.double(bad)))
}

func dspModuleCount(h uintptr) (uint32, ReturnCode) {
	var n C.U32
	rc := C.vg_dsp_module_count(C.uintptr_t(h), &n)
	return uint32(n), ReturnCode(rc)
}

// The on-FPGA FFT module's and galvo DAC's calls (dsp.go, dac.go use them).

func dspModules(h uintptr, n uint32) ([]uintptr, ReturnCode) {
	out := make([]uintptr, max(n, 1))
	rc := C.vg_dsp_get_modules(C.uintptr_t(h), C.U32(n), (*C.uintptr_t)(unsafe.Pointer(&out[0])))
	return out[:n], ReturnCode(rc)
}

func dspGetInfo(d uintptr) (typ uint32, major, minor uint16, maxLen, channels uint32, rc ReturnCode) {
	var t, m, c C.U32
	var a, b C.U16
	rc = ReturnCode(C.vg_dsp_get_info(C.uintptr_t(d), &t, &a, &b, &m, &c))
	return uint32(t), uint16(a), uint16(b), uint32(m), uint32(c), rc
}

func dspGetParameterU32(d uintptr, p uint32) (uint32, ReturnCode) {
	var v C.U32
	rc := C.vg_dsp_get_parameter_u32(C.uintptr_t(d), C.U32(p), &v)
	return uint32(v), ReturnCode(rc)
}

func fftMaxTriggerRate(d uintptr, n uint32) (float64, ReturnCode) {
	var r C.double
	rc := C.vg_fft_max_trigger_rate(C.uintptr_t(d), C.U32(n), &r)
	return float64(r), ReturnCode(rc)
}

func fftSetWindow(d uintptr, n uint32, re, im []float32) ReturnCode {
	var pr, pi *C.float
	if len(re) > 0 {
		pr, pi = (*C.float)(unsafe.Pointer(&re[0])), (*C.float)(unsafe.Pointer(&im[0]))
	}
	return ReturnCode(C.vg_fft_set_window(C.uintptr_t(d), C.U32(n), pr, pi))
}

func fftBackgroundSetRecord(d uintptr, bg []int16) ReturnCode {
	return ReturnCode(C.vg_fft_bg_set_record(C.uintptr_t(d), (*C.int16_t)(unsafe.Pointer(&bg[0])), C.U32(len(bg))))
}

func fftBackgroundSetEnabled(d uintptr, enable bool) ReturnCode {
	e := C.int(0)
	if enable {
		e = 1
	}
	return ReturnCode(C.vg_fft_bg_set_enabled(C.uintptr_t(d), e))
}

func fftSetup(d uintptr, channels uint16, record, fft, format uint32) (uint32, ReturnCode) {
	var bytes C.U32
	rc := C.vg_fft_setup(C.uintptr_t(d), C.U16(channels), C.U32(record), C.U32(fft), C.U32(format), &bytes)
	return uint32(bytes), ReturnCode(rc)
}

func dspGetBuffer(h, buf uintptr, ms uint32) ReturnCode {
	return ReturnCode(C.vg_dsp_get_buffer(C.uintptr_t(h), C.uintptr_t(buf), C.U32(ms)))
}

func dspAbortCapture(h uintptr) ReturnCode { return ReturnCode(C.vg_dsp_abort_capture(C.uintptr_t(h))) }

func galvoSequenceCount(h uintptr) (int32, ReturnCode) {
	var n C.int32_t
	rc := C.vg_galvo_sequence_count(C.uintptr_t(h), &n)
	return int32(n), ReturnCode(rc)
}

func galvoSlotSize(h uintptr, slot int) (int32, ReturnCode) {
	var n C.int32_t
	rc := C.vg_galvo_slot_size(C.uintptr_t(h), C.int(slot), &n)
	return int32(n), ReturnCode(rc)
}

func galvoPlaybackStart(h uintptr) ReturnCode {
	return ReturnCode(C.vg_galvo_playback_start(C.uintptr_t(h)))
}
func galvoPlaybackStop(h uintptr) ReturnCode {
	return ReturnCode(C.vg_galvo_playback_stop(C.uintptr_t(h)))
}

func galvoAlinesPerBscan(h uintptr, mode int, n int32) ReturnCode {
	return ReturnCode(C.vg_galvo_alines_per_bscan(C.uintptr_t(h), C.int(mode), C.int32_t(n)))
}

func galvoBscanMode(h uintptr, mode int) ReturnCode {
	return ReturnCode(C.vg_galvo_bscan_mode(C.uintptr_t(h), C.int(mode)))
}

func galvoSequenceWrite(h uintptr, seq int32, slot int, reps, start, end int32) ReturnCode {
	return ReturnCode(C.vg_galvo_sequence_write(C.uintptr_t(h), C.int32_t(seq), C.int(slot), C.int32_t(reps),
		C.int32_t(start), C.int32_t(end)))
}

func galvoSlotWrite(h uintptr, slot int, data []uint32, offset int32) ReturnCode {
	var p *C.uint32_t
	if len(data) > 0 {
		p = (*C.uint32_t)(unsafe.Pointer(&data[0]))
	}
	return ReturnCode(C.vg_galvo_slot_write(C.uintptr_t(h), C.int(slot), p, C.int32_t(len(data)), C.int32_t(offset)))
}

func galvoSetPark(h uintptr, x, y uint16) ReturnCode {
	return ReturnCode(C.vg_galvo_set_park(C.uintptr_t(h), C.uint16_t(x), C.uint16_t(y)))
}
