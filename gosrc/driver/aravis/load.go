package aravis

/*
#cgo CFLAGS: -O2
#include "shim.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"sync"
	"unsafe"

	"github.com/vortexgo/vortexgo/gosrc/driver/instrument"
	"github.com/vortexgo/vortexgo/gosrc/internal/dl"
)

// LibraryEnv names the environment variable holding the path of the Aravis
// library to load instead of the system's libaravis-0.8.so.0.
const LibraryEnv = "VORTEXGO_ARAVIS_LIBRARY"

// systemNames are the names Aravis 0.8 installs its C library under (the
// Debian/Ubuntu package libaravis-0.8-0; the -dev package adds the
// unversioned link).
var systemNames = []string{"libaravis-0.8.so.0", "libaravis-0.8.so"}

// ErrNoLibrary is wrapped by every error that comes from Aravis not being
// found or not being Aravis 0.8.
var ErrNoLibrary = errors.New("aravis: the Aravis library (libaravis-0.8.so.0) could not be loaded, expected Aravis 0.8 " +
	"installed (Debian/Ubuntu: apt-get install libaravis-0.8-0 aravis-tools), or " + LibraryEnv +
	"=/path/to/libaravis-0.8.so.0")

// ErrUnsupportedLibrary wraps the error of a library that loads but lacks a
// function vortexgo calls; it wraps ErrNoLibrary too.
var ErrUnsupportedLibrary = fmt.Errorf("%w: unsupported Aravis library", ErrNoLibrary)

// symbols are the entry points the shim calls, by table index. GLib's are
// resolved through Aravis's handle: dlsym searches a library's
// dependencies, and libaravis links libgobject and libglib.
var symbols = []struct {
	idx      C.int
	name     string
	optional bool
}{
	{C.VGA_enable_interface, "arv_enable_interface", false},
	{C.VGA_update_device_list, "arv_update_device_list", false},
	{C.VGA_get_n_devices, "arv_get_n_devices", false},
	{C.VGA_get_device_id, "arv_get_device_id", false},
	{C.VGA_camera_new, "arv_camera_new", false},
	{C.VGA_camera_get_device, "arv_camera_get_device", false},
	{C.VGA_camera_create_stream, "arv_camera_create_stream", false},
	{C.VGA_camera_get_vendor_name, "arv_camera_get_vendor_name", false},
	{C.VGA_camera_get_model_name, "arv_camera_get_model_name", false},
	{C.VGA_camera_get_device_id, "arv_camera_get_device_id", false},
	{C.VGA_camera_is_feature_available, "arv_camera_is_feature_available", false},
	{C.VGA_camera_set_integer, "arv_camera_set_integer", false},
	{C.VGA_camera_get_integer, "arv_camera_get_integer", false},
	{C.VGA_camera_set_float, "arv_camera_set_float", false},
	{C.VGA_camera_get_float, "arv_camera_get_float", false},
	{C.VGA_camera_set_string, "arv_camera_set_string", false},
	{C.VGA_camera_get_string, "arv_camera_get_string", false},
	{C.VGA_camera_set_pixel_format_from_string, "arv_camera_set_pixel_format_from_string", false},
	{C.VGA_camera_get_payload, "arv_camera_get_payload", false},
	{C.VGA_camera_start_acquisition, "arv_camera_start_acquisition", false},
	{C.VGA_camera_stop_acquisition, "arv_camera_stop_acquisition", false},
	{C.VGA_camera_set_exposure_time, "arv_camera_set_exposure_time", false},
	{C.VGA_camera_get_exposure_time, "arv_camera_get_exposure_time", false},
	{C.VGA_camera_set_frame_rate, "arv_camera_set_frame_rate", false},
	{C.VGA_camera_get_frame_rate, "arv_camera_get_frame_rate", false},
	{C.VGA_camera_is_gv_device, "arv_camera_is_gv_device", false},
	{C.VGA_stream_push_buffer, "arv_stream_push_buffer", false},
	{C.VGA_stream_timeout_pop_buffer, "arv_stream_timeout_pop_buffer", false},
	{C.VGA_stream_get_statistics, "arv_stream_get_statistics", false},
	{C.VGA_stream_stop_thread, "arv_stream_stop_thread", false},
	{C.VGA_buffer_new_full, "arv_buffer_new_full", false},
	{C.VGA_buffer_get_status, "arv_buffer_get_status", false},
	{C.VGA_buffer_get_frame_id, "arv_buffer_get_frame_id", false},
	{C.VGA_buffer_get_data, "arv_buffer_get_data", false},
	{C.VGA_buffer_get_image_width, "arv_buffer_get_image_width", false},
	{C.VGA_buffer_get_image_height, "arv_buffer_get_image_height", false},
	{C.VGA_buffer_get_image_pixel_format, "arv_buffer_get_image_pixel_format", false},
	{C.VGA_g_object_unref, "g_object_unref", false},
	{C.VGA_g_error_free, "g_error_free", false},
	{C.VGA_g_signal_connect_data, "g_signal_connect_data", false},
	{C.VGA_g_object_set, "g_object_set", false},
	{C.VGA_get_major_version, "arv_get_major_version", true},
	{C.VGA_get_minor_version, "arv_get_minor_version", true},
	{C.VGA_get_micro_version, "arv_get_micro_version", true},
	{C.VGA_set_fake_camera_genicam_filename, "arv_set_fake_camera_genicam_filename", true},
}

var (
	mu     sync.Mutex
	loaded *dl.Library
)

// Load opens Aravis if it is not open yet: the path in
// $VORTEXGO_ARAVIS_LIBRARY, else the system's libaravis-0.8.so.0. A
// failure wraps ErrNoLibrary and keeps each candidate's dlopen message; a
// later Load tries again.
func Load() error {
	mu.Lock()
	defer mu.Unlock()
	if loaded != nil {
		return nil
	}
	names := systemNames
	if p := instrument.Getenv(LibraryEnv); p != "" {
		names = []string{p} // the user named one: never fall back to another silently
	}
	lib, err := dl.Open(names...)
	if err != nil {
		return fmt.Errorf("%w (%v)", ErrNoLibrary, err)
	}
	ptrs := make([]unsafe.Pointer, len(symbols))
	for i, s := range symbols {
		p, err := lib.Sym(s.name)
		if err != nil && !s.optional {
			return fmt.Errorf("%w: %s lacks %s: it is not Aravis 0.8 (vortexgo calls Aravis 0.8's API): %v",
				ErrUnsupportedLibrary, lib.Name(), s.name, err)
		}
		ptrs[i] = p
	}
	for i, s := range symbols {
		C.vga_set(s.idx, ptrs[i])
	}
	loaded = lib
	return nil
}

// Version is the loaded Aravis's version ("0.8.26"), or "" before Load
// succeeds or when the library does not report it.
func Version() string {
	mu.Lock()
	defer mu.Unlock()
	if loaded == nil {
		return ""
	}
	var major, minor, micro C.unsigned
	if C.vga_version(&major, &minor, &micro) != 0 {
		return ""
	}
	return fmt.Sprintf("%d.%d.%d", major, minor, micro)
}

// Library is the name the library was loaded under ("" before Load
// succeeds).
func Library() string {
	mu.Lock()
	defer mu.Unlock()
	if loaded == nil {
		return ""
	}
	return loaded.Name()
}
